#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-index: rule X2.  git 2.39 trusts the paths in an on-disk index, so a
# bot that forges .git/index makes the person's `git restore .` or
# `git checkout -f` write where the bot wants: .git/hooks/pre-commit (then
# run by the next commit), ../outside, an absolute path.  Through the mount
# every way of putting a forged index in place must fail with EROFS: a
# rename of index.lock onto index (git's own way: its content is checked),
# a write, truncate or create in place, a symlink, a hard link, a rename of a
# file that still has a writer or a second name, sharedindex.*, and the
# index of a linked worktree.  Then plain git on the host (restore,
# checkout -f, commit) must write nothing outside the worktree or in
# .git/hooks, and no marker may appear.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src"  # SOURCE: a repository with a linked worktree
M="$T/m"    # its mount point
B="$T/bot"  # the bot's scratch folder (its /tmp), outside the root
mkdir -p "$S" "$M" "$B" "$T/outside"

setup()
{
	git init -q "$S/repo"
	cd "$S/repo"
	echo one >a
	mkdir d && echo two >d/b
	git add a d/b
	git commit -qm init
	git worktree add -q ../wt -b wtb
	echo "gitdir: ../repo/.git/worktrees/wt" >"$S/wt/.git"
	# husky 5-8: core.hooksPath .husky with the hooks tracked; an include in the tree
	git init -q "$S/hk"
	cd "$S/hk"
	mkdir .husky
	printf '#!/bin/sh\ntrue\n' >.husky/pre-commit
	chmod +x .husky/pre-commit
	printf '[user]\n\tname = shared\n' >shared.cfg
	echo a >a
	git add .husky/pre-commit shared.cfg a
	git commit -qm hk
	git config core.hooksPath .husky
	git config include.path ../shared.cfg
	git worktree add -q ../hkwt -b hkwtb
	echo "gitdir: ../hk/.git/worktrees/hkwt" >"$S/hkwt/.git"
	git init -q --object-format=sha256 "$S/r256"
	cd "$S/r256"
	echo x >x
	git add x
	git commit -qm x
	# core.hooksPath hooks, its pre-commit tracked (the bot cannot write it: W2)
	git init -q "$S/tl"
	cd "$S/tl"
	git config core.hooksPath hooks
	mkdir hooks
	printf '#!/bin/sh\nexit 0\n' >hooks/pre-commit
	chmod +x hooks/pre-commit
	echo r >README
	git add README hooks/pre-commit
	git commit -qm tl
}
host_setup "host-setup" setup

mount_or_stop "writable mount of a repository with a linked worktree" fs_mount --log "$GUARD_LOG" "$S" "$M"

G="$M/repo/.git"
# The payload blob, written by the bot through the mount (objects are writable).
hook x2 >"$B/payload"
SHA=$(cd "$M/repo" && git hash-object -w "$B/payload")
[ -n "$SHA" ] || bail_out "git hash-object through the mount failed"
GOOD=$(cd "$M/repo" && git rev-parse HEAD:a)

# forged VERSION PATH: an index with README and PATH (mode 755, the payload)
forged()
{
	python3 "$FORGE" index "$B/forged" "$1" "100644:$GOOD:README" "100755:$SHA:$2"
}

# ---- a forged index by every way, for each kind of bad path ----------------
for path in .git/hooks/pre-commit .GIT/hooks/pre-commit .Git/hooks/pre-commit \
	git~1/hooks/pre-commit .git./hooks/pre-commit ".git /hooks/pre-commit" \
	$'.\xe2\x80\x8cgit/hooks/pre-commit' d/../.git/hooks/pre-commit \
	../outside/pwned "$T/outside/abs" d//x ./d/x sub/.git/hooks/pre-commit; do
	for v in 2 3 4; do
		forged "$v" "$path"
		refused_by "v$v '$path': rename of index.lock onto index refused" X2 \
			python3 "$FORGE" plant-rename "$G/index.lock" "$G/index" "$B/forged"
		rm -f "$G/index.lock"
	done
