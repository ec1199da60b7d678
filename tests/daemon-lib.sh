# SPDX-License-Identifier: MIT
# tests/daemon-lib.sh: helpers for the agentfsd tests (tests/daemon-*.sh).
#
# Sourced as `. "$top_srcdir/tests/daemon-lib.sh"`; it sources tests/lib.sh
# (TAP helpers, the private temp folder $T, the skips without root or
# /dev/fuse) and adds:
#   D_SOCK, D_STATE, D_MNT      the private control socket, state and mount
#                               folders under $T (never the default paths)
#   D_CONFIG                    a configuration of our own, {"group": "",
#                               "log_target": "file:$D_LOG"}: never the
#                               host's file, no operators' group whatever
#                               groups the host has (a test of operators
#                               names its own group), and a log that is
#                               neither the host's syslog nor its journal
#   D_LOG                       that log file
#   daemon_start [ARGS...]      start agentfsd on them with D_CONFIG (a
#                               --config in ARGS comes later and wins;
#                               daemonised: returns once it listens); D_PID
#                               is its pid
#   D_CGROUP                    where its sandboxes' cgroups go (--cgroup): a
#                               base of this test's own, /agentfs-test.PID,
#                               where the host's cgroups can be written, else
#                               "" (none); "config" leaves it to the config.
#                               The trap ends what is left in it and removes it
#   daemon_pids [SOCKET]        pids of our agentfsd on SOCKET (default: all of ours),
#                               not its keeper's
#   keeper_pids                 pids of the keeper of our state folder (agentfsd --keeper)
#   daemon_kill SIG             signal them, by pid
#   daemon_wait_gone SECONDS    wait until none is left
#   daemon_kill9                SIGKILL them and wait (5 s) until they are gone
#   afs ARGS...                 the client on our socket
#   as BOT ARGS...              the client talking as BOT (--json, through its
#                               AGENT_SOCKET, no --socket)
#   names                       the bot names of a --json ls on stdin, sorted, on one line
#   raw LINE...                 send raw request lines on one connection
#   jget PATH                   a field of the JSON on stdin (daemon-client get)
#   expect_error DESC CODE JSON one TAP result: ok:false with error.code CODE
#   expect_ok DESC JSON         one TAP result: ok:true
#   answers SOCKET              something answers a status op there
#   mounts_in DIR               "ID MOUNTPOINT FSTYPE" of each mount at or under DIR
#   state_valid                 the state file parses as a JSON object
# and a trap that kills our daemons by pid (TERM, then KILL), unmounts
# whatever is left under $T (fusermount3 -u, then -uz) and then runs
# lib.sh's cleanup, which removes $T.

. "$top_srcdir/tests/lib.sh"

# AGENTFSD may name another build of the daemon (say, one with ASan).
AGENTFSD="${AGENTFSD:-$top_builddir/src/agentfsd}"
DCLIENT="$top_builddir/tests/daemon-client"
[ -x "$AGENTFSD" ] || bail_out "$AGENTFSD is not built"
[ -x "$DCLIENT" ] || bail_out "$DCLIENT is not built (make check builds it)"

# Nothing from the caller's environment may point us at a real daemon.
unset AGENT_SOCKET AGENTFS_SOCKET

# Short: a bot's socket is $D_SOCK.d/NAME.sock and must fit in sun_path
# (107 bytes) with a 64-byte name.
D_SOCK="$T/d.sock"
D_STATE="$T/state"
D_MNT="$D_STATE/mnt"
D_PID=
# The host's /etc/agentfs/agentfsd.json and its group "agentfs", if they
# exist, must change nothing: every daemon a test starts is given this file.
D_CONFIG="$T/agentfsd-test.json"
D_LOG="$T/agentfsd.log"

# daemon_pids [SOCKET]: pids of the agentfsd serving SOCKET, or of every
# agentfsd started with a path under $T (our paths hold no glob characters);
# not the keeper's (keeper_pids)
daemon_pids()
{
	local f cmd pat
	if [ -n "${1:-}" ]; then
		pat="*/agentfsd *--socket $1 *"
	else
		pat="*/agentfsd *$T/*"
	fi
	# One grep over every command line (forking per process is slow on a busy
	# host), then a closer look at each hit.
	for f in $(grep -lsF -- "${1:-$T/}" /proc/[0-9]*/cmdline 2>/dev/null); do
		cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
		# shellcheck disable=SC2254
		case "$cmd" in
		*" --keeper "*) ;;
		$pat) f=${f#/proc/}; echo "${f%/cmdline}" ;;
		esac
	done
}

