#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-race: the server never resolves a path through the source tree.  On the
# host a racer keeps putting a symlink to a folder OUTSIDE in the place of the
# folder SOURCE/d and back, while a worker creates, writes, renames, links and
# removes files through MNT/d (by path, and relative to a descriptor of the
# folder).  Then the same with a fresh name per round, so that the server
# looks up each name while it may be the symlink.  OUTSIDE must come out
# untouched.
#
# The symlink is relative ("../outside"): on the host it reaches OUTSIDE, but
# the worker, which resolves a symlink it is shown in its own view, reaches
# MNT/../outside, which does not exist.  So only a server that follows the
# link itself can write into OUTSIDE.
. "$top_srcdir/tests/lib.sh"

[ -x "$RACER" ] || bail_out "$RACER is not built"

S="$T/src"
O="$T/outside"
M="$T/mounts/mnt"
mkdir -p "$S/d/sub" "$O/sub" "$M"
chmod 0755 "$S"
echo "real existing" >"$S/d/existing"
echo "real sub existing" >"$S/d/sub/existing"
# OUTSIDE looks like d, so a server that strays there finds what it expects
echo "outside existing" >"$O/existing"
echo "outside sub existing" >"$O/sub/existing"
echo "outside r0" >"$O/r0"
ln -s ../outside "$S/dlink"
[ -e "$T/mounts/outside" ] && bail_out "the worker's view of the link must not exist"

snapshot()
{
	(cd "$1" && find . -printf '%p %y %s %m %U:%G %T@ %C@ %l\n' | sort &&
		find . -type f -exec sha256sum {} + | sort)
}
before=$(snapshot "$O")

if ! fs_mount "$S" "$M"; then
	not_ok "mount"
	done_testing
	exit 1
fi
ok "mount"

"$RACER" swap "$S" d dlink 6 >"$T/swap.out" 2>&1 &
racer=$!
track_pid "$racer"
# bounded in time and in rounds: 5 s or 20,000 rounds of 13 operations
timeout -k 5 30 "$RACER" work "$M/d" 5 20000 >"$T/work.out" 2>&1
wrc=$?
wait "$racer"
rrc=$?

is "$rrc" 0 "the host racer ran to the end"
diag "racer: $(cat "$T/swap.out")"
is "$wrc" 0 "the worker ran to the end"
diag "worker: $(cat "$T/work.out")"
swaps=$(awk '/^swaps/ { print $2 }' "$T/swap.out")
good=$(awk '/^rounds/ { print $4 }' "$T/work.out")
[ "${swaps:-0}" -gt 10 ] && ok "the racer swapped the folder ($swaps times)" ||
	not_ok "the racer swapped the folder (${swaps:-0} times)"
[ "${good:-0}" -gt 10 ] && ok "the worker's operations went through the mount ($good)" ||
	not_ok "the worker's operations went through the mount (${good:-0})"

at_good=$(awk '/^rounds/ { print $8 }' "$T/work.out")
at_bad=$(awk '/^rounds/ { print $10 }' "$T/work.out")
[ "${at_good:-0}" -gt 10 ] && [ "${at_bad:-1}" -eq 0 ] &&
	ok "operations relative to a descriptor of the folder all succeeded ($at_good)" ||
	not_ok "operations relative to a descriptor of the folder all succeeded (${at_good:-0} ok, ${at_bad:-?} failed)"

# fresh names: every qN is looked up by the server while it may still be
# the symlink to OUTSIDE
"$RACER" fresh-swap "$S" 4 >"$T/fswap.out" 2>&1 &
racer=$!
track_pid "$racer"
timeout -k 5 30 "$RACER" fresh-work "$M" "$S" 4 >"$T/fwork.out" 2>&1
wrc=$?
wait "$racer"
rrc=$?
is "$rrc:$wrc" 0:0 "fresh names: the host racer and the worker ran to the end"
diag "racer: $(cat "$T/fswap.out")" "worker: $(cat "$T/fwork.out")"
good=$(awk '/^fresh-rounds/ { print $4 }' "$T/fwork.out")
[ "${good:-0}" -gt 10 ] && ok "fresh names: the worker's operations went through the mount ($good)" ||
	not_ok "fresh names: the worker's operations went through the mount (${good:-0})"
n=$(find "$S" -mindepth 2 -maxdepth 2 -path "$S/q*/f" | wc -l)
[ "$n" -gt 0 ] && ok "fresh names: the worker's files landed in the real folders ($n)" ||
	not_ok "fresh names: the worker's files landed in the real folders"

is_text "$(snapshot "$O")" "$before" "OUTSIDE is untouched"
[ -d "$S/d" ] && [ ! -L "$S/d" ] && [ -L "$S/dlink" ] && ok "the racer left d a folder and dlink a symlink" ||
	not_ok "the racer left d a folder and dlink a symlink"
n=$(find "$S/d" -maxdepth 1 -name 'fr*' | wc -l)
[ "$n" -gt 0 ] && ok "the worker's files landed in the real folder ($n)" ||
	not_ok "the worker's files landed in the real folder"
[ ! -e "$T/mounts/outside" ] && ok "nothing appeared at the worker's view of the link target" ||
	not_ok "nothing appeared at the worker's view of the link target"

check "unmount" fs_umount "$M"
done_testing
