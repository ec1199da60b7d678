#!/bin/bash
# SPDX-License-Identifier: MIT
# Run one TAP test script for automake's TAP driver. A test that cannot run
# here (no root, no /dev/fuse, no valgrind...) prints "1..0 # SKIP why" and
# exits 77; the driver counts the plan as a skip but would call the status
# an error, so 77 is passed on as 0. Any other status is kept.
#
# A test that has not ended after AGENTFS_TEST_TIMEOUT seconds (900 unless
# set; 0 turns the watch off) is ended here: what it and its processes were
# doing is printed, then "Bail out!", so the run fails with that test named
# instead of hanging until something outside kills everything. The script
# gets TERM (its trap unmounts and ends what it started) together with the
# command it waits on; what is still running a minute later gets KILL. Only
# the script and its descendants are signalled, by pid. Each log ends with
# the test's status and how long it ran.
limit=${AGENTFS_TEST_TIMEOUT:-900}

# descendants PID: the pids under PID, from the process table
descendants()
{
	ps -eo pid=,ppid= 2>/dev/null | awk -v top="$1" '
		{ kid[$2] = kid[$2] " " $1 }
		END {
			n = split(kid[top], q, " ")
			for (i = 1; i <= n; i++) {
				printf "%s ", q[i]
				m = split(kid[q[i]], more, " ")
				for (j = 1; j <= m; j++) q[++n] = more[j]
			}
		}'
}

# watch: in a job beside the test (the wrapper's other child), end the test
# and its processes once the limit is reached
watch()
{
	local me=$BASHPID pid i tree
	# ended by the wrapper when the test ends: the sleep goes too
	trap 'kill $! 2>/dev/null; exit 0' TERM
	sleep "$limit" >/dev/null 2>&1 &
	wait $! 2>/dev/null || exit 0
	trap - TERM
	pid=$(ps -o pid= --ppid "$$" 2>/dev/null | awk -v me="$me" '$1 != me { print $1 }')
	[ -n "$pid" ] || exit 0
	tree=$(descendants "$pid")
	echo "# tap-skip: the test has run for $limit s (AGENTFS_TEST_TIMEOUT); its processes:"
	# shellcheck disable=SC2086 # the pids are separate words
	ps -o pid,ppid,stat,wchan:24,etimes,args -p "$(echo $pid $tree | tr ' ' ,)" 2>&1 |
		sed 's/^/#   /'
	echo "Bail out! no end after $limit s: ended (the processes above were running)"
	# shellcheck disable=SC2086
	kill -TERM "$pid" $tree 2>/dev/null
	i=0
	while [ "$i" -lt 60 ] && kill -0 "$pid" 2>/dev/null; do
		sleep 1 >/dev/null 2>&1
		i=$((i + 1))
	done
	kill -0 "$pid" 2>/dev/null || exit 0
	tree=$(descendants "$pid")
	echo "# tap-skip: still running a minute after TERM: KILL"
	# shellcheck disable=SC2086
	kill -KILL "$pid" $tree 2>/dev/null
}

# The test runs in the foreground (a job started with & would ignore SIGINT
# and read /dev/null); the watch is the job.
watcher=
if [ "$limit" -gt 0 ] 2>/dev/null; then
	watch &
	watcher=$!
fi
start=$SECONDS
bash "$@"
rc=$?
echo "# tap-skip: ${1##*/} ended with status $rc after $((SECONDS - start)) s"
if [ -n "$watcher" ]; then
	kill "$watcher" 2>/dev/null
	wait "$watcher" 2>/dev/null
fi
[ "$rc" -eq 77 ] && exit 0
exit "$rc"
