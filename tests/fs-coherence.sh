#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-coherence: a mount and the host see each other's changes.  What the
# mount writes is on the host as soon as the write returns (no writeback
# cache); host-side edits become visible within the entry/attr timeouts ("a
# few seconds": polled for up to 6 s, never timed).  Appends alternating
# between them lose no lines.  m1 is the host's own folder: one agentfs
# server per folder (agentfs(1)), so another process's writes are the host's.
. "$top_srcdir/tests/lib.sh"

S="$T/src"
M1="$S"
M2="$T/m2"
mkdir -p "$S" "$M2"
chmod 0755 "$S"

if ! fs_mount "$S" "$M2"; then
	not_ok "mount the folder"
	done_testing
	exit 1
fi
ok "mount the folder"

# eventually DESC WANT CMD...: CMD's output becomes WANT within 6 s
eventually()
{
	local desc="$1" want="$2" got i
	shift 2
	for i in $(seq 0 60); do
		got=$("$@" 2>&1)
		[ "$got" = "$want" ] && break
		sleep 0.1
	done
	if [ "$got" = "$want" ]; then
		ok "$desc"
		[ "$i" -gt 0 ] && diag "  (seen after about $i tenths of a second)"
	else
		not_ok "$desc"
		diag "after 6 s: got '$got'" "want '$want'"
	fi
	return 0
}

# a new file made through one mount
echo one >"$M1/new"
is "$(cat "$S/new" 2>&1)" one "a file written through m1 is on the host once written"
eventually "a file written through m1 is seen through m2" one cat "$M2/new"

# an overwrite of the same size, of a file m2 has cached
echo AAAA >"$S/same"
is "$(cat "$M2/same")" AAAA "m2 reads the file (now cached)"
is "$(cat "$M1/same")" AAAA "m1 reads the file"
printf 'BBBB\n' 1<>"$M1/same"
is "$(cat "$S/same")" BBBB "a same-size overwrite through m1 is on the host"
eventually "a same-size overwrite through m1 is seen through m2" BBBB cat "$M2/same"
eventually "a same-size overwrite through m1 is seen through m1" BBBB cat "$M1/same"

# host-side edits
echo first >"$S/h"
is "$(cat "$M1/h")" first "m1 reads a host file (now cached)"
echo second >>"$S/h"
eventually "a host-side append appears through m1" "first
second" cat "$M1/h"
printf 'FIRST\n' 1<>"$S/h"
eventually "a host-side same-size overwrite appears through m1" "FIRST
second" cat "$M1/h"
ls "$M1/later" >/dev/null 2>&1
echo later >"$S/later"
eventually "a host-side create appears through m1 (after a failed lookup)" later cat "$M1/later"
eventually "the host-side create shows in m1's listing" yes \
	sh -c 'ls "$1" | grep -qx later && echo yes' - "$M1"
mv "$S/later" "$S/renamed"
eventually "a host-side rename appears through m1 (old name)" gone \
	sh -c 'test -e "$1" || echo gone' - "$M1/later"
eventually "a host-side rename appears through m1 (new name)" later cat "$M1/renamed"
rm "$S/renamed"
eventually "a host-side unlink appears through m1" gone \
	sh -c 'test -e "$1" || echo gone' - "$M1/renamed"
mkdir "$S/hd"
echo in >"$S/hd/f"
eventually "a host-side folder appears through m2" in cat "$M2/hd/f"
chmod 0700 "$S/hd"
eventually "a host-side chmod appears through m2" 700 stat -c %a "$M2/hd"

# appends alternating between two mounts, each opening anew
expect=
for i in $(seq 1 200); do
	echo "m1 $i" >>"$M1/log"
	echo "m2 $i" >>"$M2/log"
done
expect=$(for i in $(seq 1 200); do echo "m1 $i"; echo "m2 $i"; done)
is "$(wc -l <"$S/log")" 400 "alternating appends through m1 and m2: 400 lines on the host"
is_text "$(cat "$S/log")" "$expect" "alternating appends: every line there, in order"
eventually "alternating appends: m1 reads the host's content" "$expect" cat "$M1/log"
eventually "alternating appends: m2 reads the host's content" "$expect" cat "$M2/log"
eventually "alternating appends: m2's size matches the host's" "$(stat -c %s "$S/log")" stat -c %s "$M2/log"

# appends through descriptors kept open in m1, m2 and on the host
exec 5>>"$M1/log2" 6>>"$M2/log2" 7>>"$S/log2"
for i in $(seq 1 200); do
	echo "m1 $i" >&5
	echo "m2 $i" >&6
	echo "host $i" >&7
done
exec 5>&- 6>&- 7>&-
expect=$(for i in $(seq 1 200); do echo "m1 $i"; echo "m2 $i"; echo "host $i"; done)
is "$(wc -l <"$S/log2")" 600 "appends through fds held open in m1, m2 and the host: 600 lines"
is_text "$(cat "$S/log2")" "$expect" "appends through held fds: every line there, in order"
eventually "appends through held fds: m2 reads the host's content" "$expect" cat "$M2/log2"

check "unmount m2" fs_umount "$M2"
done_testing
