#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-acl: POSIX ACLs on the host count through a mount as they do on the
# host.  The server opens existing files as root, so before the kernel was
# told to apply ACLs (FUSE_CAP_POSIX_ACL) only the mode bits were checked:
# a file whose ACL denies a user (mode 0666, user:U:---) was read and
# written by that user through the mount.  Also: an ACL granting what the
# mode bits deny works, a folder's default ACL is inherited by what is made
# through the mount, and the umask still applies where there is none.
. "$top_srcdir/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (a second user)"
[ "${AGENTFS_TEST_BINDFS:-0}" = 1 ] && skip_all "bindfs does not apply ACLs"
PY=$(command -v python3) || skip_all "python3 is missing"
command -v useradd >/dev/null && command -v runuser >/dev/null || skip_all "no useradd/runuser"

U="agfs-acl$$"
acl_cleanup()
{
	local rc=$?
	host_del userdel "$U"
	host_del groupdel "$U"
	(exit "$rc")
	lib_cleanup
}
trap acl_cleanup EXIT
for _i in 1 2 3 4 5 6 7 8 9 10; do
	getent passwd "$U" >/dev/null || useradd -M -U -d /nonexistent -s /bin/sh "$U" 2>/dev/null
	getent passwd "$U" >/dev/null && break
	sleep 0.3
done
getent passwd "$U" >/dev/null || bail_out "cannot add the user $U"
UID_U=$(id -u "$U")

S="$T/src" M="$T/mnt"
mkdir -p "$S" "$M"
chmod 755 "$T" "$S"

# setacl PATH ATTR ENTRY...: ENTRY is tag:perm[:id]; tags u (owner), U (a
# user), g (owning group), m (mask), o (other)
setacl()
{
	"$PY" - "$@" <<'PY'
import os, struct, sys
tags = {"u": 1, "U": 2, "g": 4, "G": 8, "m": 0x10, "o": 0x20}
ents = []
for e in sys.argv[3:]:
    t, p, *i = e.split(":")
    ents.append((tags[t], int(p), int(i[0]) if i else 0xffffffff))
os.setxattr(sys.argv[1], sys.argv[2],
            struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *x) for x in ents))
PY
}
as_u() { runuser -u "$U" -- "$@"; }
result() { "$@" >/dev/null 2>&1 && echo OK || echo DENIED; }

# a file every mode bit lets U read and write, whose ACL denies U
echo secret >"$S/denied"
chmod 666 "$S/denied"
setacl "$S/denied" system.posix_acl_access u:6 U:0:"$UID_U" g:6 m:6 o:6
# a file no mode bit lets U read, whose ACL lets U read it
echo shared >"$S/granted"
chmod 600 "$S/granted"
setacl "$S/granted" system.posix_acl_access u:6 U:4:"$UID_U" g:0 m:4 o:0
# a folder whose ACL denies U to make files, mode 0777
mkdir "$S/nowrite"
chmod 777 "$S/nowrite"
setacl "$S/nowrite" system.posix_acl_access u:7 U:5:"$UID_U" g:7 m:7 o:7
# a folder with a default ACL: new files get U:rw
mkdir "$S/inherit"
chmod 777 "$S/inherit"
setacl "$S/inherit" system.posix_acl_default u:7 U:6:"$UID_U" g:5 m:7 o:5

is "$(result as_u cat "$S/denied")" DENIED "control, on the host: U cannot read the denied file"
is "$(result as_u cat "$S/granted")" OK "control, on the host: U reads the granted file"

fs_mount "$S" "$M" || bail_out "mount $S on $M"

is "$(result as_u cat "$M/denied")" DENIED "through the mount: U cannot read a file its ACL denies"
is "$(result as_u sh -c "echo pwn >>'$M/denied'")" DENIED "... nor write it"
is "$(cat "$S/denied")" secret "the host file is unchanged"
is "$(result as_u cat "$M/granted")" OK "through the mount: U reads a file its ACL grants (mode 0600)"
is "$(result as_u touch "$M/nowrite/x")" DENIED "U cannot make a file in a folder its ACL denies"
check "U makes a file in a folder with a default ACL" as_u sh -c "umask 077; : >'$M/inherit/f'"
is "$("$PY" -c 'import os,sys; print(len(os.getxattr(sys.argv[1], "system.posix_acl_access")))' \
	"$S/inherit/f" 2>&1)" 44 "the new host file has the inherited ACL (5 entries)"
mkdir -p "$S/plain" && chmod 777 "$S/plain"
as_u sh -c "umask 027; : >'$M/plain/g'"
is "$(stat -c %a "$S/plain/g")" 640 "... and the umask applies to it (0640)"

fs_umount "$M" || not_ok "umount $M"
done_testing
