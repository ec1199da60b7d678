#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-handover: a restart of agentfsd is invisible to a bot at work. Inside
# `agentfs exec`, a bot's command writes new files, appends to a descriptor it
# holds open, reads a file it mapped, lists its folder, holds a flock, and
# commits with git, while agentfsd is restarted with SIGTERM (the next one
# started at once, and after the old one is gone), killed with SIGKILL,
# upgraded (another agentfsd binary over the same state), reloaded (SIGHUP),
# and killed at each step of a handover, the old server's and the new one's
# (AGENTFSD_TEST_CRASH): no call fails, every line and commit is there, and
# the bot's mount is the same mount (unique mount id) all along. A name change
# the server did but never answered before it was killed is answered by the
# next one, and done once (mkdir, create O_EXCL, unlink, rename, link,
# symlink, rmdir), also a create as git makes its objects (0444, written
# through the descriptor that made it), and one sent a third time, its second
# server killed too. 50 bots with files held open across a restart keep them.
# A keeper killed ends the mounts as a stop does, and the next agentfsd mounts
# afresh.
. "$top_srcdir/tests/exec-lib.sh"
. "$top_srcdir/tests/handover-lib.sh"

handover_bot
work_start

restart_step "SIGTERM, the next one started at once" term_now
restart_step "SIGTERM, the next one started after" term_wait
restart_step "SIGKILL" kill9
is "$(afs --json status | jget restarts)" 3 "status counts the restarts its mounts lived through"
is "$(afs --json show w1 | jget bot.mounts.0.restarts)" 3 "show counts them for the mount"

# --- an upgrade: another binary over the same state ------------------------------------
mkdir -p "$T/new"
cp "$AGENTFSD" "$T/new/agentfsd"
AGENTFSD_OLD=$AGENTFSD
AGENTFSD=$T/new/agentfsd
restart_step "an upgrade (another agentfsd binary)" term_now
AGENTFSD=$AGENTFSD_OLD
like "$(tr '\0' ' ' </proc/"$D_PID"/cmdline)" "$T/new/agentfsd" "the new binary serves"

# --- a reload -----------------------------------------------------------------------------
before=$(rounds)
kill -HUP "$D_PID"
sleep 0.5
is "$(afs --json status | jget pid)" "$D_PID" "SIGHUP: the same agentfsd still serves"
is "$(mntid "$M")" "$mid" "SIGHUP: the same mount"
if advanced "$before"; then ok "SIGHUP: the bot's work goes on"; else not_ok "SIGHUP: the bot's work goes on"; fi

# --- a SIGTERM the old agentfsd handles late ----------------------------------------------------
# Stopped when it is sent SIGTERM, it has not said "handover" in the state
# folder's lock when the next one gets there (as on a busy machine): the
# next one waits for it instead of refusing to start.
term_late()
{
	kill -STOP "$1" && kill -TERM "$1" || return 1
	(sleep 0.3; kill -CONT "$1") &
	late=$!
}
restart_step "SIGTERM handled late by the old agentfsd" term_late
wait "$late"

# --- a second agentfsd over the same state folder: it refuses, after its wait -----------------
cg=()
[ "$D_CGROUP" = config ] || cg=(--cgroup "$D_CGROUP")
if err=$("$AGENTFSD" --config "$D_CONFIG" --socket "$T/second.sock" --state "$D_STATE" "${cg[@]}" 2>&1); then
	not_ok "a second agentfsd over the same state folder does not start"
else
	ok "a second agentfsd over the same state folder does not start"
fi
like "$err" "another agentfsd uses the state folder $D_STATE" "it says another agentfsd uses the state folder"
is "$(afs --json status | jget pid)" "$D_PID" "the first one still serves"
is "$(mntid "$M")" "$mid" "the bot's mount is the same mount"

