#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-audit: `agentfs audit PATH...` lists what in a tree would make a
# person's git run something or write where a bot wants, and exits 1 when
# it finds anything, 0 on a clean tree, 2 on an error.  A clean repository
# with a linked worktree and a submodule is clean; then each plant, made in
# a copy of it, must be reported with its path: a hook, a core.hooksPath
# file, an exec line of a rebase in progress, a strategy path, a strategy
# git would run as a program, a forged index, an untracked cache (git status
# trusts it), an index entry that hides a change, info/exclude patterns, a
# name vim runs at a work tree's top, a bare-shaped folder in the work tree, a .git file pointing
# elsewhere.  The walk follows no symlink and
# survives a chain deeper than it reads.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

setup()
{
	make_upstream "$T/up"
	git init -q "$T/clean/repo"
	cd "$T/clean/repo"
	echo a >f
	git add f
	git commit -qm a
	git submodule add -q "$T/up" sub
	git commit -qm sub
	git worktree add -q ../wt -b wtb
	git checkout -qb t
	echo b >f
	git commit -qam b
	git checkout -q main
	echo c >f
	git commit -qam c
	git init -q --object-format=sha256 "$T/clean/r256"
	cd "$T/clean/r256"
	echo x >x
	git add x
	git commit -qm x
}
host_setup setup setup

