#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-git: ordinary git keeps working through a writable mount (agentfs(1),
# WHAT IS PROTECTED: git add, git commit, git branch, git checkout, git stash,
# git rebase, git gc and git worktree list work inside a writable root; git
# config writes are refused).  Covered: a repository with a submodule and a
# linked worktree (both made on the host), a commit-msg hook the person
# installed (it must run), the worktree mounted on its own next to a mount of
# the main repository, a .git symlink and a .git file pointing elsewhere in
# the root, a root that is not a repository, and new repositories with and
# without --allow-new-repos.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"     # the first mount's SOURCE: not a repository itself
M="$T/m1"      # its mount point
V="$T/v"       # second layout: the main repo and the worktree, each mounted
N="$T/new"     # a root for --allow-new-repos
MN="$T/mn"
RAN="$T/RAN-commit-msg" # the person's commit-msg hook leaves it
mkdir -p "$S" "$M" "$V/repo" "$V/wt" "$N" "$MN"

# run_in DIR CMD...: run CMD in DIR
run_in()
{
	local d="$1"
	shift
	(cd "$d" && "$@")
}

# fails_erofs DESC DIR CMD...: CMD in DIR must fail and say "Read-only file system"
fails_erofs()
{
	local desc="$1" d="$2" out rc
	shift 2
	out=$(cd "$d" && "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q "Read-only file system"; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "command: $* (in $d)" "exit status: $rc"
		[ -n "$out" ] && diag "$out"
	fi
}

# ---- on the host, before mounting -----------------------------------------
setup()
{
	# the submodule's upstream lives outside the root
	make_upstream "$T/up"

	git init -q "$S/repo"
	cd "$S/repo"
	echo one >a
	git add a
	git commit -qm "init"
	git -c protocol.file.allow=always submodule add -q "$T/up" sub
	git commit -qm "add submodule"
	git worktree add -q ../wt -b wtbranch
	# The worktree's .git names its admin folder by a relative path, so it is
	# reached through whichever mount holds both (as agentfs exec binds each
	# root at its own path).
	echo "gitdir: ../repo/.git/worktrees/wt" >"$S/wt/.git"
	# the person's own hook: it must run through the mount
	printf '#!/bin/sh\ntouch %s\n' "$RAN" >.git/hooks/commit-msg
	chmod +x .git/hooks/commit-msg

	# a repository whose .git is a symlink to a folder elsewhere in the root
	mkdir -p "$S/store"
	git init -q "$S/symrepo"
	mv "$S/symrepo/.git" "$S/store/symrepo-git"
	ln -s ../store/symrepo-git "$S/symrepo/.git"
	echo s >"$S/symrepo/s"
	git -C "$S/symrepo" add s
	git -C "$S/symrepo" commit -qm "sym init"

	# a repository whose .git is a gitdir file pointing elsewhere in the root
	git init -q "$S/filerepo"
	mv "$S/filerepo/.git" "$S/store/filerepo-git"
	echo "gitdir: ../store/filerepo-git" >"$S/filerepo/.git"
	echo f >"$S/filerepo/f"
	git -C "$S/filerepo" add f
	git -C "$S/filerepo" commit -qm "file init"

	# plain files at the root
	echo plain >"$S/plain.txt"
	mkdir "$S/plaindir"
}
host_setup "host setup" setup

mount_or_stop "writable mount of a folder holding a repository, worktree and submodule" \
	fs_mount --log "$GUARD_LOG" "$S" "$M"

R="$M/repo"

# ---- a root that is not a repository: plain files --------------------------
check "plain: create and write a file at the root" sh -c "echo hi >'$M/new.txt' && grep -q hi '$M/new.txt'"
check "plain: append to an existing file" sh -c "echo more >>'$M/plain.txt' && grep -q more '$S/plain.txt'"
check "plain: mkdir, rename, rmdir" sh -c "mkdir '$M/d1' && mv '$M/d1' '$M/d2' && rmdir '$M/d2'"
check "plain: chmod +x, symlink, hard link, unlink" sh -c \
	"chmod +x '$M/new.txt' && ln -s new.txt '$M/sl' && ln '$M/new.txt' '$M/hl' && rm '$M/sl' '$M/hl' '$M/new.txt'"
check "plain: rename a file into a folder and back" sh -c \
	"mv '$M/plain.txt' '$M/plaindir/' && mv '$M/plaindir/plain.txt' '$M/'"

# ---- the main repository ---------------------------------------------------
check "git status" run_in "$R" git status
check "git add" run_in "$R" sh -c "echo two >b && git add b"
check "git commit (commit-msg hook installed on the host)" run_in "$R" git commit -qm "second"
check "the person's commit-msg hook ran through the mount" test -e "$RAN"
is "$(run_in "$R" git log -1 --format=%s 2>&1)" "second" "git log shows the new commit"
check "git branch" run_in "$R" git branch feat
check "git checkout" run_in "$R" git checkout -q feat
check "commit on the branch" run_in "$R" sh -c "echo feat >f && git add f && git commit -qm feat"
check "git switch" run_in "$R" git switch -q main
check "git merge (a merge commit)" run_in "$R" sh -c "echo m >m && git add m && git commit -qm m && git merge -q --no-edit feat"
is "$(run_in "$R" git rev-list --count --merges HEAD 2>&1)" "1" "the merge commit exists"
check "git stash" run_in "$R" sh -c "echo changed >>a && git stash -q && test \"\$(cat a)\" = one"
check "git stash pop" run_in "$R" sh -c "git stash pop -q && grep -q changed a && git checkout -q -- a"
check "git cherry-pick" run_in "$R" sh -c \
	"git switch -q -c pick && echo p >p && git add p && git commit -qm pickme && git switch -q main && git cherry-pick pick >/dev/null && test -f p"
check "git tag (light and annotated)" run_in "$R" sh -c "git tag v1 && git tag -a -m 'annotated' v2 && git tag | grep -qx v2"
check "git rebase -i (sequence editor drops a commit)" run_in "$R" sh -c \
	"echo r1 >r1 && git add r1 && git commit -qm r1 && echo r2 >r2 && git add r2 && git commit -qm r2 &&
	 GIT_SEQUENCE_EDITOR='sed -i 1d' git rebase -q -i HEAD~2 && test ! -e r1 && test -e r2 &&
	 test \"\$(git log -1 --format=%s)\" = r2"
# X4: the strategy files git writes itself pass the check
# X6: an exec line would run on whoever's `git rebase --continue` (guard-todo.sh)
git_refused "git rebase -i with an exec line" X6 "$R" sh -c \
	"echo x1 >x1 && git add x1 && git commit -qm x1 &&
	 GIT_SEQUENCE_EDITOR='sed -i \"1a exec touch exec-ran\"' git rebase -q -i HEAD~1"
check "the refused rebase ran nothing and left no rebase behind" run_in "$R" sh -c \
	"test ! -e exec-ran && { git rebase --abort 2>/dev/null; true; } && test ! -d .git/rebase-merge &&
	 test \"\$(git log -1 --format=%s)\" = x1"
check "git rebase -s ort -X theirs through a conflict" run_in "$R" sh -c \
	"git switch -q -c xs && echo xs >x1 && git commit -qam xs && git switch -q main &&
	 echo xm >x1 && git commit -qam xm && git switch -q xs &&
	 git rebase -q -s ort -X theirs main && test \"\$(cat x1)\" = xs && git switch -q main"
check "git rebase -m stopped at a conflict, resolved, continued" run_in "$R" sh -c \
	"git switch -q -c xc HEAD~1 && echo xc >x1 && git commit -qam xc &&
	 ! git rebase -q -s ort main 2>/dev/null && test -f .git/rebase-merge/strategy &&
	 echo xc >x1 && git add x1 && git rebase --continue >/dev/null && git switch -q main"
check "git cherry-pick of a range stopped at a conflict, resolved, continued" run_in "$R" sh -c \
	"git switch -q -c cp1 HEAD~1 && echo c1 >x1 && git commit -qam c1 && echo c2 >c2 &&
	 git add c2 && git commit -qm c2 && git switch -q main &&
	 ! git cherry-pick --strategy=ort main..cp1 >/dev/null 2>&1 &&
	 grep -q 'strategy = ort' .git/sequencer/opts && echo c1 >x1 && git add x1 &&
	 git cherry-pick --continue >/dev/null && test -f c2"
check "git update-index --split-index, add, then --no-split-index" run_in "$R" sh -c \
	"git update-index --split-index && ls .git/sharedindex.* >/dev/null &&
	 echo si >si && git add si && git commit -qm si && git update-index --no-split-index"
check "index v4 written and read" run_in "$R" sh -c \
	"git update-index --index-version 4 && echo v4 >v4 && git add v4 && git commit -qm v4 &&
	 git update-index --index-version 2"
check "git read-tree into a temporary index" run_in "$R" sh -c \
	"GIT_INDEX_FILE=.git/tmp-index git read-tree HEAD && rm .git/tmp-index"
check "git read-tree -m -u" run_in "$R" sh -c "git read-tree -m -u HEAD"
check "git diff" run_in "$R" sh -c "echo d >>a && git diff | grep -q '^+d' && git checkout -q -- a"
check "git log" run_in "$R" sh -c "git log --oneline | grep -q pickme"
check "git gc" run_in "$R" git gc -q
check "git fsck after gc" run_in "$R" git fsck --no-progress
check "git worktree list" run_in "$R" sh -c "git worktree list | grep -q wtbranch"
check "git submodule status" run_in "$R" sh -c "git submodule status | grep -q ' sub'"
check "git status inside the submodule" run_in "$R/sub" git status
check "git commit inside the submodule" run_in "$R/sub" sh -c \
	"echo z >z && git add z && git commit -qm 'in submodule'"
fails_erofs "git config --local is refused with EROFS" "$R" git config --local x.y z
git_refused "git config --local (its config.lock)" D1 "$R" git config --local x.y z
is "$(git -C "$S/repo" config --local x.y)" "" "the refused config write left nothing behind"

# ---- the linked worktree through the first mount ---------------------------
check "worktree: git status" run_in "$M/wt" git status
rm -f "$RAN"
check "worktree: git add and commit" run_in "$M/wt" sh -c "echo w >w && git add w && git commit -qm 'in worktree'"
check "worktree: the commit-msg hook ran" test -e "$RAN"
is "$(git -C "$S/repo" log -1 --format=%s wtbranch 2>&1)" "in worktree" \
	"worktree: the commit is on the host's branch"

# ---- .git symlink and .git file --------------------------------------------
check "symlinked .git: git status" run_in "$M/symrepo" git status
check "symlinked .git: git add and commit" run_in "$M/symrepo" sh -c \
	"echo s2 >s2 && git add s2 && git commit -qm s2"
is "$(git -C "$S/symrepo" log -1 --format=%s 2>&1)" "s2" "symlinked .git: the commit is there on the host"
check "gitdir file: git status" run_in "$M/filerepo" git status
check "gitdir file: git add and commit" run_in "$M/filerepo" sh -c \
	"echo f2 >f2 && git add f2 && git commit -qm f2"
is "$(git -C "$S/filerepo" log -1 --format=%s 2>&1)" "f2" "gitdir file: the commit is there on the host"

# ---- no new repositories without --allow-new-repos -------------------------
fails_erofs "git init is refused without --allow-new-repos" "$M" git init -q fresh
fails_erofs "git clone is refused without --allow-new-repos" "$M" git clone -q "$T/up" cloned

fs_umount "$M" || not_ok "umount $M"

# ---- the worktree mounted on its own, next to a mount of the main repo -----
if fs_mount "$S/repo" "$V/repo" && fs_mount "$S/wt" "$V/wt"; then
	ok "mount the main repository and the worktree side by side"
	check "own-mount worktree: git status" run_in "$V/wt" git status
	rm -f "$RAN"
	check "own-mount worktree: git add and commit" run_in "$V/wt" sh -c \
		"echo w2 >w2 && git add w2 && git commit -qm 'own mount'"
	check "own-mount worktree: the commit-msg hook ran" test -e "$RAN"
	is "$(git -C "$S/repo" log -1 --format=%s wtbranch 2>&1)" "own mount" \
		"own-mount worktree: the commit is on the host's branch"
	check "own-mount main repo: git worktree list" run_in "$V/repo" sh -c "git worktree list | grep -q wtbranch"
	check "own-mount main repo: git commit" run_in "$V/repo" sh -c \
		"echo v >v && git add v && git commit -qm 'main own mount'"
	fs_umount "$V/wt"
	fs_umount "$V/repo"
else
	not_ok "mount the main repository and the worktree side by side"
fi

# ---- --allow-new-repos -----------------------------------------------------
if fs_mount --allow-new-repos "$N" "$MN"; then
	ok "mount with --allow-new-repos"
	check "allow-new-repos: git init" run_in "$MN" git init -q fresh
	check "allow-new-repos: commit in the new repository" run_in "$MN/fresh" sh -c \
		"echo n >n && git add n && git commit -qm n"
	check "allow-new-repos: git config in the bot's own repository" run_in "$MN/fresh" git config --local x.y z
	check "allow-new-repos: git clone from a local path" run_in "$MN" git clone -q "$T/up" cloned
	check "allow-new-repos: git clone from a file:// URL" run_in "$MN" \
		git -c protocol.file.allow=always clone -q "file://$T/up" cloned2
	check "allow-new-repos: commit in the clone" run_in "$MN/cloned" sh -c \
		"echo c >c && git add c && git commit -qm c"
	fs_umount "$MN"
else
	not_ok "mount with --allow-new-repos"
fi

# ---- the host still sees sound repositories ---------------------------------
check "host: git fsck of the main repository" git -C "$S/repo" fsck --no-progress
check "host: git status of the worktree" git -C "$S/wt" status

done_testing
