#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-ro: a read-only mount (--ro) and read-only subtrees (--ro-path) refuse
# every write-ish operation with EROFS and still serve reads; --ro-path also
# guards the subtree's edges (rename or link into or out of it, rename of the
# subtree itself) while its siblings stay writable.
. "$top_srcdir/tests/lib.sh"

[ -x "$TRYOP" ] || bail_out "$TRYOP is not built"

# expect WANT OP PATH [PATH2]: fs-tryop OP must answer WANT; while the mount
# has --log $RO_LOG, an EROFS must be logged there as a refusal of PATH or
# PATH2 (a rename or exchange: of PATH to PATH2) by "read-only path" (not by
# a gitguard rule, nor by the kernel: a --ro mount is read-only in the
# kernel, which answers without asking the server)
RO_LOG=
expect()
{
	local want="$1" got before=0 new pats
	shift
	[ -z "$RO_LOG" ] || before=$(wc -l <"$RO_LOG")
	got=$("$TRYOP" "$@" 2>&1)
	if [ -z "$RO_LOG" ] || [ "$want" != EROFS ]; then
		is "$got" "$want" "$1 ${2#"$T"/}${3:+ -> ${3#"$T"/}}: $want"
		return
	fi
	new=$(tail -n +"$((before + 1))" "$RO_LOG")
	case "$1" in
	rename*) pats=(-e " of $2 to $3: read-only path (") ;;
	*) pats=(-e " of $2: read-only path (" ${3:+-e " of $3: read-only path ("}) ;;
	esac
	if [ "$got" = EROFS ] && printf '%s\n' "$new" | grep -qF "${pats[@]}"; then
		ok "$1 ${2#"$T"/}${3:+ -> ${3#"$T"/}}: EROFS by read-only path"
	else
		not_ok "$1 ${2#"$T"/}${3:+ -> ${3#"$T"/}}: EROFS by read-only path"
		diag "answer: $got" "logged: ${new:-nothing}"
	fi
}

# snapshot DIR: everything about DIR's tree that a write could change
snapshot()
{
	(cd "$1" && find . -printf '%p %y %s %m %U:%G %T@ %C@ %l\n' | sort &&
		find . -type f -exec sha256sum {} + | sort &&
		getfattr -R -d -h . 2>/dev/null | sort)
}

S="$T/src"
M="$T/mnt"
mkdir -p "$S/dir" "$S/empty" "$S/sub/deep" "$S/sub/emptydir" "$S/side/e" "$S/ro2" "$M" \
	"$S/nest/inner"
chmod 0755 "$S"
echo data >"$S/f"
echo g >"$S/dir/g"
echo subdata >"$S/sub/f"
echo deep >"$S/sub/deep/g"
echo x >"$S/side/x"
echo y >"$S/side/y"
echo inner >"$S/nest/inner/f"
ln -s f "$S/sl"
ln -s f "$S/sub/sl"
setfattr -n user.tryop -v 1 "$S/f" 2>/dev/null || "$TRYOP" setxattr "$S/f" >/dev/null
setfattr -n user.tryop -v 1 "$S/sub/f" 2>/dev/null || "$TRYOP" setxattr "$S/sub/f" >/dev/null

# ---- --ro: the whole mount
if ! fs_mount --ro "$S" "$M"; then
	not_ok "mount --ro"
	done_testing
	exit 1
fi
ok "mount --ro"
before=$(snapshot "$S")

# every write-ish operation, on an entry (or a new name) at DIR
writes_refused()
{
	local d="$1"
	expect EROFS create "$d/new"
	expect EROFS open-w "$d/f"
	expect EROFS open-rw "$d/f"
	expect EROFS open-trunc "$d/f"
	expect EROFS write "$d/f"
	expect EROFS truncate "$d/f"
	expect EROFS chmod "$d/f"
	expect EROFS chown "$d/f"
	expect EROFS utimens "$d/f"
	expect EROFS utimens "$d/sl"
	expect EROFS chown "$d/sl"
	expect EROFS mkdir "$d/newdir"
	expect EROFS mknod "$d/newnod"
	expect EROFS mkfifo "$d/newfifo"
	expect EROFS symlink f "$d/newsym"
	expect EROFS link "$d/f" "$d/newlink"
	expect EROFS unlink "$d/f"
	expect EROFS unlink "$d/sl"
	expect EROFS rename "$d/f" "$d/f2"
	expect EROFS rename-noreplace "$d/f" "$d/f3"
	expect EROFS setxattr "$d/f"
	expect EROFS removexattr "$d/f"
	expect EROFS fallocate "$d/f"
}

writes_refused "$M"
expect EROFS rmdir "$M/empty"
expect EROFS rename-exchange "$M/f" "$M/dir"
expect EROFS chmod "$M/dir"
expect EROFS create "$M/dir/new"
expect EROFS unlink "$M/dir/g"
expect EROFS rename "$M/dir" "$M/dir2"
is "$(cat "$M/f" 2>&1)" data "--ro: reading a file works"
is "$(cat "$M/sub/deep/g" 2>&1)" deep "--ro: reading deep in the tree works"
is "$(ls "$M/dir" 2>&1)" g "--ro: listing a folder works"
is "$(readlink "$M/sl" 2>&1)" f "--ro: readlink works"
expect OK getxattr "$M/f"
expect OK open-r "$M/f"
is "$(snapshot "$S")" "$before" "--ro: the source is unchanged"
check "--ro: unmount" fs_umount "$M"

