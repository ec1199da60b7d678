#!/bin/bash
# SPDX-License-Identifier: MIT
# cli-gone: every client names a daemon that is gone as such, and what to do:
# not running, stopped (its socket left behind), stopped or restarted while a
# request waited, restarted under a `log --follow`, and, inside a sandbox, a
# socket left from a daemon that stopped or restarted since the sandbox
# began. `log --follow` ends non-zero with a message when the daemon stops,
# and with 0 when its bot is deleted.
. "$top_srcdir/tests/exec-lib.sh"

# fails DESC WANT CMD...: CMD exits 125 and its stderr matches WANT (a regex)
fails()
{
	local desc="$1" want="$2" out rc
	shift 2
	out=$("$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" = 125 ] && printf '%s\n' "$out" | grep -Eq -- "$want"; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "exit $rc (want 125): $out" "want: $want"
	fi
}

# --- a daemon that never ran, or whose socket is left from one killed --------------------
fails "no socket: agentfsd is not running, and how to start it" \
	"cannot connect to agentfsd at $T/none.sock: no such socket: agentfsd is not running \\(start it: systemctl start agentfsd, or agentfsd\\)" \
	"$AGENTFS" --socket "$T/none.sock" ls

W="$T/ws"
mkdir -p "$W"
own "$W"
daemon_start || bail_out "agentfsd did not start"
check "create w1" afs create w1 "$W" --no-network
# and its keeper: nothing holds the sockets for a next agentfsd (agentfsd(8),
# RESTART AND UPGRADE; with it a client waits for the next one instead)
keeper=$(keeper_pids)
daemon_kill9 || bail_out "agentfsd did not die"
kill -KILL $keeper
wait_until 5 eval '[ -z "$(keeper_pids)" ]'
fails "a socket left from a killed daemon: nothing listens there, the daemon that made it stopped" \
	"cannot connect to agentfsd at $D_SOCK: nothing listens there: the agentfsd that made it stopped" \
	afs ls
fails "a bot's socket left likewise (AGENT_SOCKET)" \
	"at $D_SOCK.d/w1.sock: nothing listens there: the agentfsd that made it stopped" \
	env AGENT_SOCKET="$D_SOCK.d/w1.sock" "$AGENTFS" status
daemon_start || bail_out "agentfsd did not start again"

# --- a request the daemon never answers: how it ended, by a stand-in daemon -------------------
if [ -n "$PY" ]; then
	cat >"$T/fake.py" <<'EOF'
import os, socket, sys, time
path, mode = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
print("ready", flush=True)
c, _ = s.accept()
c.recv(65536)
if mode in ("stopped", "restarted"):
    os.unlink(path)
if mode == "restarted":
    s2 = socket.socket(socket.AF_UNIX)
    s2.bind(path)
    s2.listen(4)
c.close()
if mode == "stopped":
    s.close()
if mode == "alive":
    # still there: the client's look afterwards is answered
    while True:
        c, _ = s.accept()
        c.recv(65536)
        c.sendall(b'{"ok":true}\n')
        c.close()
time.sleep(10)
EOF
	for mode in stopped restarted alive; do
		rm -f "$T/fake.sock"
		"$PY" "$T/fake.py" "$T/fake.sock" "$mode" >"$T/fake.$mode.out" &
		fpid=$!
		wait_until 10 grep -q ready "$T/fake.$mode.out" || bail_out "the stand-in daemon did not start"
		case $mode in
		alive)
			want="agentfsd closed the connection without a reply"
			desc="a daemon that closed the connection but still answers: said so"
			;;
		*)
			want="agentfsd $mode before it answered \\(at $T/fake.sock\\); the request may or may not have been done"
			desc="a daemon that $mode before answering is named as such"
			;;
		esac
		fails "$desc" "$want" \
			"$AGENTFS" --socket "$T/fake.sock" status
		kill "$fpid" 2>/dev/null
		wait "$fpid" 2>/dev/null
	done
else
	for mode in stopped restarted alive; do skip "python3 is missing"; done
fi

