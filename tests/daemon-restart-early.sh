#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-restart-early: a mount taken over at a restart serves before its
# guard is open (fusefs/lateguard.c), and a pending guard is never "no
# guard". The next agentfsd is started with AGENTFSD_TEST_GUARD_DELAY (each
# guard opens that many ms late), so the window is long enough to hit: reads,
# lookups and listings are answered while the guard is pending; a write into
# .git/hooks made in that window waits for the guard and is refused by its
# rule (D3), logged after the guard is ready, never allowed; a writer that
# tries the same file again and again right across a restart never
# succeeds; and after it all, git on the host runs no hook. A guard that
# cannot be opened (AGENTFSD_TEST_GUARD_FAIL) leaves reads served and every
# write-ish request refused. A start waits for a dying daemon's state lock.
. "$top_srcdir/tests/daemon-lib.sh"

command -v git >/dev/null || skip_all "git is missing"

mkdir -p "$T/a"
git init -q "$T/a/repo" || bail_out "git init failed"
(cd "$T/a/repo" && git config user.name Op && git config user.email op@test.invalid &&
	echo one >f && git add f && git commit -qm one) || bail_out "cannot commit"
echo data >"$T/a/file"
HOOK="$T/a/repo/.git/hooks/pre-commit"

daemon_start || bail_out "agentfsd did not start"
expect_ok "create A" "$(afs --json create --user 65534 A "$T/a")"
MA="$D_MNT/A/0"
wait_until 10 test -e "$MA/file" || bail_out "A's mount does not serve"

ready_lines() { grep -c "$MA: taken over; its guard is ready" "$D_LOG"; }

# --- the pending window -------------------------------------------------------------
kill -TERM "$D_PID"
AGENTFSD_TEST_GUARD_DELAY=4000 daemon_start || bail_out "the next agentfsd did not start"
wait_until 10 eval '[ "$(afs --json show A | jget bot.mounts.0.state)" = mounted ]' ||
	bail_out "A is not restored"
# Everything below until the write is answered before the guard is ready; the
# log says when it is ready (one line per mount taken over).
if [ "$(ready_lines)" = 0 ]; then
	is "$(cat "$MA/file")" data "a read is answered while the guard is pending"
	like "$(ls "$MA/repo/.git/hooks")" "sample" "a listing of .git/hooks is answered while the guard is pending"
	check "... before the guard is ready" [ "$(ready_lines)" = 0 ]
	if sh -c 'echo evil >"$1/repo/.git/hooks/x"' sh "$MA" 2>"$T/x.err"; then
		not_ok "a create in .git/hooks made while the guard is pending is refused"
	else
		ok "a create in .git/hooks made while the guard is pending is refused"
	fi
	like "$(cat "$T/x.err")" "Read-only file system" "with EROFS, as the guard refuses"
	check "nothing was written on the host" [ ! -e "$T/a/repo/.git/hooks/x" ]
	check "the write waited for the guard: it is ready when the write is answered" \
		[ "$(ready_lines)" = 1 ]
	like "$(afs log A)" "refused create of $T/a/repo/.git/hooks/x: rule D3" \
		"the refusal names the guard's rule (D3)"
	line_ready=$(grep -n "$MA: taken over; its guard is ready" "$D_LOG" | head -n 1 | cut -d: -f1)
	line_refused=$(grep -n "$MA: refused create of /repo/.git/hooks/x" "$D_LOG" | head -n 1 | cut -d: -f1)
	after_ready() { [ -n "$line_ready" ] && [ -n "$line_refused" ] && [ "$line_refused" -gt "$line_ready" ]; }
	check "the guard decided it once ready (its log line comes after the ready one)" after_ready
else
	# a machine so busy that the 4 s window passed before the first look
	for i in $(seq 9); do skip "the guard was ready before the first request (busy machine)"; done
fi

# --- right across a restart ------------------------------------------------------------
wait_until 10 eval '[ "$(ready_lines)" = 1 ]' || bail_out "the guard never got ready"
# A writer through A's mount, right across the next restart (no delay): every
# try is refused.
: >"$T/tries"
: >"$T/allowed"
(
	while [ ! -e "$T/stop" ]; do
		if sh -c 'h=$1/repo/.git/hooks/pre-commit
			printf "#!/bin/sh\ntouch \"$2\"\n" >"$h" && chmod 755 "$h"' \
			sh "$MA" "$T/ran" 2>/dev/null; then
			echo allowed >>"$T/allowed"
		fi
		echo >>"$T/tries"
	done
) &
writer=$!
track_pid "$writer"
wait_until 10 eval '[ "$(wc -l <"$T/tries")" -gt 5 ]' || bail_out "the writer does not run"

