# SPDX-License-Identifier: MIT
# tests/guard-workflows.sh: the git workflows a bot runs in a repository,
# sourced by tests/guard-names.sh.  git_workflows DIR runs them in DIR, a
# clone (origin: a bare repository outside the root) with a submodule made
# on the host, and stops at the first command that fails: merges with and
# without conflicts, stash, cherry-pick and revert, rebase (merge backend,
# -i with a break, --update-refs, --apply, stopped and continued; an exec
# line is refused by X6), am, bisect,
# notes (merged), replace, a split index, a temporary index, a partial
# commit, reset, reflog, pack-refs, gc, repack, prune, commit-graph (plain
# and split), multi-pack-index, maintenance, fsck --lost-found,
# update-server-info, push, fetch, pull, a commit in the submodule.
git_workflows()
(
	set -e
	cd "$1"
	git branch feat
	echo b >b && git add b && git commit -qm b
	git checkout -q feat && echo f >f && git add f && git commit -qm f && git checkout -q main
	git merge -q --no-edit feat
	git checkout -q -b c1 main~1 && echo x >a && git commit -qam c1
	git checkout -q main && echo y >a && git commit -qam c2
	! git merge -q c1 >/dev/null 2>&1
	echo z >a && git add a && git commit -qm merged
	echo s >>a && git stash -q && git stash pop -q && git checkout -q -- a
	echo u >untracked && git stash -q -u && git stash apply -q && git stash drop -q && rm -f untracked
	git checkout -q -b cp main~2 && echo p >p && git add p && git commit -qm p
	git checkout -q main && git cherry-pick cp >/dev/null
	git checkout -q -b cpc main && echo q >a && git commit -qam cpc
	git checkout -q main && echo q2 >a && git commit -qam q2
	! git cherry-pick cpc >/dev/null 2>&1
	echo r >a && git add a && git -c core.editor=true cherry-pick --continue >/dev/null
	git revert --no-edit HEAD >/dev/null
	git tag v1 && git tag -a -m ann v2
	echo r1 >r1 && git add r1 && git commit -qm r1 && echo r2 >r2 && git add r2 && git commit -qm r2
	GIT_SEQUENCE_EDITOR='sed -i 1d' git rebase -q -i HEAD~2
	GIT_SEQUENCE_EDITOR='sed -i "1a break"' git rebase -q -i HEAD~1
	git rebase --continue >/dev/null
	git branch ur HEAD~1
	git rebase -q --update-refs HEAD~2 >/dev/null 2>&1
	git checkout -q -b rc main && echo rc >a && git commit -qam rc
	git checkout -q main && echo rm >a && git commit -qam rm && git checkout -q rc
	! git rebase -q main >/dev/null 2>&1
	echo rcx >a && git add a && git -c core.editor=true rebase --continue >/dev/null
	git checkout -q main
	git checkout -q -b ra main~1 && echo ra >ra && git add ra && git commit -qm ra
	git rebase -q --apply main
	git checkout -q -b rac main && echo rac >a && git commit -qam rac
	git checkout -q main && echo rm2 >a && git commit -qam rm2 && git checkout -q rac
	! git rebase -q --apply main >/dev/null 2>&1
	git rebase --skip >/dev/null 2>&1
	git checkout -q main
	git format-patch -q -1 -o ../patches HEAD
	git checkout -q -b amb main~1 && git am -q ../patches/*.patch && git checkout -q main
	git checkout -q -b amc main~3 && echo amc >a && git commit -qam amc
	! git am -q -3 ../patches/*.patch >/dev/null 2>&1
	git am --skip >/dev/null 2>&1
	git checkout -q main
	git bisect start HEAD HEAD~4 >/dev/null && git bisect good >/dev/null
	git bisect run true >/dev/null 2>&1 || true
	git bisect reset >/dev/null 2>&1
	git notes add -m n1 HEAD && git notes --ref=other add -m n2 HEAD
	git notes merge -s manual other >/dev/null 2>&1 || true
	git notes merge --abort >/dev/null 2>&1 || true
	git replace HEAD~1 HEAD~2 && git replace -d HEAD~1 >/dev/null
	git update-index --split-index && echo si >si && git add si && git commit -qm si
	git update-index --no-split-index
	GIT_INDEX_FILE=.git/tmp-index git read-tree HEAD && rm .git/tmp-index
	git commit -q --allow-empty -m e && git commit -q --amend --allow-empty -m e3
	echo part >a && echo part >b && git add b && git commit -q -m partial a
	git reset -q --hard HEAD~1 && git reset -q --soft HEAD~1 && git reset -q
	git reflog expire --expire=now --all && git pack-refs --all
	git gc -q && git repack -q -a -d && git prune
	git commit-graph write --reachable >/dev/null
	git commit-graph write --reachable --split >/dev/null
	git multi-pack-index write >/dev/null && git multi-pack-index verify >/dev/null
	git maintenance run --task=gc --task=commit-graph --task=loose-objects \
		--task=incremental-repack --task=pack-refs >/dev/null
	git fsck --lost-found >/dev/null 2>&1 || true
	git update-server-info
	git count-objects -v >/dev/null && git describe --always >/dev/null
	git push -q origin main feat
	git fetch -q origin && git pull -q --no-rebase --no-edit origin main
	git fetch -q --prune origin
	git -C sub commit -q --allow-empty -m subc
	git status >/dev/null && git diff >/dev/null && git log --oneline >/dev/null
	git add -A && git commit -qm final --allow-empty
)
