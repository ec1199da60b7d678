#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-basic: what a workspace-write bot's command sees through `agentfs exec`:
# the host read-only (also what the host mounts meanwhile: no propagation),
# its folder writable at its own path, a private /tmp and
# /proc, a new session, death with the client, no network (loopback only),
# its own socket as AGENT_SOCKET, the daemon's folders hidden, no
# capabilities to undo any of it, and nothing left on the host afterwards.
. "$top_srcdir/tests/exec-lib.sh"

command -v ps >/dev/null || skip_all "ps (procps) is missing"

W="$T/ws"
mkdir -p "$W/sub" "$T/sib" "$T/ws2" "$T/wn" "$T/srv" "$T/prop" "$T/open"
chmod 777 "$T/open"
own "$W" "$T/ws2" "$T/wn"
echo host-data >"$W/hostfile"
echo sibling-data >"$T/sib/file"

daemon_start || bail_out "agentfsd did not start"
check "create w1 (workspace-write, no network)" afs create w1 "$W" --sandbox workspace-write --no-network
check "create w2 (another bot of the operator)" afs create w2 "$T/ws2" --sandbox workspace-write
check "create wn (workspace-write, network)" afs create wn "$T/wn" --sandbox workspace-write --network

fuse_before=$(fuse_lines)
parent_before=$(ls -A "$T")
probe="agentfs-exec-probe.$$.$RANDOM"

# --- the host, read-only -----------------------------------------------------
hostfile=/etc/hostname
[ -r "$hostfile" ] || hostfile=/etc/passwd
out=$(ex w1 -- cat "$hostfile" </dev/null 2>&1)
is "$out" "$(cat "$hostfile")" "the host is readable inside ($hostfile)"
out=$(ex w1 -- touch "/etc/$probe" </dev/null 2>&1)
rc=$?
like "$out" "Read-only file system" "touch /etc/... inside fails with EROFS"
[ "$rc" -ne 0 ] && [ ! -e "/etc/$probe" ] &&
	ok "touch /etc/... fails (status $rc) and leaves nothing on the host" ||
	{ not_ok "touch /etc/... fails and leaves nothing on the host"; rm -f "/etc/$probe"; }
out=$(ex w1 -- cat "$T/sib/file" </dev/null 2>&1)
is "$out" sibling-data "a folder next to the bot's folder is readable inside"
out=$(ex w1 -- sh -c 'echo x >"$1"' sh "$T/sib/new" </dev/null 2>&1)
like "$out" "Read-only file system" "writing next to the bot's folder fails with EROFS"
[ -e "$T/sib/new" ] && not_ok "the refused write made nothing on the host" ||
	ok "the refused write made nothing on the host"

# A mount the host makes while the command runs (a USB stick, an automount
# the bot itself triggers, a new pod volume) under a shared mount (systemd
# makes every mount shared) would reach the sandbox read-write through
# mount propagation: the sandbox's mount table is a private copy.
if mount --bind "$T/prop" "$T/prop" && mount --make-shared "$T/prop" && mkdir -p "$T/prop/sub"; then
	rm -f "$T/prop.out"
	ex w1 -- sh -c 'sleep 2; grep -c " $1/prop/sub " /proc/self/mountinfo; touch "$1/prop/sub/bot" 2>/dev/null && echo wrote' \
		sh "$T" </dev/null >"$T/prop.out" 2>&1 &
	prop_pid=$!
	sleep 1
	mount --bind "$T/open" "$T/prop/sub" || diag "cannot bind $T/open on $T/prop/sub"
	wait "$prop_pid"
	is "$(tr '\n' ' ' <"$T/prop.out")" "0 " "a mount made on the host meanwhile does not reach the sandbox"
	[ -e "$T/open/bot" ] && not_ok "... and the command wrote nothing through it" ||
		ok "... and the command wrote nothing through it"
	rm -f "$T/prop.out" "$T/open/bot"
	umount "$T/prop/sub" 2>/dev/null || umount -l "$T/prop/sub"
	umount "$T/prop" 2>/dev/null || umount -l "$T/prop"