# keeper_pids: the keeper that holds our daemons' mounts across a restart
keeper_pids()
{
	local f cmd
	for f in $(grep -lsF -- "$T/" /proc/[0-9]*/cmdline 2>/dev/null); do
		cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
		case "$cmd" in
		*"/agentfsd --keeper $T/"*) f=${f#/proc/}; echo "${f%/cmdline}" ;;
		esac
	done
}

# lib.sh's lib_our_servers forks two processes per process on the host, which
# takes many seconds on a busy machine; this does the same with one grep.
lib_our_servers()
{
	local f p cmd
	for f in $(grep -lsF -- "$T/" /proc/[0-9]*/cmdline 2>/dev/null); do
		p=${f#/proc/}
		p=${p%/cmdline}
		[ "$p" = "$$" ] && continue
		cmd=$(tr '\0' ' ' 2>/dev/null <"$f") || continue
		case "$cmd" in
		*agentfs*) echo "$p" ;;
		esac
	done
}

daemon_alive()
{
	[ -n "$(daemon_pids)" ]
}

daemon_kill()
{
	local p
	for p in $(daemon_pids); do
		kill "-$1" "$p" 2>/dev/null
	done
}

# daemon_wait_gone SECONDS: no agentfsd of ours left, and its state lock free
# (a process's command line goes before its descriptors do: a start right
# after could find the old lock still held, as under ThreadSanitizer)
daemon_wait_gone()
{
	wait_until "$1" eval '[ -z "$(daemon_pids)" ] && state_unlocked'
}

state_unlocked()
{
	[ ! -e "$D_STATE/lock" ] || flock -n "$D_STATE/lock" true
}

# daemon_start [ARGS...]: start agentfsd; 0 once it listens.
daemon_kill9()
{
	local p
	p=$(daemon_pids)
	[ -n "$p" ] || return 1
	kill -KILL $p
	daemon_wait_gone 5
}

# The sandboxes' cgroups: v2 with memory and pids, or v1's two hierarchies.
D_CGROUP=
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
	grep -qw pids /sys/fs/cgroup/cgroup.controllers && [ -w /sys/fs/cgroup ]; then
	D_CGROUP=/agentfs-test.$$
	D_CGROUP_DIRS="/sys/fs/cgroup$D_CGROUP"
elif [ -w /sys/fs/cgroup/memory ] && [ -w /sys/fs/cgroup/pids ] &&
	[ "$(stat -f -c %T /sys/fs/cgroup/memory 2>/dev/null)" = cgroupfs ]; then
	D_CGROUP=/agentfs-test.$$
	D_CGROUP_DIRS="/sys/fs/cgroup/memory$D_CGROUP /sys/fs/cgroup/pids$D_CGROUP"
fi
# D_CONFIG names it too, so a daemon started without daemon_start makes no
# cgroup outside ours either (the built-in default, /agentfs, would stay)
printf '{"group": "", "log_target": "file:%s", "cgroup": "%s"}\n' "$D_LOG" "$D_CGROUP" >"$D_CONFIG"

