#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-strategy: rule X4.  A rebase or cherry-pick in progress takes its
# merge strategy from rebase-merge/strategy (or rebase-apply/) and
# sequencer/opts; git runs a strategy NAME it does not know as
# git-merge-NAME, and a NAME with a '/' is a path from the work tree:
# "x/../tools/fmt.sh" runs the bot's tools/fmt.sh on the person's
# `git rebase --continue`.  Through the mount every way of planting such a
# strategy must fail with EROFS (a write in place, in one piece or two, a
# truncate, a rename onto it, a link, a symlink, a folder renamed in); then
# plain git on the host continues the rebase and the cherry-pick and no
# marker may appear.  A control plants the same on the host directly and
# shows git would run it.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src" # SOURCE: two repositories
M="$T/m"
B="$T/bot"
C="$T/control" # the control: planted on the host, no mount
mkdir -p "$S" "$M" "$B" "$C"

# conflicted DIR: a repository where rebasing t onto main stops at a conflict
conflicted()
{
	git init -q "$1"
	cd "$1"
	echo a >f
	git add f
	git commit -qm a
	git checkout -qb t
	echo b >f
	git commit -qam b
	echo b2 >g
	git add g
	git commit -qm b2
	git checkout -q main
	echo c >f
	git commit -qam c
	git checkout -q t
}

setup()
{
	(conflicted "$S/rb")
	(conflicted "$S/cp")
	(conflicted "$C/rb")
}
host_setup "host-setup" setup

# strategy_payload DIR LABEL: the bot's program, leaving PWNED-x4-LABEL, and
# the folder git-merge-x the path needs
strategy_payload()
{
	mkdir -p "$1/tools" "$1/git-merge-x"
	payload "$1/tools/fmt.sh" "x4-$2" 1
}
EVIL="x/../tools/fmt.sh"

# ---- control: on the host, git 2.39 runs a planted strategy ----------------
(
	cd "$C/rb" && git rebase main >/dev/null 2>&1
	strategy_payload "$C/rb" control
	echo "$EVIL" >.git/rebase-merge/strategy
	echo b >f && git add f && git rebase --continue
) >"$T/control.log" 2>&1
if [ -e "$T/PWNED-x4-control" ]; then
	ok "control: a strategy planted on the host runs the bot's program"
else
	skip "control: this git does not run a planted strategy (the attacks below prove less)"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"

# ---- a rebase stopped at a conflict, through the mount ----------------------
R="$M/rb"
run_rb() { (cd "$R" && "$@"); }
run_rb git rebase main >/dev/null 2>&1
check "rebase through the mount stops at the conflict" test -d "$R/.git/rebase-merge"
strategy_payload "$R" bot-rebase
RM="$R/.git/rebase-merge"
printf '%s\n' "$EVIL" >"$B/evil"
printf 'ort' >"$B/ok"
printf 'mine\n' >"$B/mine"
printf -- '--theirs\n--x\n' >"$B/twolines"

refused_by "strategy: create and write a path in one piece refused" X4 \
	python3 "$FORGE" plant-new "$RM/strategy" "$B/evil"
# (the refused write left it empty at its close: it was removed)
forge_is "strategy: one git ships may be written" ok plant-new "$RM/strategy" "$B/ok"
# git runs git-merge-mine from the person's PATH, which may hold a folder of
# the bot's (./node_modules/.bin)
refused_by "strategy: a plain name git does not ship refused" X4 \
	python3 "$FORGE" plant-write "$RM/strategy" "$B/mine"
is "$(python3 -c "
import mmap, os
fd = os.open('$RM/strategy', os.O_RDWR)
m = mmap.mmap(fd, 1)
m[0:1] = b'/'
try:
    m.flush(); print('flushed')
except OSError as e:
    print('refused')
m.close(); os.close(fd)
print(open('$S/rb/.git/rebase-merge/strategy').read())" | tail -1)" "ort" \
	"strategy: a write through a shared mapping does not reach the file"
refused_by "strategy: overwritten with a path refused" X4 \
	python3 "$FORGE" plant-write "$RM/strategy" "$B/evil"
refused_by "strategy: a path appended in a second write refused" X4 \
	python3 "$FORGE" plant-append "$RM/strategy" "/../tools/fmt.sh"
# an empty strategy is the strategy "": git runs git-merge- from PATH. Empty
# is what an O_TRUNC leaves before git's write; left so at the close, the
# file is removed; made empty with no handle, refused
lines=$(log_lines)
is "$(shell_result sh -c ": >'$RM/strategy'")" OK "strategy: emptied through a handle (: >)"
if wait_until 5 test ! -e "$S/rb/.git/rebase-merge/strategy"; then
	ok "strategy: ... left empty at the close, removed"
else
	not_ok "strategy: ... left empty at the close, removed"
fi
like "$(tail -n +"$((lines + 1))" "$GUARD_LOG")" "rule X4 \\(an empty strategy .*removed\\)" \
	"strategy: ... and the removal logged"
forge_is "strategy: one git ships written again" ok plant-new "$RM/strategy" "$B/ok"
refused_by "strategy: truncated to nothing by path refused" X4 \
	python3 "$FORGE" plant-trunc "$RM/strategy" 0
rm -f "$RM/strategy"
refused_by "strategy: made empty by mknod refused" X4 python3 -c "
import errno, os, stat, sys
try:
    os.mknod(sys.argv[1], stat.S_IFREG | 0o644); print('ok')
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))" "$RM/strategy"
forge_is "strategy: one git ships written anew" ok plant-new "$RM/strategy" "$B/ok"
refused_by "strategy: extended with zeros refused" X4 python3 "$FORGE" plant-trunc "$RM/strategy" 100
refused_by "strategy: a file renamed onto it refused" X4 \
	python3 "$FORGE" plant-rename "$RM/strategy.tmp" "$RM/strategy" "$B/evil"