else
	skip "cannot make a shared mount here"
	skip "cannot make a shared mount here"
fi

# --- the bot's folder, at its own path, writable ----------------------------
out=$(cd "$W" && ex w1 -- pwd </dev/null 2>&1)
is "$out" "$W" "started in the bot's folder, at its own absolute path"
out=$(ex w1 -- ls "$W" </dev/null 2>&1)
is "$(printf '%s' "$out" | tr '\n' ' ')" "hostfile sub" "ls of the bot's folder inside shows the host's files"
out=$(ex w1 -- sh -c 'echo written-inside >"$1/fromin" && cat "$1/hostfile"' sh "$W" </dev/null 2>&1)
is "$out" host-data "the bot's folder is readable inside"
is "$(cat "$W/fromin" 2>&1)" written-inside "a write in the bot's folder inside shows on the host"

# --- a private /tmp ----------------------------------------------------------
out=$(ex w1 -- sh -c 'ls -A /tmp | wc -l; echo private >"/tmp/$1" && cat "/tmp/$1"' sh "$probe" </dev/null 2>&1)
is "$(printf '%s' "$out" | tr '\n' ' ')" "0 private" "/tmp inside starts empty and is writable"
[ -e "/tmp/$probe" ] && { not_ok "a file made in /tmp inside is not in the host's /tmp"; rm -f "/tmp/$probe"; } ||
	ok "a file made in /tmp inside is not in the host's /tmp"

# --- a fresh /proc (pid namespace) ------------------------------------------
out=$(ex w1 -- sh -c 'echo $$' </dev/null 2>&1)
like "$out" '^[1-3]$' "the command's pid is small (its own pid namespace): $out"
out=$(ex w1 -- sh -c 'ls /proc | grep -c "^[0-9][0-9]*$"' </dev/null 2>&1)
like "$out" '^[1-5]$' "/proc inside shows only the sandbox's processes ($out pids)"
if command -v ps >/dev/null; then
	out=$(ex w1 -- ps -e -o pid= </dev/null 2>&1 | wc -l)
	like "$out" '^[1-5]$' "ps -e inside lists only the sandbox's processes ($out)"
else
	skip "ps is missing"
