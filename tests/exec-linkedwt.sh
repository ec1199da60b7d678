#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-linkedwt: rule D13.  A bot given only a linked worktree also gets the
# common folder (the main repository's .git) as a root, or its git could
# not commit; but the common folder also holds the main worktree's own
# files (HEAD, ORIG_HEAD, index, rebase state) and the other worktrees'
# admin folders, which a person's git in a working copy the bot was never
# given reads: a planted ORIG_HEAD there made the person's pull write what
# the bot wanted.  So in that root the bot's git may write only what git
# writes for every worktree (objects, shared refs, packed-refs, their logs)
# and its own worktrees/<id>/: inside `agentfs exec`, its git commit and
# branch work, and every write to the main worktree's files and another
# worktree's admin folder fails with EROFS, logged by D13.  Then the
# person's plain git pull in the main worktree writes nothing of the bot's
# and runs nothing.
. "$top_srcdir/tests/exec-lib.sh"

command -v git >/dev/null || skip_all "git is missing"

R="$T/main"
W="$T/wt"
W2="$T/wt2"
(
	set -e
	git init -q --bare "$T/up.git"
	git init -q "$R"
	cd "$R"
	git config user.name "Person" && git config user.email p@test.invalid
	echo one >f && git add f && git commit -qm one
	git remote add origin "$T/up.git" && git push -q origin HEAD:main
	git branch -u origin/main >/dev/null
	git worktree add -q "$W" -b wtb
	git worktree add -q "$W2" -b wt2b
) >"$T/setup.log" 2>&1 || bail_out "cannot make the repository: $(cat "$T/setup.log")"
own "$R" "$W" "$W2"
G="$R/.git"
head_before=$(cat "$G/HEAD")
index_sum=$(cksum <"$G/index")
wt2_sum=$(cd "$G/worktrees/wt2" && cat HEAD index | cksum)

daemon_start || bail_out "agentfsd did not start"
check "create wt over the linked worktree only" afs create wt "$W" --no-network

# --- what its git needs --------------------------------------------------------
out=$(cd "$W" && ex wt -- sh -c 'git -c user.name=b -c user.email=b@x commit -q --allow-empty -m bot &&
	git branch botb && git tag bott && echo ok' </dev/null 2>&1)
is "$out" ok "the bot's git commit, branch and tag in its worktree"
is "$(hgit -C "$R" log -1 --format=%s wtb)" bot "the commit is on its branch on the host"

# --- what is the main worktree's or another worktree's -------------------------
# attempt DESC CMD: CMD (in sh, inside the sandbox) must fail with EROFS, and
# the bot's log (every refusal, never rate-limited) must gain a line by D13
attempt()
{
	local out before new
	before=$(afs log wt 2>&1 | wc -l)
	out=$(ex wt -- sh -c "$2" </dev/null 2>&1)
	like "$out" "Read-only file system" "$1: EROFS"
	new=$(afs log wt 2>&1 | tail -n +"$((before + 1))")
	like "$new" "refused .*: rule D13 \(" "$1: refused by rule D13"
}
attempt "the main worktree's ORIG_HEAD" "echo 'ref: refs/heads/main' >'$G/ORIG_HEAD'"
attempt "the main worktree's HEAD" "echo 'ref: refs/heads/wtb' >'$G/HEAD'"
attempt "the main worktree's index, renamed onto" "cp '$G/index' '$G/worktrees/wt/x.index' && mv '$G/worktrees/wt/x.index' '$G/index'"
attempt "the main worktree's MERGE_HEAD" "echo x >'$G/MERGE_HEAD'"
attempt "the main worktree's rebase state" "mkdir '$G/rebase-merge'"
attempt "the main worktree's reflog" "echo x >>'$G/logs/HEAD'"
attempt "the main worktree's bisect refs" "mkdir -p '$G/refs/bisect' && echo x >'$G/refs/bisect/bad'"
attempt "another worktree's HEAD" "echo 'ref: refs/heads/main' >'$G/worktrees/wt2/HEAD'"
attempt "another worktree's ORIG_HEAD" "echo x >'$G/worktrees/wt2/ORIG_HEAD'"
attempt "a new worktree admin folder" "mkdir '$G/worktrees/wt3'"
log=$(afs log wt 2>&1)
n=$(printf '%s\n' "$log" | grep -c "rule D13 (")
[ "$n" -ge 9 ] && ok "the refusals are logged by rule D13 ($n)" ||
	{ not_ok "the refusals are logged by rule D13 ($n)"; diag "$log"; }
out=$(ex wt -- sh -c "echo x >'$G/worktrees/wt/ORIG_HEAD.lock' && rm '$G/worktrees/wt/ORIG_HEAD.lock' && echo ok" \
	</dev/null 2>&1)
is "$out" ok "its own worktree's admin folder stays writable"

check "rm wt" afs rm wt

# --- the person's plain git on the host --------------------------------------------
is "$(cat "$G/HEAD")" "$head_before" "host: the main worktree's HEAD is the person's"
is "$(cksum <"$G/index")" "$index_sum" "host: the main worktree's index is the person's"
is "$(cd "$G/worktrees/wt2" && cat HEAD index | cksum)" "$wt2_sum" "host: the other worktree's HEAD and index are the person's"
check "host: no rebase state in the main worktree" test ! -e "$G/rebase-merge"
check "host: git pull in the main worktree" hgit -C "$R" pull -q --no-rebase
check "host: git status in the main worktree" hgit -C "$R" status
check "host: git status in the other worktree" hgit -C "$W2" status
check "host: no commondir in the main git folder" test ! -e "$G/commondir"

done_testing
