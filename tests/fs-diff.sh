#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-diff: the same seeded random operations (create, write, read, truncate,
# rename, exchange, link, symlink, mkdir, unlink, rmdir, chmod...) by several
# processes at once, in a native folder and through an agentfs mount (no git
# folders): every result and errno must match, and so must the final trees,
# byte for byte. A long run: FS_DIFF_OPS=200000 FS_DIFF_PROCS=8 make check
# TESTS=tests/fs-diff.sh. The seed comes from the clock unless AGENTFS_SEED
# (or FS_DIFF_SEED) gives it; it is printed first, and again with the command
# that replays it when a check fails.
. "$top_srcdir/tests/lib.sh"

DIFF="$top_builddir/tests/fs-diff"
[ -x "$DIFF" ] || bail_out "$DIFF is not built"
procs=${FS_DIFF_PROCS:-4}
ops=${FS_DIFF_OPS:-3000}
seed=${AGENTFS_SEED:-${FS_DIFF_SEED:-$(date +%s)}}
case "$seed" in
'' | *[!0-9]*) bail_out "AGENTFS_SEED must be a whole number, not '$seed'" ;;
esac

N="$T/native"
S="$T/src"
M="$T/mnt"
mkdir -p "$N" "$S" "$M"
for d in "$N" "$S"; do mkdir -p "$d/tmpl"; done

plan $((procs + 4))
diag "seed $seed (AGENTFS_SEED=$seed replays it), $procs processes, $ops operations each"
fs_mount "$S" "$M" || { not_ok "mount"; done_testing; exit 1; }
ok "mount"
tap_include "fs-diff" "$DIFF" -p "$procs" -n "$ops" -s "$seed" "$N" "$M"

tree() { (cd "$1" && find . -printf '%p %y %s %m %n %l\n' | sort && find . -type f -exec sha256sum {} + | sort); }
is_text "$(tree "$S")" "$(tree "$N")" "the native tree and the tree written through the mount are the same"
is_text "$(tree "$M")" "$(tree "$S")" "the mount shows the source tree as it is"
[ "$tap_failed" -eq 0 ] ||
	diag "replay: AGENTFS_SEED=$seed FS_DIFF_PROCS=$procs FS_DIFF_OPS=$ops make check TESTS=tests/fs-diff.sh"
done_testing
