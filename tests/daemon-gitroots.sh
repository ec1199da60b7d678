#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-gitroots: a bot over a folder whose .git points elsewhere gets that
# git folder (and the common folder its commondir names) as roots too, read
# through gitguard's layout functions (gitguard/layout.c): a linked worktree
# whose record in its common folder names the folder back; only within the
# maker's roots for a bot's bot. Any other .git that leads out (a separate
# git folder, a .git symlink, a .git a bot with allow_new_repos wrote
# naming a repository it was never given) fails the operator's create
# unless that folder is given as a writable root. A hostile .git (a FIFO,
# an oversized file, garbage) adds nothing and hangs nothing.
. "$top_srcdir/tests/daemon-lib.sh"

command -v git >/dev/null || skip_all "git is missing"
command -v mkfifo >/dev/null || skip_all "mkfifo is missing"
git_test_env
AGENTFS_BIN="$top_builddir/src/agentfs"

# roots BOT: the paths of BOT's roots, one a line, sorted
roots()
{
	local n i
	n=$(afs --json show "$1" | jget 'bot.mounts.#')
	for i in $(seq 0 $((n - 1))); do
		afs --json show "$1" | jget "bot.mounts.$i.path"
	done | sort
}

git init -q "$T/main" && git -C "$T/main" commit -q --allow-empty -m one ||
	bail_out "cannot make a repository"
git -C "$T/main" worktree add -q "$T/wt" 2>/dev/null || bail_out "cannot add a worktree"
git init -q --separate-git-dir "$T/sepgit" "$T/sep" || bail_out "cannot make a separate git folder"
mkdir -p "$T/lnk" && ln -s "$T/main/.git" "$T/lnk/.git"
# what a bot with allow_new_repos may write at its folder's top: a .git
# naming another repository of its user, or another worktree's admin folder
git init -q "$T/victim" || bail_out "cannot make a repository"
mkdir -p "$T/planted" "$T/fakewt"
printf 'gitdir: %s\n' "$T/victim/.git" >"$T/planted/.git"
printf 'gitdir: %s\n' "$T/main/.git/worktrees/wt" >"$T/fakewt/.git"
mkdir -p "$T/fifo" "$T/big" "$T/junk"
mkfifo "$T/fifo/.git"
{ printf 'gitdir: %s\n' "$T/main/.git"; head -c 5000 /dev/zero | tr '\0' x; } >"$T/big/.git"
printf 'not a gitdir line\n' >"$T/junk/.git"

daemon_start || bail_out "agentfsd does not start"

expect_ok "create a bot over a linked worktree" "$(afs --json create --user 65534 wt "$T/wt")"
is "$(roots wt)" "$(printf '%s\n' "$T/main/.git" "$T/wt" | sort)" \
	"its roots: the worktree and the common folder (its own git folder is inside)"
expect_error "a .git a bot could have written, naming another repository: refused" forbidden \
	"$(afs --json create --user 65534 planted "$T/planted")"
expect_error "... so is a .git naming another worktree's admin folder" forbidden \
	"$(afs --json create --user 65534 fakewt "$T/fakewt")"
is "$(mounts_in "$T/state" | grep -c fakewt)$(mounts_in "$T/state" | grep -c planted)" 00 \
	"neither left a mount"
expect_error "a separate git folder is not followed unasked" forbidden \
	"$(afs --json create --user 65534 sep "$T/sep")"
expect_ok "... it is when given as a writable root" \
	"$(afs --json create --user 65534 sep "$T/sep" --writable "$T/sepgit")"
is "$(roots sep)" "$(printf '%s\n' "$T/sep" "$T/sepgit" | sort)" "its roots: the folder and the git folder"
expect_error "a .git symlink is not followed unasked" forbidden \
	"$(afs --json create --user 65534 lnk "$T/lnk")"
expect_ok "... it is when its target is given as a writable root" \
	"$(afs --json create --user 65534 lnk "$T/lnk" --writable "$T/main/.git")"
is "$(roots lnk)" "$(printf '%s\n' "$T/lnk" "$T/main/.git" | sort)" "its roots: the folder and the link's target"

for f in fifo big junk; do
	r=$(timeout 20 "$AGENTFS_BIN" --socket "$D_SOCK" --json create --user 65534 "$f" "$T/$f")
	expect_ok "create a bot over a folder whose .git is $f" "$r"
	is "$(roots "$f")" "$T/$f" "$f: no other root"
done

# A bot's bot gets only git folders within its maker's roots.
mkdir -p "$T/lead"
expect_ok "create lead over a folder that holds no git folder" "$(afs --json create --user 65534 lead "$T/lead")"
git -C "$T/main" worktree add -q "$T/lead/wt2" 2>/dev/null || bail_out "cannot add a worktree"
r=$(AGENT_SOCKET="$D_SOCK.d/lead.sock" "$AGENTFS_BIN" --json create kid "$T/lead/wt2")
expect_ok "lead makes a bot over a worktree in its folder" "$r"
is "$(roots kid)" "$T/lead/wt2" "the common folder beyond lead's roots is not given to it"

afs shutdown >/dev/null
daemon_wait_gone 10 && ok "shutdown" || not_ok "shutdown"
done_testing
