#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-restart: a daemon killed with SIGKILL together with its keeper (so
# nothing holds the mounts' connections: tests/daemon-handover.sh has the
# daemon killed alone) leaves dead mounts; the next one has the same bots,
# sockets and working mounts and no stale duplicates. A bot's ttl deletes it
# (and its mount) on time, also across a restart.
#
# A dead FUSE mount is looked at only through mountinfo; anything that
# touches a path under one runs under `timeout`, so it cannot hang the test.
. "$top_srcdir/tests/daemon-lib.sh"

# daemon_kill9, the keeper too: every descriptor of the mounts is closed
kill9_all()
{
	local k
	k=$(keeper_pids)
	daemon_kill9 || return 1
	[ -z "$k" ] || kill -KILL $k
	wait_until 5 eval '[ -z "$(keeper_pids)" ]'
}


# the mount points under STATE/mnt, one per line, sorted
mount_points()
{
	mounts_in "$D_MNT" | awk '{ print $2 }' | sort
}

mkdir -p "$T/w1/x" "$T/w2" "$T/w3" "$T/w4" "$T/w5" "$T/w6/c" "$T/gone"
echo content >"$T/w1/file"

daemon_start || bail_out "agentfsd did not start"
expect_ok "create k1" "$(afs --json create --user 65534 k1 "$T/w1")"
expect_ok "create k2 with an extra writable root" "$(afs --json create --user 65534 k2 "$T/w2" --writable "$T/w3")"
expect_ok "k1 creates kc" "$(as k1 create kc "$T/w1/x")"
want_mounts=$(printf '%s\n' "$D_MNT/k1/0" "$D_MNT/k2/0" "$D_MNT/k2/1" "$D_MNT/kc/0" | sort)
is "$(mount_points)" "$want_mounts" "four mounts: k1, k2 (two roots), kc"

# --- SIGKILL --------------------------------------------------------------------
if kill9_all; then ok "the daemon and its keeper die on SIGKILL"; else not_ok "the daemon and its keeper die on SIGKILL"; fi
is "$(mount_points)" "$want_mounts" "its mounts are left behind in mountinfo"
if timeout 5 stat "$D_MNT/k1/0/file" >/dev/null 2>&1; then
	not_ok "a stat in a dead mount fails"
else
	ok "a stat in a dead mount fails"
fi
if answers "$D_SOCK"; then not_ok "nothing answers on the control socket"; else ok "nothing answers on the control socket"; fi
if answers "$D_SOCK.d/k1.sock"; then not_ok "nothing answers on k1's socket"; else ok "nothing answers on k1's socket"; fi

# --- restart ----------------------------------------------------------------------
t0=$(date +%s)
if daemon_start; then ok "agentfsd starts over the dead one's leftovers"; else not_ok "agentfsd starts over the dead one's leftovers"; fi
is "$(afs --json ls | names)" "k1 k2 kc " "the same bots"
# A bot's socket takes clients once its roots are back (restart.c
# done_restore; a client waits until then, below): after a start that takes
# nothing over (the keeper died too) that is a moment after the control
# socket answers, longer on a busy machine.
for b in k1 k2 kc; do
	wait_until 10 answers "$D_SOCK.d/$b.sock"
	is "$(as "$b" status 2>/dev/null | jget bot)" "$b" "$b's socket answers as $b"
done
wait_until 5 eval '[ "$(afs --json show k2 | jget "bot.mounts.*.state" | sort -u)" = mounted ]'
for b in k1 k2 kc; do
	is "$(afs --json show "$b" | jget 'bot.mounts.*.state' | sort -u)" mounted "$b's roots are mounted"
done
is "$(timeout 5 cat "$D_MNT/k1/0/file" 2>&1)" content "k1's mount answers (cat a file)"
if timeout 5 sh -c 'echo new >"$1"' sh "$D_MNT/kc/0/new" 2>/dev/null; then
	ok "kc's mount takes a write"
else
	not_ok "kc's mount takes a write"
fi
is "$(cat "$T/w1/x/new" 2>/dev/null)" new "the write reached kc's folder"
is "$(mount_points)" "$want_mounts" "no stale duplicate mounts (one per root)"
is "$(mounts_in "$D_MNT" | awk '{ print $3 }' | sort -u)" fuse.agentfs "all of them fuse.agentfs"
is "$(afs --json show kc | jget bot.creator)" k1 "kc still belongs to k1"
is "$(as kc ls | names)" "kc " "kc still sees only itself"
expect_error "kc still may not configure itself" forbidden "$(as kc configure kc --no-network)"

