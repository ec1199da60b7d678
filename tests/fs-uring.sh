#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-uring: -o uring serves a mount's requests over io_uring (Linux 6.14+,
# fusefs/uring.c). What is asserted: the mount says so; requests really go
# over the rings (the completions counted on the server's io_uring
# instances, /proc/PID/fdinfo CqTail, grow by at least one per file an
# untar and a git commit made); what was made through the mount is right
# for plain git and diff on the host; and with the kernel not offering
# io_uring, -o uring says why and serves over /dev/fuse. Skipped (77)
# where enable_uring is missing or cannot be set; the trap puts it back.
. "$top_srcdir/tests/lib.sh"
need_agentfs "-o uring"
command -v git >/dev/null || skip_all "git is missing"
need_fuse_uring
git_test_env

S="$T/src"
M="$T/m"
mkdir -p "$S" "$M"
chmod 0755 "$S"
tar -C "$top_srcdir" -cf "$T/tree.tar" fusefs src/common tests/lib.sh
nfiles=$(tar -tf "$T/tree.tar" | grep -vc '/$')

if ! fs_mount_fg --allow-new-repos -o uring "$S" "$M" 2>"$T/log"; then
	bail_out "mount: $(cat "$T/log")"
fi
wait_until 5 grep -q "io_uring" "$T/log"
like "$(cat "$T/log")" "served over io_uring" "the mount says it is served over io_uring"

before=$(ring_completions "$FS_PID")
mkdir "$M/w"
tar -C "$M/w" -xf "$T/tree.tar"
is "$?" 0 "an untar through the mount"
(cd "$M/w" && git init -q && git add -A && git commit -qm tree)
is "$?" 0 "git init, add and commit through the mount"
sync
after=$(ring_completions "$FS_PID")
diag "ring completions: $before before, $after after, for $nfiles files"
if [ $((after - before)) -ge "$nfiles" ]; then
	ok "the requests went over the rings ($((after - before)) completions)"
else
	not_ok "the requests went over the rings ($((after - before)) completions)"
fi

mkdir "$T/ref"
tar -C "$T/ref" -xf "$T/tree.tar"
check "the host has what was untarred, byte for byte" diff -r --exclude=.git "$T/ref" "$S/w"
check "plain git finds the repository sound" git -C "$S/w" fsck --no-progress
is "$(git -C "$S/w" status --porcelain | wc -l)" 0 "plain git sees no change"
is "$(git -C "$S/w" ls-files | wc -l)" "$nfiles" "every file is in the commit"
is "$(cat "$M/w/fusefs/uring.h")" "$(cat "$top_srcdir/fusefs/uring.h")" "a file reads back through the mount"
rm -rf "$M/w"
is "$?" 0 "rm -rf through the mount"
is "$(ls -A "$S")" "" "and it is gone from the host"
fs_umount "$M"
wait "$FS_PID"
is "$?" 0 "the server ends cleanly at unmount"

# The kernel does not offer it: said, and served over /dev/fuse.
echo N >"$fuse_uring_param"
M2="$T/m2"
mkdir -p "$M2"
if ! fs_mount_fg -o uring "$S" "$M2" 2>"$T/log2"; then
	bail_out "mount: $(cat "$T/log2")"
fi
echo Y >"$fuse_uring_param"
echo data >"$M2/f"
is "$(cat "$S/f")" data "without io_uring from the kernel, the mount serves over /dev/fuse"
like "$(cat "$T/log2")" "does not offer io_uring.*served over /dev/fuse" "and says why"
is "$(ring_completions "$FS_PID")" 0 "no ring was made"
fs_umount "$M2"
wait "$FS_PID"

done_testing
