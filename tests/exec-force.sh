#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-force: the daemon knows the sandboxes `agentfs exec` runs (each exec
# registers itself, and its bwrap before it starts, and is forgotten when it
# ends), also after it is restarted (kill -9 or a clean stop):
# `agentfs rm` of a bot with one running, or whose bots have one, says so
# and deletes nothing; `rm --force` ends them (SIGTERM to the exec, which
# passes it to the command; SIGKILL to the whole sandbox 3 s later for a
# command that ignores it) and then deletes. A pid a client did not start
# cannot be registered, so --force never signals another process.
. "$top_srcdir/tests/exec-lib.sh"

W="$T/ws"
mkdir -p "$W/sub"
own "$W"
daemon_start || bail_out "agentfsd did not start"
check "create lead" afs create lead "$W" --no-network
expect_ok "lead makes a bot of its own, kid" \
	"$(ex lead -- "$AGENTFS" --json create kid "$W/sub" </dev/null 2>/dev/null)"

# run BOT CMD...: start `agentfs exec BOT CMD...` in the background; its pid in $!
run()
{
	"$AGENTFS" --socket "$D_SOCK" exec "$@" </dev/null >/dev/null 2>&1 &
	track_pid $!
}
# sandboxes_of BOT: how many running sandboxes show lists (empty: none)
sandboxes_of()
{
	local n
	n=$(afs --json show "$1" | jget bot.sandboxes.#)
	[ "${n:-0}" != 0 ] && echo "$n"
}

# up BOT N: wait until BOT's first sandbox has its init registered and N
# commands of ours run (a signal sent before the command starts would go
# to the sandbox's init, which ignores it, and only the SIGKILL would end it)
up()
{
	wait_until 10 eval '[ -n "$(afs --json show '"$1"' | jget bot.sandboxes.0.bwrap)" ] &&
		[ "$(pgrep -fc "^sleep 9871")" -ge '"$2"' ]' || diag "the sandbox of $1 did not start"
}

# --- refused while a sandbox runs ---------------------------------------------
run lead -- sleep 9871
holder=$!
up lead 1
r=$(afs --json rm lead)
expect_error "rm of a bot with a running sandbox is refused" running "$r"
like "$(printf '%s' "$r" | jget error.message)" "pid[s]? $holder\b.*--force" \
	"the message names the exec's pid and --force"
is "$(afs --json show lead | jget ok)" true "lead still exists"
like "$(afs show lead)" "sandboxes +exec pid $holder" "agentfs show lists the sandbox by its exec's pid"
kill -0 "$holder" 2>/dev/null && ok "its sandbox still runs" || not_ok "its sandbox still runs"
kill "$holder"
wait "$holder" 2>/dev/null
wait_until 5 eval '[ -z "$(sandboxes_of lead)" ]' &&
	ok "a sandbox that ended is forgotten" || not_ok "a sandbox that ended is forgotten"

# --- rm at once after an exec ends: its end is known, not waited for -------------
# (the exec's end and the rm can reach the daemon in one turn of its loop)
check "create quick" afs create quick "$W/sub" --no-network
bad=0
for i in $(seq 30); do
	ex quick -- true </dev/null >/dev/null 2>&1
	r=$(afs --json rm quick)
	if [ "$(printf '%s' "$r" | jget ok)" != true ]; then
		bad=$((bad + 1))
		diag "round $i: $r"
	fi
	afs create quick "$W/sub" --no-network >/dev/null 2>&1 || break
done
is "$bad" 0 "exec, then rm at once, 30 times: never refused as running"
afs rm quick >/dev/null 2>&1

# --- a bot's bot's sandbox holds its maker too -------------------------------------
run kid -- sleep 9871
kidrun=$!
up kid 1
expect_error "rm of lead is refused while kid (a bot it made) runs a sandbox" running \
	"$(afs --json rm lead)"

# --- rm --force ----------------------------------------------------------------
run lead -- sleep 9871
holder=$!
up lead 2
start=$(date +%s%N)
r=$(afs --json rm --force lead)
took=$((($(date +%s%N) - start) / 1000000))
is "$(printf '%s' "$r" | jget deleted.#)" 2 "rm --force deletes lead and kid ($took ms)"
wait_until 5 eval '! kill -0 '"$holder"' 2>/dev/null && ! kill -0 '"$kidrun"' 2>/dev/null' &&
	ok "their sandboxes were ended" || not_ok "their sandboxes were ended"
wait "$holder" 2>/dev/null
is "$?" 143 "the exec reports its command ended by SIGTERM (143)"
[ "$took" -lt 3000 ] && ok "a command that obeys SIGTERM is not waited for" ||
	not_ok "a command that obeys SIGTERM is not waited for ($took ms)"
is "$(afs --json show lead | jget error.code)" not_found "lead is gone"

# A command that ignores SIGTERM is killed with its whole sandbox.
check "create stubborn" afs create stubborn "$W" --no-network
run stubborn -- sh -c 'trap "" TERM; sleep 9871 & trap "" TERM; wait; sleep 9871'
holder=$!
wait_until 10 eval '[ -n "$(afs --json show stubborn | jget bot.sandboxes.0.bwrap)" ]'
sleep 0.5
start=$(date +%s%N)
r=$(afs --json rm --force stubborn)
took=$((($(date +%s%N) - start) / 1000000))
expect_ok "rm --force of a bot whose command ignores SIGTERM" "$r"
[ "$took" -ge 2500 ] && [ "$took" -lt 8000 ] &&
	ok "it waits the 3 s grace, then kills ($took ms)" || not_ok "it waits the 3 s grace, then kills ($took ms)"
wait_until 5 eval '! kill -0 '"$holder"' 2>/dev/null' && ok "the exec ended" || not_ok "the exec ended"
# SIGKILL is sent, not waited for: give a loaded machine a moment to end them
wait_until 5 eval '! pgrep -f "^sleep 9871" >/dev/null' && ok "no process of the sandbox is left" ||
	not_ok "no process of the sandbox is left"

# --- a restarted daemon still knows them --------------------------------------------
# The sandboxes are kept in STATE/sandboxes.json and its log with each process's start
# time: after kill -9 and a start, or a clean stop and a start, rm refuses
# and rm --force ends them; one that ended meanwhile is forgotten.
check "create keep" afs create keep "$W" --no-network
run keep -- sleep 9871
holder=$!
up keep 1
# a registration is one line appended to STATE/sandboxes.log, not
# sandboxes.json rewritten (folded into it at start and at a clean stop)
grep -q "\"pid\":$holder," "$D_STATE/sandboxes.log" &&
	ok "the registration is a line of sandboxes.log" || not_ok "the registration is a line of sandboxes.log"
! grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json" &&
	ok "... and sandboxes.json was not rewritten for it" ||
	not_ok "... and sandboxes.json was not rewritten for it"
daemon_kill9 || bail_out "agentfsd did not die"
# what a write cut short would leave: a last line without its end
printf '{"op":"add","bot":"keep","pid":%d,"pid_st' "$holder" >>"$D_STATE/sandboxes.log"
daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state keep)" mounted "after kill -9 and a start, keep is back"
is "$(stat -c %s "$D_STATE/sandboxes.log")" 0 "the log was folded into sandboxes.json at start"
grep -q "\"pid\":$holder," "$D_STATE/sandboxes.json" &&
	ok "... which now lists the sandbox" || not_ok "... which now lists the sandbox"
