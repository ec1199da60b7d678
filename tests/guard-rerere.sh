#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-rerere: rule D10's MERGE_RR (red team round 13).  With rerere on, the
# person's every `git commit` reads MERGE_RR, rerere's records of a conflicted
# merge ("ID[.VARIANT]<TAB>PATH<NUL>"), and for a record whose file has no
# conflict markers copies that file, by the path as written (absolute, "..",
# through a symbolic link), to rr-cache/ID/postimage.VARIANT when the folder
# rr-cache/ID exists: the bot names a resolution the person recorded before
# and a file of the person's, and reads it there afterwards (rr-cache is
# only read-only to it), or names a file of its own and plants a resolution
# D10 keeps it from writing.  (A record whose folder is missing, all the
# bot's git can write, crashes git at the next commit.)  Through the mount,
# MERGE_RR is made only by renaming an empty file onto it: the bot's
# conflicted merge with rerere on stops with "unable to write rerere record"
# and its commit works; with -c rerere.enabled=false it is an ordinary
# conflict.  A control plants on the host; then the person's plain git
# commits and nothing of theirs, nor of the bot's, lands in rr-cache; agentfs
# audit lists a planted MERGE_RR.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src"
M="$T/m"
B="$T/bot"
C="$T/control"
GUARD_LOG="$T/mount.log"
SECRET="secret-of-the-person-$$"
mkdir -p "$S" "$M" "$B" "$C"

# resolved DIR: rerere on, one resolution recorded (rr-cache/ID), and the
# branches side (g: x) and main (g: y) that conflict again
resolved()
{
	git init -q "$1"
	cd "$1"
	git config rerere.enabled true
	echo a >f && git add f && git commit -qm a
	git checkout -qb t
	echo b >f && git commit -qam b
	git checkout -q main
	echo c >f && git commit -qam c
	! git merge -q t >/dev/null 2>&1
	echo resolved >f && git add f && git commit -qm merged
	test "$(ls .git/rr-cache | wc -l)" = 1
	git checkout -qb side
	echo x >g && git add g && git commit -qm x
	git checkout -q main
	echo y >g && git add g && git commit -qm y
}

setup()
{
	(resolved "$S/app")
	(resolved "$C/app")
	printf '%s\n' "$SECRET" >"$T/secret"
	chmod 600 "$T/secret"
}
host_setup "host setup" setup
H=$(ls "$S/app/.git/rr-cache")
HC=$(ls "$C/app/.git/rr-cache")
NEW=0123456789abcdef0123456789abcdef01234567

# ---- control: on the host, git commit obeys a planted MERGE_RR ----------------
(
	cd "$C/app"
	printf '%s.9\t%s\0' "$HC" "$T/secret" >.git/MERGE_RR
	git commit -q --allow-empty -m person
) >"$T/control.log" 2>&1
if grep -qs "$SECRET" "$C/app/.git/rr-cache/$HC/postimage.9"; then
	ok "control: a planted MERGE_RR makes the person's git commit copy a file into rr-cache"
else
	skip "control: this git does not obey a planted MERGE_RR (the attacks below prove less)"
	diag "$(cat "$T/control.log")"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"
G="$M/app/.git"

# ---- the bot's own conflicted merge, rerere on ------------------------------
git_refused "the bot's conflicted merge, rerere on: its records" D10 "$M/app" git merge -q side
check "the merge stopped at its conflict" test -f "$G/MERGE_HEAD"
check "no record was left" test ! -s "$G/MERGE_RR"
check "the bot resolves and commits the merge" \
	sh -c "cd '$M/app' && echo z >g && git add g && git commit -qm bot-merge"
check "with rerere off, the bot's conflicted merge is an ordinary conflict" \
	sh -c "cd '$M/app' && git reset -q --hard HEAD~1 && ! git -c rerere.enabled=false merge -q side &&
	       test -f .git/MERGE_HEAD && git merge --abort"

# ---- plants ---------------------------------------------------------------------
record() { printf '%s\t%s\0' "$2" "$3" >"$B/$1"; }
record new "$NEW" f
record new-variant "$NEW.3" f
record abs "$H.9" "$T/secret"
record dotdot "$NEW.9" ../../secret
record gitdir "$NEW" .git/config
record link "$H.8" key
record held "$H.7" post.txt
printf '%s\tf' "$NEW" >"$B/unended"
printf '%s.9\t%s\0%s.8\tkey\0%s.7\tpost.txt\0' "$H" "$T/secret" "$H" "$H" >"$B/all"
ln -s "$T/secret" "$M/app/key"
echo 'the bot planted this resolution' >"$M/app/post.txt"

: >"$B/empty"
allowed "MERGE_RR: empty, renamed in" \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/empty"
refused_by "MERGE_RR: a record of a conflict rr-cache does not hold, renamed in" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/new"
refused_by "MERGE_RR: the same with a variant" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/new-variant"
refused_by "MERGE_RR: written in place" D10 python3 "$FORGE" plant-new "$G/MERGE_RR" "$B/new"
refused_by "MERGE_RR: made empty in place" D10 sh -c "rm -f '$G/MERGE_RR' && '$TRYOP' create '$G/MERGE_RR'"
refused_by "MERGE_RR: appended to" D10 shell_result sh -c "printf x >>'$G/MERGE_RR'"
refused_by "MERGE_RR: a FIFO" D10 sh -c "rm -f '$G/MERGE_RR' && '$TRYOP' mkfifo '$G/MERGE_RR'"
refused_by "MERGE_RR: an absolute path" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/abs"
refused_by "MERGE_RR: a path climbing out" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/dotdot"
refused_by "MERGE_RR: a path into the git folder" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/gitdir"
refused_by "MERGE_RR: a record without its NUL" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/unended"
refused_by "MERGE_RR: a symbolic link of the work tree, a conflict rr-cache holds" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/link"
refused_by "MERGE_RR: a file of the bot's, a conflict rr-cache holds" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/held"
# the last attempt: what the person's git commit below would obey
refused_by "MERGE_RR: all three at once" D10 \
	python3 "$FORGE" plant-rename "$G/MERGE_RR.lock" "$G/MERGE_RR" "$B/all"
rm -f "$G/MERGE_RR.lock"

fs_umount "$M" || not_ok "umount $M"

# ---- agentfs audit, then the person's plain git on the host ----------------------
printf '%s.9\t%s\0' "$H" "$T/secret" >"$T/planted"
cp "$T/planted" "$C/app/.git/MERGE_RR"
"$AGENTFS" audit "$C/app" >"$T/audit.out" 2>&1
check "audit lists a MERGE_RR planted on the host" \
	grep -q 'MERGE_RR: state: MERGE_RR: a path outside' "$T/audit.out"
rm -f "$C/app/.git/MERGE_RR"
check "host: git commit" sh -c "cd '$S/app' && git commit -q --allow-empty -m person"
check "host: git status" git -C "$S/app" status
check "host: the person's file copied nowhere in rr-cache" \
	sh -c "! grep -rqs '$SECRET' '$S/app/.git/rr-cache'"
check "host: no resolution of the bot's in rr-cache" \
	sh -c "! grep -rqs 'the bot planted' '$S/app/.git/rr-cache'"
check "host: rr-cache holds the person's resolution alone" \
	sh -c "test \"\$(ls '$S/app/.git/rr-cache/$H' | sort | tr '\n' ' ')\" = 'postimage preimage '"

done_testing
