#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-operator: an operator who is not root (a member of agentfsd's group)
# runs `agentfs exec` on a bot it made, with the confinement root's exec
# gives: its own namespaces, the host read-only, a private /tmp, no network,
# the connect guard, no keyring, no capability; the bot's user is the
# operator itself. bwrap runs as the operator, in a user namespace of its
# own, and no user namespace can be made inside. It cannot run another
# operator's bot, nor reach the daemon's state. The test makes its own users
# and group (tests/exec-lib.sh) and removes them.
. "$top_srcdir/tests/exec-lib.sh"

[ -n "$PY" ] || skip_all "python3 is missing"
command -v setpriv >/dev/null || skip_all "setpriv is missing"
KEYS="$T/keyring"
cp "$top_builddir/tests/keyring" "$KEYS" || bail_out "tests/keyring is not built"

# as USER ARGS...: a program as USER, with its groups (the operators' among them)
as_u()
{
	local who=$1
	shift
	setpriv --reuid="$who" --regid="$(id -g "$who")" --init-groups "$@"
}
as_u "$EX_USER" unshare -U true 2>/dev/null ||
	skip_all "the kernel does not let users make user namespaces here"
# ThreadSanitizer's runtime keeps a thread of its own in agentfs, and the
# kernel makes no user namespace for a process of several threads (unshare
# says EINVAL): an operator's exec is checked on the plain and ASan builds.
ldd "$AGENTFS" 2>/dev/null | grep -q libtsan &&
	skip_all "agentfs is built with ThreadSanitizer, whose own thread keeps it from making a user namespace"

OP2=afs-o$$
for _i in 1 2 3 4 5 6 7 8 9 10; do
	getent passwd "$OP2" >/dev/null ||
		useradd -M -U -G "$EX_GROUP" -d /nonexistent -s /bin/sh "$OP2" 2>/dev/null
	getent passwd "$OP2" >/dev/null && break
	sleep 0.3
done
getent passwd "$OP2" >/dev/null || bail_out "cannot make the user $OP2"
op_user_del()
{
	host_del userdel "$OP2" && host_del groupdel "$OP2" ||
		echo "# exec-operator.sh: cannot delete the user $OP2" >&2
	exec_user_del
}
lib_exit_hook=op_user_del
op() { as_u "$EX_USER" "$AGENTFS" --socket "$D_SOCK" "$@"; }
op2() { as_u "$OP2" "$AGENTFS" --socket "$D_SOCK" "$@"; }

mkdir -p "$T/ows" "$T/out" "$T/o2" "$T/srv"
own "$T/ows" "$T/out"
chown "$OP2" "$T/o2"
printf '{"group": "%s"}\n' "$EX_GROUP" >"$T/conf"
daemon_start --config "$T/conf" || bail_out "agentfsd did not start"
is "$(stat -c %a "$D_STATE")" 711 "with operators, the state folder is 0711 (their bwrap passes through)"
check "the operator makes ob over its folder" op create ob "$T/ows" --no-network
check "another operator makes b2 over its own" op2 create b2 "$T/o2" --no-network

# --- who and where -------------------------------------------------------------
is "$(op exec ob -- id -u </dev/null 2>&1)" "$EX_UID" "the command runs as the operator (the bot's user)"
like "$(op exec ob -- sh -c 'echo $$' </dev/null 2>&1)" '^[1-3]$' "in a pid namespace of its own"
out=$(op exec ob -- sh -c 'grep -E "^(CapEff|CapPrm|NoNewPrivs):" /proc/self/status' </dev/null 2>&1 | tr -s '\t\n' '  ')
like "$out" "CapPrm: 0+ CapEff: 0+ NoNewPrivs: 1" "no capability, no_new_privs ($out)"
like "$(op exec ob -- unshare -U true </dev/null 2>&1)" "unshare failed|Operation not permitted|No space left" \
	"no user namespace can be made inside"
check "it writes its folder" op exec ob -- sh -c 'echo x >f' </dev/null
is "$(stat -c %u "$T/ows/f" 2>&1)" "$EX_UID" "what it makes is the operator's on the host"
like "$(op exec ob -- sh -c 'echo x >"$1/x"' sh "$T/out" </dev/null 2>&1)" "Read-only file system" \
	"a folder of the operator's outside the roots is read-only inside"
