#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-refs: rule R1, what a file git reads as a ref may name.  git's files
# backend maps a ref name to a file of the git folder, and a one-level name
# it accepts ("commondir") is one: when the person's git updates a symbolic
# ref without REF_NO_DEREF (ORIG_HEAD on every pull, merge, reset and stash;
# a remote-tracking ref on push; the refs of a rebase's update-refs on
# --continue), it writes the file the target names.  A bot's ORIG_HEAD
# holding "ref: commondir", with a folder .git/<HEAD's oid>/ holding a
# config that names core.fsmonitor, makes the person's pull write
# .git/commondir, and the next git status run the bot's program.
#
# Through the mount every way of planting such a ref must fail with EROFS,
# by rule R1 (a write in place, a rename from its lock, a FIFO, a hard link;
# ORIG_HEAD, a remote-tracking ref and origin/HEAD, packed-refs, a
# submodule's and a linked worktree's refs, a rebase's update-refs,
# head-name and refs-to-delete), and the folder it needs by D12; refs git
# writes itself pass.  Then the person's plain git on the host (pull, merge,
# reset, stash, push, submodule update --remote --merge, rebase --continue,
# a pull in the linked worktree) writes no commondir, no alternates, no
# config, and runs nothing.  A control plants the same on the host and shows
# git 2.39 would.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src" # SOURCE
M="$T/m"
B="$T/bot" # the bot's scratch files, outside the root
C="$T/control"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$B" "$C"

# upstream DIR: a bare repository with two commits, the person's origin
upstream()
{
	make_upstream "$1.work"
	git clone -q --bare "$1.work" "$1"
}

# person DIR ORIGIN SUBUP: a clone with a submodule, a branch, a linked worktree
person()
{
	git clone -q "$2" "$1"
	cd "$1"
	git -c protocol.file.allow=always submodule add -q "$3" sub
	git commit -qm "add sub"
	git push -q origin HEAD
	echo two >two && git add two && git commit -qm two
	git branch side HEAD~1
	git worktree add -q ../"$(basename "$1")-wt" -b wtb
}

# newer ORIGIN: a commit on the upstream for the person's pull to merge
newer()
{
	git clone -q "$1" "$T/newer.$$" && (cd "$T/newer.$$" && echo up2 >u2 && git add u2 &&
		git commit -qm up2 && git push -q origin HEAD) && rm -rf "$T/newer.$$"
}

setup()
{
	upstream "$T/up.git"
	make_upstream "$T/subup"
	(person "$S/app" "$T/up.git" "$T/subup")
	# the worktree's .git by a relative path: reached through the mount as on the host
	echo "gitdir: ../app/.git/worktrees/app-wt" >"$S/app-wt/.git"
	upstream "$T/cup.git"
	(person "$C/app" "$T/cup.git" "$T/subup")
	newer "$T/up.git"
	newer "$T/cup.git"
}
host_setup "host setup" setup

# plant_common GITDIR LABEL: the folder a commondir naming HEAD's object would make
# the common folder, with a config whose core.fsmonitor leaves PWNED-LABEL
plant_common()
{
	local oid d
	oid=$(git -C "$1/.." rev-parse HEAD)
	d="$1/$oid"
	mkdir -p "$d/objects" "$d/refs" "$B/$2" || return 1
	payload "$B/$2/fsmonitor" "$2"
	fsmonitor_cfg "$B/$2/fsmonitor" >"$d/config"
}

# ---- control: on the host, git 2.39 follows ORIG_HEAD into commondir -------
(
	cd "$C/app"
	plant_common .git r1-control
	echo "ref: commondir" >.git/ORIG_HEAD
	git reset -q --hard HEAD
	git status
) >"$T/control.log" 2>&1
if [ -e "$T/PWNED-r1-control" ]; then
	ok "control: a planted ORIG_HEAD makes the person's reset write commondir, and status runs the bot's program"
else
	skip "control: this git does not follow a planted ORIG_HEAD (the attacks below prove less)"
	diag "$(cat "$T/control.log")"
fi

cp "$S/app/.git/config" "$T/config.before"
cp "$S/app/.git/worktrees/app-wt/commondir" "$T/wtcommondir.before"
mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"

G="$M/app/.git"
OID=$(git -C "$S/app" rev-parse HEAD)
printf 'ref: commondir\n' >"$B/symref"
printf 'ref: objects/info/alternates\n' >"$B/symref-alt"
printf 'ref: refs/../config\n' >"$B/symref-up"
printf 'ref: refs/heads/main\n' >"$B/symref-ok"
printf '%s\n' "$OID" >"$B/oid"
printf 'hello\n' >"$B/garbage"
printf '# pack-refs with: peeled fully-peeled sorted \n%s commondir\n' "$OID" >"$B/packed"
cp "$S/app/.git/packed-refs" "$B/packed-ok" 2>/dev/null || : >"$B/packed-ok"

