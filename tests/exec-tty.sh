#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-tty: `agentfs exec` on a terminal (a pty made by python3): the command
# gets a new pseudo-terminal of its own as its controlling terminal, job
# control works, input, ^C, exit status and the caller's terminal mode come
# through, and TIOCSTI from inside never reaches the caller's terminal
# (CVE-2017-5226), whether or not stdin is a terminal; with stdin redirected,
# the command never holds the caller's terminal (it cannot read what is typed
# there, nor turn its echo off).
. "$top_srcdir/tests/exec-lib.sh"

command -v ps >/dev/null || skip_all "ps (procps) is missing"

[ -n "$PY" ] || skip_all "python3 is missing (it makes the pty)"

ex_start_w1

EX=("$AGENTFS" --socket "$D_SOCK" exec w1 --)

# --- the command's terminal ----------------------------------------------------
out=$(pty_run 10 "${EX[@]}" sh -c 'tty; ps -o stat= -p $$; test -t 0 && test -t 1 && test -t 2 && echo all-tty')
rc=$?
is "$rc" 0 "on a terminal, exec exits 0"
tty_line=$(printf '%s\n' "$out" | sed -n 1p)
unlike "$tty_line" "not a tty" "tty inside names a terminal ($tty_line)"
# bwrap's fresh /dev has its own devpts and shows the relayed pty as /dev/console
like "$tty_line" '^/dev/(pts/[0-9]+|console)$' "tty inside names the relayed pty (/dev/console in bwrap's /dev)"
like "$(printf '%s\n' "$out" | sed -n 2p)" '\+' "the command is in its terminal's foreground process group (ps stat has +)"
like "$out" "all-tty" "stdin, stdout and stderr inside are the terminal"

# A new pty, not the caller's; the caller's terminal mode is restored.
out=$(pty_run 10 bash -c 'stty -g; readlink /proc/self/fd/0; "$@" readlink /proc/self/fd/0; stty -g' sh "${EX[@]}")
outer_pty=$(printf '%s\n' "$out" | sed -n 2p)
inner_pty=$(printf '%s\n' "$out" | sed -n 3p)
like "$inner_pty" '^/dev/pts/[0-9]+$' "inside, fd 0 is a pty ($inner_pty)"
[ -n "$inner_pty" ] && [ "$inner_pty" != "$outer_pty" ] &&
	ok "the command's pty is a new one, not the caller's ($outer_pty)" ||
	not_ok "the command's pty is a new one, not the caller's ($outer_pty, inside '$inner_pty')"
is "$(printf '%s\n' "$out" | sed -n 4p)" "$(printf '%s\n' "$out" | sed -n 1p)" \
	"the caller's terminal settings are restored after exec (stty -g)"

# stdin a terminal, stdout and stderr redirected to files (say,
# `agentfs exec bot -- git diff >patch` typed at a prompt): each file should
# get exactly what the command wrote to it.
pty_run 10 bash -c '"$@" sh -c "printf \"out\\n\"; printf \"err\\n\" >&2" >"$0.out" 2>"$0.err"' \
	"$T/redir" "${EX[@]}" >/dev/null
is "$(od -An -c "$T/redir.out" | tr -s ' ')" "$(printf 'out\n' | od -An -c | tr -s ' ')" \
	"stdin a terminal, stdout a file: the file holds the command's stdout byte for byte"
is "$(cat "$T/redir.err")" "err" "stdin a terminal, stderr a file: the command's stderr goes there"

# --- job control ---------------------------------------------------------------
# (sleep 0.3 first: dash's kill %1 right after & can hit the child before it
# execs sleep, and be lost, outside any sandbox too)
start=$(date +%s)
out=$(pty_run 15 "${EX[@]}" sh -ic 'sleep 5 & sleep 0.3; jobs; kill %1; wait; echo done')
rc=$?
elapsed=$(($(date +%s) - start))
like "$out" "Running.*sleep 5" "sh -i inside: jobs lists the background sleep"
like "$out" "done" "sh -i inside: kill %1 and wait work"
[ "$elapsed" -lt 5 ] && ok "kill %1 ended the job at once (${elapsed}s)" ||
	not_ok "kill %1 ended the job at once (${elapsed}s)"
unlike "$out" "job control turned off|can't access tty|Cannot set tty process group" \
	"sh -i inside has job control and no complaint about the terminal"
is "$rc" 0 "sh -i inside exits 0 after its last command succeeded" || diag "$out"

# --- input, ^C and status through the terminal --------------------------------
out=$(PTY_INPUT=$'hello\n' pty_run 10 "${EX[@]}" sh -c 'read -r l; echo "got:$l"')
like "$out" "got:hello" "typed input reaches the command"
start=$(date +%s)
out=$(PTY_INPUT=$'\003' PTY_AFTER=started PTY_DELAY=0.3 pty_run 15 bash -c '"$@" sh -c "echo started; sleep 20; echo not-interrupted"; echo "rc=$?"' \
	sh "${EX[@]}")
