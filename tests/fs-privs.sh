#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-privs: nothing made or changed through a mount makes a host file more
# privileged: setuid on any file, setgid on a non-folder and security.*
# xattrs (file capabilities) are refused with EPERM, even for root; setgid
# folders stay (git's core.sharedRepository); chown clears setuid as natively;
# a user's write clears a setuid root set while it held the file, and stops
# short of root's reserved blocks, as natively (passthrough or not).
. "$top_srcdir/tests/lib.sh"

[ "${AGENTFS_TEST_BINDFS:-0}" = 1 ] && skip_all "bindfs lets setuid through"
PY=$(command -v python3) || skip_all "python3 is missing"

mkdir "$T/src" "$T/mnt"
fs_mount "$T/src" "$T/mnt" || bail_out "mount $T/src on $T/mnt"
M=$T/mnt S=$T/src

cp /bin/sh "$M/x" && ok "cp /bin/sh x through the mount" || not_ok "cp /bin/sh x through the mount"
out=$(chmod 4755 "$M/x" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q "Operation not permitted" &&
	ok "chmod 4755 x fails with EPERM" || { not_ok "chmod 4755 x fails with EPERM"; diag "status $rc: $out"; }
is "$(stat -c %a "$S/x")" 755 "the host file has no setuid bit"
chmod 2755 "$M/x" 2>/dev/null && not_ok "chmod 2755 x (setgid file) fails" || ok "chmod 2755 x (setgid file) fails"
is "$(stat -c %a "$S/x")" 755 "the host file has no setgid bit"
check "chmod 0700 x (no special bits) works" chmod 0700 "$M/x"
is "$(stat -c %a "$S/x")" 700 "the host file is 0700"

out=$("$PY" -c '
import os, sys
for name, mode in (("c4755", 0o4755), ("c2755", 0o2755)):
    try:
        os.close(os.open(sys.argv[1] + "/" + name, os.O_CREAT | os.O_WRONLY, mode))
        print(name, "made")
    except OSError as e:
        print(name, e.errno == 1 and "EPERM" or e)
try:
    os.mknod(sys.argv[1] + "/fifo", 0o2644 | 0o010000)
    print("fifo made")
except OSError as e:
    print("fifo", e.errno == 1 and "EPERM" or e)
' "$M" 2>&1)
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "c4755 EPERM c2755 EPERM fifo EPERM " \
	"open(O_CREAT, 04755), open(O_CREAT, 02755) and a setgid mknod fail with EPERM"
is "$(ls "$S" | tr '\n' ' ')" "x " "none of them made a file on the host"

check "mkdir d" mkdir "$M/d"
check "chmod g+s d (a folder) works" chmod g+s "$M/d"
is "$(stat -c %a "$S/d")" 2755 "the host folder is setgid"
check "mkdir -m 2775 e works" mkdir -m 2775 "$M/e"
is "$(stat -c %a "$S/e")" 2775 "the host folder e is 2775"
# refused for the setuid bit itself, not for any failure
out=$(chmod u+s "$M/d" 2>&1)
case "$out" in
*"Operation not permitted"*) ok "chmod u+s d (setuid folder) fails with EPERM" ;;
*) not_ok "chmod u+s d (setuid folder) fails with EPERM"; diag "chmod: '$out'" ;;
esac
is "$(stat -c %a "$S/d")" 2755 "the host folder keeps its mode 2755"

# a file setuid on the host may keep its bit; a chown clears it as natively
cp /bin/sh "$S/h" && chmod 4755 "$S/h"
check "chmod u+w of a host file that is already setuid works" chmod 4755 "$M/h"
check "chown nobody h through the mount" chown 65534 "$M/h"
is "$(stat -c '%a %u' "$S/h")" "755 65534" "the chown cleared the setuid bit on the host"

