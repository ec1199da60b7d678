#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-unsure: a daemon that cannot hold a running sandbox's process at its
# start (pidfd_open fails: out of descriptors, from tests/fault-inject.so's
# FAULT_PIDFD) does not take that for the sandbox having ended. It used to:
# the record was dropped from STATE/sandboxes.json and the sandbox's cgroup
# ended, killing the bot's running command. Now the sandbox runs on, its
# record stays on disk, and the next daemon takes it back: rm refuses the
# bot while it runs, and rm --force ends it.
. "$top_srcdir/tests/exec-lib.sh"

FAULT_SO="$top_builddir/tests/fault-inject.so"
[ -f "$FAULT_SO" ] || bail_out "$FAULT_SO is not built (make check builds it)"
# A sanitizer's runtime must come first: the library cannot be preloaded.
ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib[at]san' && skip_all "agentfsd is built with a sanitizer"

W="$T/ws"
mkdir -p "$W"
own "$W"
daemon_start || bail_out "agentfsd did not start"
check "create keep" afs create keep "$W" --no-network
"$AGENTFS" --socket "$D_SOCK" exec keep -- sleep 9873 </dev/null >/dev/null 2>&1 &
holder=$!
track_pid "$holder"
wait_until 10 eval '[ -n "$(afs --json show keep | jget bot.sandboxes.0.bwrap)" ] &&
	pgrep -f "^sleep 9873" >/dev/null' || bail_out "the sandbox of keep did not start"
afs shutdown >/dev/null
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json" || bail_out "sandboxes.json does not list it"

LD_PRELOAD="$FAULT_SO" FAULT_PIDFD=1 FAULT_LOG="$T/faults" daemon_start ||
	bail_out "agentfsd does not start with the fault library"
is "$(restored_state keep)" mounted "a daemon that cannot open pidfds starts with keep"
like "$(cat "$T/faults" 2>/dev/null)" pidfd_open "... (the fault was hit)"
sleep 0.5
check "... its sandbox's exec still runs" kill -0 "$holder"
check "... and its command" pgrep -f "^sleep 9873"
check "... and sandboxes.json still lists it" grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json"
afs shutdown >/dev/null
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
check "... also after that daemon stops" grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json"

# The same when sandboxes.json itself cannot be read at start (out of
# descriptors): it used to be read as empty, rewritten without the sandbox,
# and the sandbox's cgroup swept (its command killed). Now the file is
# kept, nothing is swept, rm is refused (it cannot tell), and the file is
# read again once it can be: here, when the fault goes.
: >"$T/fault-on"
from=$(($(wc -l <"$D_LOG") + 1))
LD_PRELOAD="$FAULT_SO" FAULT_OPEN_NAME=sandboxes.json FAULT_OPEN_WHILE="$T/fault-on" \
	FAULT_LOG="$T/faults2" daemon_start || bail_out "agentfsd does not start with the fault library"
is "$(restored_state keep)" mounted "a daemon that cannot read sandboxes.json starts with keep"
like "$(cat "$T/faults2" 2>/dev/null)" open "... (the fault was hit)"
like "$(tail -n +"$from" "$D_LOG")" "cannot read .*sandboxes.json: Too many open files" \
	"... and its log says it cannot read sandboxes.json, and why"
sleep 0.5
check "... its sandbox's exec still runs" kill -0 "$holder"
check "... and its command (its cgroup not swept)" pgrep -f "^sleep 9873"
check "... sandboxes.json still lists it" grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json"
check "... another exec of keep works meanwhile" \
	"$AGENTFS" --socket "$D_SOCK" exec keep -- true </dev/null
out=$(afs --json rm keep)
expect_error "... rm of keep is refused: the daemon cannot tell" running "$out"
like "$out" "sandboxes.json could not be read" "... and says why"
rm -f "$T/fault-on"
out=$(afs --json rm keep)
expect_error "once it can be read, rm of keep is refused: its sandbox runs" running "$out"
like "$out" "$holder" "... and names it"
like "$(afs --json show keep | jget bot.sandboxes.0.pid)" "^$holder\$" "... it is taken back"
afs shutdown >/dev/null
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
check "... and sandboxes.json lists it after that daemon stops" \
	grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json"

daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state keep)" mounted "the next daemon starts with keep"
like "$(afs --json show keep | jget bot.sandboxes.0.pid)" "^$holder\$" "... and takes its sandbox back"
expect_error "... so rm of keep is refused: its sandbox runs" running "$(afs --json rm keep)"
expect_ok "rm --force of keep" "$(afs --json rm --force keep)"
if wait_until 8 eval '! kill -0 '"$holder"' 2>/dev/null'; then
	ok "... ends the sandbox"
else
	not_ok "... ends the sandbox"
	kill -KILL "$holder"
fi
wait "$holder" 2>/dev/null
wait_until 5 eval '! pgrep -f "^sleep 9873" >/dev/null' && ok "no process of it is left" ||
	not_ok "no process of it is left"

done_testing
