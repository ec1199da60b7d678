#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-optfile: rule X5, files git hands to another command as its options.
# An am session (or an apply-backend rebase) keeps git apply's options in
# rebase-apply/apply-opt, and the person's `git am --continue` or `--skip`
# passes them to git apply's parser: --build-fake-ancestor=PATH makes it
# write an index file at PATH (.git/commondir, or any file the person may
# write).  A rebase keeps its signing option in gpg_sign_opt, which the apply
# backend hands to git am's parser whole.  Through the mount every way of
# planting such an option must fail with EROFS by rule X5 (in place, renamed
# in, abbreviated), while the options git am writes itself pass; then the
# person's plain git on the host continues the am and the rebase and writes
# nothing at the planted path.  A control plants the same on the host.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src"
M="$T/m"
B="$T/bot"
C="$T/control"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$B" "$C"

# series DIR: a repository on main, and two patches of branch t in DIR/../NAME.patches,
# the first conflicting with main, the second not
series()
{
	git init -q "$1"
	cd "$1"
	echo a >f && git add f && git commit -qm a
	git checkout -qb t
	echo b >f && git commit -qam b
	echo g >g && git add g && git commit -qm g
	git format-patch -q -o "$1.patches" main..t
	git checkout -q main
	echo c >f && git commit -qam c
	git branch side HEAD~1
}

setup()
{
	(series "$S/am")
	(series "$S/rb")
	(series "$C/am")
}
host_setup "host setup" setup

# ---- control: on the host, git am --skip obeys a planted apply-opt ----------
(
	cd "$C/am"
	git am -q "$C/am.patches"/*.patch || true
	test -d .git/rebase-apply
	printf "'--build-fake-ancestor=%s'" "$T/fake-control" >.git/rebase-apply/apply-opt
	git am -q --skip
) >"$T/control.log" 2>&1
if [ -e "$T/fake-control" ]; then
	ok "control: a planted apply-opt makes the person's git am --skip write where it says"
else
	skip "control: this git does not obey a planted apply-opt (the attacks below prove less)"
	diag "$(cat "$T/control.log")"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"

# ---- an am session stopped at a conflict, through the mount -----------------
A="$M/am/.git/rebase-apply"
(cd "$M/am" && git am -q --whitespace=fix -C1 "$S/am.patches"/*.patch) >/dev/null 2>&1
check "the bot's git am stops at the conflict" test -d "$A"
check "git am wrote its own options, as X5 lets it" grep -q whitespace "$A/apply-opt"
printf "'--build-fake-ancestor=.git/commondir'" >"$B/fake"
printf "'--build-fake-ancestor=%s'" "$T/fake-bot" >"$B/fake-abs"
allowed "apply-opt: git am's own options written in place" \
	shell_result write_text "$A/apply-opt" "'--whitespace=fix' '-C1'"
refused_by "apply-opt: made a FIFO" X5 sh -c "rm -f '$A/apply-opt' && '$TRYOP' mkfifo '$A/apply-opt'"
allowed "apply-opt made again, empty" shell_result sh -c "rm -f '$A/apply-opt' && : >'$A/apply-opt'"
refused_by "apply-opt: the option abbreviated (--build=)" X5 \
	shell_result write_text "$A/apply-opt" "'--build=.git/commondir'"
refused_by "apply-opt: --unsafe-paths" X5 shell_result write_text "$A/apply-opt" "'--unsafe-paths'"
refused_by "apply-opt: appended to" X5 \
	shell_result append_text "$A/apply-opt" " '--build-fake-ancestor=.git/commondir'"
refused_by "gpg_sign_opt: a key file's path" X5 shell_result write_text "$A/gpg_sign_opt" "-S/tmp/key"
refused_by "gpg_sign_opt: another option for git am" X5 \
	shell_result write_text "$A/gpg_sign_opt" "--directory=x"
rm -f "$A/gpg_sign_opt"
refused_by "apply-opt: --build-fake-ancestor written in place" X5 \
	python3 "$FORGE" plant-new "$A/apply-opt" "$B/fake"
# the last attempt: what the person's git am --skip below would obey
refused_by "apply-opt: --build-fake-ancestor (absolute path) renamed in" X5 \
	python3 "$FORGE" plant-rename "$A/apply-opt.tmp" "$A/apply-opt" "$B/fake-abs"
rm -f "$A/apply-opt.tmp"

# ---- a rebase stopped at a break --------------------------------------------
R="$M/rb/.git/rebase-merge"
(cd "$M/rb" && GIT_SEQUENCE_EDITOR="sed -i '1i break'" git rebase -q -i HEAD~1) >/dev/null 2>&1
check "the bot's git rebase -i stops at the break" test -d "$R"
allowed "rebase-merge/gpg_sign_opt: emptied" shell_result sh -c ": >'$R/gpg_sign_opt'"
refused_by "rebase-merge/gpg_sign_opt: a key file's path" X5 \
	shell_result write_text "$R/gpg_sign_opt" "-S./key"

fs_umount "$M" || not_ok "umount $M"

# ---- the person's plain git on the host ----------------------------------------
check "host: git am --skip applies the next patch" sh -c "cd '$S/am' && git am -q --skip && test -f g"
check "host: git rebase --continue" sh -c "cd '$S/rb' && git -c core.editor=true rebase --continue >/dev/null"
check "host: git status in both" sh -c "git -C '$S/am' status >/dev/null && git -C '$S/rb' status >/dev/null"
check "host: no .git/commondir written" test ! -e "$S/am/.git/commondir"
check "host: nothing written at the planted absolute path" test ! -e "$T/fake-bot"

done_testing
