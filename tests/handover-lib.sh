# SPDX-License-Identifier: MIT
# handover-lib: what daemon-handover.sh and daemon-handover-uring.sh share. A
# bot w1 at work on a git repository in its mount, restarted under it.
# Source it after exec-lib.sh, with D_CONFIG already chosen:
#
#   handover_bot                  start agentfsd and w1; M (its mount), W/repo
#                                 (a repository with one commit) and mid (the
#                                 mount's unique id) are set
#   work_start                    the bot's command: the work (restart-client
#                                 work, appending to work/held through a
#                                 descriptor it holds) and a git commit loop
#                                 beside it, until work/stop; each writes what
#                                 it did into out/; exec_pid is agentfs exec's
#   work_end                      stop it: WORK_RC is agentfs exec's status,
#                                 WORK and GIT what the work and git said
#   restart_with CMD...           stop the daemon with CMD (its pid as $1),
#                                 start the next, wait for w1's mount
#   term_now, term_wait, kill9    CMDs: SIGTERM (next at once), SIGTERM and
#                                 wait for the old one to end, SIGKILL
#   restart_step WHAT CMD...      restart_with, then three checks: the next
#                                 agentfsd serves, the same mount, the work
#                                 goes on; false if the first failed
#   rounds, advanced SINCE        the work's lines so far; wait until it made
#                                 20 more than SINCE
#   mntid PATH                    the unique mount id of PATH

command -v git >/dev/null || skip_all "git is missing"
RC="$T/restart-client"
cp "$top_builddir/tests/restart-client" "$RC" || bail_out "tests/restart-client is not built"
chmod 755 "$T"

mntid() { "$RC" mntid "$1"; }

restart_with()
{
	local old=$D_PID
	"$@" "$old"
	daemon_start || return 1
	[ "$D_PID" != "$old" ] || return 1
	wait_until 10 eval '[ "$(afs --json show w1 | jget "bot.mounts.0.state")" = mounted ]'
}
term_now() { kill -TERM "$1"; }
term_wait() { kill -TERM "$1" && wait_until 10 eval '! kill -0 '"$1"' 2>/dev/null'; }
kill9() { kill -KILL "$1" && wait_until 5 eval '[ -z "$(daemon_pids)" ] && state_unlocked'; }

rounds() { wc -l <"$W/work/held" 2>/dev/null || echo 0; }
advanced()
{
	local since=$1
	wait_until 10 eval '[ "$(rounds)" -gt $((since + 20)) ]'
}

handover_bot()
{
	ex_start_w1
	M="$D_MNT/w1/0"
	mkdir -p "$W/work" "$W/out" "$W/repo"
	(
		cd "$W/repo" && git init -q && git config user.name Bot &&
			git config user.email bot@test.invalid &&
			echo 0 >count && git add count && git commit -qm start
	) || bail_out "cannot make the bot's repository"
	own "$W"
	mid=$(mntid "$M")
	[ -n "$mid" ] || bail_out "no mount id for $M"
}

work_start()
{
	# through the mount: the kernel's cache of names must see them go
	rm -f "$M/work/stop" "$M/work/held" "$M/out/"*
	ex w1 --cwd "$W" -- sh -c '
		"$1" work "$2/work" 600 >"$2/out/work" 2>"$2/out/work.err" &
		w=$!
		n=0 e=0
		cd "$2/repo"
		while [ ! -e "$2/work/stop" ]; do
			n=$((n + 1))
			echo "$n" >count
			{ git add count && git commit -qm "commit $n"; } 2>>"$2/out/git.err" || e=$((e + 1))
		done
		echo "commits $n errors $e" >"$2/out/git"
		wait "$w"
	' sh "$RC" "$W" </dev/null >"$T/exec.out" 2>&1 &
	exec_pid=$!
	track_pid "$exec_pid"
	wait_until 20 eval '[ "$(rounds)" -gt 50 ]' ||
		bail_out "the bot's work does not start: $(cat "$T/exec.out" "$W/out/work.err" \
			"$W/out/git.err" 2>&1 | head -5; tail -5 "$D_LOG")"
}

work_end()
{
	touch "$W/work/stop"
	wait_until 60 eval '! kill -0 '"$exec_pid"' 2>/dev/null'
	wait "$exec_pid"
	WORK_RC=$?
	WORK=$(cat "$W/out/work" 2>/dev/null)
	GIT=$(cat "$W/out/git" 2>/dev/null)
}

restart_step()
{
	local what=$1 before
	shift
	before=$(rounds)
	if restart_with "$@"; then
		ok "$what: the next agentfsd serves"
	else
		not_ok "$what: the next agentfsd serves"
		return 1
	fi
	is "$(mntid "$M")" "$mid" "$what: the bot's mount is the same mount"
	if advanced "$before"; then ok "$what: the bot's work goes on"; else not_ok "$what: the bot's work goes on"; fi
}