out=$("$PY" -c '
import os, sys
try:
    os.setxattr(sys.argv[1], "security.capability",
                bytes.fromhex("0100000200200000000000000000000000000000"))
    print("set")
except OSError as e:
    print(e.errno == 1 and "EPERM" or e)
' "$M/x" 2>&1)
is "$out" EPERM "setxattr security.capability (cap_setuid) through the mount: EPERM"
if command -v setcap >/dev/null; then
	setcap cap_setuid+ep "$M/x" 2>/dev/null && not_ok "setcap through the mount fails" ||
		ok "setcap through the mount fails"
	is "$(getcap "$S/x")" "" "the host file has no capability"
else
	skip "setcap is missing"
	skip "setcap is missing"
fi
out=$("$PY" -c '
import os, sys
try:
    os.setxattr(sys.argv[1], "security.foo", b"1")
    print("set")
except OSError as e:
    print(e.errno == 1 and "EPERM" or e)
' "$M/x" 2>&1)
is "$out" EPERM "setxattr security.foo through the mount: EPERM"
if setcap cap_net_raw+ep "$S/x" 2>/dev/null; then
	echo appended >>"$M/x" && ok "a write to a host file with a capability works" ||
		not_ok "a write to a host file with a capability works"
	is "$(getcap "$S/x")" "" "the write removed the capability, as natively"
else
	skip "the source cannot hold a capability"
	skip "the source cannot hold a capability"
fi
check "user.* xattrs still work" "$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.k", b"v")' "$M/x"

# --- a write made for someone else keeps none of root's privileges --------------
# The host makes a file a user holds open setuid root (chown root, chmod 4755,
# an "install in place"): natively the user's next write clears the bit (it
# lacks CAP_FSETID); the server writes as root, and a passthrough backing file
# was made with root's credentials. Both now write as the caller would.
held_suid()
{
	local f="$1" h="$2"
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$SYSPY" -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
os.write(fd, b"#!/bin/sh\nid\n")
time.sleep(1)
os.pwrite(fd, b"#!/bin/sh\nEV\n", 0)
' "$f" &
	local pid=$!
	sleep 0.4
	chown root:root "$h" && chmod 4755 "$h"
	wait "$pid"
	stat -c %a "$h"
}
chmod 755 "$T" "$S"
# a python other users may run (root's own may live in its home)
SYSPY=$PY
[ -x /usr/bin/python3 ] && SYSPY=/usr/bin/python3
mkdir "$S/u" && chown 65534:65534 "$S/u"
is "$(held_suid "$S/u/native" "$S/u/native")" 755 "natively, the user's write through a held fd clears the setuid root set meanwhile"
is "$(held_suid "$M/u/pt" "$S/u/pt")" 755 "through the mount (passthrough): cleared too"
check "unmount" fs_umount "$M"
fs_mount -o nopassthrough "$S" "$M" || bail_out "mount -o nopassthrough"
is "$(held_suid "$M/u/plain" "$S/u/plain")" 755 "through the mount (-o nopassthrough): cleared too"
check "unmount" fs_umount "$M"

# ext4 keeps blocks for root (-m): a user's writes stop short of them natively,
# and through the mount (writes made as root once went on into them)
img=$T/img R=$T/resv RM=$T/resvmnt
mkdir "$R" "$RM"
if ! command -v mkfs.ext4 >/dev/null || ! truncate -s 32M "$img" || ! mkfs.ext4 -q -m 25 "$img" ||
	! mount -o loop "$img" "$R" 2>/dev/null; then
	skip "no ext4 loop mount here (mkfs.ext4 or a loop device missing)"
	skip "(the same)"
else
	mkdir "$R/u" && chown 65534:65534 "$R/u"
	fill() { setpriv --reuid=65534 --regid=65534 --clear-groups -- dd if=/dev/zero of="$1" bs=1M >/dev/null 2>&1; du -k "$2" | cut -f1; }
	native=$(fill "$R/u/native" "$R/u/native")
	rm -f "$R/u/native"
	if fs_mount "$R" "$RM"; then
		through=$(fill "$RM/u/bot" "$R/u/bot")
		[ "$through" -le $((native + 64)) ] && ok "a user's writes through the mount stop where its native ones do ($through KB, natively $native KB)" ||
			not_ok "a user's writes through the mount stop where its native ones do ($through KB, natively $native KB)"
		fs_umount "$RM" || fusermount3 -uz "$RM"
	else
		not_ok "mount of the ext4 image"
	fi
	ok "(the image unmounted)"
	for i in $(seq 50); do umount "$R" 2>/dev/null && break; sleep 0.1; done
fi
rm -f "$img"

done_testing