# --- log --follow ---------------------------------------------------------------------------
mkdir -p "$W/sub" && own "$W/sub"
check "create w2" afs create w2 "$W/sub" --no-network
afs log --follow >"$T/fall.out" 2>"$T/fall.err" &
fall=$!
afs log w2 --follow >"$T/fw2.out" 2>"$T/fw2.err" &
fw2=$!
sleep 1
expect_ok "delete w2" "$(afs --json rm w2)"
wait "$fw2"
is "$?" 0 "log w2 --follow ends with 0 when w2 is deleted"
like "$(cat "$T/fw2.err")" "^agentfs: bot w2 was deleted: its log ends here$" "... and says so"
expect_ok "shutdown" "$(afs --json shutdown)"
wait "$fall"
is "$?" 125 "log --follow ends with 125 when the daemon stops"
like "$(cat "$T/fall.err")" "^agentfs: agentfsd stopped: the log ends here$" "... and says so"
daemon_wait_gone 10
daemon_start || bail_out "agentfsd did not start again"
afs log w1 --follow >"$T/fw1.out" 2>"$T/fw1.err" &
fw1=$!
sleep 1
daemon_kill9
wait "$fw1"
is "$?" 125 "log w1 --follow ends with 125 when the daemon is killed"
like "$(cat "$T/fw1.err")" "^agentfs: agentfsd stopped: the log ends here$" "... and says it stopped"
daemon_start || bail_out "agentfsd did not start again"

# --- a daemon that does not answer: stopped ---------------------------------------------------
kill -STOP "$D_PID"
fails "AGENTFS_TIMEOUT: a stopped daemon, given up on after that long, and said so" \
	"agentfsd \\(pid $D_PID\\) did not answer in 2 s \\(AGENTFS_TIMEOUT\\): it is stopped \\(SIGSTOP, or a debugger holds it\\): kill -CONT it. The request may or may not have been done: look before asking again" \
	env AGENTFS_TIMEOUT=2 "$AGENTFS" --socket "$D_SOCK" status
fails "AGENTFS_TIMEOUT that is no number of seconds: refused before a request is sent" \
	"AGENTFS_TIMEOUT is 2x: it must be a number of seconds from 1 to 86400" \
	env AGENTFS_TIMEOUT=2x "$AGENTFS" --socket "$D_SOCK" status
# without one the client waits, and says why after 15 s
afs status >"$T/slow.out" 2>"$T/slow.err" &
slow=$!
wait_until 40 grep -q "has not answered" "$T/slow.err"
like "$(cat "$T/slow.err")" \
	"^agentfs: agentfsd \\(pid $D_PID\\) has not answered in 15 s: it is stopped \\(SIGSTOP, or a debugger holds it\\): kill -CONT it; still waiting" \
	"no timeout: after 15 s the client says the daemon is stopped, and waits"
kill -CONT "$D_PID"
wait "$slow"
is "$?" 0 "... and is answered once it runs again"
like "$(cat "$T/slow.out")" "^pid +$D_PID$" "... with the status"

# --- inside a sandbox, after its daemon stopped -----------------------------------------------
ex w1 -- sh -c 'while [ ! -e "$1/go" ]; do sleep 0.1; done; "$2" status' sh "$T" "$AGENTFS" \
	</dev/null >"$T/sb.out" 2>"$T/sb.err" &
sb=$!
wait_until 10 eval '[ "$(afs --json show w1 | jget "bot.sandboxes.#")" = 1 ]' ||
	diag "the sandbox did not register"
daemon_kill9
touch "$T/go"
wait "$sb"
is "$?" 125 "inside a sandbox, the client exits 125 once the daemon is gone"
like "$(cat "$T/sb.err")" \
	"cannot reach agentfsd at $D_SOCK.d/w1.sock, this sandbox's socket \\(.*\\): agentfsd stopped or restarted, or the bot was deleted, since the sandbox began. A sandbox keeps the socket it started with: after a restart, run agentfs exec again" \
	"... and says the daemon stopped or restarted since the sandbox began, and what to do"
unlike "$(cat "$T/sb.err")" "control socket is root only" "... never that the control socket is root only"

done_testing