kill -TERM "$D_PID"
daemon_start || bail_out "the next agentfsd did not start"
wait_until 10 eval '[ "$(ready_lines)" = 2 ]' || bail_out "the guard never got ready"
n=$(wc -l <"$T/tries")
wait_until 10 eval '[ "$(wc -l <"$T/tries")" -gt $((n + 5)) ]' || bail_out "the writer stopped"
: >"$T/stop"
wait "$writer"
is "$(wc -l <"$T/allowed")" 0 "a write of the hook tried again and again across the restart: never allowed"
check "the hook does not exist on the host" [ ! -e "$HOOK" ]
like "$(grep "refused" "$D_LOG")" "$MA: refused create of /repo/.git/hooks/pre-commit: rule D3" \
	"the writer's refusals are logged with the rule"

# --- the person's git on the host runs nothing ---------------------------------------------
check "git commit on the host" sh -c 'cd "$1" && echo two >f && git commit -qam two' sh "$T/a/repo"
check "git on the host ran no hook" [ ! -e "$T/ran" ]

# --- a guard that cannot be opened --------------------------------------------------------
# (AGENTFSD_TEST_GUARD_FAIL): the mount goes on serving reads, and every
# request that needs a decision is refused, also one the guard would allow;
# the next restart opens the guard and the same write is allowed.
kill -TERM "$D_PID"
AGENTFSD_TEST_GUARD_FAIL=1 daemon_start || bail_out "the next agentfsd did not start"
wait_until 10 grep -q "$MA: taken over, but its guard cannot be opened" "$D_LOG"
like "$(grep "$MA: taken over, but its guard cannot be opened" "$D_LOG")" \
	"AGENTFSD_TEST_GUARD_FAIL is set; every request that needs a decision is refused" \
	"a guard that cannot be opened is logged, with what follows"
is "$(cat "$MA/file")" data "... the mount still serves reads"
if sh -c 'echo new >"$1/new"' sh "$MA" 2>"$T/new.err"; then
	not_ok "... and refuses a plain create, which no rule refuses: nothing is undecided"
else
	ok "... and refuses a plain create, which no rule refuses: nothing is undecided"
fi
like "$(cat "$T/new.err")" "Read-only file system" "... with EROFS"
check "... nothing was made on the host" [ ! -e "$T/a/new" ]
kill -TERM "$D_PID"
daemon_start || bail_out "the next agentfsd did not start"
check "the next restart opens the guard, and the same create is allowed" sh -c 'echo new >"$1/new"' sh "$MA"
check "... on the host" [ -e "$T/a/new" ]

# --- a start right after kill -9: the dying daemon's lock ---------------------------------
# A killed agentfsd holds the state folder's lock until the kernel has torn
# it down; the next one started meanwhile waits for it. Here a process that
# is not agentfsd holds it for a second, under the note of a daemon that is
# gone ("serving PID", a pid above pid_max); then one that serves (this
# shell, alive) holds it: refused at once.
afs shutdown >/dev/null 2>&1
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
printf 'serving 2147483646\n' >"$D_STATE/lock"
flock "$D_STATE/lock" sleep 1 &
holder=$!
track_pid "$holder"
wait_until 5 eval '! flock -n "$D_STATE/lock" true' || bail_out "the lock is not held"
check "a start while a dead daemon's lock is still held waits for it, then serves" daemon_start
wait "$holder"
afs shutdown >/dev/null 2>&1
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
flock "$D_STATE/lock" sh -c 'printf "serving %s\n" "$1" >"$2/lock"; sleep 3' sh "$$" "$D_STATE" &
holder=$!
track_pid "$holder"
wait_until 5 eval 'grep -q "serving $$" "$D_STATE/lock"' || bail_out "the lock is not held"
t0=$(date +%s)
like "$(daemon_start 2>&1)" "another agentfsd uses the state folder" \
	"a start while a live agentfsd holds the lock is refused"
check "... at once, not after the lock is let go" [ "$(($(date +%s) - t0))" -lt 3 ]
wait "$holder"

done_testing
