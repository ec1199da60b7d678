#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-names: rule D12, a git folder holds only what git puts there.  A
# folder of any other name in a git folder (`.git/<anything>/config`,
# `hooks/`, `objects/info/alternates`) is a complete git folder the moment a
# commondir or a worktree's pointer names it; so new names at the top of a
# git folder, in objects/ and in objects/info/ must be ones git makes.
#
# The list must never refuse git: the bot's git workflows
# (tests/guard-workflows.sh: merges, stash, cherry-pick, revert, rebase of
# every backend, am, bisect, notes, replace, split and temporary indexes, gc,
# repack, commit-graph, multi-pack-index, maintenance, fsck, push, fetch,
# pull...) run through the mount with no refusal at all,
# and, when strace is installed, every name git 2.39 made at those three
# levels when the same workflows ran natively is made through the mount in
# a scratch repository without a D12 refusal.  Then every other name is
# refused (D12), and the person's plain git on the host works and runs
# nothing.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
. "$top_srcdir/tests/guard-workflows.sh"
guard_needs python3

S="$T/src"
M="$T/m"
N="$T/native"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$N"

# person DIR ORIGIN SUBUP: a clone with a submodule, as the bot's workflows want
person()
{
	git clone -q "$2" "$1"
	cd "$1"
	echo a >a && git add a && git commit -qm a
	git -c protocol.file.allow=always submodule add -q "$3" sub
	git commit -qm "add sub"
	git push -q origin HEAD
}

setup()
{
	make_upstream "$T/up.work"
	git clone -q --bare "$T/up.work" "$T/up.git"
	git clone -q --bare "$T/up.work" "$T/up2.git"
	make_upstream "$T/subup"
	(person "$S/app" "$T/up.git" "$T/subup")
	(person "$N/app" "$T/up2.git" "$T/subup")
	git init -q "$S/scratch"
	git -C "$S/scratch" commit -q --allow-empty -m scratch
}
host_setup "host setup" setup

# ---- what git 2.39 makes, natively, under strace --------------------------------
NAMES="$T/names"
if command -v strace >/dev/null; then
	strace -f -qq -y -o "$T/trace" \
		-e trace=openat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlinkat,mknodat \
		bash -c ". '$top_srcdir/tests/guard-workflows.sh' && git_workflows '$N/app'" \
		>"$T/native.log" 2>&1
	is "$?" 0 "the workflows run natively under strace"
	# "LEVEL TYPE NAME" for each name made at a git folder's top (any git folder:
	# .git, the bare origin, modules/<sub>), in its objects/ and objects/info/
	python3 - "$T/trace" >"$NAMES" <<'PY'
import re, sys
seen = set()
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r'\b(openat|mkdirat|mkdir|renameat2|renameat|rename|linkat|link|symlinkat|mknodat)\((.*)\)\s*=\s*(\d+)', line)
    if not m:
        continue
    call, args, _ = m.groups()
    if call == "openat" and "O_CREAT" not in args:
        continue
    pairs = re.findall(r'(?:(?:AT_FDCWD|\d+)<([^>]*)>, )?"([^"]*)"', args)
    if not pairs:
        continue
    d, p = pairs[-1] if call.startswith(("rename", "link", "symlink")) else pairs[0]
    if not p.startswith("/"):
        p = (d or "") + "/" + p
    p = re.sub(r"/(\./)+", "/", p)
    g = re.search(r"(?:/\.git|/up2\.git|/\.git/modules/[^/]+)/(.*)$", p)
    if not g:
        continue
    parts = g.group(1).split("/")
    kind = "dir" if call.startswith("mkdir") or len(parts) > 1 else "file"
    if len(parts) >= 1:
        seen.add(("top", "dir" if len(parts) > 1 else kind, parts[0]))
    if parts[0] == "objects" and len(parts) >= 2:
        seen.add(("objects", "dir" if len(parts) > 2 else kind, parts[1]))
    if parts[:2] == ["objects", "info"] and len(parts) >= 3:
        seen.add(("objinfo", "dir" if len(parts) > 3 else kind, parts[2]))