rm -f "$RM/strategy.tmp"
refused_by "strategy_opts: two lines renamed onto it refused" X4 \
	python3 "$FORGE" plant-rename "$RM/opts.tmp" "$RM/strategy_opts" "$B/twolines"
rm -f "$RM/opts.tmp"
# git-merge-resolve hands strategy options on, unquoted, to git read-tree,
# whose --index-output=PATH writes an index file at PATH: the person's
# `git rebase --continue` (strategy resolve) would overwrite any file
echo "the person's keys" >"$T/victim"
printf ' --index-output=%s\n' "$T/victim" >"$B/xopt-out"
refused_by "strategy_opts: --index-output=PATH renamed onto it refused" X4 \
	python3 "$FORGE" plant-rename "$RM/opts.tmp" "$RM/strategy_opts" "$B/xopt-out"
rm -f "$RM/opts.tmp"
printf " '--ours --index-output=%s'\n" "$T/victim" >"$B/xopt-split"
refused_by "strategy_opts: a quoted option the script splits in two refused" X4 \
	python3 "$FORGE" plant-new "$RM/strategy_opts" "$B/xopt-split"
rm -f "$RM/strategy_opts"
printf " --ours '--find-renames=40%%'\n" >"$B/xopt-ours"
allowed "strategy_opts: git's own merge options written" \
	python3 "$FORGE" plant-new "$RM/strategy_opts" "$B/xopt-ours"
rm -f "$RM/strategy_opts"
echo "$EVIL" >"$R/evil-in-root"
rm -f "$RM/strategy"
refused_by "strategy: a hard link onto it refused" X4 python3 "$FORGE" plant-link "$R/evil-in-root" "$RM/strategy"
refused_by "strategy: a symlink made there refused" D9 python3 "$FORGE" plant-symlink ../../evil-in-root \
	"$RM/strategy"
mkdir -p "$R/.git/rebase-apply"
refused_by "rebase-apply/strategy: a path written refused" X4 \
	python3 "$FORGE" plant-new "$R/.git/rebase-apply/strategy" "$B/evil"
rm -rf "$R/.git/rebase-apply"

# ---- a cherry-pick of a range stopped at a conflict -------------------------
P="$M/cp"
(cd "$P" && git checkout -q main && git cherry-pick --strategy=ort main..t) >/dev/null 2>&1
check "cherry-pick through the mount stops with sequencer/opts" test -f "$P/.git/sequencer/opts"
strategy_payload "$P" bot-cherry
printf '[options]\n\tstrategy = %s\n' "$EVIL" >"$B/evil-opts"
refused_by "sequencer/opts: config-style rename onto it refused" X4 \
	python3 "$FORGE" plant-rename "$P/.git/sequencer/opts.lock" "$P/.git/sequencer/opts" "$B/evil-opts"
rm -f "$P/.git/sequencer/opts.lock"
refused_by "sequencer/opts: write in place refused" X4 \
	python3 "$FORGE" plant-write "$P/.git/sequencer/opts" "$B/evil-opts"
mkdir -p "$P/seqx"
cp "$B/evil-opts" "$P/seqx/opts"
lines=$(log_lines)
refusal_is "sequencer/: a folder with a bad opts renamed in refused" X4 "$(python3 -c "
import os
try:
    os.rename('$P/seqx', '$P/.git/sequencer'); print('ok')
except OSError as e:
    print(e.errno == 30 and 'EROFS' or e)")" "$lines" "$P/.git/sequencer"
rm -rf "$P/seqx"

mkdir -p "$M/botdir"
printf '%s\n' "$EVIL" >"$M/botdir/strategy"
refused_by "rebase-merge: a symlink to a folder of the bot's refused" D9 \
	python3 "$FORGE" plant-symlink ../../botdir "$P/.git/rebase-merge"
refused_by "sequencer: a symlink to a folder of the bot's refused" D9 \
	python3 "$FORGE" plant-symlink ../../botdir "$R/.git/sequencer"
refused_by "rebase-apply: a symlink renamed in refused" D9 \
	python3 "$FORGE" symlink-rename "$M/botdir" "$R/ra.tmp" "$R/.git/rebase-apply"
rm -f "$R/ra.tmp"
mkdir -p "$R/rm.tmp"
cp "$B/evil" "$R/rm.tmp/strategy"
lines=$(log_lines)
refusal_is "rebase-merge: a folder holding a bad strategy renamed in refused" X4 "$(python3 -c "
import os
try:
    os.rename('$P/../rb/rm.tmp', '$P/.git/rebase-merge'); print('ok')
except OSError as e:
    print(e.errno == 30 and 'EROFS' or e.errno == 18 and 'EXDEV' or e)")" "$lines" \
	"$P/.git/rebase-merge"
rm -rf "$R/rm.tmp"

fs_umount "$M" || not_ok "umount $M"

# ---- the person continues on the host ---------------------------------------
(cd "$S/rb" && rm -f .git/rebase-merge/strategy && echo b >f && git add f &&
	git rebase --continue) >"$T/host-rb.log" 2>&1
is "$?" 0 "host: git rebase --continue finishes"
(cd "$S/cp" && echo b >f && git add f && git cherry-pick --continue) >"$T/host-cp.log" 2>&1
is "$?" 0 "host: git cherry-pick --continue finishes"
no_marker "host: no planted strategy ran" x4-bot
is "$(cat "$T/victim")" "the person's keys" "host: no file an option named was written"

done_testing
