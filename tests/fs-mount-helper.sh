#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-mount-helper: `mount -t fuse.agentfs SOURCE MOUNTPOINT -o OPTS` and an
# fstab line of type fuse.agentfs mount through the built mount.fuse.agentfs
# helper: options only mount(8) and fstab use (noauto, _netdev, nofail, x-*)
# are dropped, ro applies, ro_path=SUB and allow_new_repos become agentfs's
# own options, and an unknown option is refused by name.
#
# mount(8) looks for mount.fuse.agentfs in /sbin only; so as not to write
# there, the test runs in a private mount namespace where /usr/sbin is an
# overlay of the helper's folder over the real one.
. "$top_srcdir/tests/lib.sh"

need_agentfs mount -t fuse.agentfs
command -v unshare >/dev/null || skip_all "unshare is missing (util-linux)"
command -v mount >/dev/null || skip_all "mount is missing (util-linux)"
sbin=$(readlink -f /sbin)
mkdir -p "$T/helper" "$T/src/sub" "$T/mnt"
ln -s "$top_builddir/src/mount.fuse.agentfs" "$T/helper/mount.fuse.agentfs"
unshare -m --propagation private true 2>/dev/null || skip_all "cannot make a mount namespace"
unshare -m --propagation private \
	mount -t overlay overlay -o "lowerdir=$T/helper:$sbin" "$sbin" 2>/dev/null ||
	skip_all "cannot lay an overlay over $sbin"
echo hello >"$T/src/file"
cat >"$T/fstab" <<EOF
# an fstab line for agentfs
$T/src $T/mnt fuse.agentfs noauto,nofail,_netdev,x-systemd.automount,ro_path=sub,noatime 0 0
EOF

# The checks run inside the namespace; each prints "PASS DESC" or "FAIL DESC".
cat >"$T/inner.sh" <<'EOF'
set -u
T=$1 sbin=$2
res() { if [ "$1" = 0 ]; then echo "PASS $2"; else echo "FAIL $2"; fi; }
opts() { awk -v m="$T/mnt" '$2 == m { print $4 }' /proc/mounts; }
mount -t overlay overlay -o "lowerdir=$T/helper:$sbin" "$sbin" || { echo "FAIL overlay"; exit 1; }

mount -t fuse.agentfs "$T/src" "$T/mnt" -o ro,noauto,_netdev,nofail,x-test=1,noexec 2>"$T/err"
res $? "mount -t fuse.agentfs SOURCE MOUNTPOINT -o ro,noauto,_netdev,... succeeds"
res "$([ "$(findmnt -n -o FSTYPE "$T/mnt")" = fuse.agentfs ]; echo $?)" "the mount is fuse.agentfs"
res "$(opts | grep -qE '(^|,)ro(,|$)'; echo $?)" "-o ro shows as ro in /proc/mounts"
res "$(opts | grep -q noexec; echo $?)" "-o noexec is applied"
res "$([ "$(cat "$T/mnt/file")" = hello ]; echo $?)" "files read through it"
res "$(! (echo x >"$T/mnt/new") 2>/dev/null; echo $?)" "a read-only mount refuses writes"
umount "$T/mnt"
res $? "umount unmounts it"

mount -T "$T/fstab" "$T/mnt" 2>"$T/err"
res $? "an fstab line of type fuse.agentfs mounts (mount -T FSTAB MOUNTPOINT)"
res "$(findmnt -n -o SOURCE "$T/mnt" | grep -qx "$T/src"; echo $?)" "its source is the folder (fsname)"
res "$(opts | grep -q noatime; echo $?)" "noatime from fstab is applied"
res "$( (echo x >"$T/mnt/new") 2>/dev/null; echo $?)" "writes work outside ro_path"
res "$(! (echo x >"$T/mnt/sub/new") 2>/dev/null; echo $?)" "ro_path=sub makes sub read-only"
umount "$T/mnt"

mount -t fuse.agentfs "$T/src" "$T/mnt" -o bogus 2>"$T/err"
rc=$?
res "$([ $rc -ne 0 ] && grep -q "unknown mount option 'bogus'" "$T/err"; echo $?)" \
	"an unknown option is refused by name: $(cat "$T/err")"
res "$(! findmnt -n "$T/mnt" >/dev/null; echo $?)" "nothing is left mounted"

mount -f -t fuse.agentfs "$T/src" "$T/mnt" -o ro
res "$(! findmnt -n "$T/mnt" >/dev/null; echo $?)" "mount -f (fake) mounts nothing"
EOF
AGENTFS="$top_builddir/src/agentfs" unshare -m --propagation private bash "$T/inner.sh" "$T" "$sbin" >"$T/out" 2>&1
while read -r word desc; do
	case $word in
	PASS) ok "$desc" ;;
	FAIL) not_ok "$desc" ;;
	*) diag "$word $desc" ;;
	esac
done <"$T/out"
[ -s "$T/err" ] && diag "last stderr: $(cat "$T/err")"
[ ! -e /sbin/mount.fuse.agentfs ] || [ -L "$T/helper/mount.fuse.agentfs" ] &&
	ok "the host's /sbin was not written" || not_ok "the host's /sbin was not written"

done_testing