# ---- the bot's own git keeps working ----------------------------------------
check "the bot's git commit" sh -c "cd '$M/app' && echo b >b && git add b && git commit -qm bot"
check "the bot's git branch, tag and checkout" sh -c \
	"cd '$M/app' && git branch botb && git tag bott && git checkout -q botb && git checkout -q main"
check "the bot's git fetch and pull from origin" sh -c "cd '$M/app' && git pull -q --no-rebase --no-edit"
check "the bot's git reset (it writes ORIG_HEAD)" sh -c "cd '$M/app' && git reset -q --hard HEAD"
check "the bot's git commit in the linked worktree" sh -c \
	"cd '$M/app-wt' && echo w >w && git add w && git commit -qm wt"
check "the bot's git pack-refs" sh -c "cd '$M/app' && git pack-refs --all"
OID=$(git -C "$S/app" rev-parse HEAD)
printf '%s\n' "$OID" >"$B/oid"
allowed "FETCH_HEAD holding an object name, written in place" shell_result write_text "$G/FETCH_HEAD" "$OID"
allowed "a symbolic ref to refs/heads/main renamed in from its lock" \
	python3 "$FORGE" plant-rename "$G/refs/heads/alias.lock" "$G/refs/heads/alias" "$B/symref-ok"

# ---- ORIG_HEAD ----------------------------------------------------------------
refused_by "ORIG_HEAD = ref: commondir, written in place" R1 \
	shell_result write_text "$G/ORIG_HEAD" "ref: commondir"
refused_by "ORIG_HEAD = ref: commondir, renamed in from ORIG_HEAD.lock" R1 \
	python3 "$FORGE" plant-rename "$G/ORIG_HEAD.lock" "$G/ORIG_HEAD" "$B/symref"
rm -f "$G/ORIG_HEAD.lock"
refused_by "ORIG_HEAD appended to (after an object name)" R1 \
	shell_result append_text "$G/ORIG_HEAD" "ref: commondir"
refused_by "ORIG_HEAD = ref: refs/../config" R1 shell_result write_text "$G/ORIG_HEAD" "ref: refs/../config"
check "ORIG_HEAD can be removed" rm -f "$G/ORIG_HEAD"
cp "$B/symref" "$M/app/symref-file"
refused_by "ORIG_HEAD as a hard link to a file of the bot's" R1 try link "$M/app/symref-file" "$G/ORIG_HEAD"
rm -f "$M/app/symref-file"
refused_by "ORIG_HEAD made a FIFO" R1 try mkfifo "$G/ORIG_HEAD"
refused_by "ORIG_HEAD made a symbolic link" D9 try symlink commondir "$G/ORIG_HEAD"
refused_by "ORIG_HEAD made in place (git renames its lock onto it)" R1 \
	python3 "$FORGE" plant-new "$G/ORIG_HEAD" "$B/oid"
allowed "ORIG_HEAD made again with an object name, from its lock" \
	python3 "$FORGE" plant-rename "$G/ORIG_HEAD.lock" "$G/ORIG_HEAD" "$B/oid"
refused_by "MERGE_HEAD = ref: commondir" R1 shell_result write_text "$G/MERGE_HEAD" "ref: commondir"
refused_by "FETCH_HEAD = ref: commondir" R1 shell_result write_text "$G/FETCH_HEAD" "ref: commondir"
rm -f "$G/MERGE_HEAD" "$G/FETCH_HEAD" # emptied by the refused writes, as git's own O_TRUNC would
mkdir -p "$B/r1-bot"
payload "$B/r1-bot/fsmonitor" r1-bot
refused_by "the folder a commondir would name (.git/<oid>/)" D12 try mkdir "$G/$OID"
mkdir -p "$M/app/stage/$OID/objects" "$M/app/stage/$OID/refs"
fsmonitor_cfg "$B/r1-bot/fsmonitor" >"$M/app/stage/$OID/config"
refused_by "... or that folder, with its config, renamed in" D12 try rename "$M/app/stage/$OID" "$G/$OID"

# ---- refs, packed-refs --------------------------------------------------------
refused_by "refs/remotes/origin/main = ref: commondir, in place" R1 \
	shell_result write_text "$G/refs/remotes/origin/main" "ref: commondir"
refused_by "refs/remotes/origin/main = ref: commondir, renamed in" R1 \
	python3 "$FORGE" plant-rename "$G/refs/remotes/origin/main.lock" "$G/refs/remotes/origin/main" "$B/symref"
rm -f "$G/refs/remotes/origin/main.lock"
refused_by "refs/remotes/origin/HEAD = ref: commondir" R1 \
	python3 "$FORGE" plant-rename "$G/refs/remotes/origin/HEAD.lock" "$G/refs/remotes/origin/HEAD" "$B/symref"
rm -f "$G/refs/remotes/origin/HEAD.lock"
refused_by "refs/heads/x = ref: objects/info/alternates" R1 \
	python3 "$FORGE" plant-rename "$G/refs/heads/x.lock" "$G/refs/heads/x" "$B/symref-alt"
