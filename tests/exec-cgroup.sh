#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-cgroup: each sandbox runs in a cgroup of its own with its bot's memory
# and pids limits (create/configure --memory and --pids, else agentfsd's
# defaults): a fork bomb or a memory hog stops at its sandbox's bound; a
# bot's bots take no more than it; agentfs ps and show say what each uses;
# the cgroup goes with the sandbox. Where agentfsd is told to make none
# ("cgroup": ""), sandboxes run without limits; where it cannot make them,
# nothing runs, and it says why and what to do. cgroup v2 or the v1 memory
# and pids hierarchies, whichever the host has (tests/daemon-lib.sh).
. "$top_srcdir/tests/exec-lib.sh"

[ -n "$D_CGROUP" ] || skip_all "the host's cgroups cannot be written here"
[ -n "$PY" ] || skip_all "python3 is missing"
W="$T/ws"
mkdir -p "$W/sub" "$T/w2"
own "$W" "$T/w2"
daemon_start || bail_out "agentfsd did not start"
mode=$(afs --json status | jget cgroups)
like "$mode" "^v[12]\$" "status: agentfsd puts sandboxes in cgroups ($mode)"
check "create w1 --memory 64M --pids 32" afs create w1 "$W" --no-network --memory 64M --pids 32
check "create w2 with the defaults" afs create w2 "$T/w2" --no-network
is "$(afs --json show w1 | jget bot.limits.memory_max)" 67108864 "show: w1's sandboxes get 64 MiB"
is "$(afs --json show w1 | jget bot.limits.pids_max)" 32 "... and 32 processes"
half=$(awk '/^MemTotal:/ { printf "%.0f", $2 * 1024 / 2 }' /proc/meminfo)
is "$(afs --json show w2 | jget bot.limits.memory_max)" "$half" "by default, half the host's memory"
is "$(afs --json show w2 | jget bot.limits.pids_max)" 4096 "and 4096 processes"
like "$(afs show w1)" "^limits +64.0 MiB memory, 32 processes, each sandbox" "agentfs show prints them"

# --- a running sandbox is in its cgroup -----------------------------------------
"$AGENTFS" --socket "$D_SOCK" exec w1 -- sleep 9861 </dev/null >/dev/null 2>&1 &
holder=$!
track_pid "$holder"
wait_until 10 pgrep -fx "sleep 9861" >/dev/null || bail_out "the sandbox did not start"
spid=$(pgrep -fx "sleep 9861" | head -n 1)
if [ "$mode" = v2 ]; then
	cg=$(sed -n 's/^0:://p' "/proc/$spid/cgroup")
	mem_file=/sys/fs/cgroup$cg/memory.max pids_file=/sys/fs/cgroup$cg/pids.max
	swap_file=/sys/fs/cgroup$cg/memory.swap.max swap_want=0
else
	cg=$(sed -n 's/^[0-9]*:memory://p' "/proc/$spid/cgroup")
	mem_file=/sys/fs/cgroup/memory$cg/memory.limit_in_bytes
	swap_file=/sys/fs/cgroup/memory$cg/memory.memsw.limit_in_bytes swap_want=67108864
	pids_file=/sys/fs/cgroup/pids$(sed -n 's/^[0-9]*:pids://p' "/proc/$spid/cgroup")/pids.max
fi
like "$cg" "^$D_CGROUP/w1\.[0-9a-f]{16}\$" "the command runs in a cgroup of its own, $cg"
is "$(cat "$mem_file" 2>&1)" 67108864 "its memory limit is the bot's"
# the limit holds for swap too: at its limit a cgroup's pages go to swap
if [ -e "$swap_file" ]; then
	is "$(cat "$swap_file" 2>&1)" "$swap_want" "swap is bounded by the same limit (${swap_file##*/})"
else
	skip "this kernel accounts no swap (no ${swap_file##*/})"
