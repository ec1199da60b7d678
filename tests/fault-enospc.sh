#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-enospc: a full disk under the source.  A 16 MiB ext4 image is
# loop-mounted under $T and served by `agentfs mount`; dd through the mount
# fails with "No space left on device", a write(2) returns ENOSPC, and after
# a file is deleted through the mount the space comes back and writes work
# again.  The mount and its server stay up throughout.
#
# Cleanup (trap): agentfs umount, then umount the loop filesystem, then
# losetup -d of its loop device (found with losetup -j), then lib.sh's.
. "$top_srcdir/tests/lib.sh"

FCLIENT="$top_builddir/tests/fault-client"
[ -x "$FCLIENT" ] || bail_out "$FCLIENT is not built (make check builds it)"
command -v mkfs.ext4 >/dev/null || skip_all "mkfs.ext4 is missing (e2fsprogs)"
command -v losetup >/dev/null || skip_all "losetup is missing (util-linux)"
losetup -f >/dev/null 2>&1 || skip_all "no free loop device (losetup -f fails)"

IMG="$T/disk.img"
SMALL="$T/small"
M="$T/mnt"

enospc_cleanup()
{
	local rc=$?
	set +e
	loop_unmount "$M" "$SMALL" "$IMG"
	(exit "$rc")
	lib_cleanup
}
trap enospc_cleanup EXIT

mkdir -p "$SMALL" "$M"
dd if=/dev/zero of="$IMG" bs=1M count=16 status=none || bail_out "cannot make the image"
mkfs.ext4 -q -F "$IMG" >/dev/null 2>&1 || skip_all "mkfs.ext4 failed on a 16 MiB image"
mount -o loop "$IMG" "$SMALL" 2>/dev/null || skip_all "cannot loop-mount an ext4 image here"
is "$(fs_type "$SMALL")" ext4 "a 16 MiB ext4 filesystem is loop-mounted under \$T"
chmod 0755 "$SMALL"
echo keep >"$SMALL/keep"

fs_mount_fg "$SMALL" "$M" || bail_out "agentfs mount -f of the small filesystem failed"
is "$(timeout 10 cat "$M/keep" 2>&1)" keep "agentfs mount serves it (a host file reads through it)"

avail_kb()
{
	df -P -k "$1" | awk 'NR == 2 { print $4 }'
}
diag "free before filling: $(avail_kb "$M") KiB through the mount, $(avail_kb "$SMALL") KiB on the host"

# --- fill it ---------------------------------------------------------------------------------
out=$(timeout 60 dd if=/dev/zero of="$M/fill" bs=1M count=64 2>&1)
rc=$?
[ "$rc" -ne 0 ] && ok "dd of 64 MiB through the mount fails (status $rc)" ||
	not_ok "dd of 64 MiB through the mount fails"
case "$out" in
*"No space left on device"*) ok "with \"No space left on device\"" ;;
*) not_ok "with \"No space left on device\""; diag "$out" ;;
esac
diag "the fill file holds $(stat -c %s "$SMALL/fill" 2>/dev/null) bytes; $(avail_kb "$M") KiB left"
r=$(timeout 30 "$FCLIENT" write "$M/more" 1048576)
case "$r" in
ENOSPC*) ok "write(2) of 1 MiB through the mount returns ENOSPC ($r)" ;;
*) not_ok "write(2) of 1 MiB through the mount returns ENOSPC"; diag "got: $r" ;;
esac
is "$(timeout 5 cat "$M/keep" 2>&1)" keep "the full mount still answers a read"
is "$(timeout 5 ls "$M" | sort | tr '\n' ' ')" "fill keep lost+found more " "and a listing"
check "the server is alive" kill -0 "$FS_PID"

# --- free space through the mount ------------------------------------------------------------
check "rm of the fill file through the mount" timeout 10 rm -f "$M/fill" "$M/more"
[ ! -e "$SMALL/fill" ] && ok "it is gone on the host" || not_ok "it is gone on the host"
# ext4 frees the blocks once the last reference to the inode is gone; a
# descriptor the server keeps on the deleted inode would hold them
if wait_until 10 eval '[ "$(avail_kb "$SMALL")" -ge 8192 ]'; then
	ok "the space comes back on the host ($(avail_kb "$SMALL") KiB free)"
else
	not_ok "the space comes back on the host"
	diag "free: $(avail_kb "$SMALL") KiB; deleted files the server holds open:" \
		"$(ls -l "/proc/$FS_PID/fd" 2>/dev/null | grep -F '(deleted)')"
fi
r=$(timeout 30 "$FCLIENT" write "$M/again" 4194304)
is "$r" "ok 4194304" "a write of 4 MiB through the mount works again"
is "$(stat -c %s "$SMALL/again" 2>/dev/null)" 4194304 "and reached the disk"
out=$(timeout 30 dd if=/dev/zero of="$M/again2" bs=1M count=2 conv=fsync 2>&1)
check "dd of 2 MiB through the mount works again" test $? -eq 0 || diag "$out"
is "$(timeout 5 cat "$M/keep" 2>&1)" keep "the mount still answers"
check "the server is alive" kill -0 "$FS_PID"

# --- fill it again, then free it again: the cycle repeats -------------------------------------
timeout 60 dd if=/dev/zero of="$M/fill2" bs=1M count=64 >/dev/null 2>&1
r=$(timeout 30 "$FCLIENT" write "$M/more2" 1048576)
case "$r" in
ENOSPC*) ok "full again: ENOSPC again" ;;
*) not_ok "full again: ENOSPC again"; diag "got: $r" ;;
esac
timeout 10 rm -f "$M/fill2" "$M/more2" "$M/again" "$M/again2"
if wait_until 10 eval '[ "$(avail_kb "$SMALL")" -ge 8192 ]'; then
	ok "freed again"
else
	not_ok "freed again"
	diag "free: $(avail_kb "$SMALL") KiB"
fi
is "$(timeout 30 "$FCLIENT" write "$M/last" 1048576)" "ok 1048576" "and written again"

check "unmount the agentfs mount" "$AGENTFS" umount "$M"
done_testing