check "... and nothing was written there" test ! -e "$T/out/x"
# a mount the host makes meanwhile under a shared mount does not reach the
# sandbox (exec-basic.sh for root's): the operator's bwrap starts from a
# private copy too
mkdir -p "$T/prop" "$T/open" && chmod 777 "$T/open" "$T/prop"
if mount --bind "$T/prop" "$T/prop" && mount --make-shared "$T/prop" && mkdir -p "$T/prop/sub"; then
	rm -f "$T/prop.out"
	op exec ob -- sh -c 'sleep 2; grep -c " $1/prop/sub " /proc/self/mountinfo; touch "$1/prop/sub/bot" 2>/dev/null && echo wrote' \
		sh "$T" </dev/null >"$T/prop.out" 2>&1 &
	prop_pid=$!
	sleep 1
	mount --bind "$T/open" "$T/prop/sub" || diag "cannot bind $T/open on $T/prop/sub"
	wait "$prop_pid"
	is "$(tr '\n' ' ' <"$T/prop.out")" "0 " "a mount made on the host meanwhile does not reach the operator's sandbox"
	[ -e "$T/open/bot" ] && not_ok "... and the command wrote nothing through it" ||
		ok "... and the command wrote nothing through it"
	rm -f "$T/prop.out" "$T/open/bot"
	umount "$T/prop/sub" 2>/dev/null || umount -l "$T/prop/sub"
	umount "$T/prop" 2>/dev/null || umount -l "$T/prop"
else
	skip "cannot make a shared mount here"
	skip "cannot make a shared mount here"
fi
op exec ob -- sh -c 'echo x >/tmp/p.$1' sh "$$" </dev/null
check "/tmp is the sandbox's own" test ! -e "/tmp/p.$$"
is "$(op exec ob -- ls -A "$D_STATE" </dev/null 2>&1)" "" "the daemon's state is hidden"
is "$(op exec ob -- "$AGENTFS" --json status </dev/null 2>/dev/null | jget bot)" ob \
	"AGENT_SOCKET talks as the bot"
is "$(op exec ob -- "$KEYS" read @u </dev/null 2>&1)" EPERM "the keyring calls are refused"

# --- network off, and the connect guard --------------------------------------------
"$PY" -c '
import os, socket, sys
t = socket.socket()
t.bind(("127.0.0.1", 0))
t.listen(4)
u = socket.socket(socket.AF_UNIX)
u.bind(sys.argv[1] + "/op.sock")
os.chown(sys.argv[1] + "/op.sock", int(sys.argv[2]), -1)
u.listen(4)
open(sys.argv[1] + "/port", "w").write(str(t.getsockname()[1]))
t.settimeout(60)
u.settimeout(60)
import select
seen = 0
while True:
    r, _, _ = select.select([t, u], [], [], 60)
    if not r:
        break
    for s in r:
        c, _ = s.accept()
        seen += 1
        open(sys.argv[1] + "/seen", "w").write(str(seen))
        c.close()
' "$T/srv" "$EX_UID" >/dev/null 2>&1 &
track_pid $!
wait_until 10 test -s "$T/srv/port" || bail_out "the host servers did not start"
reach='
import socket, sys
try:
    if sys.argv[1].isdigit():
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    else:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
    print("connected")
except OSError as e:
    import errno
    print(errno.errorcode.get(e.errno, e.errno))
'
like "$(op exec ob -- "$PY" -c "$reach" "$(cat "$T/srv/port")" </dev/null 2>&1)" "ECONNREFUSED|ENETUNREACH" \
	"no network: the host's loopback TCP is out of reach"
is "$(op exec ob -- "$PY" -c "$reach" "$T/srv/op.sock" </dev/null 2>&1)" EACCES \
	"the connect guard: the operator's own socket outside the roots is refused (EACCES)"
is "$(cat "$T/srv/seen" 2>/dev/null || echo 0)" 0 "the host servers saw no connection"
# the guard still lets the command reach what it serves itself
out=$(op exec ob -- "$PY" -c '
import socket, threading
s = socket.socket(socket.AF_UNIX)
s.bind("/tmp/own.sock")
s.listen(1)
threading.Thread(target=lambda: s.accept()[0].sendall(b"hi")).start()
c = socket.socket(socket.AF_UNIX)
c.connect("/tmp/own.sock")
print(c.recv(2).decode())' </dev/null 2>&1)
is "$out" hi "a server the command starts in /tmp answers it"

# --- nobody else's ------------------------------------------------------------------
r=$(op exec b2 -- true </dev/null 2>&1)
is "$?" 125 "the operator cannot run another operator's bot (125)"
like "$r" "not_found" "... which it does not see"
like "$(as_u "$OP2" ls "$D_STATE" 2>&1)" "Permission denied" "an operator cannot list the state folder"
like "$(as_u "$OP2" ls "$D_STATE/mnt" 2>&1)" "Permission denied" "nor the folder of the bots' mounts"
like "$(as_u "$OP2" touch "$D_STATE/mnt/ob/0/planted" 2>&1)" "Permission denied" \
	"nor write through ob's mount what it may not write on the host"
check "... and nothing was planted" test ! -e "$T/ows/planted"

afs shutdown >/dev/null
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
printf '{"group": ""}\n' >"$T/conf2"
daemon_start --config "$T/conf2" || bail_out "agentfsd did not start"
is "$(stat -c %a "$D_STATE")" 700 "without operators (no group), the state folder is 0700 again"
is "$(pgrep -fa "bwrap .*$T/")" "" "no sandbox is left running"

done_testing
