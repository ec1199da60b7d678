#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-keeper: the keeper ends while agentfsd runs (SIGKILL, as the OOM
# killer would): agentfsd says so at once, starts a new one and gives it
# every descriptor the old one held, so that the next crash of agentfsd is
# still invisible to a bot at work (appending through a descriptor it holds,
# tests/handover-lib.sh). Then twice in a row, and agentfsd killed again.
# agentfs shutdown ends the keeper for good: no new one is started.
. "$top_srcdir/tests/exec-lib.sh"
. "$top_srcdir/tests/handover-lib.sh"

# the log since line $1
log_since() { tail -n +"$(($1 + 1))" "$D_LOG"; }
log_lines() { wc -l <"$D_LOG"; }

# SIGKILL the keeper $1 (a pid); true once another one runs and the log says so
keeper_replaced()
{
	local old=$1
	kill -KILL "$old" || return 1
	wait_until 5 eval '! kill -0 '"$old"' 2>/dev/null; k=$(keeper_pids); [ -n "$k" ] && [ "$k" != '"$old"' ]' &&
		wait_until 5 eval 'log_since $mark | grep -q "a new keeper holds the"'
}

handover_bot
work_start
is "$(keeper_pids | wc -w)" 1 "one keeper holds the mounts"

# --- the keeper killed: a new one, given everything --------------------------------------------
mark=$(log_lines)
k1=$(keeper_pids)
before=$(rounds)
if keeper_replaced "$k1"; then ok "keeper SIGKILLed: a new keeper runs"; else not_ok "keeper SIGKILLed: a new keeper runs"; fi
like "$(log_since "$mark")" 'the keeper \(.*/keeper\.sock\) ended: it held [0-9]+ descriptors' \
	"the log says the keeper ended"
like "$(log_since "$mark")" "a new keeper holds the [0-9]+ descriptors: a restart or crash of agentfsd is invisible" \
	"and that a new one holds them again"
is "$(afs --json status | jget pid)" "$D_PID" "the same agentfsd serves"
if advanced "$before"; then ok "the bot's work goes on"; else not_ok "the bot's work goes on"; fi

# --- then agentfsd killed: the new keeper hands the mounts over ----------------------------------
mark=$(log_lines)
restart_step "SIGKILL after the keeper was replaced" kill9
like "$(log_since "$mark")" "1 mount taken over from the last agentfsd" "the mount is taken over (log)"
is "$(afs --json show w1 | jget bot.mounts.0.state)" mounted "agentfs show: mounted"
is "$(afs --json show w1 | jget bot.mounts.0.restarts)" 1 "the mount lived through 1 restart"

# --- twice more in a row -----------------------------------------------------------------------------
mark=$(log_lines)
keeper_replaced "$(keeper_pids)" 2>/dev/null || not_ok "a second keeper killed: a new keeper runs"
k3=$(keeper_pids)
[ -n "$k3" ] && kill -KILL "$k3"
if wait_until 5 eval '! kill -0 '"$k3"' 2>/dev/null; k=$(keeper_pids); [ -n "$k" ] && [ "$k" != '"$k3"' ]' &&
	wait_until 5 eval '[ "$(log_since $mark | grep -c "a new keeper holds the")" -ge 2 ]'; then
	ok "a keeper killed twice in a row: a new keeper runs"
else
	not_ok "a keeper killed twice in a row: a new keeper runs"
fi
is "$(keeper_pids | wc -w)" 1 "one keeper, not more"
mark=$(log_lines)
restart_step "SIGKILL after two keepers more were replaced" kill9
like "$(log_since "$mark")" "1 mount taken over from the last agentfsd" "the mount is taken over again"
is "$(afs --json show w1 | jget bot.mounts.0.restarts)" 2 "the mount lived through 2 restarts"

# --- the work: every call answered, every line there, in order ------------------------------------
# (a sandbox left on a dead mount never sees work/stop: it is ended)
touch "$W/work/stop"
if wait_until 30 eval '! kill -0 '"$exec_pid"' 2>/dev/null'; then
	ok "the bot's command ends when told to"
else
	not_ok "the bot's command ends when told to"
	kill -TERM "$exec_pid"
fi
work_end
is "$WORK_RC" 0 "agentfs exec ends with its command's status 0"
like "$WORK" "errors 0$" "the work saw no error ($WORK)"
[ -s "$W/out/work.err" ] && diag "$(head -5 "$W/out/work.err")"
n=$(printf '%s' "$WORK" | awk '{ print $2 }')
if [ -n "$n" ] && seq 0 $((n - 1)) | cmp -s - "$W/work/held"; then
	ok "every line appended through the held descriptor is there, in order, once ($n)"
else
	not_ok "every line appended through the held descriptor is there, in order, once ($n)"
fi
like "$GIT" "errors 0$" "git committed with no error ($GIT)"

# --- agentfs shutdown: the keeper ends, and no new one starts ----------------------------------------
mark=$(log_lines)
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 5
wait_until 5 eval '[ -z "$(keeper_pids)" ]'
sleep 1
is "$(keeper_pids)" "" "shutdown: the keeper exits, and no new one is started"
if log_since "$mark" | grep -q "keeper.*ended"; then
	not_ok "shutdown: no keeper end is reported"
else
	ok "shutdown: no keeper end is reported"
fi
is "$(mounts_in "$T" | wc -l)" 0 "shutdown: nothing is left mounted"

done_testing
