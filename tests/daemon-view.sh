#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-view: every mount agentfsd serves shares one view of each
# repository (gitguard.h, struct guard_view).  Bot A's root is a linked
# worktree's top (agentfsd mounts the common folder beside it), bot B's the
# main repository.  A person sets a relative core.hooksPath on the host
# while both are mounted: A's next decision refuses the hook folder at its
# worktree top (W2).  Then a hooksPath that, taken at A's worktree top (where
# git runs hooks), climbs into B's root: B's guard alone never sees that top,
# the shared view does, and B cannot plant the hook.  Plain git on the host
# then runs no planted hook, though it does run one the person puts there.
. "$top_srcdir/tests/daemon-lib.sh"

command -v git >/dev/null || skip_all "git is missing"
git_test_env

MARK="$T/marker"
git init -q "$T/main" && git -C "$T/main" commit -q --allow-empty -m one ||
	bail_out "cannot make a repository"
# five levels down: from every top B's guard knows alone, ../../../../../main/h is outside T
mkdir -p "$T/a/b/c/d"
git -C "$T/main" worktree add -q "$T/a/b/c/d/wt" -b w 2>/dev/null || bail_out "cannot add a worktree"
WT="$T/a/b/c/d/wt"
echo hi >"$WT/a.txt"

daemon_start || bail_out "agentfsd does not start"
expect_ok "create A over the linked worktree" "$(afs --json create --user 65534 A "$WT")"
expect_ok "create B over the main repository" "$(afs --json create --user 65534 B "$T/main")"

# mount_with BOT FILE: the mount of BOT whose root holds FILE
mount_with()
{
	local m
	for m in $(mounts_in "$D_MNT/$1" | awk '{ print $2 }'); do
		[ -e "$m/$2" ] && { echo "$m"; return; }
	done
}
MA=$(mount_with A a.txt)
MB=$(mount_with B .git/config)
[ -n "$MA" ] && [ -n "$MB" ] || bail_out "the bots' roots are not mounted"
[ -f "$MA/.git" ] || bail_out "A's mount is not the worktree's top"

# plant DIR: a pre-commit hook that touches $MARK, written in DIR (from inside a mount)
plant()
{
	mkdir -p "$1" 2>/dev/null
	{ printf '#!/bin/sh\ntouch "%s"\n' "$MARK" >"$1/pre-commit"; } 2>/dev/null
	chmod +x "$1/pre-commit" 2>/dev/null
}

# A person makes the repository take hooks from the work tree (husky's layout).
git -C "$T/main" config core.hooksPath .husky/_
sleep 0.2 # past the revalidation period (50 ms)
mkdir -p "$MA/.husky/_" 2>/dev/null &&
	not_ok "A: the hooksPath folder at its worktree top is refused" ||
	ok "A: the hooksPath folder at its worktree top is refused"
mkdir -p "$MB/.husky/_" 2>/dev/null &&
	not_ok "B: the hooksPath folder at the main top is refused" ||
	ok "B: the hooksPath folder at the main top is refused"
plant "$MA/.husky/_"
[ -e "$WT/.husky/_/pre-commit" ] && not_ok "A: no hook lands in the worktree" ||
	ok "A: no hook lands in the worktree"
echo more >>"$MA/a.txt" && ok "A: an ordinary file is writable" ||
	not_ok "A: an ordinary file is writable"

# A hooksPath that, from A's worktree top, names a folder in B's root.
git -C "$T/main" config core.hooksPath ../../../../../main/h
sleep 0.2
mkdir "$MB/h" 2>/dev/null && not_ok "B: the folder git runs A's worktree hooks from is refused" ||
	ok "B: the folder git runs A's worktree hooks from is refused"
mkdir "$MB/h2" 2>/dev/null && ok "B: other folders may be made" ||
	not_ok "B: other folders may be made"
plant "$MB/h"
[ -e "$T/main/h/pre-commit" ] && not_ok "B: no hook lands there" || ok "B: no hook lands there"

# The person commits in the worktree on the host: nothing of the bots' runs.
git -C "$WT" add a.txt && git -C "$WT" commit -q -m two ||
	not_ok "host git commits in the worktree"
[ -e "$MARK" ] && not_ok "host git ran no hook planted through a mount" ||
	ok "host git ran no hook planted through a mount"
# ...and the place is where git runs hooks from: one the person puts there runs.
mkdir -p "$T/main/h" && printf '#!/bin/sh\ntouch "%s"\n' "$T/persons" >"$T/main/h/pre-commit" &&
	chmod +x "$T/main/h/pre-commit"
git -C "$WT" commit -q --allow-empty -m three
[ -e "$T/persons" ] && ok "host git runs the person's hook from main/h (the guarded place)" ||
	not_ok "host git runs the person's hook from main/h (the guarded place)"

afs shutdown >/dev/null
daemon_wait_gone 10 && ok "shutdown" || not_ok "shutdown"
done_testing