# --- a second SIGKILL and restart do not pile up mounts ---------------------------
kill9_all
daemon_start || not_ok "agentfsd starts a third time"
wait_until 5 eval '[ "$(afs --json show k2 | jget "bot.mounts.*.state" | sort -u)" = mounted ]'
is "$(mount_points)" "$want_mounts" "after a second crash and restart: still one mount per root"
is "$(timeout 5 cat "$D_MNT/k1/0/file" 2>&1)" content "and k1's mount answers"

# --- a bot's client while its roots are mounted again ---------------------------
# After a crash the next daemon mounts each bot's roots again before their
# clients are served. A bot's socket is there from the start: a client that
# connects meanwhile waits for its answer, as across a handover (before, it
# found no one listening and was told agentfsd was not running). The fault
# library holds the open of k1's root folder (w1) while a file exists, so
# the restore is caught in that window.
FAULT_SO="$top_builddir/tests/fault-inject.so"
[ -f "$FAULT_SO" ] || bail_out "$FAULT_SO is not built (make check builds it)"
if ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib[at]san'; then
	skip "agentfsd is built with a sanitizer: the fault library cannot be preloaded"
	skip "... (a client waits for k1's restore)"
	skip "... (a restart meanwhile)"
	skip "... (the client is answered)"
	skip "... (k1's socket serves)"
	skip "... (k1's mount answers)"
else
	kill9_all
	touch "$T/hold"
	LD_PRELOAD="$FAULT_SO" FAULT_OPEN_HOLD=w1 FAULT_OPEN_WHILE="$T/hold" FAULT_LOG="$T/faults" \
		daemon_start || not_ok "agentfsd starts with the fault library"
	wait_until 10 eval 'grep -q hold "$T/faults" 2>/dev/null'
	is "$(afs --json show k1 | jget bot.mounts.0.state)" mounting \
		"while k1's roots are mounted again after a crash, it says so"
	as k1 status >"$T/held.out" 2>&1 &
	cpid=$!
	sleep 1
	if kill -0 "$cpid" 2>/dev/null; then
		ok "... and a client of k1's socket waits meanwhile, not refused"
	else
		not_ok "... and a client of k1's socket waits meanwhile, not refused"
		diag "it ended with: $(cat "$T/held.out")"
	fi
	# A restart now, with k1's restore still held: the daemon stops accepting,
	# finishes the restore (once let go) and hands over; the next one answers.
	daemon_kill TERM
	sleep 0.5
	rm -f "$T/hold"
	if daemon_wait_gone 15; then
		ok "... a restart meanwhile: the daemon finishes k1's restore and hands over"
	else
		not_ok "... a restart meanwhile: the daemon finishes k1's restore and hands over"
	fi
	daemon_start || not_ok "the next agentfsd starts"
	wait_until 15 eval '! kill -0 '"$cpid"' 2>/dev/null'
	kill "$cpid" 2>/dev/null
	wait "$cpid"
	is "$(jget bot <"$T/held.out" 2>/dev/null)" k1 "... and the waiting client is answered as k1 by the next one"
	wait_until 5 eval '[ "$(afs --json show k2 | jget "bot.mounts.*.state" | sort -u)" = mounted ]'
	is "$(as k1 status 2>/dev/null | jget bot)" k1 "... whose k1 socket serves"
	is "$(timeout 5 cat "$D_MNT/k1/0/file" 2>&1)" content "... and k1's mount answers"
fi

# --- ttl ------------------------------------------------------------------------
r=$(afs --json create --user 65534 t1 "$T/w4" --ttl 2)
expect_ok "create t1 with --ttl 2" "$r"
is "$(printf '%s' "$r" | jget bot.ttl)" 2 "t1's ttl is 2"
e=$(printf '%s' "$r" | jget bot.expires)
c=$(printf '%s' "$r" | jget bot.created)
is "$((e - c))" 2 "t1 expires 2 s after it was made"
is "$(mounts_in "$D_MNT/t1" | wc -l)" 1 "t1 is mounted"
start=$(date +%s.%N)
if wait_until 6 eval '[ "$(afs --json show t1 | jget error.code)" = not_found ]'; then
	ok "t1 is gone within 6 s ($(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after)"