elapsed=$(($(date +%s) - start))
like "$out" "started" "the command to interrupt started"
like "$out" "rc=130" "^C typed on the terminal interrupts the command (status 130)"
unlike "$out" "not-interrupted" "the interrupted command did not go on"
[ "$elapsed" -lt 10 ] && ok "^C took effect at once (${elapsed}s)" || not_ok "^C took effect at once (${elapsed}s)"
out=$(pty_run 10 bash -c '"$@" sh -c "exit 7"; echo "rc=$?"; "$@" sh -c "kill -TERM \$\$"; echo "rc=$?"' sh "${EX[@]}")
like "$out" "rc=7" "on a terminal, exit 7 inside: exec exits 7"
like "$out" "rc=143" "on a terminal, death by SIGTERM inside: exec dies of SIGTERM (143)"

# --- TIOCSTI ---------------------------------------------------------------------
# Push "echo INJECTED\n" into fd N with TIOCSTI, report the result, and read
# back what landed in the command's own input, if anything.
tiocsti='
import errno, fcntl, os, select, sys, termios
fd = int(sys.argv[1])
try:
    for c in b"echo INJECTED\n":
        fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
    print("tiocsti: ok")
except OSError as e:
    print("tiocsti:", errno.errorcode.get(e.errno, e.errno))
r, _, _ = select.select([0], [], [], 0.5)
if r:
    print("inner read:", os.read(0, 100))
'
# stdin is the terminal: at most the command's own pty gets the bytes.
out=$(PY="$PY" TIOCSTI="$tiocsti" pty_run 15 bash -c '"$@" "$PY" -c "$TIOCSTI" 0; read -t 1 -r line; echo "outer read:[$line]"' \
	sh "${EX[@]}")
like "$out" "tiocsti: (ok|EIO|EPERM)" "stdin a terminal: TIOCSTI inside into its own pty ran ($(printf '%s' "$out" | grep tiocsti:))"
like "$out" 'outer read:\[\]' "stdin a terminal: TIOCSTI inside never reaches the caller's terminal as input"
# stdin is not a terminal, stdout is the caller's: the command runs in a new
# session, so the caller's terminal is not its controlling terminal.
out=$(PY="$PY" TIOCSTI="$tiocsti" pty_run 15 bash -c '"$@" "$PY" -c "$TIOCSTI" 1 </dev/null; read -t 1 -r line; echo "outer read:[$line]"' \
	sh "${EX[@]}")
like "$out" "tiocsti: (EIO|EPERM)" "stdin not a terminal: TIOCSTI into the caller's terminal (stdout) is refused ($(printf '%s' "$out" | grep tiocsti:))"
like "$out" 'outer read:\[\]' "stdin not a terminal: TIOCSTI inside never reaches the caller's terminal as input"
# stdin is not a terminal, stdout or stderr is the caller's (`make </dev/null`,
# `cmd | agentfs exec ...`): the command writes to a pty of its own, relayed,
# never to the caller's terminal itself, which is open for reading too. So it
# cannot read what the person types there meanwhile (keys meant for the
# shell, a password) nor change its settings (echo off after exec is gone).
steal='
import os, select, sys, termios
fd = int(sys.argv[1])
out = sys.stdout if fd == 1 else sys.stderr
try:
    a = termios.tcgetattr(fd)
    a[3] &= ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, a)
except OSError as e:
    print("tcsetattr:", e, file=out, flush=True)
print("isatty:", os.isatty(fd), file=out, flush=True)
print("READY", file=out, flush=True)
r, _, _ = select.select([fd], [], [], 2)
try:
    print("stolen:[%s]" % (os.read(fd, 100).decode().strip() if r else ""), file=out, flush=True)
except OSError as e:
    print("stolen:[] (%s)" % e, file=out, flush=True)
'
for fd in 1 2; do
	redir=">$T/steal.out" # the other one goes to a file
	[ "$fd" = 1 ] && redir="2>$T/steal.err"
	out=$(PTY_INPUT=$'typed-secret\n' PTY_AFTER=READY PY="$PY" STEAL="$steal" pty_run 20 bash -c \
		'"$@" "$PY" -c "$STEAL" '"$fd </dev/null $redir"'; stty -a | grep -o -- "-\?echo " | head -n 1; read -t 3 -r line; echo "outer read:[$line]"' \
		sh "${EX[@]}")
	like "$out" "isatty: True" "stdin not a terminal, fd $fd the caller's terminal: inside, fd $fd is a terminal"
	like "$out" "stolen:\[\]" "stdin not a terminal: the command cannot read what is typed on the caller's terminal through fd $fd"
	like "$out" "outer read:\[typed-secret\]" "stdin not a terminal: what is typed meanwhile stays the caller's (fd $fd)"
	like "$out" "(^|[^-])echo " "stdin not a terminal: the caller's terminal keeps echo on (fd $fd)"
done
# A terminal whose own input ends at once (script(1) with stdin at its end
# sends ^D): that end of input, pending when exec makes the terminal raw,
# ends exec's input; it was a NUL byte the command's terminal echoed as ^@.
if command -v script >/dev/null; then
	out=$(script -qc "$(printf '%q ' "${EX[@]}") echo hello" /dev/null </dev/null 2>&1 | tr -d '\r')
	is "$out" hello "under script(1) with no input: the output has no stray ^@"
else
	skip "script (util-linux) is missing"
fi
is "$(pgrep -fa "bwrap .*$T/")" "" "no sandbox is left running"

done_testing
