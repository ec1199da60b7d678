#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-prompt: rule X7 (red team round 13).  git's bash prompt
# (contrib/completion/git-prompt.sh, Debian's /usr/lib/git-core/git-sh-prompt)
# shows a rebase's or am's progress from rebase-merge/msgnum and end, or
# rebase-apply/next and last, and in its PROMPT_COMMAND mode (the one that
# colours) puts them in PS1 as they are; bash expands PS1 each time it draws
# the prompt, so "$(command)" there runs as soon as the person enters the
# repository, no git command typed.  Through the mount those files hold a
# number or nothing, every other way refused by rule, while the bot's own
# rebase and am write theirs; then the person's prompt is drawn on the host
# and runs nothing.  A control plants on the host.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

PROMPT_SH=/usr/lib/git-core/git-sh-prompt
[ -r "$PROMPT_SH" ] || PROMPT_SH="$(git --exec-path)/git-sh-prompt"
S="$T/src"
M="$T/m"
B="$T/bot"
C="$T/control"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$B" "$C"

# series DIR: main and a branch t whose first patch conflicts with main
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
}

setup()
{
	(series "$S/rb")
	(series "$S/am")
	(series "$C/rb")
	cd "$C/rb" && GIT_SEQUENCE_EDITOR="sed -i '1i break'" git rebase -q -i HEAD~1
}
host_setup "host setup" setup

# drawn DIR: the prompt bash draws in DIR with git's prompt in PROMPT_COMMAND mode
drawn()
{
	(cd "$1" && bash -c '. "$1"; __git_ps1 "\u" "\\\$ "; printf "%s\n" "${PS1@P}"' sh "$PROMPT_SH")
}

# ---- control: on the host, a planted step count runs when the prompt is drawn --
if [ -r "$PROMPT_SH" ]; then
	printf '$(touch %s/PWNED-prompt-control)\n' "$MARKS" >"$C/rb/.git/rebase-merge/msgnum"
	drawn "$C/rb" >"$T/control.log" 2>&1
	if [ -e "$MARKS/PWNED-prompt-control" ]; then
		ok "control: a planted msgnum runs when git's prompt is drawn"
		rm -f "$MARKS/PWNED-prompt-control"
	else
		skip "control: git's prompt ran no planted msgnum (the attacks below prove less)"
		diag "$(cat "$T/control.log")"
	fi
else
	skip "control: git's prompt script is missing"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"
R="$M/rb/.git/rebase-merge"
A="$M/am/.git/rebase-apply"
PAYLOAD="\$(touch $MARKS/PWNED-prompt)"
printf '%s\n' "$PAYLOAD" >"$B/payload"

# ---- the bot's own rebase and am write their counts -------------------------------
(cd "$M/rb" && GIT_SEQUENCE_EDITOR="sed -i '1i break'" git rebase -q -i HEAD~1) >/dev/null 2>&1
check "the bot's git rebase -i stops at its break, counts written" \
	grep -qx '[0-9]*' "$R/msgnum" "$R/end"
(cd "$M/am" && git am -q "$S/am.patches"/*.patch) >/dev/null 2>&1
check "the bot's git am stops at its conflict, counts written" \
	grep -qx '[0-9]*' "$A/next" "$A/last"
allowed "msgnum: a number written in place" shell_result write_text "$R/msgnum" 1

# ---- plants -------------------------------------------------------------------------
refused_by "msgnum: a command written in place" X7 shell_result write_text "$R/msgnum" "$PAYLOAD"
refused_by "msgnum: a command appended" X7 shell_result append_text "$R/msgnum" "$PAYLOAD"
refused_by "end: a command written in place" X7 shell_result write_text "$R/end" "$PAYLOAD"
refused_by "end: a second line" X7 shell_result write_text "$R/end" "$(printf '2\n3')"
refused_by "msgnum: a command renamed in" X7 \
	python3 "$FORGE" plant-rename "$R/msgnum.new" "$R/msgnum" "$B/payload"
refused_by "msgnum: made a FIFO" X7 sh -c "rm -f '$R/msgnum' && '$TRYOP' mkfifo '$R/msgnum'"
# (a FIFO made there would hang the prompt, and everything after: gone first)
refused_by "msgnum: made again with a command" X7 \
	sh -c "rm -f '$R/msgnum' && python3 '$FORGE' plant-new '$R/msgnum' '$B/payload'"
refused_by "rebase-apply/next: a command" X7 shell_result write_text "$A/next" "$PAYLOAD"
refused_by "rebase-apply/last: a command" X7 shell_result write_text "$A/last" "$PAYLOAD"
rm -f "$R/msgnum.new"
allowed "msgnum made again with a number" shell_result write_text "$R/msgnum" 1

fs_umount "$M" || not_ok "umount $M"

# ---- agentfs audit, then the person's prompt and git on the host ------------------
cp "$B/payload" "$C/rb/.git/rebase-merge/end"
"$AGENTFS" audit "$C/rb" >"$T/audit.out" 2>&1
check "audit lists a step count planted on the host" \
	grep -q 'rebase-merge/end: exec: a step count that is no number' "$T/audit.out"
if [ -r "$PROMPT_SH" ]; then
	drawn "$S/rb" >"$T/drawn-rb.log" 2>&1
	drawn "$S/am" >"$T/drawn-am.log" 2>&1
	check "host: git's prompt drawn in the rebase shows its progress" \
		grep -q 'REBASE 1/' "$T/drawn-rb.log"
	check "host: and in the am" grep -q 'AM' "$T/drawn-am.log"
fi
check "host: git rebase --continue" \
	sh -c "cd '$S/rb' && git -c core.editor=true rebase --continue >/dev/null 2>&1 || git -C '$S/rb' rebase --abort"
check "host: git am --abort" git -C "$S/am" am --abort
no_marker "host: nothing planted ran" prompt

done_testing
