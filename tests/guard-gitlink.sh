#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-gitlink: a gitlink to a repository a bot made (allow_new_repos).  A
# repository the bot makes is the bot's, its config included
# (core.fsmonitor); staged as a gitlink in the person's index, with its .git
# in place, the person's git status starts git in it, which runs what that
# config names.  A gitlink does not need the bot's index: a commit of the
# bot's the person merges or checks out, a stash, the person's own git add
# -A make one (red team round three).  Through a mount with
# --allow-new-repos: the bot's own repositories work outside every work
# tree of a repository it did not make, but none is made (git init, a .git
# file, a .git moved in) or moved (itself, or a folder holding one) inside
# one (G1; X2 still refuses an index with a gitlink to a bot's repository,
# which G1 leaves nowhere to be, but for a repository the person makes
# around one of the bot's: then also as a resolve-undo record or a split
# index's replacement).  Then the person's git status, add -A and commit on
# the host run nothing.  A control shows git 2.39 runs a nested repository's fsmonitor
# for a gitlink.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"
M="$T/m"
B="$T/bot"
C="$T/control"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$B" "$C"

setup()
{
	git init -q "$S/app"
	git -C "$S/app" commit -q --allow-empty -m one
	git init -q "$C/app"
	git -C "$C/app" commit -q --allow-empty -m one
}
host_setup "host setup" setup

# nested DIR LABEL: a repository at DIR whose core.fsmonitor leaves PWNED-LABEL
nested()
{
	git init -q "$1" && git -C "$1" commit -q --allow-empty -m nested &&
		payload "$B/$2" "$2" && git -C "$1" config core.fsmonitor "$B/$2"
}

# ---- control: on the host, a gitlink makes git status run the nested fsmonitor
(
	cd "$C/app"
	nested "$C/app/nest" gitlink-control
	git add nest
	git status
) >"$T/control.log" 2>&1
if [ -e "$T/PWNED-gitlink-control" ]; then
	ok "control: git status runs the fsmonitor of a repository staged as a gitlink"
else
	skip "control: this git does not run a gitlinked repository's fsmonitor (the attacks below prove less)"
	diag "$(cat "$T/control.log")"
fi

mount_or_stop "writable mount, new repositories allowed" \
	fs_mount --allow-new-repos --log "$GUARD_LOG" "$S" "$M"

git_refused "git init of a repository inside the person's work tree" G1 "$M/app" git init -q nest
check "the bot makes its own repository outside it, with an fsmonitor in its config" nested "$M/nest" gitlink-bot
check "the bot commits in it" sh -c "cd '$M/nest' && echo n >n && git add n && git commit -qm n"
git_refused "git clone of it into the person's work tree" G1 "$M/app" git clone -q "$M/nest" nest2
refused_by "it moved into the person's work tree" G1 try rename "$M/nest" "$M/app/nest"
check "a folder holding it (moved there, outside any work tree)" sh -c "mkdir '$M/box' && mv '$M/nest' '$M/box/nest'"
refused_by "that folder moved into the person's work tree" G1 try rename "$M/box" "$M/app/box"
mkdir -p "$M/app/sub"
refused_by "its .git moved into a folder of the person's work tree" G1 try rename "$M/box/nest/.git" "$M/app/sub/.git"
refused_by "a .git file there naming it" G1 shell_result write_text "$M/app/sub/.git" "gitdir: ../../box/nest/.git"
check "it moved back, outside any work tree" mv "$M/box/nest" "$M/nest"
oid=$(git -C "$M/nest" rev-parse HEAD)
check "a gitlink for a folder with no repository is staged" sh -c \
	"cd '$M/app' && git update-index --add --cacheinfo '160000,$oid,later'"
mkdir -p "$M/app/later/deeper"
git_refused "then a repository made there" G1 "$M/app" git init -q later
refused_by "... or a .git file made there" G1 shell_result write_text "$M/app/later/.git" "gitdir: ../../nest/.git"
refused_by "a repository in a folder below it (no gitlink names that)" G1 try mkdir "$M/app/later/deeper/.git"
check "a repository of the bot's elsewhere still works" sh -c "cd '$M' && git init -q other && test -d other/.git"
check "and one inside the bot's own repository" sh -c "cd '$M/nest' && git init -q inner && test -d inner/.git"

