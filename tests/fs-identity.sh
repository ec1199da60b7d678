#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-identity: a file the mount has only looked up holds no descriptor, so
# the host may remove it and give its inode number to a new file; the mount
# must never take the new file for the old one (a file is (dev, ino, birth
# time)), and a name the host changed is served as the host has it now.
. "$top_srcdir/tests/lib.sh"

S="$T/src"
M="$T/mnt"
mkdir -p "$S" "$M"
chmod 0755 "$S"

# hold PATH: a process keeps an O_PATH descriptor on PATH (the kernel keeps
# the mount's inode, and the server its entry, without any open of the file)
hold()
{
	python3 -c 'import os, sys, time
fd = os.open(sys.argv[1], os.O_PATH | os.O_NOFOLLOW)
print("held", flush=True)
time.sleep(60)' "$1" >"$T/hold.out" &
	HOLD_PID=$!
	track_pid "$HOLD_PID"
	wait_until 5 grep -q held "$T/hold.out"
}
unhold()
{
	kill "$HOLD_PID" 2>/dev/null
	wait "$HOLD_PID" 2>/dev/null
	rm -f "$T/hold.out"
}

run_ok() { "$@" 2>/dev/null && echo OK || echo FAILED; }

# a folder of files to push entries out of a small descriptor cache
make_tree "$S" 4 200

# nopassthrough: a kernel passthrough backing file keeps an opened file's
# inode (and its number) for as long as the kernel knows the file
if ! fs_mount_nofile 256:256 -o nopassthrough "$S" "$M"; then
	not_ok "mount -f with ulimit -n 256"
	done_testing
	exit 1
fi
ok "mount -f with ulimit -n 256 (a cache of 128 descriptors)"

# --- names the host changed after the mount looked them up
echo one >"$S/swapped"
is "$(stat -c %s "$M/swapped")" 4 "a file looked up (4 bytes)"
echo second >"$S/swapped.new"
mv "$S/swapped.new" "$S/swapped"
is "$(cat "$M/swapped")" second "the host renamed another file over it: cat reads the new one at once"
is "$(stat -c %s "$M/swapped")" 7 "... and stat shows its size"

echo moved >"$S/before"
is "$(stat -c %s "$M/before")" 6 "a file looked up"
mv "$S/before" "$S/after"
like "$(cat "$M/before" 2>&1)" "No such file or directory" \
	"the host renamed it: its old name is gone through the mount at once"
is "$(cat "$M/after")" moved "... and its new name reads it"

# a file with two names: the one the mount last saw it by is unlinked
# through the mount while a process holds it by the other
mkdir -p "$S/l1" "$S/l2"
echo linked >"$S/l1/x"
ln "$S/l1/x" "$S/l2/y"
is "$(python3 - "$M" <<'PY'
import os, sys
M = sys.argv[1]
fd = os.open(M + "/l1/x", os.O_PATH | os.O_NOFOLLOW)
os.stat(M + "/l2/y")     # last seen by this name
os.unlink(M + "/l2/y")
try:
    print(os.fstat(fd).st_nlink)
except OSError as e:
    print(e.strerror)
PY
)" 1 "a hard link unlinked through the mount: fstat of an O_PATH descriptor held by the other name works"
is "$(cat "$M/l1/x")" linked "... and the other name reads it"

# --- inode numbers the host reuses
printf 'old file\n' >"$S/old"
chmod 0644 "$S/old"
old_ino=$(stat -c %i "$S/old")
hold "$M/old"
is "$(stat -c %i "$M/old")" "$old_ino" "a file looked up and held by an O_PATH descriptor only"
rm -f "$S/old"
if [ "$(reuse_ino "$S" "$old_ino" new)" = yes ]; then
	printf 'a new file\n' >"$S/new"
	chmod 0600 "$S/new"
	is "$(stat -c '%i %s %a' "$M/new")" "$old_ino 11 600" \
		"the host gave its number to a new file: stat through the mount shows the new one"
	is "$(cat "$M/new")" "a new file" "... cat reads the new one"
	is "$(run_ok chmod 0640 "$M/new")" OK "... chmod of it works"
	is "$(stat -c %a "$S/new")" 640 "... and reaches the new file on the host"
	like "$(cat "$M/old" 2>&1)" "No such file or directory" "... the old name is gone"
else
	for k in 1 2 3 4 5; do skip "this file system gave the freed inode number to no new file"; done
fi
unhold
rm -f "$S/new"

# a file opened once, its descriptor then pushed out of the cache: the
# entry keeps a file handle, and the number's next owner is another file
printf 'opened\n' >"$S/opened"
old_ino=$(stat -c %i "$S/opened")
hold "$M/opened"
is "$(cat "$M/opened")" opened "a file opened through the mount"
cat "$M"/d*/* >/dev/null
rm -f "$S/opened"
if [ "$(reuse_ino "$S" "$old_ino" next)" = yes ]; then
	printf 'the next one\n' >"$S/next"
	is "$(stat -c '%i %s' "$M/next")" "$old_ino 13" \
		"its descriptor evicted, its number reused: stat shows the new file"
	is "$(cat "$M/next")" "the next one" "... cat reads it"
	is "$(run_ok chmod 0600 "$M/next")" OK "... chmod of it works"
	cat "$M"/d*/* >/dev/null
	is "$(cat "$M/next" 2>&1)" "the next one" "... and still reads it once that descriptor is evicted too"
else
	for k in 1 2 3 4; do skip "this file system gave the freed inode number to no new file"; done
fi
unhold

is "$(cat "$M/d3/f199")" "file 3/199" "the mount still answers"
check "the server is still running" kill -0 "$FS_PID"
check "unmount" fs_umount "$M"
done_testing