# ---- --ro-path: read-only subtrees in a writable mount
if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
	skip "--ro-path: bindfs has no --ro-path"
	done_testing
	exit 0
fi
# other names, outside the read-only paths, of files inside them (made by the
# host before the mount: found by the mount's scan)
echo hl >"$S/sub/deep/hl"
ln "$S/sub/deep/hl" "$S/side/hl-other"
echo hl2 >"$S/ro2/hl2"
ln "$S/ro2/hl2" "$S/side/hl2-other"
echo late >"$S/sub/late"
RO_LOG="$T/refused.log"
if ! fs_mount --log "$RO_LOG" --ro-path sub --ro-path ro2 --ro-path nest/inner "$S" "$M"; then
	not_ok "mount --ro-path sub --ro-path ro2 --ro-path nest/inner"
	done_testing
	exit 1
fi
ok "mount --ro-path sub --ro-path ro2 --ro-path nest/inner"
cat "$M/sub/late" >/dev/null # looked up through its read-only name first
ln "$S/sub/late" "$S/side/late-other" # then another name made by the host
before=$(cd "$S" && snapshot sub && snapshot ro2)

# read-only follows the inode: another name is no way in
expect EROFS write "$M/side/hl-other"
expect EROFS truncate "$M/side/hl-other"
expect EROFS chmod "$M/side/hl-other"
expect EROFS write "$M/sub/deep/hl"
expect EROFS write "$M/side/hl2-other"
expect EROFS write "$M/side/late-other"
expect EROFS link "$M/side/hl-other" "$M/side/hl-third"
is "$(cat "$M/side/hl-other" 2>&1)" hl "--ro-path: another name of a read-only file reads"
expect EROFS unlink "$M/side/hl2-other"

writes_refused "$M/sub"
expect EROFS create "$M/sub/deep/new"
expect EROFS write "$M/sub/deep/g"
expect EROFS unlink "$M/sub/deep/g"
expect EROFS rmdir "$M/sub/emptydir"
expect EROFS rename "$M/sub/deep" "$M/sub/deep2"
# the edges of the subtree
expect EROFS rename "$M/sub/f" "$M/side/moved"
expect EROFS rename "$M/sub/deep" "$M/side/deep"
expect EROFS rename "$M/side/x" "$M/sub/x"
expect EROFS rename "$M/side/e" "$M/sub/e"
expect EROFS rename-exchange "$M/side/y" "$M/sub/f"
expect EROFS link "$M/sub/f" "$M/side/hardlink"
expect EROFS link "$M/side/x" "$M/sub/hardlink"
expect EROFS rename "$M/sub" "$M/sub2"
expect EROFS rename "$M/sub" "$M/side/sub"
expect EROFS rename-exchange "$M/side" "$M/sub"
expect EROFS rmdir "$M/ro2"
expect EROFS rename "$M/side/e" "$M/ro2"
expect EROFS rename "$M/ro2" "$M/ro3"
expect EROFS create "$M/ro2/new"
is "$(cat "$M/sub/f" 2>&1)" subdata "--ro-path: reading inside the subtree works"
is "$(ls "$M/sub" 2>&1 | tr '\n' ' ')" "deep emptydir f late sl " "--ro-path: listing the subtree works"
expect OK getxattr "$M/sub/f"

# a read-only path of two components; its parent stays writable
expect EROFS create "$M/nest/inner/new"
expect EROFS write "$M/nest/inner/f"
expect EROFS rename "$M/nest/inner" "$M/nest/inner2"
expect OK create "$M/nest/new"
# renaming the parent of a read-only subtree: refused, or the subtree stays
# read-only under its new name (protection belongs to the folder, not a path)
got=$("$TRYOP" rename "$M/nest" "$M/nest2")
case "$got" in
EROFS)
	ok "rename of a read-only subtree's parent is refused (EROFS)" ;;
OK)
	ok "rename of a read-only subtree's parent is allowed"
	expect EROFS create "$M/nest2/inner/new"
	expect EROFS write "$M/nest2/inner/f" ;;
*)
	not_ok "rename of a read-only subtree's parent: EROFS or OK"
	diag "got $got" ;;
esac

# siblings and the root stay writable
expect OK create "$M/side/new"
expect OK write "$M/side/x"
expect OK truncate "$M/side/x"
expect OK chmod "$M/side/x"
expect OK utimens "$M/side/x"
expect OK setxattr "$M/side/x"
expect OK removexattr "$M/side/x"
expect OK rename "$M/side/x" "$M/side/x2"
expect OK link "$M/side/x2" "$M/side/x3"
expect OK symlink x2 "$M/side/sym"
expect OK mkdir "$M/side/d"
expect OK rmdir "$M/side/d"
expect OK unlink "$M/side/x3"
expect OK create "$M/top"
expect OK rename "$M/top" "$M/side/top"
expect OK rename "$M/side/e" "$M/e"
expect OK rename "$M/dir" "$M/dir2"
is "$(cd "$S" && snapshot sub && snapshot ro2)" "$before" "--ro-path: the subtrees are unchanged"
is "$(cat "$S/side/top" 2>&1 && readlink "$S/side/sym")" "x2" "--ro-path: sibling changes reached the source"
check "--ro-path: unmount" fs_umount "$M"
done_testing