# ---- a repository the person makes around one of the bot's (on the host) ---------
# G1 saw no work tree there when the bot made its repository; X2 keeps the
# person's index from gitlinking it, also by a resolve-undo record (git
# checkout -m stages it again) and by a split index's replacement of a
# shared entry (red team 3: split-gitlink), which gitguard's gitlink check
# once never saw.
mkdir -p "$M/wrap"
check "the bot makes its repository in a plain folder" nested "$M/wrap/nest" wrap-nest
check "host: the person makes a repository around it" sh -c \
	"git init -q '$S/wrap' && git -C '$S/wrap' commit -q --allow-empty -m wrap"
woid=$(git -C "$M/wrap/nest" rev-parse HEAD)
git_refused "its index may not gitlink the bot's repository" X2 "$M/wrap" \
	git update-index --add --cacheinfo "160000,$woid,nest"
python3 "$FORGE" index-reuc "$T/reuc-nest" nest "160000:$woid"
refused_by "... nor hold a resolve-undo record of a gitlink to it" X2 \
	python3 "$FORGE" plant-rename "$M/wrap/.git/index.lock" "$M/wrap/.git/index" "$T/reuc-nest"
rm -f "$M/wrap/.git/index.lock"
# replaced INDEX: its first entry has an empty name (it replaces a shared one)
replaced()
{
	python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read()
sys.exit(struct.unpack(">H", d[72:74])[0] & 0xfff != 0)' "$1"
}
wblob=$(git -C "$M/wrap" hash-object -w --stdin </dev/null)
check "split index: the bot stages the files later and nest, then splits the index" sh -c \
	"cd '$M/wrap' && git update-index --add --cacheinfo '100644,$wblob,later' \
		--cacheinfo '100644,$wblob,nest' && git update-index --split-index"
check "split index: a replacement making later a gitlink (no repository there)" \
	git -C "$M/wrap" -c core.splitIndex=true update-index --cacheinfo "160000,$woid,later"
check "... written as a replacement (an entry with an empty name)" replaced "$S/wrap/.git/index"
git_refused "split index: a replacement making nest a gitlink to the bot's repository" X2 \
	"$M/wrap" git -c core.splitIndex=true update-index --cacheinfo "160000,$woid,nest"

# ---- a repository the bot made and removed: its number is not the bot's -------------
# ext4 gives a freed inode number to the next folder made near it; a record of
# the bot's repository by number alone would make the person's next
# repository there the bot's, unguarded: its hooks writable through the mount
mkdir -p "$M/reuse"
check "the bot makes a repository" git init -q "$M/reuse/mine"
hook mine-own >"$T/own-hook"
is "$(shell_result cp "$T/own-hook" "$M/reuse/mine/.git/hooks/pre-commit")" OK \
	"... and writes its hooks: it is the bot's"
gone_ino=$(stat -c %i "$S/reuse/mine/.git")
check "the bot removes it" rm -rf "$M/reuse/mine"
# the person's next folder there gets its number (ext4 skips a number freed
# in the last 10-15 s once its inode table block is written: tried for 30 s)
reused=$(python3 - "$S/reuse" "$gone_ino" <<'PY'
import os, sys, time
d, want = sys.argv[1], int(sys.argv[2])
for attempt in range(30):
    made, hit = [], None
    for k in range(100):
        p = os.path.join(d, "cand-%d-%d" % (attempt, k))
        os.mkdir(p)
        if os.stat(p).st_ino == want:
            hit = p
            break
        made.append(p)
    for p in made:
        os.rmdir(p)
    if hit:
        os.mkdir(os.path.join(d, "theirs"))
        os.rename(hit, os.path.join(d, "theirs", ".git"))
        print("yes")
        break
    time.sleep(1)
PY
)
if [ "$reused" = yes ]; then
	git -C "$S/reuse/theirs" init -q && git -C "$S/reuse/theirs" commit -q --allow-empty -m theirs
	is "$(stat -c %i "$S/reuse/theirs/.git")" "$gone_ino" \
		"host: the person's new repository has the number of the bot's removed one"
	hook reused-number >"$T/reuse-hook"
	refused_by "a hook in the person's repository with that number: refused" D3 \
		shell_result sh -c "cp '$T/reuse-hook' '$M/reuse/theirs/.git/hooks/pre-commit' &&
			chmod +x '$M/reuse/theirs/.git/hooks/pre-commit'"
	check "host: the person's commit there" git -C "$S/reuse/theirs" commit -q --allow-empty -m two
	no_marker "host: ... runs nothing of the bot's" reused-number
