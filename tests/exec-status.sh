#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-status: `agentfs exec` passes the command's exit status and death by
# signal through, carries stdin, stdout and stderr (each its own), and passes
# SIGTERM and SIGINT sent to the client on to the command.
. "$top_srcdir/tests/exec-lib.sh"

# bwrap is agentfsd's to choose: it runs ours (the config's "bwrap"), which is
# the real one unless $T/bw.mode says otherwise (the setup races below).
real_bwrap=$BWRAP
mkdir -p "$T/fakebin"
cat >"$T/fakebin/bwrap" <<EOF
#!/bin/bash
n=\$(cat "$T/bw.count" 2>/dev/null || echo 0)
echo \$((n + 1)) >"$T/bw.count"
mode=\$(cat "$T/bw.mode" 2>/dev/null || echo real)
if [ "\$mode" = real ] || { [ "\$mode" = once ] && [ "\$n" -ge 1 ]; }; then
	exec "$real_bwrap" "\$@"
fi
if [ "\$mode" = late ]; then
	# the report goes on a second late, and this stand-in exits only once all
	# of it is passed on (bwrap writes its exit status before it exits)
	args=() prev= st=
	for a in "\$@"; do
		if [ "\$prev" = --json-status-fd ]; then st=\$a; a=200; fi
		args+=("\$a")
		prev=\$a
	done
	{ "$real_bwrap" "\${args[@]}" 200>&1 1>&3 3>&-; } 3>&1 | { sleep 1; cat >&\$st; }
	exit \${PIPESTATUS[0]}
fi
prev=
for a in "\$@"; do
	if [ "\$prev" = --json-status-fd ]; then
		sh -c 'exit 1' &
		eval "echo '{ \"child-pid\": '\$!' }' >&\$a"
		wait
	fi
	prev=\$a
done
if [ "\$mode" = killed ]; then
	kill -KILL \$\$
fi
if [ "\$mode" = other ]; then
	echo "bwrap: Can't find source path /nope-$$: No such file or directory" >&2
else
	echo "bwrap: Can't bind mount /oldroot/ on /newroot/: Unable to apply mount flags: remount \"/newroot$T/gone\": Invalid argument" >&2
fi
exit 1
EOF
chmod 755 "$T/fakebin/bwrap"
ex_start_w1 --config "$(ex_bwrap_config "$T/fakebin/bwrap")"

# --- exit status ---------------------------------------------------------------
ex w1 -- sh -c 'exit 7' </dev/null
is "$?" 7 "exit 7 inside: exec exits 7"
ex w1 -- true </dev/null
is "$?" 0 "true inside: exec exits 0"
ex w1 -- false </dev/null
is "$?" 1 "false inside: exec exits 1"

# --- 127 and 126, as shells do ---------------------------------------------------
printf '#!/bin/sh\necho ran\n' >"$W/noexec"
chmod 0644 "$W/noexec"
own "$W/noexec"
mkdir -p "$T/d"
check "create d1 (danger-full-access)" afs create d1 "$T/d" --sandbox danger-full-access
for b in w1 d1; do
	err=$(ex "$b" -- "nosuchcommand-$$" </dev/null 2>&1)
	rc=$?
	is "$rc" 127 "$b: a command not in PATH: exec exits 127"
	like "$err" "nosuchcommand-$$: command not found" "$b: and says the command was not found"
	ex "$b" -- "/nonexistent-$$/cmd" </dev/null 2>/dev/null
	is "$?" 127 "$b: a path that does not exist: exec exits 127"
	err=$(ex "$b" -- "$W/noexec" </dev/null 2>&1)
	rc=$?
	is "$rc" 126 "$b: a file that is not executable: exec exits 126"
	like "$err" "cannot run $W/noexec: Permission denied" "$b: and says why"
	ex "$b" -- "$W" </dev/null 2>/dev/null
	is "$?" 126 "$b: a folder as the command: exec exits 126"