# daemon_cgroups_gone: nothing of ours left in the sandboxes' cgroups (killed by
# pid, read from our own base), and the base removed
daemon_cgroups_gone()
{
	local d p i
	[ -n "$D_CGROUP" ] && [ "$D_CGROUP" != config ] || return 0
	for i in 1 2 3; do
		for d in $D_CGROUP_DIRS; do
			[ -d "$d" ] || continue
			for p in $(cat "$d"/*/cgroup.procs 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null
			done
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		done
		sleep 0.1
	done
}

# mem_below DESC KIB LIMIT_KIB: the daemon grew by KIB, under LIMIT_KIB. A
# sanitizer's build keeps freed memory in quarantine and adds shadow memory
# and redzones, so there the figure is not the daemon's: skipped, and the
# plain build (make check) holds the bound.
mem_below()
{
	if ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib(a|t|ub)san'; then
		skip "$1 (agentfsd is built with a sanitizer: its memory is not the daemon's)"
	else
		check "$1" test "$2" -lt "$3"
	fi
}

# daemon_from_copies: later starts run copies of agentfsd and agentfs-enter
# in $T/bin. agentfsd starts each confined sandbox with the agentfs-enter
# beside it, and trusts it only if it and every folder above it are root's
# alone: copies in the test's own folder are, wherever the build tree is.
daemon_from_copies()
{
	mkdir -p "$T/bin" &&
		cp "$AGENTFSD" "$top_builddir/src/agentfs-enter" "$T/bin/" ||
		bail_out "cannot copy agentfsd and agentfs-enter into $T/bin"
	AGENTFSD=$T/bin/agentfsd
}

# tree_root_only DIR: DIR and every folder above it belong to root and no one
# else may write them (a sticky folder excepted), as agentfsd asks of the
# folders of the programs it runs for a bot; false naming the first that fails
tree_root_only()
{
	local d
	d=$(realpath "$1") || return 1
	while :; do
		if [ "$(stat -c %u "$d")" != 0 ] ||
			[ -n "$(find "$d" -maxdepth 0 -perm /022 ! -perm -1000)" ]; then
			printf '%s (owner %s, mode %s)\n' "$d" "$(stat -c %U "$d")" "$(stat -c %a "$d")"
			return 1
		fi
		[ "$d" = / ] && return 0
		d=$(dirname "$d")
	done
}

daemon_start()
{
	local cg=()
	[ "$D_CGROUP" = config ] || cg=(--cgroup "$D_CGROUP")
	"$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" "${cg[@]}" "$@" ||
		return $?
	D_PID=$(daemon_pids "$D_SOCK" | head -n 1)
	[ -n "$D_PID" ]
}

# restored_state BOT: the state of BOT's first root once the daemon is done
# restoring it after a start ("mounting" until the kernel's INIT is answered;
# waited for up to 10 s).
restored_state()
{
	local st i
	for i in $(seq 50); do
		st=$(afs --json show "$1" | jget bot.mounts.0.state)
		[ "$st" != mounting ] && break
		sleep 0.2
	done
	printf '%s\n' "$st"
}

afs()
{
	"$AGENTFS" --socket "$D_SOCK" "$@"
}

as()
{
	local bot="$1"
	shift
	AGENT_SOCKET="$D_SOCK.d/$bot.sock" "$AGENTFS" --json "$@"
}

names()
{
	jget 'bots.*.name' | sort | tr '\n' ' '
}

raw()
{
	"$DCLIENT" req "$D_SOCK" "$@"
}

jget()
{
	"$DCLIENT" get "$1"
}

# expect_error DESC CODE REPLY: ok is false, error.code is CODE, a message is given.
expect_error()
{
	local desc="$1" want="$2" reply="$3" okv code msg
	okv=$(printf '%s' "$reply" | jget ok)
	code=$(printf '%s' "$reply" | jget error.code)
	msg=$(printf '%s' "$reply" | jget error.message)
	if [ "$okv" = false ] && [ "$code" = "$want" ] && [ -n "$msg" ]; then
		ok "$desc ($want)"
	else
		not_ok "$desc ($want)"
		diag "want ok:false and error code $want" "got: $reply"
		return 1
	fi
}

# expect_ok DESC REPLY: ok is true
expect_ok()
{
	if [ "$(printf '%s' "$2" | jget ok)" = true ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "got: $2"
		return 1
	fi
}

# mounts_in DIR: "ID MOUNTPOINT FSTYPE" of every mount at or under DIR
mounts_in()
{
	awk -v p="$1" '$5 == p || index($5, p "/") == 1 {
		for (i = 7; $i != "-"; i++) ;
		print $1, $5, $(i + 1)
	}' /proc/self/mountinfo
}

state_valid()
{
	"$DCLIENT" valid "$D_STATE/bots.json"
}

# Is something listening on this unix socket? (connect, then close)
answers()
{
	"$DCLIENT" req "$1" '{"op":"status"}' >/dev/null 2>&1
}

daemon_cleanup()
{
	local rc=$? p i m
	set +e
	# A failed check: the daemon's own account of it goes with the TAP output
	# (the log is removed with $T; CI keeps only what the test printed).
	if [ "${tap_failed:-0}" -gt 0 ] && [ -s "${D_LOG:-}" ]; then
		echo "# the last lines of agentfsd's log:"
		tail -n 60 "$D_LOG" | sed 's/^/#   /'
	fi
	if [ -n "${T:-}" ]; then
		daemon_kill TERM
		for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do
			daemon_alive || break
			sleep 0.1
		done
		daemon_kill KILL
		# the keeper lets go of what it holds at SIGTERM: the mounts end
		for p in $(keeper_pids); do
			kill -TERM "$p" 2>/dev/null
		done
		wait_until 3 eval '[ -z "$(keeper_pids)" ]'
		for p in $(keeper_pids); do
			kill -KILL "$p" 2>/dev/null
		done
		# Deepest first, so a mount under another goes before it.
		for i in 1 2 3; do
			for m in $(awk -v p="$T" 'index($5, p "/") == 1 { print length($5), $5 }' \
				/proc/self/mountinfo | sort -rn | cut -d' ' -f2-); do
				fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null ||
					umount -l "$m" 2>/dev/null
			done
			[ "$(mounts_under "$T")" -eq 0 ] && break
			sleep 0.2
		done
		daemon_cgroups_gone
	fi
	(exit "$rc")
	lib_cleanup
}
trap daemon_cleanup EXIT
