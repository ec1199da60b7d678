#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-matrix: every rule code the code refuses by, once refused and once
# allowed, through one writable mount.  The refusal must come from that rule
# (the mount's log names it); the allowed case is the same operation next
# to it, so a rule that grew past what it protects fails here too.  The list
# of codes comes from the code (gitguard/rules.c, as tests/docs-map.sh reads
# it): a new code without a case here fails.  D13 needs a bot given a linked
# worktree by agentfsd and H1 a person's home with its user: their cases are
# tests/exec-linkedwt.sh and tests/guard-home.sh, which check the rule the
# same way; this test checks that they do.  Afterwards the person's plain git
# on the host runs nothing the bot wrote.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"
M="$T/m"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M"

setup()
{
	git init -q "$S/r"
	echo a >"$S/r/a"
	printf '[user]\n\tnote = included\n' >"$S/r/inc.cfg"
	git -C "$S/r" config include.path ../inc.cfg
	git -C "$S/r" add a
	git -C "$S/r" commit -qm r
	git -C "$S/r" worktree add -q ../rwt -b rwt
	printf '#!/bin/sh\n:\n' >"$S/r/.git/hooks/post-commit"
	chmod +x "$S/r/.git/hooks/post-commit"
	mkdir -p "$S/r/.git/objects/info"
	# a lock file the host's git holds (LK)
	: >"$S/r/.git/HEAD.lock"
	# core.hooksPath into the work tree (W2)
	git init -q "$S/hp"
	mkdir "$S/hp/githooks" "$S/hp/other"
	git -C "$S/hp" config core.hooksPath githooks
	git -C "$S/hp" commit -q --allow-empty -m hp
	# a git folder whose config is unsafe (X3): all of it read-only
	git init -q "$S/x3"
	git -C "$S/x3" config extensions.worktreeConfig true
	# the bot's playground, with another name of a protected file (HL)
	mkdir -p "$S/plain/d"
	echo f >"$S/plain/f"
	ln "$S/r/.git/hooks/post-commit" "$S/plain/hl"
}
host_setup host-setup setup
OID=$(git -C "$S/r" rev-parse HEAD)
G="$M/r/.git"

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"
payload "$T/pay" matrix