fi
# processes inside may signal each other
out=$(ex w1 -- sh -c 'sleep 10 & kill $!; wait $!; echo $?' </dev/null 2>/dev/null)
is "$out" 143 "a process inside can signal another one inside"
if [ -n "$PY" ]; then
	out=$(ex w1 -- "$PY" -c '
import multiprocessing as mp
def f(lock):
    with lock:
        pass
if __name__ == "__main__":
    lock = mp.Lock()
    p = mp.Process(target=f, args=(lock,))
    p.start()
    p.join()
    print("child", p.exitcode)
' </dev/null 2>&1)
	is "$out" "child 0" "POSIX semaphores work inside (multiprocessing.Lock in a child process)"
else
	skip "python3 is missing"
fi

# --- a new session, no terminal, and death with the client ----------------
out=$(ex w1 -- tty </dev/null 2>&1)
is "$out" "not a tty" "tty inside says 'not a tty' when stdin is not a terminal"
marker="4242.$$"
# not through ex(): $! must be the client itself, not a subshell
"$AGENTFS" --socket "$D_SOCK" exec w1 -- sleep "$marker" </dev/null >/dev/null 2>&1 &
cpid=$!
track_pid "$cpid"
if wait_until 10 pgrep -fx "sleep $marker" >/dev/null; then
	spid=$(pgrep -fx "sleep $marker" | head -n 1)
	ok "the sandboxed sleep runs (host pid $spid)"
	s_sid=$(ps -o sid= -p "$spid" | tr -d ' ')
	my_sid=$(ps -o sid= -p $$ | tr -d ' ')
	[ -n "$s_sid" ] && [ "$s_sid" != "$my_sid" ] &&
		ok "the command runs in a new session (sid $s_sid, ours $my_sid)" ||
		not_ok "the command runs in a new session (sid '$s_sid', ours '$my_sid')"
	is "$(ps -o tty= -p "$spid" | tr -d ' ')" "?" "the command has no controlling terminal"
	kill -KILL "$cpid"
	wait "$cpid" 2>/dev/null
	if wait_until 5 eval '! pgrep -f "$marker" >/dev/null'; then
		ok "kill -9 of the exec client: the sandbox (bwrap and sleep) goes away"
	else
		not_ok "kill -9 of the exec client: the sandbox (bwrap and sleep) goes away"
		diag "still running: $(pgrep -fa "$marker")"
		for p in $(pgrep -f "$marker"); do kill -KILL "$p"; done
	fi
else
	not_ok "the sandboxed sleep runs"
	skip "new session (no sleep)"
	skip "no controlling terminal (no sleep)"
	skip "death with the client (no sleep)"
fi

# --- network ------------------------------------------------------------------
if [ -n "$PY" ]; then
	"$PY" -c '
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
s.settimeout(60)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept()
    c.sendall(b"hello\n")
    c.close()
' "$T/srv/port" >/dev/null 2>&1 &
	track_pid $!
	if wait_until 10 test -s "$T/srv/port"; then
		port=$(cat "$T/srv/port")
		connect='exec 3<>"/dev/tcp/127.0.0.1/$1" && read -r l <&3 && echo "got $l"'
		out=$(timeout 10 bash -c "$connect" sh "$port" 2>&1)
		is "$out" "got hello" "the host's server on 127.0.0.1:$port answers on the host"
		out=$(timeout 10 "$AGENTFS" --socket "$D_SOCK" exec w1 -- bash -c "$connect" sh "$port" </dev/null 2>&1)
		rc=$?
		[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && ! printf '%s' "$out" | grep -q "got hello" &&
			ok "without network, connecting to the host's 127.0.0.1:$port fails (status $rc)" ||
			{ not_ok "without network, connecting to the host's 127.0.0.1:$port fails"; diag "status $rc: $out"; }
		out=$(timeout 10 "$AGENTFS" --socket "$D_SOCK" exec wn -- bash -c "$connect" sh "$port" </dev/null 2>&1)
		is "$out" "got hello" "a bot with network reaches the host's 127.0.0.1:$port"
	else
		not_ok "the host's test server started"
		skip "no network (no server)"
		skip "network (no server)"
	fi
	out=$(ex w1 -- "$PY" -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=5)
a, _ = s.accept()
c.sendall(b"ping")
print("loopback", a.recv(4).decode())
' </dev/null 2>&1)
	is "$out" "loopback ping" "without network, loopback works inside (server and client inside)"
else
	skip "python3 is missing: no network tests"
	skip "python3 is missing"
	skip "python3 is missing"
	skip "python3 is missing"
fi
if command -v ip >/dev/null; then
	out=$(ex w1 -- ip -o link </dev/null 2>&1 | awk -F': ' '{ print $2 }' | tr '\n' ' ')
	is "$out" "lo " "without network, ip link inside shows only lo"
	out=$(ex w1 -- ip -o addr show dev lo </dev/null 2>&1)
	like "$out" 'inet 127\.0\.0\.1' "lo inside is up with 127.0.0.1"
else
	skip "ip is missing"
	skip "ip is missing"
fi

# --- the bot's socket, and the daemon's folders hidden ------------------------
out=$(ex w1 -- sh -c 'echo "$AGENT_SOCKET"' </dev/null 2>&1)
is "$out" "$D_SOCK.d/w1.sock" "AGENT_SOCKET is the bot's socket"
out=$(ex w1 -- "$AGENTFS" --json ls </dev/null 2>/dev/null | jget 'bots.*.name' | tr '\n' ' ')
is "$out" "w1 " "agentfs ls inside (through AGENT_SOCKET) answers as w1: only itself"
out=$(ex w1 -- "$AGENTFS" --json status </dev/null 2>/dev/null | jget bot)
is "$out" w1 "agentfs status inside answers as the bot w1"
out=$(ex w1 -- "$AGENTFS" --socket "$D_SOCK" --json status </dev/null 2>/dev/null)
is "$(printf '%s' "$out" | jget bot)" w1 "the daemon's control socket path inside answers as the bot"
out=$(ex w1 -- ls -A "$D_STATE" </dev/null 2>&1)
is "$out" "" "the daemon's state folder is empty inside"
out=$(ex w1 -- ls -A "$D_SOCK.d" </dev/null 2>&1)
is "$out" "w1.sock" "SOCKET.d inside holds only the bot's own socket (no other bot's)"

# --- descriptors the caller left open do not go in ----------------------------
# An open folder outside the roots is a way past them (it is the host's mount,
# writable, whatever the sandbox binds); a host socket likewise.
mkdir -p "$T/srv/leak"
own "$T/srv/leak" # the bot's user may write it: only the sandbox keeps it out
out=$( (exec 7<"$T/srv/leak" && ex w1 -- sh -c 'if [ -e /proc/self/fd/7 ]; then echo x >/proc/self/fd/7/planted; echo open; else echo closed; fi' </dev/null 2>&1) )
is "$out" closed "a folder descriptor the caller left open is not in the sandbox"
check "... and nothing was written through it on the host" test ! -e "$T/srv/leak/planted"
err=$(ex w1 -- true <"$T/srv/leak" 2>&1)
is "$?" 125 "a folder as standard input: exec refuses (125)"
like "$err" "standard input is a folder" "... and says why"

# --- no capabilities: none of the above can be undone from inside ---------
out=$(ex w1 -- sh -c 'grep "^CapEff:" /proc/self/status' </dev/null 2>&1)
like "$out" 'CapEff:[[:space:]]+0+$' "the command has no effective capabilities ($out)"
ex w1 -- sh -c 'mount -o remount,bind,rw / ; echo escaped >"$1"' sh "$T/sib/escaped" </dev/null >/dev/null 2>&1
if [ -e "$T/sib/escaped" ]; then
	not_ok "the command cannot remount / read-write and write the host"
	diag "inside: mount -o remount,bind,rw / && echo escaped >$T/sib/escaped  made the file on the host"
else
	ok "the command cannot remount / read-write and write the host"
fi
rm -f "$T/sib/escaped"  # counted once, above
out=$(ex w1 -- sh -c 'umount "$1" 2>/dev/null; ls -A "$1" && echo listed' sh "$D_STATE" </dev/null 2>&1)
is "$out" listed "the command cannot unmount the tmpfs that hides the daemon's state (other bots' mounts)"
out=$(ex w1 -- sh -c 'umount "$2"; "$1" --socket "$2" --json status' sh "$AGENTFS" "$D_SOCK" </dev/null 2>/dev/null)
is "$(printf '%s' "$out" | jget bot)" w1 "the command cannot uncover the daemon's control socket (stays the bot)" ||
	diag "status inside after umount $D_SOCK: $out"

# --- nothing left behind -----------------------------------------------------
is "$(fuse_lines)" "$fuse_before" "no agentfs mount appeared or went on the host ($fuse_before)"
is "$(ls -A "$T")" "$parent_before" "nothing new in the bot folder's parent"
is "$(ls -A "$T/sib" | tr '\n' ' ')" "file " "nothing new next to the bot's folder"
is "$(pgrep -fa "bwrap .*$T/")" "" "no sandbox (bwrap) is left running"
expect_ok "the daemon still answers" "$(afs --json status)"

done_testing