done
forged 2 .git/hooks/pre-commit
refused_by "write in place of index refused" X2 python3 "$FORGE" plant-write "$G/index" "$B/forged"
refused_by "truncate of index refused" X2 python3 "$FORGE" plant-trunc "$G/index" 0
refused_by "rename onto sharedindex.* refused" X2 \
	python3 "$FORGE" plant-rename "$G/sharedindex.1234" "$G/sharedindex.$SHA" "$B/forged"
rm -f "$G/sharedindex.1234"
refused_by "create of sharedindex.* refused" X2 python3 "$FORGE" plant-create "$G/sharedindex.$GOOD"
refused_by "rename onto the worktree's index refused" X2 \
	python3 "$FORGE" plant-rename "$G/worktrees/wt/index.lock" "$G/worktrees/wt/index" "$B/forged"
rm -f "$G/worktrees/wt/index.lock"
refused_by "write in place of the worktree's index refused" X2 \
	python3 "$FORGE" plant-write "$G/worktrees/wt/index" "$B/forged"
cp "$B/forged" "$M/forged-in-root"
refused_by "symlink made at sharedindex.* refused" D9 python3 "$FORGE" plant-symlink ../../forged-in-root \
	"$G/sharedindex.$GOOD"
# made in the work tree (in the git folder D12 or D9 would refuse making it), then renamed in
refused_by "rename of a symlink onto index refused" D9 \
	python3 "$FORGE" symlink-rename "$M/forged-in-root" "$M/repo/ln" "$G/index"
rm -f "$M/repo/ln"
refused_by "hard link onto sharedindex.* refused" X2 python3 "$FORGE" plant-link "$M/forged-in-root" \
	"$G/sharedindex.$GOOD"
python3 "$FORGE" index "$B/legit" 2 "100644:$GOOD:a" "100644:$GOOD:d/b"
refused_by "rename of a legit index with a second name refused" X2 \
	python3 "$FORGE" two-names "$G/index.lock" "$G/index" "$B/legit"
rm -f "$G/index.lock" "$G/index.lock.second"
lines=$(log_lines)
out=$(python3 "$FORGE" hold-rename "$G/index.lock" "$G/index" "$B/legit" 2>&1)
refusal_is "rename of index.lock with a writer still open refused" X2 "$(echo "$out" | head -1)" \
	"$lines" "$G/index"
diag "the rename waited $(echo "$out" | tail -1) s for the writer to go"
rm -f "$G/index.lock"

# ---- what git does still works, and what it did is sealed ------------------
forge_is "rename of a legit index.lock onto index allowed" ok \
	plant-rename "$G/index.lock" "$G/index" "$B/legit"
refused_by "the renamed-in index is not writable afterwards" X2 python3 "$FORGE" plant-append "$G/index" x
check "git status through the mount" sh -c "cd '$M/repo' && git status --porcelain"
check "git add through the mount" sh -c "cd '$M/repo' && echo three >c && git add c"
check "git commit through the mount" sh -c "cd '$M/repo' && git commit -qm c"
check "git add in the worktree through the mount" sh -c "cd '$M/wt' && echo w >w && git add w"
# ---- entries over files the person's config runs or reads (husky, includes) ----
H="$M/hk"
check "husky repository: git add and commit through the mount (hooks tracked)" sh -c \
	"cd '$H' && echo b >b && git add b && git commit -qm b"