# --- a crash at each step of a handover ------------------------------------------------------
# the old server's steps: it dies after it stopped serving, or after it kept
# every open file; the new server's: after it took the descriptors, after it
# took over a mount, after every bot was restored
# (each one says where it died in STATE/crashed)
for at in handover handed; do
	kill -TERM "$D_PID"
	wait_until 10 eval '[ -z "$(daemon_pids)" ] && state_unlocked'
	AGENTFSD_TEST_CRASH=$at daemon_start || not_ok "start with a crash at $at armed"
	rm -f "$D_STATE/crashed"
	restart_step "the old server killed at '$at'" term_now
	is "$(cat "$D_STATE/crashed" 2>&1)" "$at" "it died at '$at'"
done
for at in taken adopting restored; do
	rm -f "$D_STATE/crashed"
	kill -TERM "$D_PID"
	AGENTFSD_TEST_CRASH=$at "$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" \
		"${cg[@]}" >/dev/null 2>&1
	wait_until 10 eval '[ -z "$(daemon_pids)" ] && state_unlocked'
	is "$(cat "$D_STATE/crashed" 2>&1)" "$at" "the new server died at '$at'"
	restart_step "the new server killed at '$at'" true
done

# --- the end of the work: every call answered, every byte there ------------------------------
total=$(rounds)
work_end
is "$WORK_RC" 0 "agentfs exec ends with its command's status 0"
work=$WORK
like "$work" "errors 0$" "the work saw no error ($work)"
[ -s "$W/out/work.err" ] && diag "$(head -5 "$W/out/work.err")"
rounds=$(printf '%s' "$work" | awk '{ print $2 }')
is "$(rounds)" "$rounds" "every line appended through the held descriptor is there"
if seq 0 $((rounds - 1)) | cmp -s - "$W/work/held"; then
	ok "in order, once each"
else
	not_ok "in order, once each"
fi
bad=0
for n in $(seq 0 $((rounds - 1))); do
	[ "$(cat "$W/work/f.$n" 2>/dev/null)" = "$n" ] || bad=$((bad + 1))
done
is "$bad" 0 "every file written holds what was written ($rounds files)"
gitout=$GIT
like "$gitout" "errors 0$" "git committed with no error ($gitout)"
if [ -s "$W/out/git.err" ]; then
	diag "$(head -5 "$W/out/git.err")"
	diag "$(grep -i 'refused\|cannot\|error\|fail' "$D_LOG" | tail -20)"
	diag "the bot's refusals:" "$(afs log w1 2>&1 | tail -20)"
fi
commits=$(printf '%s' "$gitout" | awk '{ print $2 }')
is "$(hgit -C "$W/repo" rev-list --count HEAD)" $((commits + 1)) "every commit is in the repository"
check "git fsck finds nothing wrong" hgit -C "$W/repo" fsck --no-progress
[ "$total" -gt 100 ] || diag "only $total rounds were made"

# --- a name change done but not answered: answered once, by the next agentfsd ---------------
# AGENTFSD_TEST_CRASH=after:OPCODES kills the server right after it did such a
# request (FUSE opcodes) and before it answered: the kernel sends it again to
# the next server, which must answer what was done, not do it twice;
# handle:OPCODES once a create also opened its handle.
crash_after()
{
	local ops=$1 desc=$2 op rc
	shift 2
	kill -TERM "$D_PID"
	wait_until 10 eval '[ -z "$(daemon_pids)" ] && state_unlocked'
	case $ops in *:*) ;; *) ops=after:$ops ;; esac
	AGENTFSD_TEST_CRASH=$ops daemon_start || not_ok "$desc: start with the crash armed"
	"$@" >"$T/crash.out" 2>&1 &
	op=$!
	wait_until 10 eval '[ -z "$(daemon_pids)" ] && state_unlocked' ||
		diag "$desc: the server did not die doing it"
	if [ -n "${crash_next:-}" ]; then
		# the request, sent again, kills the next server too, as it starts (so the start
		# fails): the third gets it a third time
		local lines
		lines=$(wc -l <"$D_LOG")
		AGENTFSD_TEST_CRASH=$crash_next daemon_start 2>/dev/null
		wait_until 10 eval '[ -z "$(daemon_pids)" ] && state_unlocked' ||
			diag "$desc: the second server did not die"
		like "$(tail -n +$((lines + 1)) "$D_LOG")" "dying before the answer to opcode [0-9]+, sent again" \
			"$desc: the second server was killed as it answered it again"
	fi
	daemon_start || not_ok "$desc: the next agentfsd starts"
	wait "$op"
	rc=$?
	is "$rc" 0 "$desc, the server killed before it answered: the call succeeds"
	[ "$rc" = 0 ] || diag "$(cat "$T/crash.out")"
}
mkdir -p "$W/cr"
echo a >"$W/cr/a"
echo gone >"$W/cr/gone"
own "$W/cr"
crash_after 9 "mkdir" mkdir "$M/cr/dir"
[ -d "$W/cr/dir" ] && ok "mkdir: the folder is there" || not_ok "mkdir: the folder is there"
crash_after 35 "create with O_EXCL" sh -c 'set -C; echo x >"$1"' sh "$M/cr/excl"
is "$(cat "$W/cr/excl" 2>&1)" x "create with O_EXCL: the file holds what was written"
# as the bot's user, a file made read-only and written through the descriptor that made
# it, as git makes its objects: opened again as the caller, a 0444 file would be EACCES
crash_after 35 "create with O_EXCL of a 0444 file, by the bot's command" \
	ex w1 --cwd "$W/cr" -- sh -c 'umask 222; set -C; echo x >ro'
