#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-sockets: a bot without network reaches no host socket: not TCP/UDP
# (its own network namespace), not abstract UNIX sockets (the same, and
# Landlock's scope where the kernel has it), not the pathname sockets of the
# host's services under /run (hidden), root's (it is not root) or a 0666 one
# anywhere (the seccomp guard, src/cli/exec-guard.c), not through a symlink, not
# by racing the guard; and the variables naming agents are gone. Only its
# AGENT_SOCKET and the sockets it serves itself answer. What a bot with
# network reaches is checked too (see agentfs(1)).
. "$top_srcdir/tests/exec-lib.sh"

[ -n "$PY" ] || skip_all "python3 is missing"
[ -d /run ] || skip_all "the host has no /run"
KEYS="$T/keyring"
cp "$top_builddir/tests/keyring" "$KEYS" || bail_out "tests/keyring is not built"

W="$T/ws" WN="$T/wn" RUN=/run/agentfs-test-$$
mkdir -p "$W" "$WN" "$T/srv"
own "$W" "$WN"
exec_sockets_cleanup()
{
	local rc=$?
	rm -rf "$RUN"
	(exit "$rc")
	daemon_cleanup
}
trap exec_sockets_cleanup EXIT
mkdir -m 0755 "$RUN" || bail_out "cannot make $RUN"

# serve ADDR MODE NAME: a UNIX socket server answering "hello" (ADDR starting
# with @ is abstract), chmod MODE; waits until it listens. Each connection
# it accepts adds a line to $T/srv/accepts.NAME (see accepts).
serve()
{
	"$PY" -c '
import os, socket, sys
addr, mode, ready, log = sys.argv[1], int(sys.argv[2], 8), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
if not addr.startswith("@"):
    os.chmod(addr, mode)
s.listen(64)
open(ready, "w").close()
while True:
    c, _ = s.accept()
    with open(log, "a") as f:
        f.write("accepted\n")
    try:
        c.sendall(b"hello\n")
    except OSError:
        pass
    c.close()
' "$1" "$2" "$T/srv/ready.$3" "$T/srv/accepts.$3" </dev/null >/dev/null 2>&1 &
	track_pid $!
	wait_until 10 test -e "$T/srv/ready.$3"
}
# reach ADDR: connect and print what the server says, or the error's name
reach='
import errno, socket, sys
a = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
try:
    s.connect("\0" + a[1:] if a.startswith("@") else a)
    print(s.recv(16).decode().strip())
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
'
# accepts NAME: how many connections the server NAME has accepted
accepts()
{
	if [ -e "$T/srv/accepts.$1" ]; then
		wc -l <"$T/srv/accepts.$1"
	else
		echo 0
	fi
}
ABS="@agentfs-test-$$"
serve "$RUN/svc.sock" 0666 run || bail_out "the /run server did not start"
serve "$T/srv/root.sock" 0600 root || bail_out "the root-only server did not start"
serve "$T/srv/open.sock" 0666 open || bail_out "the open server did not start"
serve "$ABS" 0 abs || bail_out "the abstract server did not start"
for a in "$RUN/svc.sock" "$T/srv/root.sock" "$T/srv/open.sock" "$ABS"; do
	is "$("$PY" -c "$reach" "$a")" hello "the host reaches $a"
done

daemon_start || bail_out "agentfsd did not start"
check "create w1 (no network)" afs create w1 "$W" --sandbox workspace-write --no-network
check "create wn (network)" afs create wn "$WN" --sandbox workspace-write --network