# case CODE DESC-REFUSED CMD... -- DESC-ALLOWED CMD...: the two cases of CODE
declare -A seen
case_of()
{
	local code="$1" rdesc="$2" i
	shift 2
	for ((i = 1; i <= $#; i++)); do
		[ "${!i}" = -- ] && break
	done
	refused_by "$code: $rdesc" "$code" "${@:1:i-1}"
	allowed "$code, not: ${*:i+1:1}" "${@:i+2}"
	seen[$code]=1
}

case_of G1 "a new .git" try mkdir "$M/plain/d/.git" \
	-- "a folder of another name" try mkdir "$M/plain/d/dotgit"
# a refusal of a new repository, and only that, says how to allow them
check "G1's refusal tells how to allow new repositories" \
	grep -q "rule G1 (.*allow-new-repos" "$GUARD_LOG"
check "G2: objects/ and refs/ in a plain folder" sh -c "mkdir '$M/plain/b' '$M/plain/b/objects' '$M/plain/b/refs'"
case_of G2 "HEAD completing a bare-shaped folder" try create "$M/plain/b/HEAD" \
	-- "HEAD in a folder with objects/ only" sh -c "mkdir '$M/plain/c' '$M/plain/c/objects' && '$TRYOP' create '$M/plain/c/HEAD'"
case_of G3 "a git folder renamed" try rename "$G" "$M/plain/moved" \
	-- "a plain folder renamed" try rename "$M/plain/d" "$M/plain/d2"
case_of D1 "config written" try write "$G/config" \
	-- "description written" try write "$G/description"
case_of D2 "config.worktree made" try create "$G/config.worktree" \
	-- "SQUASH_MSG made" try create "$G/SQUASH_MSG"
case_of D3 "a hook made" try create "$G/hooks/pre-commit" \
	-- "a file named so in the work tree" sh -c "mkdir '$M/r/hooks' && '$TRYOP' create '$M/r/hooks/pre-commit'"
check "D3's refusal does not talk of new repositories" \
	eval '! grep "rule D3 (" "$GUARD_LOG" | grep -q allow-new-repos'
case_of D4 "commondir made" try create "$G/commondir" \
	-- "a commondir in the work tree" try create "$M/r/commondir"
case_of D5 "a worktree's gitdir pointer written" try write "$G/worktrees/rwt/gitdir" \
	-- "its HEAD written by a commit" shell_result git -C "$M/rwt" commit -q --allow-empty -m wt
case_of D6 "modules/ made" try mkdir "$G/modules" \
	-- "a modules folder in the work tree" try mkdir "$M/r/modules"
case_of D7 "objects/info/alternates made" try create "$G/objects/info/alternates" \
	-- "objects/info/packs made" try create "$G/objects/info/packs"
case_of D8 "remotes/ made" try mkdir "$G/remotes" \
	-- "a remotes folder in the work tree" try mkdir "$M/r/remotes"
case_of D9 "a symbolic link in a git folder" try symlink HEAD "$G/ORIG_HEAD" \
	-- "a symbolic link in the work tree" try symlink a "$M/r/lnk"
case_of D10 "rr-cache/ made" try mkdir "$G/rr-cache" \
	-- "a folder of that name in the work tree" try mkdir "$M/r/rr-cache"
case_of D11 "MERGE_AUTOSTASH made" try create "$G/MERGE_AUTOSTASH" \
	-- "MERGE_MSG made" try create "$G/MERGE_MSG"
case_of D12 "a folder of another name in a git folder" try mkdir "$G/evil" \
	-- "rebase-merge/ made" try mkdir "$G/rebase-merge"
case_of W1 "a linked worktree's .git file written" try write "$M/rwt/.git" \
	-- "a file beside it written" try create "$M/rwt/b"
case_of W2 "a file in the core.hooksPath folder" try create "$M/hp/githooks/pre-commit" \
	-- "one in another folder" try create "$M/hp/other/pre-commit"
case_of W3 "an include target written" try write "$M/r/inc.cfg" \
	-- "another .cfg beside it" try create "$M/r/other.cfg"
case_of X1 "a symbolic link into a git folder" try symlink ../r/.git/hooks "$M/plain/l" \
	-- "one into the work tree" try symlink ../r/a "$M/plain/l2"
case_of X8 "a symbolic link named as git mergetool's backup" try symlink "$T" "$M/plain/f.orig" \
	-- "a file of that name" try create "$M/plain/g.orig"
case_of X2 "the index written in place" try write "$G/index" \
	-- "git add (the index renamed in from index.lock)" shell_result sh -c "cd '$M/r' && echo n >n && git add n"
case_of X3 "a file made in a git folder with an unsafe config" try create "$M/x3/.git/COMMIT_EDITMSG" \
	-- "one in its work tree" try create "$M/x3/f"
case_of X4 "a rebase's strategy naming a program" shell_result write_text "$G/rebase-merge/strategy" "$T/pay" \
	-- "a strategy git has" shell_result write_text "$G/rebase-merge/strategy" ort
case_of X6 "an exec line in a rebase's todo" shell_result write_text "$G/rebase-merge/git-rebase-todo" "exec make" \
	-- "a pick line" shell_result write_text "$G/rebase-merge/git-rebase-todo" "pick $OID"
case_of X7 "a rebase's step count that is a command" shell_result write_text "$G/rebase-merge/msgnum" '$(make)' \
	-- "a number" shell_result write_text "$G/rebase-merge/msgnum" 2
check "X5: rebase-apply/ made" mkdir "$G/rebase-apply"
case_of X5 "apply-opt with --build-fake-ancestor" \
	shell_result write_text "$G/rebase-apply/apply-opt" " '--build-fake-ancestor=$T/x'" \
	-- "apply-opt with git am's own option" shell_result write_text "$G/rebase-apply/apply-opt" " '--whitespace=fix'"
# ref: as git writes one: its lock, then renamed onto it
ref()
{
	shell_result sh -c "echo '$2' >'$1.lock' && mv '$1.lock' '$1'"
}
case_of R1 "ORIG_HEAD naming commondir" ref "$G/ORIG_HEAD" "ref: commondir" \
	-- "ORIG_HEAD naming a commit" ref "$G/ORIG_HEAD" "$OID"
# HL is the code of a recorded inode without a rule of its own; a hook's
# other name is refused by the hook's rule
refused_by "HL: another name of a hook written (by the hook's rule)" D3 try write "$M/plain/hl"
allowed "HL, not: a plain file written" try write "$M/plain/f"
seen[HL]=1
case_of LK "a lock file the host's git holds removed" try unlink "$G/HEAD.lock" \
	-- "a lock file of the mount's own removed" sh -c "'$TRYOP' create '$G/index.lock' >/dev/null && '$TRYOP' unlink '$G/index.lock'"

# D13 and H1: their own tests check the rule the same way
like "$(grep -c 'rule D13 (' "$top_srcdir/tests/exec-linkedwt.sh")" '^[1-9]' "D13: tests/exec-linkedwt.sh checks the rule"
seen[D13]=1
like "$(grep -c 'refused_by "[^"]*" H1 ' "$top_srcdir/tests/guard-home.sh")" '^[1-9]' "H1: tests/guard-home.sh checks the rule"
seen[H1]=1

# every code the code has, and only those
codes=$(sed -n 's/^.*\[GUARD_RULE_[A-Z0-9]*\] = {"\([A-Z][A-Z0-9]*\)".*/\1/p' \
	"$top_srcdir/gitguard/rules.c"; echo LK)
left=
for c in $codes; do
	[ -n "${seen[$c]:-}" ] || left="$left $c"
done
is "$left" "" "every rule code has its cases"

fs_umount "$M" || not_ok "umount $M"
rm -f "$S/r/.git/HEAD.lock" # the host's git that held it is done
host_commit r "$S/r"
host_commit rwt "$S/rwt"
host_commit hp "$S/hp"
no_marker "host: nothing the bot wrote ran" matrix

done_testing