done
err=$(ex w1 -- sh -c 'exit 127' </dev/null 2>&1)
rc=$?
is "$rc" 127 "a command that exits 127 itself: exec exits 127 (as in shells)"
[ "$rc" = 127 ] || diag "exec said: $err"
printf 'abc' | ex w1 -- sh -c 'cat >/dev/null; exit 3'
is "$?" 3 "exit 3 after reading stdin: exec exits 3"

# --- death by signal -------------------------------------------------------
# (in a subshell whose stderr is dropped: bash reports a child killed by a signal)
(ex w1 -- sh -c 'kill -TERM $$' </dev/null) 2>/dev/null
is "$?" 143 "sh -c 'kill -TERM \$\$' inside: the shell sees status 143"
(ex w1 -- sh -c 'kill -KILL $$' </dev/null) 2>/dev/null
is "$?" 137 "sh -c 'kill -KILL \$\$' inside: the shell sees status 137"
if [ -n "$PY" ]; then
	# A status of 143 could be exit(143); Python's returncode tells a signal apart.
	rcs='import subprocess, sys; print(subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL).returncode)'
	is "$("$PY" -c "$rcs" "$AGENTFS" --socket "$D_SOCK" exec w1 -- sh -c 'kill -TERM $$')" -15 \
		"the exec client itself dies of SIGTERM"
	is "$("$PY" -c "$rcs" "$AGENTFS" --socket "$D_SOCK" exec w1 -- sh -c 'kill -KILL $$')" -9 \
		"the exec client itself dies of SIGKILL"
	is "$("$PY" -c "$rcs" "$AGENTFS" --socket "$D_SOCK" exec w1 -- sh -c 'exit 7')" 7 \
		"an exit status is an exit status, not a signal"
else
	skip "python3 is missing"
	skip "python3 is missing"
	skip "python3 is missing"
fi

# --- stdin, stdout, stderr -------------------------------------------------
out=$(printf 'line one\nline two\n' | ex w1 -- cat 2>&1)
is "$out" "line one
line two" "stdin piped through cat inside comes back on stdout"
head -c 1048576 /dev/urandom >"$T/big"
ex w1 -- cat <"$T/big" >"$T/big.out" 2>"$T/big.err"
rc=$?
cmp -s "$T/big" "$T/big.out" && [ "$rc" -eq 0 ] && [ ! -s "$T/big.err" ] &&
	ok "1 MiB of binary data through cat inside comes back intact" ||
	{ not_ok "1 MiB of binary data through cat inside comes back intact"; diag "status $rc, $(cat "$T/big.err")"; }
ex w1 -- sh -c 'echo to-out; echo to-err >&2; echo more-out' </dev/null >"$T/o" 2>"$T/e"
is "$(cat "$T/o" | tr '\n' ' ')" "to-out more-out " "stdout carries only stdout"
is "$(cat "$T/e")" "to-err" "stderr carries only stderr"
out=$(ex w1 -- sh -c 'read -r l; echo "got:$l"' <<<"typed")
is "$out" "got:typed" "stdin from a here-string reaches the command"