# --- without network -----------------------------------------------------------
out=$(ex w1 -- "$PY" -c "$reach" "$RUN/svc.sock" </dev/null 2>&1)
is "$out" ENOENT "no network: a 0666 socket under /run is not there (/run is hidden)"
out=$(ex w1 -- ls -A /run </dev/null 2>&1)
is "$out" "" "no network: /run inside is empty"
out=$(ex w1 -- ls -A /var/run/ </dev/null 2>&1)
is "$out" "" "no network: /var/run inside is empty"
out=$(ex w1 -- "$PY" -c "$reach" "$T/srv/root.sock" </dev/null 2>&1)
is "$out" EACCES "no network: a root-only socket elsewhere is refused (the bot is not root)"
out=$(ex w1 -- "$PY" -c "$reach" "$ABS" </dev/null 2>&1)
is "$out" ECONNREFUSED "no network: the host's abstract socket is not there (own network namespace)"
open_seen=$(accepts open)
out=$(ex w1 -- "$PY" -c "$reach" "$T/srv/open.sock" </dev/null 2>&1)
is "$out" EACCES "no network: a 0666 socket outside /run is refused (the seccomp guard)"
ln -s "$T/srv/open.sock" "$W/open-link.sock"
out=$(ex w1 -- "$PY" -c "$reach" "$W/open-link.sock" </dev/null 2>&1)
is "$out" EACCES "no network: a symlink in the bot's root to that socket is refused"
out=$(ex w1 -- "$PY" -c "$reach" "open-link.sock" </dev/null 2>&1)
is "$out" EACCES "no network: the same by a relative path from the bot's folder"
# In a user namespace of its own (root there), the bot is still the bot.
if ex w1 -- unshare -r true </dev/null >/dev/null 2>&1; then
	out=$(ex w1 -- unshare -rn "$PY" -c "$reach" "$T/srv/open.sock" </dev/null 2>&1)
	is "$out" EACCES "no network: from a user and network namespace of its own, still refused"
	NS_TEST=1
else
	skip "unshare -r is not allowed inside the sandbox here"