# audit_is DESC WANT_RC GREP PATH...: exit status WANT_RC and a line matching GREP
audit_is()
{
	local desc="$1" want="$2" re="$3" out rc
	shift 3
	out=$("$AGENTFS" audit "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && { [ -z "$re" ] || printf '%s\n' "$out" | grep -q -- "$re"; }; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "exit status $rc (want $want), output:" "$out"
	fi
}

audit_is "a clean tree (a worktree, a submodule, a SHA-256 repository): exit 0" 0 "" "$T/clean"
is "$("$AGENTFS" audit --json "$T/clean")" "[]" "--json of a clean tree is []"

# fresh NAME: a copy of the clean tree to plant in; prints its repository path
fresh()
{
	rm -rf "$T/$1"
	cp -a "$T/clean" "$T/$1"
	echo "$T/$1/repo"
}

R=$(fresh hook)
printf '#!/bin/sh\n' >"$R/.git/hooks/pre-commit"
audit_is "a hook in .git/hooks" 1 "repo/.git/hooks/pre-commit: hook" "$T/hook"

R=$(fresh hp)
git -C "$R" config core.hooksPath .husky/_
mkdir -p "$R/.husky/_"
printf '#!/bin/sh\n' >"$R/.husky/_/pre-push"
audit_is "a file under a relative core.hooksPath" 1 "repo/.husky/_/pre-push: hook" "$T/hp"

R=$(fresh ex)
(cd "$R" && git checkout -q t && GIT_SEQUENCE_EDITOR='sed -i "1a exec make planted"' \
	git rebase -i main) >/dev/null 2>&1
audit_is "an exec line in a rebase in progress" 1 "git-rebase-todo: exec: git runs: make planted" \
	"$T/ex"
# git reads all of a todo: an exec line before 17 MB of comment, after blanks
{
	printf '  \t exec make padded\n# '
	head -c 17000000 /dev/zero | tr '\0' x
	printf '\n'
} >"$T/bigtodo"
cp "$R/.git/rebase-merge/git-rebase-todo" "$T/todo.saved"
cp "$T/bigtodo" "$R/.git/rebase-merge/git-rebase-todo"
audit_is "an exec line in a todo of 17 MB" 1 "git-rebase-todo: exec: git runs: make padded" "$T/ex"
rm "$R/.git/rebase-merge/git-rebase-todo"
mkfifo "$R/.git/rebase-merge/git-rebase-todo"
audit_is "a todo that is a FIFO is a finding, not a hang" 1 "git-rebase-todo: exec: cannot be read" \
	"$T/ex"
rm "$R/.git/rebase-merge/git-rebase-todo"
cp "$T/todo.saved" "$R/.git/rebase-merge/git-rebase-todo"
head -c 70000 /dev/zero | tr '\0' a >"$R/.git/rebase-merge/strategy"
audit_is "a strategy file too large to check is a finding" 1 "strategy: cannot be checked" "$T/ex"
echo 'x/../tools/fmt.sh' >"$R/.git/rebase-merge/strategy"
audit_is "a strategy that is a path" 1 "rebase-merge/strategy: strategy: strategy is not one git ships" \
	"$T/ex"
echo 'mine' >"$R/.git/rebase-merge/strategy"
audit_is "a strategy git runs as git-merge-mine" 1 "git runs the program git-merge-mine" "$T/ex"

audit_is "a rebase in progress: where --abort resets the branch" 1 \
	"rebase-merge/orig-head: state: an operation in progress: --abort resets" "$T/ex"

# a rebase state planted in a clean tree (no exec line, no strategy): the
# person's git rebase --abort would reset the branch to orig-head
R=$(fresh st)
mkdir "$R/.git/rebase-merge"
git -C "$R" rev-parse HEAD >"$R/.git/rebase-merge/orig-head"
echo refs/heads/main >"$R/.git/rebase-merge/head-name"
audit_is "a planted rebase state with no exec line" 1 "rebase-merge/orig-head: state" "$T/st"
R=$(fresh as)
git -C "$R" rev-parse HEAD >"$R/.git/MERGE_AUTOSTASH"
audit_is "MERGE_AUTOSTASH: a stash the next commit applies" 1 \
	"repo/.git/MERGE_AUTOSTASH: state: a stash the next git commit applies" "$T/as"

# a bisect the bot left (or planted): git bisect reset checks out what
# BISECT_START names, here a commit no branch has, in the main work tree
# and in a linked one
R=$(fresh bi)
git -C "$R" rev-parse t >"$R/.git/BISECT_START"
git -C "$R" rev-parse t >"$R/.git/worktrees/wt/BISECT_START"
out=$("$AGENTFS" audit "$T/bi" 2>&1)
like "$out" "repo/.git/BISECT_START: state: a bisect in progress: git bisect reset checks out" \
	"BISECT_START: what git bisect reset checks out"
like "$out" "worktrees/wt/BISECT_START: state: a bisect in progress" "... of a linked worktree too"
rm "$R/.git/BISECT_START" "$R/.git/worktrees/wt/BISECT_START"
audit_is "... and nothing once the bisect is over" 0 "" "$T/bi"
R=$(fresh bs)
(cd "$R" && git bisect start t main) >/dev/null 2>&1
audit_is "a bisect git itself started" 1 "repo/.git/BISECT_START: state" "$T/bs"

# an entry staged for a script before the person linked a hook to it
# (red team round 11, finding 01): git restore . would write it
R=$(fresh hl)
printf '#!/bin/sh\ntrue\n' >"$R/check.sh"
git -C "$R" add check.sh
git -C "$R" commit -qm check
printf '#!/bin/sh\necho planted\n' >"$T/planted.sh"
git -C "$R" update-index --cacheinfo "100755,$(git -C "$R" hash-object -w "$T/planted.sh"),check.sh"
ln -s ../../check.sh "$R/.git/hooks/pre-commit"
audit_is "an entry for the script a hook link leads to, staged before the link" 1 \
	"repo/.git/index: index: git restore would write" "$T/hl"

# an am session the bot left or planted: git am --abort resets the branch
# to ORIG_HEAD (red team round 11, finding 03)
R=$(fresh am)
mkdir "$R/.git/rebase-apply"
touch "$R/.git/rebase-apply/applying"
echo 1 >"$R/.git/rebase-apply/next"
echo 1 >"$R/.git/rebase-apply/last"
git -C "$R" rev-parse t >"$R/.git/ORIG_HEAD"
like "$(git -C "$R" status 2>&1)" "am session" "git status of the planted state says: an am session"
audit_is "an am session: what git am --abort resets to" 1 \
	"rebase-apply/applying: state: an am session in progress: git am --abort resets" "$T/am"

# a stash: git stash pop applies whatever the newest one holds, and refs
# are the bot's to write; loose and packed
R=$(fresh sh)
echo stashed >"$R/f"
git -C "$R" stash -q
audit_is "a stash: what git stash pop writes" 1 \
	"repo/.git/refs/stash: state: a stash: git stash pop writes" "$T/sh"
git -C "$R" pack-refs --all
[ ! -e "$R/.git/refs/stash" ] || bail_out "pack-refs left refs/stash loose"
audit_is "... packed into packed-refs too" 1 "repo/.git/refs/stash: state" "$T/sh"
git -C "$R" stash drop -q
audit_is "... and nothing once it is dropped" 0 "" "$T/sh"

R=$(fresh cp)
(cd "$R" && git cherry-pick --strategy=ort main..t) >/dev/null 2>&1
printf '[options]\n\tstrategy = a/b\n' >"$R/.git/sequencer/opts"
audit_is "sequencer/opts naming a path" 1 "sequencer/opts: strategy" "$T/cp"

R=$(fresh idx)
SHA=$(git -C "$R" rev-parse HEAD:f)
python3 "$FORGE" index "$R/.git/index" 2 "100755:$SHA:.git/hooks/pre-commit"
audit_is "a forged index" 1 "repo/.git/index: index: git would write" "$T/idx"
python3 "$FORGE" index "$R/.git/worktrees/wt/index" 2 "100644:$SHA:../x"
audit_is "a forged worktree index" 1 "worktrees/wt/index: index" "$T/idx"

R=$(fresh hkidx)
git -C "$R" config core.hooksPath hooks-dir
python3 "$FORGE" index "$R/.git/index" 2 "100644:$SHA:f" "100755:$SHA:hooks-dir/pre-commit"
audit_is "an index entry for a hook that is not there" 1 "repo/.git/index: index: git restore" \
	"$T/hkidx"

R=$(fresh cfg)
git -C "$R" config core.fsmonitor "$T/fsm"
git -C "$R" config alias.st '!sh -c planted'
git -C "$R" config filter.x.smudge 'planted-smudge'
audit_is "a repository config naming a program: listed" 1 "repo/.git/config: config: core.fsmonitor = $T/fsm" "$T/cfg"
audit_is "... an alias that runs a command" 1 "config: alias.st = !sh -c planted" "$T/cfg"
audit_is "... a filter driver" 1 "config: filter.x.smudge = planted-smudge" "$T/cfg"
git -C "$R" config core.fsmonitor false
git -C "$R" config --unset alias.st
git -C "$R" config --remove-section filter.x
audit_is "core.fsmonitor false is not a program" 0 "" "$T/cfg"
git -C "$R" config gpg.ssh.defaultKeyCommand "$T/keycmd"
audit_is "gpg.ssh.defaultKeyCommand (a signed commit runs it): listed" 1 \
	"config: gpg.ssh.defaultkeycommand = $T/keycmd" "$T/cfg"
git -C "$R" config --unset gpg.ssh.defaultKeyCommand

R=$(fresh hidden)
echo changed >>"$R/f"
git -C "$R" update-index --skip-worktree f
audit_is "a skip-worktree entry (a change git status hides) is listed" 1 \
	"repo/.git/index: index: 1 entries git status and git diff do not look at: f (skip-worktree)" "$T/hidden"
git -C "$R" update-index --no-skip-worktree f
git -C "$R" update-index --assume-unchanged f
audit_is "... and an assume-unchanged one" 1 "f (assume-unchanged)" "$T/hidden"

# an untracked cache (UNTR) that leaves out a file: the folder's stat data
# match, so git status shows what the cache records (red team round 15)
R=$(fresh untr)
git -C "$R" config core.untrackedCache true
mkdir "$R/d"
echo a >"$R/d/a"
git -C "$R" add d/a
git -C "$R" commit -qm d
sleep 1.1
echo planted >"$R/d/evil"
sleep 1.1
git -C "$R" status --porcelain >/dev/null
python3 - "$R/.git/index" <<'PY'
import hashlib, struct, sys
b = open(sys.argv[1], 'rb').read()[:-20]
i = b.find(b'UNTR')
sz = struct.unpack('>I', b[i + 4:i + 8])[0]
ext = b[i + 8:i + 8 + sz].replace(b'\x01\x00d\x00evil\x00', b'\x00\x00d\x00', 1)
b = b[:i + 4] + struct.pack('>I', len(ext)) + ext + b[i + 8 + sz:]
open(sys.argv[1], 'wb').write(b + hashlib.sha1(b).digest())
PY
if git -C "$R" status --porcelain | grep -q evil; then
	not_ok "control: git status hides a file the untracked cache leaves out"
else
	ok "control: git status hides a file the untracked cache leaves out"
fi
check "... git status -uall shows it" sh -c "git -C '$R' status --porcelain -uall | grep -q d/evil"
audit_is "an index with an untracked cache is listed" 1 \
	"repo/.git/index: index: an untracked cache: git status shows the untracked files" "$T/untr"

# a staged change whose entry is given the old object back, stat data kept:
# git takes the file for unchanged and never reads it
R=$(fresh hidden)
old=$(git -C "$R" rev-parse HEAD:f)
sleep 1.1
echo 'all: ; touch PWNED' >"$R/f"
sleep 1.1
git -C "$R" add f
python3 "$FORGE" repoint "$R/.git/index" f "$old" "$T/hidden.idx" && mv "$T/hidden.idx" "$R/.git/index"
is "$(git -C "$R" status --porcelain)" "" "control: git status shows nothing of a change the index hides"
is "$(git -C "$R" diff HEAD --stat)" "" "control: ... nor does git diff HEAD"
audit_is "an index entry hiding a change is listed" 1 \
	"repo/f: index: hidden change: the index's size and times for it match the file" "$T/hidden"
touch "$R/f"
like "$(git -C "$R" diff HEAD --stat)" "f | " "... and touching it shows the change, as the finding says"

# vim runs "+CMD" given as a file name; git mergetool and difftool hand a
# top-level path to vimdiff as it is
R=$(fresh vimname)
mkdir -p "$R/src/routes"
: >"$R/src/routes/+page.svelte"
audit_is "a name below the top starting with '+' (SvelteKit's) is not listed" 0 "" "$T/vimname"
: >"$R/+!touch PWNED"
audit_is "a name at a work tree's top starting with '+' is listed" 1 \
	"repo/+!touch PWNED: name: a name at a work tree's top that vim reads as a command to run" \
	"$T/vimname"

# X8's names: git mergetool moves its backup to NAME.orig, following a link
# there (one checked out from a bot's commit, or made on the host)
R=$(fresh toollink)
mkdir -p "$R/tools"
ln -s "$T" "$R/tools/origin"
: >"$R/tools/run.orig"
audit_is "a file named run.orig, a link named origin: not listed" 0 "" "$T/toollink"
ln -s "$T" "$R/tools/run_BACKUP_77"
audit_is "a symbolic link named as mergetool's backup is listed" 1 \
	"repo/tools/run_BACKUP_77: link: a symbolic link named as a file git mergetool, git apply" "$T/toollink"

# info/exclude: untracked files it matches are not shown by git status
R=$(fresh exclude)
mkdir -p "$R/tests"
echo 'def pytest_configure(): pass' >"$R/tests/conftest.py"
printf '# a comment\n\n/tests/conftest.py\n' >>"$R/.git/info/exclude"
is "$(git -C "$R" status --porcelain)" "" "control: git status does not show a file info/exclude matches"
audit_is "info/exclude with a pattern is listed" 1 \
	"repo/.git/info/exclude: exclude: 1 patterns git status hides untracked files by (/tests/conftest.py)" \
	"$T/exclude"

# a .gitignore that matches itself hides itself and what it hides
R=$(fresh selfignore)
mkdir -p "$R/cache" "$R/keep"
printf '*\n' >"$R/cache/.gitignore"
echo 'include evil.mk' >"$R/cache/local.mk"
printf '*\n!.gitignore\n' >"$R/keep/.gitignore"
git -C "$R" add keep/.gitignore
is "$(git -C "$R" status --porcelain)" "A  keep/.gitignore" \
	"control: git status shows neither a self-ignoring .gitignore nor what it hides"
audit_is "a .gitignore that matches itself is listed" 1 \
	"repo/cache/.gitignore: exclude: a .gitignore that matches itself" "$T/selfignore"
unlike "$("$AGENTFS" audit "$T/selfignore" 2>&1)" "keep/.gitignore" \
	"... one that takes itself back (\"!.gitignore\", to keep a folder) is not"

R=$(fresh shape)
mkdir -p "$R/docs/q/objects" "$R/docs/q/refs"
echo 'ref: refs/heads/main' >"$R/docs/q/HEAD"
audit_is "a bare-shaped folder inside the work tree" 1 "repo/docs/q: shape" "$T/shape"

R=$(fresh ptr)
mkdir "$R/n"
echo "gitdir: $T/elsewhere" >"$R/n/.git"
audit_is "a .git file pointing elsewhere" 1 "repo/n/.git: shape" "$T/ptr"

R=$(fresh links)
ln -s "$T/hook" "$R/link-to-planted"
audit_is "a symlink to a planted tree is not followed" 0 "" "$T/links"

# a chain deeper than the audit reads: an error, not a crash
python3 -c "
import os
p = '$T/deep'
os.makedirs(p)
fd = os.open(p, os.O_RDONLY)
for i in range(300):
    os.mkdir('d', dir_fd=fd)
    nfd = os.open('d', os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nfd
"
audit_is "a 300-deep chain: exit 125, too deep" 125 "too deep" "$T/deep"
audit_is "a missing path: exit 125" 125 "No such file" "$T/missing"
is "$(python3 -c "import json,sys; print(len(json.load(sys.stdin)))" \
	< <("$AGENTFS" audit --json "$T/hook" "$T/shape"))" 2 "--json: one object per finding"

# --bot BOT: the bot's writable roots, as agentfsd reports them, read on the host
if [ "$(id -u)" = 0 ] && [ -c /dev/fuse ]; then
	"$top_builddir/src/agentfsd" --socket "$T/d.sock" --state "$T/dstate" --cgroup "" ||
		bail_out "agentfsd did not start"
	"$AGENTFS" --socket "$T/d.sock" create planted "$T/hook" --sandbox danger-full-access \
		>/dev/null || bail_out "create planted"
	"$AGENTFS" --socket "$T/d.sock" create tidy "$T/clean" --readable "$T/hook" \
		--sandbox danger-full-access >/dev/null || bail_out "create tidy"
	audit_is "--bot: a bot whose root holds a hook" 1 "repo/.git/hooks/pre-commit: hook" \
		--socket "$T/d.sock" --bot planted
	audit_is "--bot: a bot with a clean writable root (its read-only root is not its work)" 0 "" \
		--socket "$T/d.sock" --bot tidy
	audit_is "--bot: a bot that does not exist: exit 125" 125 "no bot" --socket "$T/d.sock" --bot nosuch
	# the root's path now leads, through a symlink, to a clean tree: not audited as the root
	mv "$T/hook" "$T/hook-moved" && ln -s "$T/clean" "$T/hook"
	audit_is "--bot: a root whose path became a symlink is an error, never clean" 125 "" \
		--socket "$T/d.sock" --bot planted
	rm "$T/hook" && mv "$T/hook-moved" "$T/hook"
	"$AGENTFS" --socket "$T/d.sock" shutdown >/dev/null
	wait_until 10 eval '! "$AGENTFS" --socket "$T/d.sock" status >/dev/null 2>&1'
else
	skip "--bot: needs root and /dev/fuse for agentfsd"
fi

# R1, X5, D12, gitlinks, lesskey (red team round three): what makes the person's
# git write a file that is no ref, hand a path to a command, take a bot's folder
# for a git folder, start git in a bot's repository, or have less run a command
R=$(fresh r1)
echo "ref: commondir" >"$R/.git/ORIG_HEAD"
audit_is "ORIG_HEAD, a symbolic ref to commondir" 1 "repo/.git/ORIG_HEAD: ref: a symbolic ref" "$T/r1"
R=$(fresh r1b)
echo "ref: objects/info/alternates" >"$R/.git/refs/heads/x"
audit_is "a loose ref to objects/info/alternates" 1 "refs/heads/x: ref: a symbolic ref" "$T/r1b"
R=$(fresh r1c)
printf '%s commondir\n' "$(git -C "$R" rev-parse HEAD)" >>"$R/.git/packed-refs"
audit_is "a packed-refs line naming commondir" 1 "repo/.git/packed-refs: ref:" "$T/r1c"
R=$(fresh r1d)
echo "ref: commondir" >"$R/.git/worktrees/wt/ORIG_HEAD"
audit_is "a linked worktree's ORIG_HEAD to commondir" 1 "worktrees/wt/ORIG_HEAD: ref:" "$T/r1d"
R=$(fresh r1e)
(cd "$R" && git checkout -q t && git branch -f side HEAD~1 &&
	GIT_SEQUENCE_EDITOR="sed -i '1i break'" git rebase -q -i --update-refs main) >/dev/null 2>&1
printf 'commondir\n%s\n%s\n' "$(git -C "$R" rev-parse HEAD)" "$(git -C "$R" rev-parse HEAD)" \
	>"$R/.git/rebase-merge/update-refs"
echo "update-ref config" >>"$R/.git/rebase-merge/git-rebase-todo"
out=$("$AGENTFS" audit "$T/r1e" 2>&1)
like "$out" "rebase-merge/update-refs: ref: a list of refs naming" "update-refs naming commondir"
like "$out" "git-rebase-todo: ref: update-ref config" "an update-ref line naming config"
R=$(fresh x5)
(cd "$R" && git format-patch -q -1 -o "$T/x5p" t && git am -q "$T/x5p"/*.patch) >/dev/null 2>&1
test -d "$R/.git/rebase-apply" || mkdir "$R/.git/rebase-apply"
printf "'--build-fake-ancestor=.git/commondir'" >"$R/.git/rebase-apply/apply-opt"
audit_is "apply-opt with --build-fake-ancestor" 1 "rebase-apply/apply-opt: options:" "$T/x5"
R=$(fresh d12)
mkdir -p "$R/.git/evil/objects" "$R/.git/objects/zz"
audit_is "a folder git does not make in a git folder" 1 "repo/.git/evil: name:" "$T/d12"
audit_is "... and in its objects/" 1 "repo/.git/objects/zz: name:" "$T/d12"
R=$(fresh gl)
git init -q "$R/nest" && git -C "$R/nest" commit -q --allow-empty -m n
git -C "$R" add nest 2>/dev/null
audit_is "a gitlink to a repository whose git folder is in the work tree" 1 "repo/nest: gitlink:" "$T/gl"
R=$(fresh lk)
mkdir -p "$T/lk/home/u/.config"
printf 'x' >"$T/lk/home/u/.less"
printf 'x' >"$T/lk/home/u/.config/less"
audit_is "a binary lesskey file" 1 "home/u/.less: home: a lesskey file" "$T/lk"
audit_is "... and under .config" 1 "home/u/.config/less: home: a lesskey file" "$T/lk"

done_testing