is "$(cat "$W/cr/ro" 2>&1)/$(stat -c %a:%U "$W/cr/ro" 2>&1)" "x/444:$EX_USER" \
	"create with O_EXCL of a 0444 file: it holds what was written, mode and owner as made"
# killed once the create also opened its handle: the kernel never learns of that handle,
# which must not keep the file from being renamed onto a ref (it may write: the rename
# waits for every writer), as a bot's git commit renames its lock file
crash_after handle:35 "a ref's lock file made, then renamed onto the ref, by the bot's command" \
	ex w1 --cwd "$W/repo" -- sh -c 'set -C; git rev-parse HEAD >.git/refs/heads/side.lock &&
		mv .git/refs/heads/side.lock .git/refs/heads/side'
is "$(hgit -C "$W/repo" rev-parse side 2>&1)" "$(hgit -C "$W/repo" rev-parse HEAD)" \
	"the ref's lock file made with the server killed after its handle: renamed onto the ref"
crash_after 10 "unlink" rm "$M/cr/gone"
[ ! -e "$W/cr/gone" ] && ok "unlink: the file is gone" || not_ok "unlink: the file is gone"
crash_after 12,45 "rename" mv "$M/cr/a" "$M/cr/b"
is "$(cat "$W/cr/b" 2>&1)/$([ -e "$W/cr/a" ] && echo still)" "a/" "rename: moved once"
crash_after 13 "link" ln "$M/cr/b" "$M/cr/b2"
is "$(stat -c %h "$W/cr/b" 2>&1)" 2 "link: two names"
crash_after 6 "symlink" ln -s b "$M/cr/sym"
is "$(readlink "$W/cr/sym" 2>&1)" b "symlink: made"
crash_after 11 "rmdir" rmdir "$M/cr/dir"
[ ! -e "$W/cr/dir" ] && ok "rmdir: the folder is gone" || not_ok "rmdir: the folder is gone"
# during:OPCODES kills it right after the syscall returned, before its result was noted: a
# SIGKILL that comes while a thread is in a syscall takes effect there. The request comes
# again as "started, may have been done": done again, a rename would fail (its source is
# gone) and an unlink too
echo c >"$W/cr/c"
echo gone >"$W/cr/gone2"
own "$W/cr"
crash_after during:10 "unlink, killed in its syscall" rm "$M/cr/gone2"
[ ! -e "$W/cr/gone2" ] && ok "unlink, killed in its syscall: the file is gone" ||
	not_ok "unlink, killed in its syscall: the file is gone"
crash_after during:9 "mkdir, killed in its syscall" mkdir "$M/cr/dir2"
[ -d "$W/cr/dir2" ] && ok "mkdir, killed in its syscall: the folder is there" ||
	not_ok "mkdir, killed in its syscall: the folder is there"
