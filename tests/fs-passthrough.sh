#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-passthrough: on a kernel with FUSE passthrough (Linux 6.9+), file data
# goes straight between the caller and the source's page cache. What a user
# relies on: the mount says so; contents match the host byte for byte; a
# host write shows at once, in a read and even in a live shared mapping of
# the mount (one page cache); flock locks still go when the handle closes, although the
# kernel keeps its backing file open; many opens of one file and its hard
# links agree; and -o nopassthrough serves the same data the old way.
. "$top_srcdir/tests/lib.sh"
need_agentfs "kernel passthrough"
command -v python3 >/dev/null || skip_all "needs python3 (mmap and flock helpers)"

S="$T/src"
M="$T/m"
M2="$T/m2"
mkdir -p "$S" "$M" "$M2"
chmod 0755 "$S"

if ! fs_mount_fg "$S" "$M" 2>"$T/log"; then
	bail_out "mount: $(cat "$T/log")"
fi
wait_until 5 grep -q "passthrough" "$T/log"
if grep -q "offers no passthrough" "$T/log"; then
	skip_all "this kernel ($(uname -r)) has no FUSE passthrough"
fi
if grep -q "kernel passthrough on" "$T/log"; then ok "the mount reports kernel passthrough"; else not_ok "the mount reports kernel passthrough"; diag "$(cat "$T/log")"; fi

head -c 8388608 /dev/urandom >"$S/big"
is "$(md5sum <"$M/big")" "$(md5sum <"$S/big")" "an 8 MiB file reads the same through the mount"

head -c 3000000 /dev/urandom >"$T/data"
cp "$T/data" "$M/copy"
is "$(md5sum <"$S/copy")" "$(md5sum <"$T/data")" "a file copied in through the mount is on the host, same bytes"
printf 'tail' >>"$M/copy"
is "$(tail -c 4 "$S/copy")" tail "an append through the mount is on the host"
is "$(stat -c %s "$M/copy")" 3000004 "the mount's size follows its own append"

# Contents come from the source's own page cache: a host append is read at
# once, not after the attribute timeout.
echo one >"$S/app"
is "$(cat "$M/app")" one "the mount reads a host file"
echo two >>"$S/app"
is "$(cat "$M/app")" "one
two" "a host append is read through the mount at once"

# A live shared mapping of the mount sees a host write with no wait: the
# mapping is the source's page cache itself.
printf 'AAAAAAAA' >"$S/mapped"
out=$(python3 - "$M/mapped" "$S/mapped" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
mm = mmap.mmap(fd, 8, mmap.MAP_SHARED, mmap.PROT_READ)
before = mm[:8].decode()
with open(sys.argv[2], "r+b") as f:
    f.write(b"BBBB")
    f.flush()
print(before, mm[:8].decode())
EOF
)
is "$out" "AAAAAAAA BBBBAAAA" "a host write shows at once in a shared mapping of the mount"

# And the other way: a write through a mapping of the mount is on the host.
out=$(python3 - "$M/mapped" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
mm = mmap.mmap(fd, 8, mmap.MAP_SHARED)
mm[4:8] = b"CCCC"
mm.flush()
print("done")
EOF
)
is "$out" done "a shared writable mapping of the mount"
is "$(cat "$S/mapped")" BBBBCCCC "a write through a mapping of the mount is on the host"

# flock taken through the mount goes when the handle closes.
: >"$S/lk"
flock_try()
{
	python3 - "$1" <<'EOF'
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked")
except BlockingIOError:
    print("EAGAIN")
EOF
}
exec 7<"$M/lk"
python3 -c 'import fcntl; fcntl.flock(7, fcntl.LOCK_EX)'
is "$(flock_try "$S/lk")" EAGAIN "a flock held through the mount excludes the host"
exec 7<&-
flock_free() { [ "$(flock_try "$S/lk")" = locked ]; }
wait_until 5 flock_free
is "$(flock_try "$S/lk")" locked "closing the mount's handle releases its flock on the host"

# Many opens of one file and of its hard link, at once, all agree.
echo linked >"$S/a"
ln "$S/a" "$S/b"
exec 7<"$M/a" 8<"$M/b" 9>>"$M/a"
echo more >&9
is "$(cat <&7)" "linked
more" "a reader of one name sees a writer of the same file"
is "$(cat <&8)" "linked
more" "a reader of its hard link sees it too"
exec 7<&- 8<&- 9>&-
is "$(cat "$M/b")" "linked
more" "a new open of the hard link reads the same"

# Truncate and rewrite while another handle is open.
exec 7<"$M/big"
: >"$M/big"
is "$(stat -c %s "$S/big")" 0 "a truncate through the mount reaches the host while a reader is open"
echo new >"$M/big"
is "$(cat <&7)" new "the open reader sees the rewritten file"
exec 7<&-

# -o nopassthrough: served by read and write requests, same bytes (one
# server per folder: the first one goes first).
fs_umount "$M" || bail_out "cannot unmount $M"
served_free "$S" || bail_out "the first server still holds $S"
if ! fs_mount_fg -o nopassthrough "$S" "$M2" 2>"$T/log2"; then
	bail_out "mount -o nopassthrough: $(cat "$T/log2")"
fi
# the log says which way data goes before the mount is ready: a positive line
if wait_until 5 grep -q "passthrough off" "$T/log2" && ! grep -q "kernel passthrough on" "$T/log2"; then
	ok "-o nopassthrough turns it off (the log says so)"
else
	not_ok "-o nopassthrough turns it off (the log says so)"
	diag "log: $(cat "$T/log2")"
fi
is "$(md5sum <"$M2/copy")" "$(md5sum <"$S/copy")" "-o nopassthrough reads the same bytes"
echo via2 >"$M2/two"
is "$(cat "$S/two")" via2 "a file written through the nopassthrough mount reaches the host"

done_testing