rm -f "$G/refs/heads/x.lock"
refused_by "refs/heads/x holding neither an object name nor a ref" R1 \
	python3 "$FORGE" plant-new "$G/refs/heads/x" "$B/garbage"
refused_by "packed-refs naming commondir, renamed in from packed-refs.new" R1 \
	python3 "$FORGE" plant-rename "$G/packed-refs.new" "$G/packed-refs" "$B/packed"
rm -f "$G/packed-refs.new"
refused_by "packed-refs naming commondir, written in place" R1 \
	python3 "$FORGE" plant-write "$G/packed-refs" "$B/packed"
mkdir -p "$M/app/stage/heads"
cp "$B/symref" "$M/app/stage/heads/evil"
refused_by "a folder of refs renamed into refs/" R1 try rename "$M/app/stage/heads" "$G/refs/evil"

# ---- a submodule's git folder, a linked worktree's admin folder --------------
refused_by "modules/sub/ORIG_HEAD = ref: commondir" R1 \
	shell_result write_text "$G/modules/sub/ORIG_HEAD" "ref: commondir"
refused_by "modules/sub/refs/remotes/origin/HEAD = ref: commondir" R1 \
	shell_result write_text "$G/modules/sub/refs/remotes/origin/HEAD" "ref: commondir"
refused_by "worktrees/app-wt/ORIG_HEAD = ref: commondir" R1 \
	shell_result write_text "$G/worktrees/app-wt/ORIG_HEAD" "ref: commondir"
refused_by "worktrees/app-wt/HEAD = ref: commondir" R1 \
	shell_result write_text "$G/worktrees/app-wt/HEAD" "ref: commondir"

# ---- a rebase's lists of refs -------------------------------------------------
check "the bot's rebase -i --update-refs stops at a break" sh -c \
	"cd '$M/app' && git branch -f side HEAD~1 &&
	 GIT_SEQUENCE_EDITOR=\"sed -i '1i break'\" git rebase -q -i --update-refs HEAD~2 >/dev/null 2>&1;
	 test -f .git/rebase-merge/update-refs"
{
	printf 'refs/heads/side\n%s\n%s\n' "$(git -C "$S/app" rev-parse side)" 0000000000000000000000000000000000000000
	printf 'commondir\n%s\n%s\n' 0000000000000000000000000000000000000000 0000000000000000000000000000000000000000
} >"$B/update-refs"
refused_by "rebase-merge/update-refs naming commondir, in place" R1 \
	python3 "$FORGE" plant-write "$G/rebase-merge/update-refs" "$B/update-refs"
refused_by "rebase-merge/update-refs naming commondir, renamed in" R1 \
	python3 "$FORGE" plant-rename "$G/rebase-merge/update-refs.lock" "$G/rebase-merge/update-refs" "$B/update-refs"
rm -f "$G/rebase-merge/update-refs.lock"
cp "$G/rebase-merge/head-name" "$B/head-name"
refused_by "rebase-merge/head-name = commondir" R1 shell_result write_text "$G/rebase-merge/head-name" "commondir"
# git writes head-name in place, so its O_TRUNC passes and the refused write left it empty,
# as the bot could by removing it: put the branch back for the person's rebase --continue
allowed "rebase-merge/head-name: the branch written back" \
	shell_result write_text "$G/rebase-merge/head-name" "$(cat "$B/head-name")"
refused_by "rebase-merge/refs-to-delete naming config" R1 \
	shell_result append_text "$G/rebase-merge/refs-to-delete" "config"

fs_umount "$M" || not_ok "umount $M"

# ---- the person's plain git on the host ----------------------------------------
cd "$S/app" || bail_out "no $S/app"
check "host: git rebase --continue ends the bot's rebase" sh -c "git -c core.editor=true rebase --continue >/dev/null"
check "host: git pull" git pull -q --no-rebase --no-edit
check "host: git merge" git merge -q --no-edit botb
check "host: git reset --hard" git reset -q --hard HEAD~1
check "host: git stash and pop" sh -c "echo s >>two && git stash -q && git stash pop -q && git checkout -q -- two"
check "host: git push" git push -q origin HEAD:refs/heads/pushed
check "host: git submodule update --remote --merge" \
	git -c protocol.file.allow=always submodule update -q --remote --merge
check "host: git pull in the linked worktree" sh -c "cd '$S/app-wt' && git pull -q --no-rebase --no-edit origin main"
check "host: git status" git status
check "host: git fsck" git fsck --no-progress
check "host: no .git/commondir" test ! -e .git/commondir
check "host: no commondir in the submodule's git folder" test ! -e .git/modules/sub/commondir
check "host: no alternates" test ! -e .git/objects/info/alternates
check "host: the config is the person's" cmp -s .git/config "$T/config.before"
check "host: the worktree's commondir is git's" cmp -s .git/worktrees/app-wt/commondir "$T/wtcommondir.before"
check "host: no folder named after an object in .git" test ! -e ".git/$OID"
cd /
no_marker "host: nothing the bot planted ran" r1-bot
no_marker "host: no other payload ran" r1-b

done_testing
