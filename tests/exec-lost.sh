#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-lost: a bot's root unmounted from outside is never used silently:
# the daemon notices (also while a sandbox still holds the mount), show says
# "lost", exec refuses saying how to recover, and configure or a restart of
# the daemon mounts it again.
. "$top_srcdir/tests/exec-lib.sh"

ex_start_w1
mp=$(afs --json show w1 | jget bot.mounts.0.mountpoint)
check "exec works" ex w1 -- touch "$W/before"

state() { afs --json show w1 | jget bot.mounts.0.state; }

# --- unmounted while a sandbox holds it (the FUSE connection lives on) -------
"$AGENTFS" --socket "$D_SOCK" exec w1 -- sleep 60 </dev/null >/dev/null 2>&1 &
holder=$!
track_pid "$holder"
wait_until 10 pgrep -f "sleep 60" >/dev/null
check "umount -l the root's mount from outside" umount -l "$mp"
if wait_until 5 eval '[ "$(state)" = lost ]'; then
	ok "show says lost (noticed with a sandbox still holding it)"
else
	not_ok "show says lost (noticed with a sandbox still holding it)"
	diag "state: $(state)"
fi
like "$(afs show w1)" "\(lost\): unmounted from outside" "agentfs show prints lost and why"
out=$(ex w1 -- sh -c 'echo stale >"$1/stale"' sh "$W" </dev/null 2>&1)
rc=$?
like "$out" "unmounted from outside.*agentfs configure w1" "exec refuses, saying how to recover"
[ "$rc" -ne 0 ] && ok "exec fails (status $rc)" || not_ok "exec fails"
[ ! -e "$mp/stale" ] && [ ! -e "$W/stale" ] && ok "nothing was written (not in the bare mount folder either)" ||
	not_ok "nothing was written (not in the bare mount folder either)"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
check "agentfs configure w1" afs configure w1
is "$(state)" mounted "after configure the root is mounted again"
check "exec works again" ex w1 -- touch "$W/after"
is "$(stat -c %u "$W/after" 2>&1)" "$EX_UID" "and writes the host folder as the bot's user"

# --- unmounted with nothing holding it; a restart recovers --------------------
check "fusermount3 -uz the root's mount from outside" fusermount3 -uz "$mp"
if wait_until 5 eval '[ "$(state)" = lost ]'; then
	ok "show says lost"
else
	not_ok "show says lost"
	diag "state: $(state)"
fi
out=$(ex w1 -- true </dev/null 2>&1)
like "$out" "unmounted from outside" "exec refuses"
daemon_kill TERM
daemon_wait_gone 10
daemon_start || bail_out "agentfsd did not restart"
is "$(restored_state w1)" mounted "a restart of the daemon mounts it again"
check "exec works after the restart" ex w1 -- touch "$W/restarted"

done_testing