HSHA=$(cd "$H" && git hash-object -w "$B/payload")
# forged_hk ENTRY...: the index git would write, with ENTRY (mode:sha:path) put in
forged_hk()
{
	local ents=() e
	while read -r mode sha _ path; do ents+=("$mode:$sha:$path"); done \
		< <(cd "$H" && git ls-files -s)
	for e in "$@"; do
		ents=("${ents[@]/#*:"${e##*:}"/}")
		ents+=("$e")
	done
	python3 "$FORGE" index "$B/forged-hk" 2 $(printf '%s\n' "${ents[@]}" | grep .)
}
forged_hk
forge_is "husky: the index as git wrote it may be renamed in" ok \
	plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/forged-hk"
forged_hk "100755:$HSHA:.husky/pre-commit"
refused_by "husky: a hook entry with the bot's content refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/forged-hk"
forged_hk "100755:$HSHA:.husky/pre-push"
refused_by "husky: a new hook entry refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/forged-hk"
forged_hk "100644:$HSHA:shared.cfg"
refused_by "an include target entry with the bot's content refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/forged-hk"
python3 "$FORGE" index "$B/forged-hk" 2 "100644:$GOOD:a" "120000:$HSHA:.husky"
refused_by "a symlink entry over the hooks folder refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/forged-hk"
rm -f "$H/.git/index.lock"
HW="$H/.git/worktrees/hkwt"
check "husky linked worktree: git add and commit through the mount" sh -c \
	"cd '$M/hkwt' && echo w >w && git add w && git commit -qm w"
forged_hk "100755:$HSHA:.husky/pre-commit"
refused_by "husky linked worktree: a hook entry with the bot's content refused" X2 \
	python3 "$FORGE" plant-rename "$HW/index.lock" "$HW/index" "$B/forged-hk"
rm -f "$HW/index.lock"

# ---- a cache-tree: git commit takes a valid folder's tree as it says -------------
# The entries are the person's; the TREE extension says .husky is valid with
# a tree of the bot's (its pre-commit the payload): the person's next commit
# would record it, and every checkout of that commit run it.
hk_ents=()
while read -r mode sha _ path; do hk_ents+=("$mode:$sha:$path"); done < <(cd "$H" && git ls-files -s)
GOODTREE=$(cd "$H" && git rev-parse HEAD:.husky)
EVILTREE=$(cd "$H" && printf '100755 blob %s\tpre-commit\n' "$HSHA" | git mktree)
python3 "$FORGE" index-tree "$B/tree-good" .husky "$GOODTREE" 1 "${hk_ents[@]}"
forge_is "cache-tree: a valid folder naming the tree its entries make may be renamed in" ok \
	plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/tree-good"
python3 "$FORGE" index-tree "$B/tree-evil" .husky "$EVILTREE" 1 "${hk_ents[@]}"
refused_by "cache-tree: a valid folder naming another tree refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/tree-evil"
python3 "$FORGE" index-tree "$B/tree-count" .husky "$GOODTREE" 2 "${hk_ents[@]}"
refused_by "cache-tree: an entry count that does not match refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/tree-count"
python3 "$FORGE" index-reuc "$B/reuc-evil" .husky/pre-commit "$HSHA" "${hk_ents[@]}"
refused_by "resolve-undo: a record giving a hook the bot's blob (git checkout -m) refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/reuc-evil"
python3 "$FORGE" index-reuc "$B/reuc-plain" a "$HSHA" "${hk_ents[@]}"
forge_is "resolve-undo: a record for a plain file may be renamed in" ok \
	plant-rename "$H/.git/index.lock" "$H/.git/index" "$B/reuc-plain"
rm -f "$H/.git/index.lock"
check "git commit after a cache-tree check (the index git wrote)" sh -c \
	"cd '$H' && echo t >t && git add t && git commit -qm t"

# ---- a split index: what it replaces keeps the shared entry's name -------------
# The bot builds one with git in a scratch copy: .husky/pre-commit's entry
# replaced (an empty name, the payload's blob); the shared index it names is
# the person's own entries, fine alone.
SC="$B/split"
cp -a "$H" "$SC"
(cd "$SC" && git update-index --split-index && cp "$B/payload" .husky/pre-commit &&
	git -c splitIndex.maxPercentChange=100 add .husky/pre-commit) >/dev/null 2>&1 ||
	bail_out "git could not make a split index in $SC"
SHARED=$(cd "$SC/.git" && ls sharedindex.*)
forge_is "split index: its shared index (the person's entries) may be renamed in" ok \
	plant-rename "$H/.git/sharedindex_forged" "$H/.git/$SHARED" "$SC/.git/$SHARED"
refused_by "split index: a replacement giving the hook the bot's content refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/index.lock" "$H/.git/index" "$SC/.git/index"
rm -f "$H/.git/index.lock"
# ... one replacing a plain file, then a new shared index under the same name
# whose entry at that position is the hook (git trusts the name's trailer)
SC2="$B/split2"
cp -a "$H" "$SC2"
(cd "$SC2" && rm -f .git/index .git/sharedindex.* && git reset -q && git update-index --split-index &&
	cp "$B/payload" a && chmod +x a && git -c splitIndex.maxPercentChange=100 add a) >/dev/null 2>&1 ||
	bail_out "git could not make a split index in $SC2"
SHARED2=$(cd "$SC2/.git" && ls sharedindex.*)
forge_is "split index: its shared index renamed in" ok \
	plant-rename "$H/.git/sharedindex_forged" "$H/.git/$SHARED2" "$SC2/.git/$SHARED2"
forge_is "split index: a replacement of a plain file may be renamed in" ok \
	plant-rename "$H/.git/index.lock" "$H/.git/index" "$SC2/.git/index"
pos=$(cd "$SC2" && git ls-files | grep -nx a | cut -d: -f1)
ents=()
while read -r mode sha _ path; do ents+=("$mode:$sha:$path"); done < <(cd "$SC2" && git ls-files -s)
# shift the hook to the replaced position: as many entries sorting before it
pre=()
for i in $(seq 2 "$pos"); do pre+=("100644:$GOOD:-pad$i"); done
python3 "$FORGE" index "$B/shared-evil" 2 "${pre[@]}" "${ents[@]}" &&
	python3 -c 'import sys; p=sys.argv[1]; b=open(p,"rb").read(); open(p,"wb").write(b[:-20]+bytes.fromhex(sys.argv[2]))' \
		"$B/shared-evil" "${SHARED2#sharedindex.}"
refused_by "split index: another shared index renamed over the one the index names refused" X2 \
	python3 "$FORGE" plant-rename "$H/.git/sharedindex_forged" "$H/.git/$SHARED2" "$B/shared-evil"
rm -f "$H/.git/sharedindex_forged"
check "split index: git status through the mount reads it" sh -c "cd '$H' && git status --short >/dev/null"

# ---- an extension given twice: git 2.39 keeps the last copy (red team 3) -------
# gitguard checked the first.  A split index whose first link replaces README
# and whose last replaces hooks/pre-commit (git restore . writes the bot's
# hook); one whose first TREE is empty and whose last marks hooks/ valid with
# a tree of the bot's (the person's next commit records it).
L="$M/tl"
check "two extensions: the bot splits the index of a repository with tracked hooks" sh -c \
	"cd '$L' && git update-index --split-index"
LSHARED=$(cd "$L/.git" && ls sharedindex.* | sed 's/^sharedindex\.//')
LSHA=$(cd "$L" && git hash-object -w "$B/payload")
python3 "$FORGE" split-twolinks "$B/twolinks" "$LSHARED" "$LSHA" 100755 1 1
refused_by "two links, each replacing the hook (control)" X2 \
	python3 "$FORGE" plant-rename "$L/.git/index.lock" "$L/.git/index" "$B/twolinks"
rm -f "$L/.git/index.lock"
python3 "$FORGE" split-twolinks "$B/twolinks" "$LSHARED" "$LSHA" 100755 0 1
refused_by "two links, the first replacing README, the last the hook" X2 \
	python3 "$FORGE" plant-rename "$L/.git/index.lock" "$L/.git/index" "$B/twolinks"
rm -f "$L/.git/index.lock"
LSUB=$(cd "$L" && printf '100755 blob %s\tpre-commit\n' "$LSHA" | git mktree)
LROOT=$(cd "$L" && printf '100644 blob %s\tREADME\n040000 tree %s\thooks\n' \
	"$(git rev-parse :README)" "$LSUB" | git mktree)
python3 "$FORGE" split-twotrees "$L/.git/index" "$B/twotrees" "$LROOT" hooks 1 "$LSUB" 2
refused_by "two TREEs, the first empty, the last naming the bot's hooks/ tree" X2 \
	python3 "$FORGE" plant-rename "$L/.git/index.lock" "$L/.git/index" "$B/twotrees"
rm -f "$L/.git/index.lock"
check "the bot's git add and commit there (a split index) still work" sh -c \
	"cd '$L' && echo c >c && git add c && git commit -qm c"

# ---- git stash's index: `git stash -u` reads .git/index.stash.<pid> as it
# finds it, and its pop writes what that held (red team 3).  The bot sprays
# the pids to come with an index holding hooks/post-checkout.
python3 "$FORGE" index "$B/stash-evil" 2 "100755:$LSHA:hooks/post-checkout"
refused_by "git stash's index: made in place" X2 \
	python3 "$FORGE" plant-create "$L/.git/index.stash.99999"
refused_by "git stash's index: one with a hook of the bot's renamed in" X2 \
	python3 "$FORGE" plant-rename "$L/.git/index.stash.tmp" "$L/.git/index.stash.99999" \
	"$B/stash-evil"
rm -f "$L/.git/index.stash.tmp"
made=$(python3 - "$L/.git" "$B/stash-evil" <<'PY'
import shutil, sys
last = int(open("/proc/sys/kernel/ns_last_pid").read())
made = 0
for p in range(last + 1, last + 401):
    try:
        shutil.copyfile(sys.argv[2], "%s/index.stash.%d" % (sys.argv[1], p))
        made += 1
    except OSError:
        pass
print(made)
PY
)
is "$made" 0 "git stash's index: none of the next 400 pids' made by a copy"
check "the bot's git stash -u and pop still work" sh -c \
	"cd '$L' && echo wip >wip && echo more >>README && git stash -u -q && test ! -e wip &&
	git stash pop -q && test -e wip && rm wip && git checkout -q README"

check "SHA-256 repository: git add and commit through the mount" sh -c \
	"cd '$M/r256' && echo y >y && git add y && git commit -qm y"
SHA256=$(cd "$M/r256" && git hash-object -w "$B/payload")
python3 "$FORGE" index "$B/forged256" 2 "100755:$SHA256:.git/hooks/pre-commit" 2>/dev/null ||
	true
refused_by "SHA-256 repository: a forged index refused" X2 \
	python3 "$FORGE" plant-rename "$M/r256/.git/index.lock" "$M/r256/.git/index" "$B/forged256"
rm -f "$M/r256/.git/index.lock"

fs_umount "$M" || not_ok "umount $M"

# ---- the person's git on the host ------------------------------------------
(
	cd "$S/repo" && git restore . && git checkout -q -f && git commit -q --allow-empty -m host &&
		git -C "$S/wt" restore . && git -C "$S/wt" checkout -q -f &&
		git -C "$S/hk" restore . && git -C "$S/hk" commit -q --allow-empty -m host &&
		git -C "$S/hkwt" restore . && git -C "$S/hkwt" commit -q --allow-empty -m host &&
		cd "$S/tl" && git status --short && git restore . && echo more >>README &&
		git add README && git commit -qm host && git checkout -q HEAD~1 &&
		git checkout -q - && git commit -q --allow-empty -m host &&
		echo wip >notes.txt && git stash -u -q && git stash pop -q &&
		git checkout -q -b topic
) >"$T/host.log" 2>&1
is "$?" 0 "host: git restore, checkout -f and commit succeed (and stash -u in tl)"
is "$(cd "$S/tl" && git ls-tree -r HEAD | awk '{ print $1, $4 }' | tr '\n' ' ')" \
	"100644 README 100644 c 100755 hooks/pre-commit " "host: the person's commit in tl holds their files only"
is "$(git -C "$S/tl" show HEAD:hooks/pre-commit | tr '\n' ' ')" '#!/bin/sh exit 0 ' \
	"host: ... and their pre-commit"
is "$(ls "$S/tl/hooks" | tr '\n' ' ')" "pre-commit " "host: no hook appeared in tl's hooks/"
[ -s "$T/host.log" ] && diag "$(cat "$T/host.log")"
is "$(ls "$S/repo/.git/hooks" | grep -v '\.sample$' | tr '\n' ' ')" "" \
	"host: no hook appeared in .git/hooks"
is "$(ls "$T/outside" | tr '\n' ' ')" "" "host: nothing written outside the root"
no_marker "host: no marker"
is "$(find "$S" -name 'pre-commit' -o -name pwned -o -name pre-push | grep -v -e '/hk\(wt\)\?/.husky/pre-commit$' -e '/tl/hooks/pre-commit$' |
	tr '\n' ' ')" "" "host: no planted file anywhere in the source"
is "$(cat "$S/hkwt/.husky/pre-commit" "$S/hk/shared.cfg" | tr '\n' ' ')" \
	'#!/bin/sh true [user] 	name = shared ' "host: the husky hook and the include target are the person's"

done_testing