fi
is "$(cat "$pids_file" 2>&1)" 32 "its pids limit is the bot's"
ps_json=$(afs --json ps)
is "$(printf '%s' "$ps_json" | jget sandboxes.0.bot)" w1 "ps lists it"
is "$(printf '%s' "$ps_json" | jget sandboxes.0.pid)" "$holder" "... with its exec's pid"
is "$(printf '%s' "$ps_json" | jget sandboxes.0.command.1)" 9861 "... its command"
is "$(printf '%s' "$ps_json" | jget sandboxes.0.user)" "$EX_USER" "... its user"
is "$(printf '%s' "$ps_json" | jget sandboxes.0.pids_max)" 32 "... its limits"
like "$(printf '%s' "$ps_json" | jget sandboxes.0.pids)" '^[1-9]' "... and how many processes it has now"
like "$(afs ps)" "^w1 +$holder +$EX_USER .* sleep 9861\$" "agentfs ps prints a line for it"
is "$(afs ps -q)" "$holder" "agentfs ps -q prints its pid"
kill "$holder"
wait "$holder" 2>/dev/null
wait_until 5 eval '[ ! -e "$mem_file" ]' && ok "its cgroup goes when it ends" ||
	not_ok "its cgroup goes when it ends"

# --- the bounds hold ----------------------------------------------------------------
out=$(ex w1 -- "$PY" -c '
import os, time
n = 0
for i in range(64):
    try:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
    except OSError as e:
        print("refused", e.strerror)
        break
print("forked", n)' </dev/null 2>&1)
like "$out" "refused Resource temporarily unavailable" "a fork bomb stops at the sandbox's 32 processes"
like "$out" "^forked ([0-9]|[12][0-9])\$" "... fewer than 32 forks worked ($(printf '%s' "$out" | tail -n 1))"
out=$(ex w1 -- "$PY" -c '
b = bytearray(256 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
print("allocated")' </dev/null 2>&1)
rc=$?
[ "$rc" = 137 ] || [ "$rc" = 1 ] && ! printf '%s' "$out" | grep -q allocated &&
	ok "256 MiB in a 64 MiB sandbox: stopped (status $rc)" ||
	{ not_ok "256 MiB in a 64 MiB sandbox: stopped"; diag "status $rc: $out"; }
is "$(ex w2 -- true </dev/null; echo $?)" 0 "another bot's sandbox still runs"

# --- configure, and a bot's bots --------------------------------------------------------
check "configure w1 --memory 128M" afs configure w1 --memory 128M
is "$(afs --json show w1 | jget bot.limits.memory_max)" 134217728 "show: 128 MiB now"
r=$(ex w1 -- "$AGENTFS" --json create c1 "$W/sub" --memory 1G </dev/null 2>/dev/null)
expect_error "a bot cannot give its bot more memory than its own" forbidden "$r"
like "$(printf '%s' "$r" | jget error.message)" "memory_max 1073741824 is above w1's 134217728" \
	"... saying so"
expect_ok "a bot's bot without --memory" \
	"$(ex w1 -- "$AGENTFS" --json create c1 "$W/sub" </dev/null 2>/dev/null)"
is "$(afs --json show c1 | jget bot.limits.memory_max)" 134217728 "... takes its maker's limits"
expect_error "configure of w1 below its bot's limits is refused" forbidden \
	"$(afs --json configure w1 --pids 16)"
expect_error "--memory below 16 MiB is refused" bad_value "$(afs --json configure w1 --memory 1M)"
afs configure w1 --memory 12Q >/dev/null 2>&1
is "$?" 125 "--memory 12Q is a usage error (125)"

# --- no cgroups, and cgroups that cannot be made ---------------------------------------------
saved=$D_CGROUP
D_CGROUP=
ex_daemon_again
is "$(afs --json status | jget cgroups)" off "with --cgroup \"\": no cgroups"
is "$(ex w1 -- echo ran </dev/null 2>&1)" ran "sandboxes run, without limits"
like "$(afs show w1)" "^limits .*not applied" "show says the limits are not applied"
D_CGROUP="$saved/cgroup.procs/x"
ex_daemon_again
is "$(afs --json status | jget cgroups)" unusable "a cgroup base that cannot be made: status says unusable"
err=$(ex w1 -- sh -c 'echo ran >"$1/ran.cg"' sh "$W" </dev/null 2>&1)
rc=$?
is "$rc" 125 "exec is refused (125)"
like "$err" "no_cgroup: .*nothing was run.*\"cgroup\"" "... saying why, that nothing ran, and what to set"
check "... and nothing ran" test ! -e "$W/ran.cg"
D_CGROUP=$saved
ex_daemon_again
is "$(pgrep -fa "bwrap .*$T/")" "" "no sandbox is left running"

done_testing