crash_after during:11 "rmdir, killed in its syscall" rmdir "$M/cr/dir2"
[ ! -e "$W/cr/dir2" ] && ok "rmdir, killed in its syscall: the folder is gone" ||
	not_ok "rmdir, killed in its syscall: the folder is gone"
crash_after during:12,45 "rename, killed in its syscall" mv "$M/cr/c" "$M/cr/d"
is "$(cat "$W/cr/d" 2>&1)/$([ -e "$W/cr/c" ] && echo still)" "c/" "rename, killed in its syscall: moved once"
# sent again twice: the first server killed in its syscall, the second just before it
# answered (resent:OPCODES) from the first one's note; the third finds that note, two
# takeovers old, and answers from it. Done once, and the call succeeds.
echo e >"$W/cr/e"
echo gone >"$W/cr/gone3"
own "$W/cr"
crash_next=resent:10 crash_after during:10 "unlink, sent again twice" rm "$M/cr/gone3"
[ ! -e "$W/cr/gone3" ] && ok "unlink, sent again twice: the file is gone" ||
	not_ok "unlink, sent again twice: the file is gone"
crash_next=resent:9 crash_after during:9 "mkdir, sent again twice" mkdir "$M/cr/dir3"
[ -d "$W/cr/dir3" ] && ok "mkdir, sent again twice: the folder is there" ||
	not_ok "mkdir, sent again twice: the folder is there"
crash_next=resent:12,45 crash_after during:12,45 "rename, sent again twice" mv "$M/cr/e" "$M/cr/f"
is "$(cat "$W/cr/f" 2>&1)/$([ -e "$W/cr/e" ] && echo still)" "e/" "rename, sent again twice: moved once"
# as git commits: a ref's lock file renamed onto the ref (its content checked first)
crash_after during:12,45 "a ref's lock file renamed onto the ref, killed in its syscall, by the bot's command" \
	ex w1 --cwd "$W/repo" -- sh -c 'set -C; git rev-parse HEAD~1 >.git/refs/heads/side3.lock &&
		mv .git/refs/heads/side3.lock .git/refs/heads/side3'
is "$(hgit -C "$W/repo" rev-parse side3 2>&1)" "$(hgit -C "$W/repo" rev-parse HEAD~1)" \
	"the ref's lock file renamed with the server killed in its syscall: the ref is there"
# and the ref stays sealed as the rename left it: written in place, even with a content
# that passes (another commit's id over the one there), it is refused
if ex w1 --cwd "$W/repo" -- sh -c 'git rev-parse HEAD | dd of=.git/refs/heads/side3 conv=notrunc status=none' \
	>/dev/null 2>&1; then
	not_ok "the ref renamed in before the kill is sealed: a write in place is refused"
else
	ok "the ref renamed in before the kill is sealed: a write in place is refused"
fi
# an append through a mount served without passthrough ("passthrough": false in
# agentfsd.json: the server makes each write), killed in its syscall: made once
cp "$D_CONFIG" "$T/config.keep"
sed 's/}$/, "passthrough": false}/' "$T/config.keep" >"$D_CONFIG"
kill -TERM "$D_PID"
daemon_start || not_ok "agentfsd starts with passthrough false"
mkdir -p "$T/np"
echo one >"$T/np/f"
afs create --user "$EX_UID" np "$T/np" >/dev/null || not_ok "create a bot np"
wait_until 10 eval '[ "$(afs --json show np | jget "bot.mounts.0.state")" = mounted ]'
like "$(grep "$D_MNT/np/0: passthrough" "$D_LOG")" "passthrough off \\(nopassthrough\\)" \
	"with \"passthrough\": false its mount is served without passthrough"
crash_after during:16 "an append without passthrough, killed in its syscall" \
	sh -c 'echo two >>"$1"' sh "$D_MNT/np/0/f"