else
	not_ok "t1 is gone within 6 s"
fi
# the unmount runs after show already answers not_found (see below)
wait_until 5 eval '[ "$(mounts_in "$D_MNT/t1" | wc -l)" = 0 ]'
is "$(mounts_in "$D_MNT/t1" | wc -l)" 0 "t1's mount is gone"
[ ! -e "$D_SOCK.d/t1.sock" ] && ok "t1's socket is gone" || not_ok "t1's socket is gone"
# show answers not_found once the delete starts; the state is saved when it ends
wait_until 2 eval '! jget "bots.*.name" <"$D_STATE/bots.json" | grep -qx t1'
is "$(jget 'bots.*.name' <"$D_STATE/bots.json" | sort | tr '\n' ' ')" "k1 k2 kc " \
	"the state file no longer holds t1"

# --- ttl across a crash ------------------------------------------------------------
expect_ok "create t2 with --ttl 3" "$(afs --json create --user 65534 t2 "$T/w5" --ttl 3)"
kill9_all
daemon_start || not_ok "agentfsd starts after t2 was made"
if wait_until 8 eval '[ "$(afs --json show t2 | jget error.code)" = not_found ]'; then
	ok "t2 still expires after a restart"
else
	not_ok "t2 still expires after a restart"
fi
wait_until 5 eval '[ "$(mounts_in "$D_MNT/t2" | wc -l)" = 0 ]'
is "$(mounts_in "$D_MNT/t2" | wc -l)" 0 "t2's mount is gone"
is "$(mount_points)" "$want_mounts" "the other mounts are all there, once each"

# --- a ttl takes the bot's children with it ------------------------------------------
expect_ok "create t3 with --ttl 2" "$(afs --json create --user 65534 t3 "$T/w6" --ttl 2)"
expect_ok "t3 creates t3c (no ttl)" "$(as t3 create t3c "$T/w6/c")"
if wait_until 6 eval '[ "$(afs --json show t3c | jget error.code)" = not_found ]'; then
	ok "t3c goes when t3 expires"
else
	not_ok "t3c goes when t3 expires"
fi
wait_until 5 eval '[ "$(mounts_in "$D_MNT/t3"; mounts_in "$D_MNT/t3c")" = "" ]'
is "$(mounts_in "$D_MNT/t3" | wc -l) $(mounts_in "$D_MNT/t3c" | wc -l)" "0 0" "both mounts are gone"
[ ! -e "$D_SOCK.d/t3c.sock" ] && ok "t3c's socket is gone" || not_ok "t3c's socket is gone"

# --- a folder that vanished while the daemon was down ----------------------------------
expect_ok "create g on a folder" "$(afs --json create --user 65534 g "$T/gone")"
kill9_all
rm -rf "$T/gone"
if daemon_start; then ok "agentfsd starts when a bot's folder is gone"; else not_ok "agentfsd starts when a bot's folder is gone"; fi
is "$(afs --json ls | names)" "g k1 k2 kc " "the bot is kept"
wait_until 5 eval '[ "$(afs --json show k2 | jget "bot.mounts.*.state" | sort -u)" = mounted ]'
r=$(afs --json show g)
is "$(printf '%s' "$r" | jget bot.mounts.0.state)" unmounted "its root is reported unmounted"
e=$(printf '%s' "$r" | jget bot.mounts.0.error)
[ -n "$e" ] && ok "with the reason ($e)" || not_ok "with the reason"
is "$(mount_points)" "$want_mounts" "the other bots are mounted as before"
expect_ok "delete g" "$(afs --json rm g)"

# --- a state file that does not parse ---------------------------------------------------
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 5
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"
printf '{"version":1,"bots":[{"name":' >"$D_STATE/bots.json"
sum=$(cksum <"$D_STATE/bots.json")
err=$("$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && ok "agentfsd refuses a state file that does not parse" ||
	not_ok "agentfsd refuses a state file that does not parse"
case "$err" in
*"$D_STATE/bots.json"*) ok "its error names the file" ;;
*) not_ok "its error names the file"; diag "stderr: $err" ;;
esac
is "$(cksum <"$D_STATE/bots.json")" "$sum" "the file is left as it was"
daemon_wait_gone 5

done_testing