like "$(afs --json show keep | jget bot.sandboxes.0.pid)" "^$holder\$" "show lists its sandbox again (exec pid $holder)"
r=$(afs --json rm keep)
expect_error "rm of keep after the restart is refused: its sandbox runs" running "$r"
like "$(printf '%s' "$r" | jget error.message)" "pid $holder\b" "the message names the exec's pid"
afs shutdown >/dev/null
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state keep)" mounted "after a clean stop and a start, keep is back"
expect_error "rm of keep is still refused" running "$(afs --json rm keep)"
expect_ok "rm --force of keep after two restarts" "$(afs --json rm --force keep)"
if wait_until 8 eval '! kill -0 '"$holder"' 2>/dev/null'; then
	ok "it ended the sandbox a previous daemon registered"
else
	not_ok "it ended the sandbox a previous daemon registered"
	kill -KILL "$holder"
fi
wait "$holder" 2>/dev/null
wait_until 5 eval '! pgrep -f "^sleep 9871" >/dev/null' && ok "no process of that sandbox is left" ||
	not_ok "no process of that sandbox is left"
check "create gone" afs create gone "$W" --no-network
run gone -- sleep 9871
holder=$!
up gone 1
daemon_kill9 || bail_out "agentfsd did not die"
kill "$holder"
wait "$holder" 2>/dev/null
daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state gone)" mounted "gone is back"
is "$(sandboxes_of gone)" "" "a sandbox that ended while no daemon ran is forgotten"
expect_ok "rm of gone works at once" "$(afs --json rm gone)"