is "$(cat "$T/np/f" 2>&1 | tr '\n' ' ')" "one two " "an append killed in its syscall: made once"
crash_next=resent:16 crash_after during:16 "an append without passthrough, sent again twice" \
	sh -c 'echo three >>"$1"' sh "$D_MNT/np/0/f"
is "$(cat "$T/np/f" 2>&1 | tr '\n' ' ')" "one two three " "an append sent again twice: made once"
afs rm np >/dev/null || not_ok "remove the bot np"
mv "$T/config.keep" "$D_CONFIG"
kill -TERM "$D_PID"
daemon_start || not_ok "agentfsd starts with passthrough back"
is "$(mntid "$M")" "$mid" "after all that, the bot's mount is still the same mount"

# --- 50 bots with open files, restarted together ----------------------------------------------
files=()
for i in $(seq 50); do
	mkdir -p "$T/many/b$i"
	afs create --user "$EX_UID" "m$i" "$T/many/b$i" >/dev/null || not_ok "create m$i"
	files+=("$D_MNT/m$i/0/held")
done
wait_until 20 eval '[ "$(mounts_in "$D_MNT" | wc -l)" -ge 51 ]'
# one more, removed while it is held: found again by its handle after a SIGKILL
files+=("$D_MNT/m1/0/removed")
"$RC" hold "${files[@]}" -- sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' sh "$T/many/go" \
	>"$T/many/out" 2>&1 &
hold=$!
track_pid "$hold"
wait_until 10 eval '[ "$(cat "$T"/many/b*/held "$T"/many/b1/removed 2>/dev/null | wc -l)" -eq 51 ]'
rm "$T/many/b1/removed"
ids=$(for i in 1 25 50; do mntid "$D_MNT/m$i/0"; done)
# a SIGKILL first: no open file was kept, each is found again by its handle
kill -KILL "$D_PID"
wait_until 5 eval '[ -z "$(daemon_pids)" ] && state_unlocked'
daemon_start || not_ok "agentfsd starts after a SIGKILL with 50 bots"
kill -TERM "$D_PID"
daemon_start || not_ok "agentfsd starts after the 50 bots' restart"
wait_until 20 eval '[ "$(afs --json show m50 | jget "bot.mounts.0.state")" = mounted ]'
touch "$T/many/go"
wait "$hold"
is "$?" 0 "51 held files, across a SIGKILL and a restart: written, synced and read again"
is "$(cat "$T/many/out")" "held 51 errors 0" "each one, one removed meanwhile too, with no error"
is "$(for i in 1 25 50; do mntid "$D_MNT/m$i/0"; done)" "$ids" "their mounts are the same mounts"
for i in $(seq 50); do afs rm "m$i" >/dev/null; done

# --- a keeper killed ends its mounts as a stop does; the next start mounts afresh ----------------
kill -KILL "$D_PID" $(keeper_pids)
wait_until 5 eval '[ -z "$(daemon_pids)$(keeper_pids)" ] && state_unlocked'
if timeout 5 stat "$M" >/dev/null 2>&1; then
	not_ok "with the keeper gone, the mount's connection has ended"
else
	ok "with the keeper gone, the mount's connection has ended"
fi
daemon_start || not_ok "agentfsd starts after its keeper was killed"
wait_until 10 eval '[ "$(afs --json show w1 | jget "bot.mounts.0.state")" = mounted ]'
is "$(afs --json show w1 | jget bot.mounts.0.restarts)" 0 "it mounted the root afresh (no restart lived through)"
isnt_mid=$(mntid "$M")
[ "$isnt_mid" != "$mid" ] && ok "a new mount" || not_ok "a new mount"
is "$(timeout 5 cat "$W/repo/count" 2>&1)" "$(timeout 5 cat "$M/repo/count" 2>&1)" "which serves the folder"
is "$(mounts_in "$D_MNT/w1" | wc -l)" 1 "one mount, the stale one detached"

expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 5
wait_until 5 eval '[ -z "$(keeper_pids)" ]'
is "$(keeper_pids)" "" "shutdown: the keeper lets go and exits"
is "$(mounts_in "$T" | wc -l)" 0 "shutdown: nothing is left mounted"

done_testing