# --- signals sent to the client reach the command ---------------------------
# sig_to_command SIG: start a command that traps SIG, send SIG to the exec
# client; the trap should run (it writes a file and exits 3).  The files'
# names differ per signal: a name removed on the host may still be cached
# in the mount for the entry timeout.
sig_to_command()
{
	local sig="$1" cpid rc
	# env puts every signal back to default: a background job of a
	# non-interactive shell starts with SIGINT and SIGQUIT ignored, nohup
	# ignores SIGHUP, and bwrap and the command would inherit that (a shell
	# cannot trap a signal ignored when it started).
	env --default-signal "$AGENTFS" --socket "$D_SOCK" exec w1 -- \
		sh -c 'trap "echo $1 >trapped.$1; exit 3" "$1"; echo >ready.$1; sleep 30 & wait' sh "$sig" \
		</dev/null >/dev/null 2>>"$T/sig.err" &
	cpid=$!
	track_pid "$cpid"
	if ! wait_until 10 test -e "$W/ready.$sig"; then
		not_ok "SIG$sig to the exec client reaches the command (the command did not start)"; diag "$(cat "$T/sig.err")"
		kill -KILL "$cpid"
		wait "$cpid"
		return
	fi
	kill "-$sig" "$cpid"
	wait "$cpid" 2>/dev/null
	rc=$?
	if [ -e "$W/trapped.$sig" ] && [ "$rc" -eq 3 ]; then
		ok "SIG$sig to the exec client reaches the command (its trap ran, status 3)"
	else
		not_ok "SIG$sig to the exec client reaches the command (its trap ran, status 3)" ; diag "$(cat "$T/sig.err")"
		diag "exec status $rc; trap ran: $([ -e "$W/trapped.$sig" ] && echo yes || echo no)"
	fi
}
sig_to_command TERM
sig_to_command INT
sig_to_command HUP
# --- a setup that lost a race with the host's mount table ------------------
# bwrap copies the mount table, then makes each mount read-only one by one; a
# mount that goes in between (another bot's root ended, its folder removed)
# fails the setup before anything runs. bwrap says which failure it was only
# in words, and a failed setup ran nothing (it reported no exit code), so
# exec tries every failed setup again, quietly, and shows the last words.
# Our bwrap plays the race: it reports a child (as bwrap does before
# setting up), fails as bwrap does, and then hands over to the real one.
fake_ex()
{
	echo "$1" >"$T/bw.mode"
	rm -f "$T/bw.count"
	shift
	ex "$@"
	set -- $?
	echo real >"$T/bw.mode"
	return "$1"
}
out=$(fake_ex once w1 -- sh -c 'echo out; echo err >&2; exit 5' </dev/null 2>"$T/bw.err")
rc=$?
is "$rc:$out" "5:out" "a setup that lost a mount race is tried again: the command runs, status and output kept"
is "$(cat "$T/bw.err")" "err" "and standard error has the command's words only, not bwrap's failed try"
is "$(cat "$T/bw.count")" 2 "bwrap ran twice"
fake_ex always w1 -- sh -c 'echo ran >"$1/ran.race"' sh "$W" </dev/null 2>"$T/bw.err"
rc=$?
is "$rc" 125 "a mount race every time: exec exits 125 (agentfs could not make the sandbox)"
is "$(cat "$T/bw.count")" 5 "after five tries"
is "$(grep -c 'Unable to apply mount flags' "$T/bw.err")" 1 "bwrap's message is shown once"
like "$(cat "$T/bw.err")" "bwrap could not set up the sandbox .*Nothing was run" "with what it means"
is "$([ -e "$W/ran.race" ] && echo ran)" "" "and nothing ran"
fake_ex other w1 -- true </dev/null 2>"$T/bw.err"
rc=$?
is "$rc:$(cat "$T/bw.count")" "125:5" "any other setup error: tried again as well (bwrap names none but in words), 125"
is "$(grep -c "Can't find source path /nope-$$" "$T/bw.err")" 1 "with bwrap's message, once"
(fake_ex killed w1 -- true </dev/null 2>"$T/bw.err")
rc=$?
is "$rc:$(cat "$T/bw.count")" "137:1" "bwrap itself killed: exec dies by the same signal (137), not 125"
is "$(grep -c 'could not set up' "$T/bw.err")" 0 "and does not say the setup failed"
# A signal that comes after the command started but before exec has read
# bwrap's report of its init (a loaded machine): our bwrap passes the report
# on a second late. Sent to bwrap then, a SIGHUP was lost.
echo late >"$T/bw.mode"
sig_to_command QUIT
echo real >"$T/bw.mode"
wait_until 5 eval '[ -z "$(pgrep -fa "bwrap .*$T/")" ]'
is "$(pgrep -fa "bwrap .*$T/")" "" "no sandbox is left running"

done_testing