# --- the log read back: the last line of a sandbox wins, what is not a record is skipped
# A process of ours stands for a sandbox (the daemon takes back any record
# whose pid and start time still match); its record names no cgroup.
check "create b3" afs create b3 "$W" --no-network
afs shutdown >/dev/null
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
is "$(stat -c %s "$D_STATE/sandboxes.log")" 0 "a clean stop leaves the log empty"
sleep 9872 &
fake=$!
track_pid "$fake"
fake_start=$(sed 's/.*) //' "/proc/$fake/stat" | cut -d' ' -f20)
rec()
{
	printf '{"op":"%s","bot":"b3","pid":%d,"pid_start":%s,"child":0,"child_start":0,' "$1" "$fake" "$fake_start"
	printf '"uid":0,"run_uid":0,"started":1,"cgroup":"","memory_max":0,"pids_max":0}\n'
}
{
	rec add
	rec end
	printf 'not a record\n{"op":"end","pid":%d}\n{"op":"what","pid":1,"pid_start":1}\n' "$fake"
	rec add
	head -c 100000 /dev/zero | tr '\0' x
	printf '\n{"op":"end","pid":%d,"pid_start":%s' "$fake" "$fake_start"
} >>"$D_STATE/sandboxes.log"
daemon_start || bail_out "agentfsd did not start with a log holding lines that are no records"
is "$(restored_state b3)" mounted "b3 is back"
like "$(afs --json show b3 | jget bot.sandboxes.0.pid)" "^$fake\$" \
	"add, end, add: the sandbox is known; the lines that are no records, and a last one cut short, were skipped"
grep -q "sandboxes.log: skipped 5 lines that are not a whole record" "$D_LOG" &&
	ok "... and the daemon's log says how many (5)" || not_ok "... and the daemon's log says how many (5)"
daemon_kill9 || bail_out "agentfsd did not die"
rec end >>"$D_STATE/sandboxes.log"
daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state b3)" mounted "b3 is back again"
is "$(sandboxes_of b3)" "" "a sandbox whose last line is its end is not taken back"
# a log that is nothing but noise loses nothing sandboxes.json holds
daemon_kill9 || bail_out "agentfsd did not die"
rec add >>"$D_STATE/sandboxes.log"
daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state b3)" mounted "b3 is back once more"
daemon_kill9 || bail_out "agentfsd did not die"
head -c 300000 /dev/urandom >"$D_STATE/sandboxes.log"
daemon_start || bail_out "agentfsd did not start with a log of random bytes"
is "$(restored_state b3)" mounted "with a log of random bytes, the daemon starts"
like "$(afs --json show b3 | jget bot.sandboxes.0.pid)" "^$fake\$" \
	"... and still knows the sandbox sandboxes.json lists"
kill "$fake"
wait "$fake" 2>/dev/null
wait_until 5 eval '[ -z "$(sandboxes_of b3)" ]' &&
	ok "its end is seen" || not_ok "its end is seen"
expect_ok "rm of b3" "$(afs --json rm b3)"

# --- nothing else can be registered ---------------------------------------------------
check "create b2" afs create b2 "$W" --no-network
sleep 300 &
other=$!
track_pid "$other"
expect_error "a client cannot register a process it did not start" forbidden \
	"$(raw "{\"op\":\"exec_register\",\"name\":\"b2\",\"pid\":$other}")"
expect_error "nor pid 1" bad_value "$(raw '{"op":"exec_register","name":"b2","pid":1}')"
expect_error "nor as its bwrap a process it did not start" forbidden \
	"$(raw "{\"op\":\"exec_register\",\"name\":\"b2\",\"child\":$other}")"
expect_error "nor child 1" bad_value "$(raw '{"op":"exec_register","name":"b2","child":1}')"
# exec_plan registers the bwrap it brings as "child", with the same checks
r=$(raw "{\"op\":\"exec_plan\",\"name\":\"b2\",\"child\":$other,\"argv\":[\"x\"]}")
expect_error "a plan cannot register as its bwrap a process the client did not start" forbidden "$r"
like "$(printf '%s' "$r" | jget error.message)" "process $other is not a child this client started" \
	"the plan's refusal says why"
is "$(sandboxes_of b2)" "" "a plan whose child was refused registers nothing"
expect_error "a plan's child 1 is refused" bad_value \
	"$(raw '{"op":"exec_plan","name":"b2","child":1}')"
expect_error "a plan's child must be a number" bad_type \
	"$(raw '{"op":"exec_plan","name":"b2","child":"2"}')"
expect_error "a plan's argv must be strings" bad_type \
	"$(raw "{\"op\":\"exec_plan\",\"name\":\"b2\",\"child\":$other,\"argv\":[1]}")"
r=$(raw '{"op":"exec_plan","name":"b2"}')
is "$(printf '%s' "$r" | jget ok)/$(printf '%s' "$r" | jget registered)" "true/" \
	"a plan without a child registers nothing, and says so"
expect_ok "the client itself may register (no pid)" \
	"$(raw '{"op":"exec_register","name":"b2"}')"
wait_until 5 eval '[ -z "$(sandboxes_of b2)" ]' &&
	ok "and is forgotten once it exits" || not_ok "and is forgotten once it exits"
expect_ok "rm --force of b2" "$(afs --json rm --force b2)"
kill -0 "$other" 2>/dev/null && ok "the process it tried to register was not signalled" ||
	not_ok "the process it tried to register was not signalled"
kill "$other" 2>/dev/null

done_testing
