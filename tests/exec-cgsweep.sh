#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-cgsweep: no sandbox's cgroup outlives its sandbox, whatever happens to
# agentfsd. A cgroup named as a sandbox's (BOT.ID) that a dead daemon left in
# the base, with a process in it, is killed and removed at the next start,
# and said so in the log; folders of other names there are left alone. A
# sandbox still running keeps its cgroup and its processes across a
# handover (SIGTERM) and a stop and start. An ended sandbox's cgroup that is
# still busy (AGENTFSD_TEST_CGROUP_BUSY makes every removal on the loop say
# EBUSY) waits while the daemon runs, and the stop removes it. A second
# agentfsd given the same base removes nothing there, and says why.
. "$top_srcdir/tests/exec-lib.sh"

[ -n "$D_CGROUP" ] || skip_all "the host's cgroups cannot be written here"

# in_all NAME TEST...: `test TEST... BASE/NAME` (-d, ! -e) holds in each hierarchy's base
in_all()
{
	local d n=$1
	shift
	for d in $D_CGROUP_DIRS; do
		test "$@" "$d/$n" || return 1
	done
}

# sandbox_cgroups: the names of sandboxes' cgroups in the (first) base, one a line
sandbox_cgroups()
{
	ls "${D_CGROUP_DIRS%% *}" | grep -E '^[A-Za-z0-9_][A-Za-z0-9_-]*\.[0-9a-f]{16}$'
}

# --- a) what a dead daemon left ----------------------------------------------------
left=w1.00112233445566ff
others="keep-me w1.0011 w1.00112233445566FF"
for d in $D_CGROUP_DIRS; do
	mkdir -p "$d/$left" || bail_out "cannot make $d/$left"
	for o in $others; do
		mkdir "$d/$o" || bail_out "cannot make $d/$o"
	done
done
# a process of the dead sandbox, not our child (its parent's end reparents it)
sp=$(sh -c 'sleep 9862 </dev/null >/dev/null 2>&1 & echo $!')
for d in $D_CGROUP_DIRS; do
	echo "$sp" >"$d/$left/cgroup.procs" || bail_out "cannot put $sp in $d/$left"
done
grep -q "$left" "/proc/$sp/cgroup" || bail_out "process $sp is not in $left"
daemon_start || bail_out "agentfsd did not start"
if wait_until 5 in_all "$left" ! -e; then
	ok "a sandbox cgroup a dead agentfsd left in the base is gone after the next start"
else
	not_ok "a sandbox cgroup a dead agentfsd left in the base is gone after the next start"
	diag "$(ls -d $D_CGROUP_DIRS 2>&1; ls $D_CGROUP_DIRS 2>&1)"
fi
wait_until 5 eval '! kill -0 '"$sp"' 2>/dev/null' && ok "the process in it was killed" ||
	not_ok "the process in it was killed"
for o in $others; do
	check "the folder $o (not a sandbox's name) is left alone" in_all "$o" -d
done
like "$(cat "$D_LOG")" "$left is of a sandbox no agentfsd follows .*: its 1 process killed, and it removed" \
	"the log says what was removed, and why"

# --- c) a sandbox that lives on keeps its cgroup ---------------------------------------
W="$T/ws"
mkdir -p "$W"
own "$W"
check "create w1" afs create w1 "$W" --sandbox workspace-write --no-network
"$AGENTFS" --socket "$D_SOCK" exec w1 -- sleep 9863 </dev/null >/dev/null 2>&1 &
holder=$!
track_pid "$holder"
wait_until 10 pgrep -fx "sleep 9863" >/dev/null || bail_out "the sandbox did not start"
spid=$(pgrep -fx "sleep 9863" | head -n 1)
cg=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*:\(.*\)$/\1/p; s/^0::\(.*\)$/\1/p' "/proc/$spid/cgroup" | head -n 1)
name=${cg##*/}
like "$name" '^w1\.[0-9a-f]{16}$' "the sandbox runs in its cgroup $name"
lives_on()
{
	check "$1: the sandbox's cgroup is still there" in_all "$name" -d
	check "$1: its process still runs, in it" grep -q "$name" "/proc/$spid/cgroup"
	is "$(afs ps -q)" "$holder" "$1: the daemon follows it"
}
left2=w1.aabbccddeeff0011
for d in $D_CGROUP_DIRS; do
	mkdir "$d/$left2" || bail_out "cannot make $d/$left2"
done
kill -TERM "$D_PID"
daemon_start || bail_out "agentfsd did not start after the handover"
grep -q "handing the mounts over" "$D_LOG" || diag "SIGTERM was not a handover here"
lives_on "after a handover"
wait_until 5 in_all "$left2" ! -e && ok "the next agentfsd of a handover removes a leftover too" ||
	not_ok "the next agentfsd of a handover removes a leftover too"
# another agentfsd given the same base: it may not touch what it does not know
for d in $D_CGROUP_DIRS; do
	mkdir "$d/$left2" || bail_out "cannot make $d/$left2"
done
"$AGENTFSD" --config "$D_CONFIG" --socket "$T/two.sock" --state "$T/two" --cgroup "$D_CGROUP" ||
	bail_out "a second agentfsd did not start"
lives_on "with a second agentfsd on the same base"
check "... which leaves a leftover there alone" in_all "$left2" -d
like "$(cat "$D_LOG")" "another agentfsd uses the cgroup .*: cgroups of ended sandboxes left there are not removed" \
	"... and says why"
"$AGENTFS" --socket "$T/two.sock" shutdown >/dev/null 2>&1
wait_until 10 eval '[ -z "$(daemon_pids "$T/two.sock")" ]' || bail_out "the second agentfsd did not stop"
ex_daemon_again
lives_on "after a stop and a start"
wait_until 5 in_all "$left2" ! -e && ok "a start alone on the base removes the leftover" ||
	not_ok "a start alone on the base removes the leftover"
unlike "$(cat "$D_LOG")" "$name is of a sandbox no agentfsd follows" "the log names no removal of it"
kill "$holder"
wait "$holder" 2>/dev/null
wait_until 5 in_all "$name" ! -e && ok "its cgroup goes when it ends" ||
	not_ok "its cgroup goes when it ends"

# --- b) a busy cgroup at the stop ----------------------------------------------------
afs shutdown >/dev/null 2>&1
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
AGENTFSD_TEST_CGROUP_BUSY=1 daemon_start || bail_out "agentfsd did not start with the hook"
before=$(sandbox_cgroups)
is "$(ex w1 -- echo ran </dev/null 2>&1)" ran "a sandbox runs, and ends"
wait_until 5 eval '[ -z "$(afs ps -q)" ]' || bail_out "the daemon still follows the sandbox"
sleep 0.3
busy=$(sandbox_cgroups | grep -vxF -e "$before")
like "$busy" '^w1\.[0-9a-f]{16}$' "its cgroup, reported busy, waits while the daemon runs ($busy)"
afs shutdown >/dev/null 2>&1
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
check "the stop removed it" in_all "${busy:-none}" ! -e
unlike "$(cat "$D_LOG")" "left in place" "the log says nothing was left in place"
is "$(sandbox_cgroups)" "" "no sandbox cgroup is left in the base"

done_testing
