#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-events: why a write was refused reaches the operator and the bot.
# Every refusal of a bot's mount lands in its event ring with the rule, the
# path, the operation and the process (pid, command name); `agentfs log`
# shows it, --follow streams new ones, a bot reads only its own and its
# children's; roots lost and restored and configures are logged too; the
# ring holds 1000 events and counts what it dropped; the daemon's log gets
# one line per path every 10 s however many refusals.
. "$top_srcdir/tests/daemon-lib.sh"


rss_kb()
{
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

mkdir -p "$T/a/repo" "$T/b" "$T/a/kid"
git init -q "$T/a/repo" || bail_out "git init failed"

# The daemon's log on its stderr (D_CONFIG names a file: the option comes first).
# Under AddressSanitizer freed memory waits in its quarantine (up to 256 MB),
# so the daemon's RSS would grow with every refusal whatever the ring keeps:
# no quarantine for this daemon, whose memory bound is measured below.
if ldd "$AGENTFSD" 2>/dev/null | grep -q 'libasan'; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
fi
"$AGENTFSD" -f --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" --log-target stderr 2>"$T/d.log" &
wait_until 10 answers "$D_SOCK" || bail_out "agentfsd -f did not start"
D_PID=$(daemon_pids "$D_SOCK" | head -n 1)

expect_ok "create A" "$(afs --json create --user 65534 A "$T/a")"
expect_ok "create B" "$(afs --json create --user 65534 B "$T/b")"
expect_ok "A creates its child K" "$(as A create K "$T/a/kid")"
MA="$D_MNT/A/0"

is "$(afs --json log A | jget events.0.type)" bot_made "A's first event: it was made"

# --- a refused write, with who asked ---------------------------------------------
sh -c 'echo $$ >"$1/pid"; echo evil >"$2/repo/.git/hooks/pre-commit"' sh "$T" "$MA" 2>/dev/null
r=$(afs --json log A --since 2)
is "$(printf '%s' "$r" | jget events.0.type)" refused "the refusal is in A's log"
is "$(printf '%s' "$r" | jget events.0.rule)" D3 "with the rule (D3, hooks)"
is "$(printf '%s' "$r" | jget events.0.path)" "$T/a/repo/.git/hooks/pre-commit" \
	"with the path as the bot sees it (the host path)"
is "$(printf '%s' "$r" | jget events.0.op)" create "with the operation"
is "$(printf '%s' "$r" | jget events.0.pid)" "$(cat "$T/pid")" "with the caller's pid"
is "$(printf '%s' "$r" | jget events.0.comm)" sh "with the caller's command name"
is "$(printf '%s' "$r" | jget events.0.bot)" A "with the bot's name"
like "$(afs log A)" "refused create of $T/a/repo/.git/hooks/pre-commit: rule D3 \\(hooks\\) \\(pid [0-9]+ sh\\)" \
	"agentfs log prints it as a line of text"
like "$(afs log --json)" '"rule":"D3"' "the operator's log of the whole daemon has it too"

# --- who may read whose log --------------------------------------------------------
is "$(as A log | jget events.0.bot)" A "A reads its own log on its socket (no name)"
expect_ok "A reads its child K's log" "$(as A log K)"
expect_error "A cannot read B's log" not_found "$(as A log B)"
expect_error "K cannot read its maker A's log" not_found "$(as K log A)"
is "$(as B log | jget 'events.*.bot' | sort -u)" B "B's own log holds only B's events"
expect_error "log of a bot that does not exist" not_found "$(afs --json log nosuch)"
expect_error "since must be a whole number" bad_value "$(raw '{"op":"log","since":-1}')"
# numbers past what a double holds parse as infinities (ASan/UBSan builds
# would report a cast of one to an integer)
expect_error "since 1e999 (infinity) is refused" bad_value "$(raw '{"op":"log","since":1e999}')"
expect_error "since 2.5 is refused" bad_value "$(raw '{"op":"log","since":2.5}')"

# --- follow ---------------------------------------------------------------------------
"$AGENTFS" --socket "$D_SOCK" log A --follow --json >"$T/follow" 2>&1 &
fpid=$!
track_pid "$fpid"
wait_until 5 grep -q '"follow":true' "$T/follow"
touch "$MA/repo/.git/config" 2>/dev/null
if wait_until 5 grep -q '"event":{.*"path":"'"$T"'/a/repo/.git/config"' "$T/follow"; then
	ok "log --follow streams a new refusal"
else
	not_ok "log --follow streams a new refusal"
	diag "$(cat "$T/follow")"
fi
clients=$(afs --json status | jget clients)
kill "$fpid"
wait "$fpid" 2>/dev/null
if wait_until 5 eval '[ "$(afs --json status | jget clients)" -lt "$clients" ]'; then
	ok "the daemon lets a stream go when its client leaves"
else
	not_ok "the daemon lets a stream go when its client leaves"
fi
# a bot follows its own log on its socket; the operator the daemon's
AGENT_SOCKET="$D_SOCK.d/A.sock" "$AGENTFS" log --follow >"$T/followa" 2>&1 &
fpa=$!
"$AGENTFS" --socket "$D_SOCK" log --follow >"$T/followall" 2>&1 &
fpall=$!
track_pid "$fpa"
track_pid "$fpall"
wait_until 5 eval '[ -s "$T/followa" ] && [ -s "$T/followall" ]'
mkdir "$MA/repo/.git/hooks/sub" 2>/dev/null
mkdir "$D_MNT/B/0/.git" 2>/dev/null
if wait_until 5 grep -q "A refused mkdir of $T/a/repo/.git/hooks/sub" "$T/followa"; then
	ok "a bot follows its own log on its socket"
else
	not_ok "a bot follows its own log on its socket"
	diag "$(cat "$T/followa")"
fi
if wait_until 5 eval 'grep -q "A refused mkdir of $T/a/repo/.git/hooks/sub" "$T/followall" &&
	grep -q "B refused mkdir of $T/b/.git" "$T/followall"'; then
	ok "the operator follows every bot's events"
else
	not_ok "the operator follows every bot's events"
	diag "$(cat "$T/followall")"
fi
if grep -q "B refused" "$T/followa"; then
	not_ok "a bot's stream holds only its own events"
else
	ok "a bot's stream holds only its own events"
fi
kill "$fpa" "$fpall"
wait "$fpa" "$fpall" 2>/dev/null

"$AGENTFS" --socket "$D_SOCK" log K --follow >"$T/followk" 2>&1 &
fpid=$!
track_pid "$fpid"
wait_until 5 grep -q bot_made "$T/followk"
expect_ok "A deletes K" "$(as A rm K)"
if wait_until 5 eval '! kill -0 '"$fpid"' 2>/dev/null'; then
	ok "a stream ends when its bot is deleted"
else
	not_ok "a stream ends when its bot is deleted"
	kill "$fpid" 2>/dev/null
fi
like "$(cat "$T/followk")" "K bot_deleted: deleted" "its last line says the bot was deleted"
like "$(afs log A)" "bot_deleted: K, which it made, was deleted" "its maker's log says so too"

# --- mounts lost and restored, a configure --------------------------------------------
fusermount3 -uz "$D_MNT/B/0" 2>/dev/null || umount -l "$D_MNT/B/0"
if wait_until 5 eval 'afs log B | grep -q "mount_lost: $D_MNT/B/0 was unmounted from outside"'; then
	ok "a root unmounted from outside is in the bot's log"
else
	not_ok "a root unmounted from outside is in the bot's log"
	diag "$(afs log B)"
fi
expect_ok "configure B mounts it again" "$(afs --json configure B)"
r=$(afs log B)
like "$r" "B bot_configured: configured" "the configure is in the log"
like "$r" "B mount_restored: $T/b mounted again at $D_MNT/B/0" "and the root mounted again"

# --- a flood: the ring is bounded, the daemon's log rate-limited ---------------------
before=$(grep -c "refused create of /repo/.git/hooks/flood" "$T/d.log")
rss0=$(rss_kb "$D_PID")
total0=$(afs --json log A | jget total)
bash -c 'for i in $(seq 5000); do : >"$1/repo/.git/hooks/flood"; done' sh "$MA" 2>/dev/null
r=$(afs --json log A)
is "$(printf '%s' "$r" | jget total)" $((total0 + 5000)) "the ring counted all 5000 refusals"
is "$(printf '%s' "$r" | "$DCLIENT" get 'events.*.seq' | wc -l)" 1000 "it keeps the last 1000"
is "$(printf '%s' "$r" | jget dropped)" $((total0 + 5000 - 1000)) "and says how many it dropped"
bash -c 'for i in $(seq 5000); do : >"$1/repo/.git/hooks/flood"; done' sh "$MA" 2>/dev/null
rss1=$(rss_kb "$D_PID")
diag "agentfsd VmRSS: ${rss0} kB before, ${rss1} kB after 10000 refusals"
if [ $((rss1 - rss0)) -lt 20000 ]; then
	ok "memory stays bounded (grew $((rss1 - rss0)) kB over 10000 refusals)"
else
	not_ok "memory stays bounded (grew $((rss1 - rss0)) kB over 10000 refusals)"
fi
after=$(grep -c "refused create of /repo/.git/hooks/flood" "$T/d.log")
is "$((after - before))" 1 "the daemon's log got one line for 10000 refusals of one path"

done_testing