else
	skip "this file system gave the removed repository's number to no new folder"
	skip "(the same)"
	skip "(the same)"
	skip "(the same)"
fi

fs_umount "$M" || not_ok "umount $M"
# the bot's own git in its repository ran its fsmonitor (the bot's business): from here
# on a marker would be the person's git running it
rm -f "$MARKS/PWNED-gitlink-bot"

# ---- the person's plain git on the host ------------------------------------------
check "host: git status" git -C "$S/app" status
check "host: git diff" git -C "$S/app" diff
check "host: no repository in the gitlinked folder" test ! -e "$S/app/later/.git"
is "$(git -C "$S/app" ls-files -s | awk '$1 == 160000 { print $4 }')" later \
	"host: the only gitlink is the one with no repository"
check "host: git add -A" git -C "$S/app" add -A
check "host: git status after it" git -C "$S/app" status
check "host: git commit" git -C "$S/app" commit -q -m "host after attacks"
is "$(git -C "$S/app" ls-files -s | awk '$1 == 160000 { print $4 }')" later \
	"host: git add -A found no repository of the bot's to stage"
no_marker "host: nothing the bot planted ran" gitlink-bot
check "host: git status where the person wrapped the bot's repository" git -C "$S/wrap" status
check "host: git diff there" git -C "$S/wrap" diff
is "$(git -C "$S/wrap" ls-files -s | awk '$1 == 160000 { print $4 }')" later \
	"host: its only gitlink is the one with no repository"
no_marker "host: ... runs nothing of the bot's" wrap-nest

# ---- work trees whose git folder is elsewhere (red team, round four) ---------------
# a linked worktree's .git file, --separate-git-dir's, a .git symlink: each
# leads out of the root, and each is the person's work tree all the same
S2="$T/src2"
M2="$T/m2"
P="$T/person"
mkdir -p "$S2" "$M2" "$P"
elsewhere()
{
	git init -q "$P/proj" && git -C "$P/proj" commit -q --allow-empty -m one &&
		git -C "$P/proj" worktree add -q "$S2/wt" &&
		git init -q --separate-git-dir "$P/sep.git" "$S2/sep" &&
		git -C "$S2/sep" commit -q --allow-empty -m one &&
		git init -q --bare "$P/lnk.git" && mkdir "$S2/lnk" && ln -s "$P/lnk.git" "$S2/lnk/.git" &&
		git -C "$S2/lnk" config core.bare false && git -C "$S2/lnk" commit -q --allow-empty -m one
}
host_setup "host setup: a linked worktree, a --separate-git-dir, a .git symlink" elsewhere
mount_or_stop "writable mount of them, new repositories allowed" \
	fs_mount --allow-new-repos --log "$GUARD_LOG" "$S2" "$M2"
for d in wt sep lnk; do
	git_refused "$d: git init of a repository in that work tree" G1 "$M2/$d" git init -q nest
	mkdir -p "$M2/$d/sub"
	check "$d: a folder holding the bot's repository, made outside" sh -c \
		"mkdir -p '$M2/own-$d' && git init -q '$M2/own-$d/r'"
	refused_by "$d: ... moved into it" G1 try rename "$M2/own-$d" "$M2/$d/sub/own"
done
fs_umount "$M2" || not_ok "umount $M2"
for d in wt sep lnk; do
	check "host $d: git add -A; git status" sh -c "git -C '$S2/$d' add -A && git -C '$S2/$d' status >/dev/null"
	is "$(git -C "$S2/$d" ls-files -s | awk '$1 == 160000 { print $4 }')" "" "host $d: no gitlink staged"
done

done_testing
