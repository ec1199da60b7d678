#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-fdlimit: a server limited to 256 open files still walks a tree of 5,000
# files and folders (find, stat and cat of every one), twice.  An inode must
# not pin a descriptor: the kernel keeps every inode it has looked up.
. "$top_srcdir/tests/lib.sh"

S="$T/src"
M="$T/mnt"
mkdir -p "$S" "$M"
chmod 0755 "$S"
# 50 folders of 99 files: 5,000 entries under the root
make_tree "$S" 50 99
is "$(find "$S" -mindepth 1 | wc -l)" 5000 "a tree of 5,000 files and folders"

listing()
{
	(cd "$1" && find . -printf '%p %y %s %m %U:%G\n' | sort)
}
stats()
{
	(cd "$1" && find . -print0 | sort -z | xargs -0 stat -c '%n %F %s %a %h')
}
contents()
{
	(cd "$1" && find . -type f -print0 | sort -z | xargs -0 cat | sha256sum)
}

# the server alone gets the limit, soft and hard, as `ulimit -n 256` would
if ! fs_mount_nofile 256:256 "$S" "$M"; then
	not_ok "mount -f with ulimit -n 256"
	done_testing
	exit 1
fi
ok "mount -f with ulimit -n 256"

for pass in 1 2; do
	is "$(listing "$M")" "$(listing "$S")" "pass $pass: find lists the same 5,001 entries as the host"
	is "$(stats "$M")" "$(stats "$S")" "pass $pass: stat of every entry matches the host"
	is "$(contents "$M")" "$(contents "$S")" "pass $pass: cat of every file matches the host"
done
is "$(cat "$M/d49/f98" 2>&1)" "file 49/98" "the mount still answers"
check "the server is still running" kill -0 "$FS_PID"
is "$(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$FS_PID/limits")" 256:256 \
	"the server ran with its limit of 256 open files"
check "unmount" fs_umount "$M"

# a soft limit below the hard one (1024 is the usual default): the server takes
# the hard one, so its cache of looked-up names is not 512 entries
if fs_mount_nofile 256:4096 "$S" "$M"; then
	is "$(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$FS_PID/limits")" 4096:4096 \
		"with ulimit -Sn 256 -Hn 4096 the server raises its soft limit to 4096"
	is "$(listing "$M")" "$(listing "$S")" "and lists the tree"
	check "unmount" fs_umount "$M"
else
	not_ok "mount -f with ulimit -Sn 256 -Hn 4096"
fi
done_testing