fi
out=$(ex w1 -- "$PY" -c "$reach" /etc/passwd </dev/null 2>&1)
is "$out" ECONNREFUSED "no network: a file that is not a socket: ECONNREFUSED, as connect says"
out=$(ex w1 -- "$PY" -c '
import socket, subprocess, sys
s = socket.socket(socket.AF_UNIX)
s.bind("/tmp/stale.sock")
s.close()
print(subprocess.run([sys.executable, "-c", sys.argv[1], "/tmp/stale.sock"],
                     capture_output=True, text=True).stdout.strip())
' "$reach" </dev/null 2>&1)
is "$out" ECONNREFUSED "no network: a stale socket file of the command's own: ECONNREFUSED, as connect says"
out=$(ex w1 --cwd "$W" -- sh -c 'printf "protocol=https\nhost=example.com\nusername=u\npassword=p\n\n" |
	git credential-cache --socket /tmp/cc/sock store &&
	printf "protocol=https\nhost=example.com\n\n" | git credential-cache --socket /tmp/cc/sock get &&
	git credential-cache --socket /tmp/cc/sock exit' </dev/null 2>&1)
like "$out" "password=p" "no network: git credential-cache starts its daemon and is answered by it"
out=$(ex w1 -- "$PY" -c "$reach" "$T/srv/nothing.sock" </dev/null 2>&1)
is "$out" ENOENT "no network: a path that does not exist: ENOENT"
out=$(ex w1 --allow-host-sockets -- "$PY" -c "$reach" "$T/srv/open.sock" </dev/null 2>&1)
is "$out" EACCES "no network: --allow-host-sockets changes nothing where the kernel has the filter"
is "$(accepts open)" "$open_seen" "no network: the 0666 host server saw no connection at all"

# A kernel that refuses the filter: seccomp(2) made to fail with ENOSYS by
# a filter of our own around agentfs exec (SECCOMP_SET_MODE_FILTER with
# flags ANY: every filter; with NEW_LISTENER: only the guard's listener). It
# must not run the command; where only the listener is missing,
# --allow-host-sockets runs it, with a warning, and the host socket is then
# reachable (what the option is for) while the keyring calls stay refused.
# Without any filter nothing runs, even so: the keyrings would be open.
no_seccomp='
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
if sys.argv[1] == "all":
    prog = (insn(0x20, 0, 0, 0) + insn(0x15, 0, 1, 317) +
            insn(0x06, 0, 0, 0x00050000 | 38) + insn(0x06, 0, 0, 0x7fff0000))
else:
    prog = (insn(0x20, 0, 0, 0) + insn(0x15, 0, 3, 317) + insn(0x20, 0, 0, 24) +
            insn(0x45, 0, 1, int(sys.argv[1], 0)) + insn(0x06, 0, 0, 0x00050000 | 38) +
            insn(0x06, 0, 0, 0x7fff0000))
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
if libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    sys.exit("prctl: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[2], sys.argv[2:])
'
# "all": every seccomp(2) call fails; 8: those with the flag NEW_LISTENER
no_filter=all no_listener=8
for f in no_filter no_listener; do
	out=$("$PY" -c "$no_seccomp" "${!f}" "$AGENTFS" --socket "$D_SOCK" exec w1 -- \
		sh -c 'echo ran >"$1/ran"' sh "$W" </dev/null 2>&1)
	rc=$?
	like "$out" "cannot keep host UNIX sockets out of reach.*refused the seccomp filter.*--allow-host-sockets" \
		"$f: exec without network says why it refuses"
	if [ "$rc" -ne 0 ] && [ ! -e "$W/ran" ]; then
		ok "$f: nothing was run (status $rc)"
	else
		not_ok "$f: nothing was run (status $rc)"
	fi
done
out=$("$PY" -c "$no_seccomp" "$no_filter" "$AGENTFS" --socket "$D_SOCK" exec w1 --allow-host-sockets -- \
	sh -c 'echo ran >"$1/ran"' sh "$W" </dev/null 2>&1)
rc=$?
like "$out" "cannot keep the kernel's keyrings out of reach" \
	"no filter at all, --allow-host-sockets: refused all the same, naming the keyrings"
[ "$rc" -ne 0 ] && [ ! -e "$W/ran" ] && ok "no filter at all: nothing was run (status $rc)" ||
	not_ok "no filter at all: nothing was run (status $rc)"
seen=$(accepts open)
out=$("$PY" -c "$no_seccomp" "$no_listener" "$AGENTFS" --socket "$D_SOCK" exec w1 --allow-host-sockets -- \
	sh -c '"$1" -c "$2" "$3"; "$4" read @u' sh "$PY" "$reach" "$T/srv/open.sock" "$KEYS" </dev/null 2>&1)
like "$out" "warning: .*refused the seccomp filter's listener.*" "no listener, --allow-host-sockets: a warning"
like "$out" "^hello\$" "no listener, --allow-host-sockets: the command runs, the 0666 socket is reachable"
is "$(accepts open)" "$((seen + 1))" "no listener, --allow-host-sockets: the host server saw that connection"
like "$out" "^EPERM\$" "no listener, --allow-host-sockets: the keyring calls are still refused"
out=$(env SSH_AUTH_SOCK=/x DBUS_SESSION_BUS_ADDRESS=unix:path=/x DBUS_SYSTEM_BUS_ADDRESS=unix:path=/y \
	GPG_AGENT_INFO=/x XDG_RUNTIME_DIR=/run/user/0 WAYLAND_DISPLAY=w DISPLAY=:0 \
	"$AGENTFS" --socket "$D_SOCK" exec w1 -- env </dev/null 2>&1 |
	grep -cE '^(SSH_AUTH_SOCK|DBUS_SESSION_BUS_ADDRESS|DBUS_SYSTEM_BUS_ADDRESS|GPG_AGENT_INFO|XDG_RUNTIME_DIR|WAYLAND_DISPLAY|DISPLAY)=')
is "$out" 0 "SSH_AUTH_SOCK, DBUS_*, GPG_AGENT_INFO, XDG_RUNTIME_DIR, WAYLAND_DISPLAY, DISPLAY are not passed in"
out=$(ex w1 -- sh -c '"$1" --json status' sh "$AGENTFS" </dev/null 2>/dev/null | jget bot)
is "$out" w1 "AGENT_SOCKET still answers (agentfs status inside is w1)"
# The guard connects for the command as the bot's user but from its own
# (root) process: that process must not be registered as running the bot.
out=$(ex w1 -- "$PY" -c '
import json, os, socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(os.environ["AGENT_SOCKET"])
s.sendall(json.dumps({"op": "exec_register", "name": "w1"}).encode() + b"\n")
r = json.loads(s.makefile().readline())
print(r.get("error", {}).get("code", "ok") if not r.get("ok") else "ok")' </dev/null 2>&1)
is "$out" forbidden "exec_register through the guard's connect is refused (its pid is the supervisor's)"

# A server the command starts itself: reachable, and it sees the bot's uid.
own_server='
import os, socket, struct, sys, threading
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
seen = []
def serve():
    c, _ = s.accept()
    pid, uid, gid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    seen.append(uid)
    c.sendall(b"hello\n")
    c.close()
t = threading.Thread(target=serve)
t.start()
c = socket.socket(socket.AF_UNIX)
c.settimeout(5)
try:
    c.connect(path)
    print(c.recv(16).decode().strip(), end=" ")
except OSError as e:
    print(e, end=" ")
    os._exit(1)
t.join()
print("uid", seen[0])
'
out=$(ex w1 -- "$PY" -c "$own_server" /tmp/own.sock </dev/null 2>&1)
is "$out" "hello uid $EX_UID" "no network: a server the command starts in /tmp answers; SO_PEERCRED is the bot's uid"
# The guard walks a path with openat2 (no /proc magic link); where openat2
# is missing (a container's seccomp profile says ENOSYS) it refuses, never
# falling back to a plain open(): even the command's own server is refused.
no_openat2='
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
prog = (insn(0x20, 0, 0, 0) + insn(0x15, 0, 1, 437) +
        insn(0x06, 0, 0, 0x00050000 | 38) + insn(0x06, 0, 0, 0x7fff0000))
buf = ctypes.create_string_buffer(prog, len(prog))
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fp = Fprog(len(prog) // 8, ctypes.addressof(buf))
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fp), 0, 0) != 0:
    sys.exit("prctl: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
'
out=$("$PY" -c "$no_openat2" "$AGENTFS" --socket "$D_SOCK" exec w1 -- "$PY" -c "$own_server" /tmp/own.sock \
	</dev/null 2>&1)
like "$out" "Permission denied" "without openat2 the guard refuses even the command's own server (EACCES)"
like "$out" "host-socket guard: .*openat2 is not available" "... and says why"
out=$(ex w1 -- "$PY" -c "$own_server" "$W/own.sock" </dev/null 2>&1)
is "$out" "hello uid $EX_UID" "no network: a server the command starts in the bot's root answers"
if [ -n "${NS_TEST-}" ]; then
	out=$(ex w1 -- unshare -rn "$PY" -c "$own_server" /tmp/own-ns.sock </dev/null 2>&1)
	is "$out" "hello uid 0" "no network: a server in a network namespace of the command's own answers"
fi
out=$(ex w1 -- "$PY" -c '
import socket, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
threading.Thread(target=lambda: s.accept()[0].sendall(b"tcp\n")).start()
c = socket.create_connection(s.getsockname(), timeout=5)
print(c.recv(8).decode().strip())
' </dev/null 2>&1)
is "$out" tcp "no network: loopback TCP inside the sandbox works"
kinds='
import ctypes, errno, socket
def name(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
libc = ctypes.CDLL(None, use_errno=True)
def uring():
    if libc.syscall(425, 1, ctypes.create_string_buffer(120)) < 0:
        e = ctypes.get_errno()
        raise OSError(e, "io_uring_setup")
print("dgram", name(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)),
      "dgram-pair", name(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)),
      "raw", name(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_RAW)),
      "pair", name(lambda: socket.socketpair()),
      "seqpacket", name(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)),
      "udp", name(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
      "io_uring", name(uring))
'
out=$(ex w1 -- "$PY" -c "$kinds" </dev/null 2>&1)
is "$out" "dgram EACCES dgram-pair EACCES raw EACCES pair ok seqpacket ok udp ok io_uring ENOSYS" \
	"no network: AF_UNIX datagram sockets (socket, socketpair, SOCK_RAW) EACCES; stream pairs work; io_uring ENOSYS"

out=$(ex w1 --cwd "$W" -- sh -c 'printf "all: m\nm: m.c\n\tcc -o m m.c\n" >Makefile &&
	printf "int main(void) { return 0; }\n" >m.c && MAKEFLAGS= MAKELEVEL= make -s && ./m && echo built' </dev/null 2>&1)
is "$out" built "no network: a build (make, cc) runs under the guard"

# The race: threads connect to an allowed socket (the command's own, in
# /tmp) while others flip the address in the same buffer to the host's
# 0666 socket and swap a symlink between the two. The host server must
# see nothing; the command's own server must have been reached.
race='
import ctypes, os, socket, sys, threading
host, n = sys.argv[1], int(sys.argv[2])
ok_path = "/tmp/ok.sock"
srv = socket.socket(socket.AF_UNIX)
srv.bind(ok_path)
srv.listen(128)
def drain():
    while True:
        srv.accept()[0].close()
threading.Thread(target=drain, daemon=True).start()
libc = ctypes.CDLL(None, use_errno=True)
def sun(path):
    b = ctypes.create_string_buffer(110)
    b[0:2] = (1).to_bytes(2, "little")
    b[2:2 + len(path)] = path.encode()
    return b
buf = sun(ok_path)
good, bad = bytes(sun(ok_path)), bytes(sun(host))
lnk = sun("/tmp/lnk")
os.symlink(ok_path, "/tmp/lnk")
stop = False
res = {}
def flip():
    while not stop:
        ctypes.memmove(buf, bad, 110)
        ctypes.memmove(buf, good, 110)
def swap():
    i = 0
    while not stop:
        t = "/tmp/lnk.%d" % i
        os.symlink(host if i % 2 else ok_path, t)
        os.rename(t, "/tmp/lnk")
        i += 1
def connect(addr, k):
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX)
        r = libc.connect(s.fileno(), addr, 110)
        e = "ok" if r == 0 else os.strerror(ctypes.get_errno())
        res[e] = res.get(e, 0) + 1
        s.close()
ts = [threading.Thread(target=flip), threading.Thread(target=swap)]
cs = [threading.Thread(target=connect, args=(buf, 0)), threading.Thread(target=connect, args=(lnk, 1))]
for t in ts + cs:
    t.start()
for t in cs:
    t.join()
stop = True
for t in ts:
    t.join()
print("ok" if res.get("ok", 0) > 0 else "never-connected", sum(res.values()), sorted(res.items()), file=sys.stderr)
print("reached-own" if res.get("ok", 0) > 0 else "never-connected",
      "refused-host" if res.get(os.strerror(13), 0) > 0 else "never-refused")
'
race_seen=$(accepts open)
out=$(ex w1 -- "$PY" -c "$race" "$T/srv/open.sock" 1000 </dev/null 2>"$T/race.err")
diag "race: $(cat "$T/race.err")"
is "$out" "reached-own refused-host" "race: 2000 connects while the address and a symlink flip to the host socket"
is "$(accepts open)" "$race_seen" "race: the host's 0666 server saw no connection at all"

# --- with network: what is reachable --------------------------------------------
out=$(ex wn -- "$PY" -c "$reach" "$RUN/svc.sock" </dev/null 2>&1)
is "$out" hello "network: /run is the host's, its sockets the user may write are reachable"
out=$(ex wn -- "$PY" -c "$reach" "$T/srv/root.sock" </dev/null 2>&1)
is "$out" EACCES "network: a root-only socket is still refused"
abi=$("$PY" -c 'import ctypes; print(ctypes.CDLL(None).syscall(444, None, 0, 1))')
out=$(ex wn -- "$PY" -c "$reach" "$ABS" </dev/null 2>&1)
if [ "$abi" -ge 6 ]; then
	is "$out" EPERM "network: the host's abstract socket is refused (Landlock ABI $abi scope)"
else
	skip "Landlock ABI $abi has no abstract socket scope: reachable ($out)"
fi

done_testing
