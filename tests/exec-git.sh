#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-git: inside `agentfs exec`, git commit works in the bot's folder while
# git's hooks and config stay read-only; nothing outside the bot's writable
# roots can be written; a read-only bot writes only /tmp; a bot makes
# child bots through AGENT_SOCKET only within its own ceiling; and with
# rerere on in the person's configuration, git inside has it off.
. "$top_srcdir/tests/exec-lib.sh"

command -v git >/dev/null || skip_all "git is missing"

R="$T/repo"
mkdir -p "$R/sub" "$T/out" "$T/rd" "$T/ro"
echo readable >"$T/rd/file"
echo ro-data >"$T/ro/file"
(
	cd "$R" &&
		git init -q &&
		git config user.name "Exec Test" &&
		git config user.email exec@test.invalid &&
		echo one >f &&
		git add f &&
		git commit -qm host-commit
) || bail_out "cannot make the test repository"
own "$R" "$T/ro"
config_sum=$(cksum <"$R/.git/config")

daemon_start || bail_out "agentfsd did not start"
check "create g1 (workspace-write, a readable root)" \
	afs create g1 "$R" --sandbox workspace-write --no-network --readable "$T/rd"
check "create r1 (read-only)" afs create r1 "$T/ro" --sandbox read-only

# write_err BOT PATH: exec as BOT, write PATH, print the shell's error (empty if it worked)
write_err()
{
	ex "$1" -- sh -c 'echo x >"$1"' sh "$2" </dev/null 2>&1
}

# --- git inside the bot's folder -----------------------------------------
out=$(cd "$R" && ex g1 -- sh -c 'echo two >f && git add f && git commit -qm inside-commit && echo committed' \
	</dev/null 2>&1)
is "$out" committed "git add and git commit work inside"
is "$(hgit -C "$R" log --format=%s | tr '\n' ' ')" "inside-commit host-commit " \
	"the commit made inside is in the host's repository"
is "$(hgit -C "$R" status --porcelain)" "" "the host's work tree is clean after the commit"
out=$(cd "$R" && ex g1 -- git status --porcelain </dev/null 2>&1)
is "$out" "" "git status inside agrees"

# g1_refused DESC RULE: the bot's log (every refusal) gained a line by RULE
# since the line count in $before
g1_refused()
{
	like "$(afs log g1 2>&1 | tail -n +"$((before + 1))")" "refused .*: rule $2 \(" \
		"$1: refused by rule $2"
}
before=$(afs log g1 2>&1 | wc -l)
out=$(write_err g1 "$R/.git/hooks/pre-commit")
like "$out" "Read-only file system" "writing .git/hooks/pre-commit inside fails with EROFS"
g1_refused "writing .git/hooks/pre-commit" D3
[ -e "$R/.git/hooks/pre-commit" ] && not_ok "no pre-commit hook on the host" || ok "no pre-commit hook on the host"
before=$(afs log g1 2>&1 | wc -l)
out=$(ex g1 -- sh -c 'echo "[core]" >>"$1/.git/config"' sh "$R" </dev/null 2>&1)
like "$out" "Read-only file system" "appending to .git/config inside fails with EROFS"
g1_refused "appending to .git/config" D1
before=$(afs log g1 2>&1 | wc -l)
out=$(cd "$R" && ex g1 -- git config core.hooksPath /tmp/hooks </dev/null 2>&1)
rc=$?
[ "$rc" -ne 0 ] && ok "git config core.hooksPath inside fails (status $rc)" ||
	not_ok "git config core.hooksPath inside fails"
g1_refused "git config core.hooksPath (its config.lock)" D1
is "$(cksum <"$R/.git/config")" "$config_sum" ".git/config on the host is unchanged"

# --- outside the bot's writable roots --------------------------------------
out=$(write_err g1 "$T/out/x")
like "$out" "Read-only file system" "writing a host folder outside g1's roots fails with EROFS"
out=$(write_err g1 "$T/rd/x")
like "$out" "Read-only file system" "writing g1's readable root fails with EROFS"
out=$(ex g1 -- cat "$T/rd/file" </dev/null 2>&1)
is "$out" readable "g1's readable root is readable"
out=$(write_err g1 "$T/x")
like "$out" "Read-only file system" "writing the bot folder's parent fails with EROFS"
is "$(ls -A "$T/out")|$(ls -A "$T/rd")|$(ls -d "$T/x" 2>/dev/null)" "|file|" "the refused writes made nothing on the host"