for s in sorted(seen):
    print(*s)
PY
	diag "names git made at the levels D12 judges: $(wc -l <"$NAMES")"
else
	skip "strace is missing: the names git makes are not listed from a run"
	: >"$NAMES"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"

# ---- the workflows through the mount ----------------------------------------------
git_workflows "$M/app" >"$T/mounted.log" 2>&1
is "$?" 0 "the bot's git workflows run through the mount"
[ -s "$T/mounted.log" ] && diag "$(tail -5 "$T/mounted.log")"
# not one refusal: what git does in its own folders for the bot's work is
# allowed, and an rmdir that could only fail (git tries each folder above a
# file it removed) is answered ENOTEMPTY without one
is "$(grep -F "refused" "$GUARD_LOG")" "" "no refusal of any rule while they ran"
# git goes on past a refused unlink with a warning: none may be refused.
# The guard once took git's temporary object, which has two names between
# its link() and unlink(), for a hook or config file gone since the last
# scan whose inode number it was given (records now carry birth times).
is "$(grep -c "unable to unlink" "$T/mounted.log")" 0 "git removed every file it made"
if grep -q "unable to unlink" "$T/mounted.log"; then
	diag "git could not remove a file it made; the mount's refusals:"
	diag "$(grep -F "refused" "$GUARD_LOG" | tail -20)"
fi

# ---- every name git made natively, made through the mount -----------------------
G="$M/scratch/.git"
refused=''
while read -r level type name; do
	case "$level" in
	top) where="$G" ;;
	objects) where="$G/objects" ;;
	objinfo) where="$G/objects/info" ;;
	esac
	[ -e "$where/$name" ] && continue
	before=$(wc -l <"$GUARD_LOG")
	if [ "$type" = dir ]; then
		try mkdir "$where/$name" >/dev/null
		rmdir "$where/$name" 2>/dev/null
	else
		try create "$where/$name" >/dev/null
		rm -f "$where/$name" 2>/dev/null
	fi
	if tail -n +"$((before + 1))" "$GUARD_LOG" | grep -q "rule D12 ("; then
		refused="$refused $level/$name"
	fi
done <"$NAMES"
is "$refused" "" "no name git 2.39 made in those workflows is refused by D12"

# ---- every other name -------------------------------------------------------------
G="$M/app/.git"
refused_by "a folder of another name in a git folder" D12 try mkdir "$G/evil"
refused_by "a folder named like an object in a git folder" D12 \
	try mkdir "$G/0123456789abcdef0123456789abcdef01234567"
refused_by "a file of another name in a git folder" D12 try create "$G/notes.txt"
refused_by "a folder of another name in objects/" D12 try mkdir "$G/objects/evil"
refused_by "a file of another name in objects/info/" D12 try create "$G/objects/info/evil"
refused_by "a folder of another name in a submodule's git folder" D12 try mkdir "$G/modules/sub/evil"
mkdir -p "$M/app/stage/evil/objects" "$M/app/stage/evil/refs"
printf '[core]\n\tfsmonitor = true\n' >"$M/app/stage/evil/config"
refused_by "a folder renamed into a git folder under another name" D12 \
	try rename "$M/app/stage/evil" "$G/evil"
refused_by "a .git made in a git folder" D12 try mkdir "$G/.git"
# git fsck --lost-found in the workflows makes it when objects were left
# dangling (by a refused unlink, checked above): this check is about the
# name, so lost-found is removed first, on the host.
rm -rf "$S/app/.git/lost-found"
allowed "a name git makes (lost-found) made by hand" try mkdir "$G/lost-found"
fs_umount "$M" || not_ok "umount $M"

# ---- the person's plain git on the host ------------------------------------------
check "host: git status" git -C "$S/app" status
check "host: git commit" git -C "$S/app" commit -q --allow-empty -m host
check "host: git fsck" git -C "$S/app" fsck --no-progress
check "host: no folder of the bot's in the git folder" test ! -e "$S/app/.git/evil"

done_testing