# --- a read-only bot: nothing but /tmp ---------------------------------------
out=$(write_err r1 "$T/ro/x")
like "$out" "Read-only file system" "a read-only bot cannot write its own folder"
out=$(ex r1 -- rm -f "$T/ro/file" </dev/null 2>&1)
like "$out" "Read-only file system" "a read-only bot cannot remove a file in its folder"
out=$(write_err r1 "$T/out/x")
like "$out" "Read-only file system" "a read-only bot cannot write elsewhere on the host"
out=$(ex r1 -- sh -c 'echo tmp-ok >/tmp/x && cat /tmp/x && cat "$1"' sh "$T/ro/file" </dev/null 2>&1)
is "$(printf '%s' "$out" | tr '\n' ' ')" "tmp-ok ro-data" "a read-only bot writes /tmp and reads its folder"
is "$(ls -A "$T/ro" | tr '\n' ' ')" "file " "the read-only bot's folder is unchanged on the host"

# --- child bots through AGENT_SOCKET ---------------------------------------
out=$(ex g1 -- "$AGENTFS" --json create c1 "$R/sub" </dev/null 2>/dev/null)
expect_ok "inside, g1 creates a child c1 in its folder" "$out"
is "$(printf '%s' "$out" | jget bot.creator)" g1 "c1's creator is g1"
is "$(printf '%s' "$out" | jget bot.mounts.0.state)" mounted "c1's folder is mounted"
expect_error "inside, g1 creates a child outside its ceiling" forbidden \
	"$(ex g1 -- "$AGENTFS" --json create c2 "$T/out" </dev/null 2>/dev/null)"
expect_error "inside, g1 (no network) creates a child with --network" forbidden \
	"$(ex g1 -- "$AGENTFS" --json create c3 "$R/sub" --network </dev/null 2>/dev/null)"
expect_error "inside, r1 (read-only) creates a workspace-write child" forbidden \
	"$(ex r1 -- "$AGENTFS" --json create c4 "$T/ro" --sandbox workspace-write </dev/null 2>/dev/null)"
is "$(afs --json ls | jget 'bots.*.name' | sort | tr '\n' ' ')" "c1 g1 r1 " "only c1 was made"
# the child works too: its command writes its folder, not its parent's
out=$(ex c1 -- sh -c 'echo from-c1 >"$1/c1file" && echo x >"$2/c1-in-parent"' sh "$R/sub" "$R" </dev/null 2>&1)
like "$out" "Read-only file system" "c1's command cannot write g1's folder outside c1's"
is "$(cat "$R/sub/c1file" 2>&1)" from-c1 "c1's command writes c1's folder"

# rerere on in the person's configuration: off for git in the sandbox, whose rr-cache is
# read-only and MERGE_RR empty only (D10), so a conflict is an ordinary one, not "unable to
# write rerere record" (status 128); variables of the caller's GIT_CONFIG_COUNT stay
hgit -C "$R" config rerere.enabled true
sleep 2.5 # the mount's attribute cache (2 s): the bot's git must see the new config
out=$(GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=merge.conflictStyle GIT_CONFIG_VALUE_0=diff3 \
	ex g1 --cwd "$R" -- sh -c 'git config rerere.enabled; git config merge.conflictStyle
		{ git checkout -q -b side && echo side >f && git commit -qam side &&
			git checkout -q - && echo main >f && git commit -qam main; } >/tmp/merge.out 2>&1
		git merge side >>/tmp/merge.out 2>&1; echo "merge $?"; grep -c "^|||||||" f
		cat /tmp/merge.out' </dev/null 2>&1)
is "$(printf '%s' "$out" | head -n 4 | tr '\n' ' ')" "false diff3 merge 1 1 " \
	"inside, rerere is off and the caller's git variables stay: a conflicted merge stops as a conflict"
like "$(printf '%s' "$out" | tail -n +5)" "CONFLICT \\(content\\)" "... and says so" ||
	diag "$out"
[ -s "$R/.git/MERGE_RR" ] && not_ok "no rerere record was written" || ok "no rerere record was written"
is "$(hgit -C "$R" config rerere.enabled)" true "the person's configuration still has rerere on"
ex g1 --cwd "$R" -- git merge --abort </dev/null >/dev/null 2>&1
is "$(hgit -C "$R" status --porcelain -uno)" "" "the bot aborts its merge: the host's work tree is clean"

done_testing
