# SPDX-License-Identifier: MIT
# tests/lib.sh: shared helpers for the filesystem integration tests.
#
# Sourced by every shell test as `. "$top_srcdir/tests/lib.sh"` (the daemon
# and exec tests through tests/daemon-lib.sh; the gitguard tests add
# tests/guard-lib.sh).  It gives:
#   TAP output      ok DESC / not_ok DESC / check DESC CMD... / is GOT WANT DESC,
#                   like TEXT ERE DESC / unlike TEXT ERE DESC (a line of TEXT matches),
#                   is_text GOT WANT DESC (many lines: the diff is shown),
#                   skip DESC, diag MSG, done_testing (prints the plan at the end),
#                   todo WHY CMD... (CMD's results are TAP TODO: a known defect),
#                   skip_all REASON (prints "1..0 # SKIP", exits 77),
#                   tap_include PREFIX CMD... (folds a TAP-printing program into ours)
#   a private temp folder $T (mode 0755, physical path, removed on exit)
#   fs_mount [ARGS...] SOURCE MNT       agentfs mount in the background, remembered
#   fs_mount_fg [ARGS...] SOURCE MNT    agentfs mount -f, pid in $FS_PID, remembered
#   fs_umount MNT, is_mounted MNT, fs_type MNT, track_pid PID
#   wait_until SECONDS CMD...           poll CMD every 0.1 s until it succeeds
#   make_tree DIR NDIRS NFILES          DIR/dN/fM: NDIRS folders of NFILES files
#   git_test_env                        git with none of the host's configuration
#   host_del userdel|groupdel NAME      remove a user or group the test made, retried
#                                       while another test holds /etc/passwd's lock
# and a trap that unmounts everything the test mounted, kills (by pid) only what
# it started, and removes $T.  Nothing is left behind, pass or fail.
#
# AGENTFS_TEST_BINDFS=1 runs the tests against bindfs instead of agentfs (a
# stand-in while agentfs is being written); tests needing agentfs-only options
# call need_agentfs.

set -u

: "${top_srcdir:?top_srcdir must be set (run through make check)}"
: "${top_builddir:?top_builddir must be set (run through make check)}"

AGENTFS="$top_builddir/src/agentfs"
FSOPS="$top_builddir/tests/fsops"
TRYOP="$top_builddir/tests/fs-tryop"
RACER="$top_builddir/tests/fs-racer"
LOCKER="$top_builddir/tests/fs-lock"

tap_n=0
tap_failed=0
tap_planned=
tap_done=

# host_del userdel|groupdel NAME: remove NAME, a user or group the test made.
# userdel and groupdel fail while another test (make -j) holds the lock on
# /etc/passwd or /etc/group, as useradd does: retried for up to 3 s, until
# NAME is gone; a group that is still a user's primary group is the caller's
# order to get right (userdel first).
host_del()
{
	local cmd=$1 name=$2 db=group i
	[ "$cmd" = userdel ] && db=passwd
	for i in 1 2 3 4 5 6 7 8 9 10; do
		getent "$db" "$name" >/dev/null 2>&1 || return 0
		"$cmd" "$name" >/dev/null 2>&1 && return 0
		sleep 0.3
	done
	return 1
}

# tap_todo: while set (by todo), results are TAP TODO: a failure is an
# expected one (XFAIL) and a pass is reported as unexpected (XPASS fails the run)
tap_todo=

ok()
{
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $*${tap_todo:+ # TODO $tap_todo}"
}

not_ok()
{
	tap_n=$((tap_n + 1))
	[ -n "$tap_todo" ] || tap_failed=$((tap_failed + 1))
	echo "not ok $tap_n - $*${tap_todo:+ # TODO $tap_todo}"
}

# todo WHY CMD...: CMD's results are TODO: a known defect WHY, asserted as it
# should be; fixing it turns them into XPASS, so the TODO is taken away then
todo()
{
	tap_todo="$1"
	shift
	"$@"
	tap_todo=
}

skip()
{
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - # SKIP $*"
}

diag()
{
	printf '%s\n' "$@" | sed 's/^/# /'
}

# check DESC CMD...: ok if CMD succeeds; its output goes to the log as diag.
check()
{
	local desc="$1" out rc
	shift
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "command: $*" "exit status: $rc"
		[ -n "$out" ] && diag "$out"
	fi
	return "$rc"
}

# is GOT WANT DESC
is()
{
	if [ "x$1" = "x$2" ]; then
		ok "$3"
	else
		not_ok "$3"
		diag "got:  '$1'" "want: '$2'"
		return 1
	fi
}

# is_text GOT WANT DESC: is, for long text: a failure shows the first lines
# of the difference (< WANT, > GOT) rather than both texts
is_text()
{
	if [ "x$1" = "x$2" ]; then
		ok "$3"
	else
		not_ok "$3"
		diag "$(diff <(printf '%s\n' "$2") <(printf '%s\n' "$1") | head -40)"
		return 1
	fi
}

# like TEXT ERE DESC: a line of TEXT matches the extended regex ERE
like()
{
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		ok "$3"
	else
		not_ok "$3"
		diag "got:  '$1'" "want: /$2/"
		return 1
	fi
}

# unlike TEXT ERE DESC: no line of TEXT matches ERE
unlike()
{
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		not_ok "$3"
		diag "got:  '$1'" "must not match: /$2/"
		return 1
	else
		ok "$3"
	fi
}

plan()
{
	tap_planned=$1
	echo "1..$1"
}

done_testing()
{
	tap_done=1
	if [ -n "$tap_planned" ]; then
		[ "$tap_planned" -eq "$tap_n" ] ||
			diag "planned $tap_planned tests but ran $tap_n"
	else
		echo "1..$tap_n"
	fi
}

skip_all()
{
	tap_done=1
	echo "1..0 # SKIP $*"
	exit 77
}

bail_out()
{
	tap_done=1
	echo "Bail out! $*"
	exit 99
}

# tap_include PREFIX CMD...: run CMD (which prints TAP with or without test
# numbers), renumber its results into ours with PREFIX in front of each
# description, and add a failure if CMD exits non-zero or its plan does not
# match what it printed (a crash half-way must not look like a pass).
tap_include()
{
	local prefix="$1" line rest n=0 nfail=0 plan_n= rc status
	shift
	exec 8< <("$@" 2>&1; echo "tap_include-exit $?")
	while IFS= read -r line <&8; do
		case "$line" in
		"tap_include-exit "*)
			rc=${line#tap_include-exit }
			;;
		"not ok"*)
			rest=$(printf '%s' "${line#not ok}" | sed -E 's/^ *[0-9]* *-? *//')
			n=$((n + 1))
			nfail=$((nfail + 1))
			not_ok "$prefix: $rest"
			;;
		"ok"*)
			rest=$(printf '%s' "${line#ok}" | sed -E 's/^ *[0-9]* *-? *//')
			n=$((n + 1))
			case "$rest" in
			*"# SKIP"* | *"# skip"*)
				skip "$prefix: ${rest%%#*}${rest#*# [Ss][Kk][Ii][Pp]}" ;;
			*) ok "$prefix: $rest" ;;
			esac
			;;
		1..*)
			plan_n=${line#1..}
			plan_n=${plan_n%% *}
			;;
		"#"*)
			echo "$line"
			;;
		*)
			echo "# $line"
			;;
		esac
	done
	exec 8<&-
	status="${rc:-lost}"
	# exit status 1 is how the program says some of its checks failed
	[ "$status" = 1 ] && [ "$nfail" -gt 0 ] && status=0
	if [ "$status" = 0 ] && [ "$plan_n" = "$n" ] && [ "$n" -gt 0 ]; then
		ok "$prefix: program finished cleanly ($n results)"
	else
		not_ok "$prefix: program finished cleanly"
		diag "exit status $status, plan '${plan_n}', results $n"
	fi
}

# --- processes and mounts -------------------------------------------------

fs_pids=
fs_mounts=
FS_WRAP=()

track_pid()
{
	fs_pids="$fs_pids $1"
}

is_mounted()
{
	awk -v p="$1" '$5 == p { found = 1 } END { exit !found }' /proc/self/mountinfo
}

# fs_type MNT: the filesystem type of the top mount at MNT (e.g. fuse.agentfs)
fs_type()
{
	awk -v p="$1" '$5 == p {
		for (i = 7; $i != "-"; i++) ;
		t = $(i + 1)
	} END { print t }' /proc/self/mountinfo
}

# fs_mopts MNT: mount options + super options of the top mount at MNT
fs_mopts()
{
	awk -v p="$1" '$5 == p {
		for (i = 7; $i != "-"; i++) ;
		o = $6 "," $(i + 3)
	} END { print o }' /proc/self/mountinfo
}

# mounts_under DIR: how many mounts exist at or below DIR
mounts_under()
{
	awk -v p="$1" '$5 == p || index($5, p "/") == 1 { n++ } END { print n + 0 }' \
		/proc/self/mountinfo
}

wait_until()
{
	local limit=$(($1 * 10)) i=0
	shift
	while ! "$@" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -ge "$limit" ] && return 1
		sleep 0.1
	done
	return 0
}

# served_free DIR: wait (up to 10 s) until no agentfs server holds DIR (one
# server per folder: a server ends a moment after `agentfs umount` returns,
# longer under load, and lets its flock of DIR go then)
served_free()
{
	wait_until 10 flock -n "$1" true
}

# N and M are zero-padded to one width (seq -w); each file holds "file N/M".
make_tree()
{
	local d f
	for d in $(seq -w 0 $(($2 - 1))); do
		mkdir "$1/d$d" || return 1
		for f in $(seq -w 0 $(($3 - 1))); do
			echo "file $d/$f" >"$1/d$d/f$f"
		done
	done
}

# reuse_ino DIR INO NAME: make files in DIR until one gets inode number INO
# (ext4 gives a new file the lowest free number of its group: the ones
# below are filled) and name it NAME; prints yes if one did. The files made
# on the way are removed.
reuse_ino()
{
	sync
	echo 2 >/proc/sys/vm/drop_caches 2>/dev/null
	sleep 0.2
	python3 - "$1" "$2" "$3" <<'PY'
import os, sys
d, want, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
made = []
for k in range(20000):
    p = os.path.join(d, "fill-%d" % k)
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
    ino = os.fstat(fd).st_ino
    os.close(fd)
    if ino == want:
        os.rename(p, os.path.join(d, name))
        print("yes")
        break
    made.append(p)
for p in made:
    os.unlink(p)
PY
}

# bindfs_args ARGS...: translate agentfs mount arguments to bindfs ones
# into the array bindfs_argv (sets bindfs_unsupported on --ro-path).
bindfs_translate()
{
	bindfs_argv=(-o default_permissions)
	bindfs_unsupported=
	while [ $# -gt 0 ]; do
		case "$1" in
		--ro) bindfs_argv+=(-o ro) ;;
		--ro-path) bindfs_unsupported=--ro-path; shift ;;
		--allow-new-repos) ;;
		-f) bindfs_argv+=(-f) ;;
		-o) bindfs_argv+=(-o "$2"); shift ;;
		*) bindfs_argv+=("$1") ;;
		esac
		shift
	done
}

# fs_mount [ARGS...] SOURCE MNT: mount in the background (the command
# returns once the mount answers) and remember MNT for cleanup.
fs_mount()
{
	local mnt="${!#}" rc
	fs_mounts="$mnt $fs_mounts"
	if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
		bindfs_translate "$@"
		[ -n "$bindfs_unsupported" ] && {
			echo "bindfs cannot do $bindfs_unsupported" >&2
			return 2
		}
		bindfs "${bindfs_argv[@]}"
	else
		"$AGENTFS" mount "$@"
	fi
	rc=$?
	[ "$rc" -ne 0 ] && return "$rc"
	if ! is_mounted "$mnt"; then
		echo "fs_mount: $mnt is not a mount point after mount returned" >&2
		return 1
	fi
	return 0
}

# fs_mount_fg [ARGS...] SOURCE MNT: start `mount -f` in the background with
# the caller's limits, wait (up to 10 s) until MNT is mounted; FS_PID is the
# server's pid.  The server runs under the command prefix FS_WRAP (an
# array, e.g. (prlimit --nofile=256:256 --)) if set.  A non-interactive shell starts background jobs with SIGINT
# ignored; env puts it back, as it is for a command started from a terminal.
fs_mount_fg()
{
	local mnt="${!#}"
	fs_mounts="$mnt $fs_mounts"
	if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
		bindfs_translate "$@"
		[ -n "$bindfs_unsupported" ] && return 2
		env --default-signal=INT,QUIT "${FS_WRAP[@]}" bindfs -f "${bindfs_argv[@]}" &
	else
		env --default-signal=INT,QUIT "${FS_WRAP[@]}" "$AGENTFS" mount -f "$@" &
	fi
	FS_PID=$!
	track_pid "$FS_PID"
	if ! wait_until 10 is_mounted "$mnt"; then
		echo "fs_mount_fg: $mnt not mounted after 10 s" >&2
		return 1
	fi
	return 0
}

# fs_mount_nofile SOFT:HARD [ARGS...] SOURCE MNT: fs_mount_fg with the
# server alone under that RLIMIT_NOFILE, as `ulimit -n` would set it (the
# test's own shell could not raise its hard limit back).
fs_mount_nofile()
{
	local limit="$1" rc
	shift
	FS_WRAP=(prlimit --nofile="$limit" --)
	fs_mount_fg "$@"
	rc=$?
	FS_WRAP=()
	return "$rc"
}

#
# A mount namespace made while MNT was mounted (another test's sandbox: each
# binds the host's / with every mount under it, and nothing propagates on a
# host whose / is private) keeps a copy of the mount, and its server serves
# that copy on after the unmount here, holding its folder: agentfs umount
# says so, naming the server. A server of ours is then ended, as a person
# would, so the test's next mount of the folder is not refused.
fs_umount()
{
	local out rc pid
	if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
		fusermount3 -u "$1"
		return
	fi
	out=$("$AGENTFS" umount "$1" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" >&2
	pid=$(printf '%s\n' "$out" | sed -n 's/.* its server (pid \([0-9]*\)) still runs: a copy .*/\1/p')
	if [ "$rc" = 0 ] && [ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
		grep -qF -- "$T/"; then
		diag "a copy of $1 in another mount namespace kept its server: ended it (SIGTERM)"
		kill -TERM "$pid"
	fi
	return "$rc"
}

# The filesystem type a mount made by fs_mount should show.
if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
	FS_TYPE=fuse
	FS_KIND=fuse
else
	FS_TYPE=fuse.agentfs
	FS_KIND=fuse
fi

# git_test_env: git as the tests run it sees none of the host's configuration:
# a private HOME (init.defaultBranch main, file:// submodules allowed), a fixed
# author, no editor, pager or prompt, and no GIT_* variable from the caller.
git_test_env()
{
	export GIT_CONFIG_NOSYSTEM=1 HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config"
	export GIT_AUTHOR_NAME=tester GIT_AUTHOR_EMAIL=tester@example.org
	export GIT_COMMITTER_NAME=tester GIT_COMMITTER_EMAIL=tester@example.org
	export GIT_TERMINAL_PROMPT=0 GIT_EDITOR=true GIT_PAGER=cat PAGER=cat
	unset GIT_DIR GIT_WORK_TREE GIT_COMMON_DIR GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
		GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CEILING_DIRECTORIES 2>/dev/null
	mkdir -p "$HOME"
	git config --global init.defaultBranch main
	git config --global protocol.file.allow always
}

need_agentfs()
{
	[ "${AGENTFS_TEST_BINDFS:-0}" = 1 ] && skip_all "needs agentfs (AGENTFS_TEST_BINDFS=1: bindfs cannot do $*)"
	return 0
}

# need_fuse_uring: new FUSE mounts are offered io_uring for this test
# (/sys/module/fuse/parameters/enable_uring set to Y, and put back as it was
# by the trap), else the test is skipped (77): no such parameter (Linux
# before 6.14), or it cannot be written.
fuse_uring_param=/sys/module/fuse/parameters/enable_uring
fuse_uring_was=
need_fuse_uring()
{
	local was
	[ -e "$fuse_uring_param" ] || skip_all "no FUSE over io_uring here ($fuse_uring_param is missing)"
	was=$(cat "$fuse_uring_param" 2>/dev/null) || skip_all "cannot read $fuse_uring_param"
	fuse_uring_was=$was
	if ! { echo Y >"$fuse_uring_param"; } 2>/dev/null; then
		fuse_uring_was=
		skip_all "cannot set $fuse_uring_param"
	fi
}

# ring_completions PID: completions so far on PID's io_uring instances (the
# sum of their CqTail in /proc/PID/fdinfo): grows with each request served
# over a ring
ring_completions()
{
	local f n=0 t
	for f in /proc/"$1"/fd/*; do
		[ "$(readlink "$f" 2>/dev/null)" = "anon_inode:[io_uring]" ] || continue
		t=$(awk '/^CqTail:/ { print $2 }' /proc/"$1"/fdinfo/"${f##*/}" 2>/dev/null)
		n=$((n + ${t:-0}))
	done
	echo "$n"
}

# loop_unmount MNT LOOPDIR IMG: for a test that serves a loop-mounted image:
# the agentfs mount MNT over it, then LOOPDIR, then IMG's loop devices.
loop_unmount()
{
	local m="$1" l="$2" img="$3" dev i
	if is_mounted "$m"; then
		"$AGENTFS" umount "$m" 2>/dev/null || "$AGENTFS" umount -z "$m" 2>/dev/null
	fi
	for i in 1 2 3 4 5 6 7 8 9 10; do
		is_mounted "$l" || break
		umount "$l" 2>/dev/null || { [ "$i" -ge 5 ] && umount -l "$l" 2>/dev/null; }
		sleep 0.2
	done
	if [ -e "$img" ]; then
		for dev in $(losetup -j "$img" | cut -d: -f1); do
			losetup -d "$dev" 2>/dev/null
		done
	fi
	return 0
}

# lib_exit_hook: a command lib_cleanup runs last, once every process and
# mount of the test is gone (exec-lib.sh deletes its test user then)
lib_exit_hook=

lib_cleanup()
{
	local rc=$? m p i
	trap - EXIT INT TERM
	set +e
	[ -n "$fuse_uring_was" ] && echo "$fuse_uring_was" >"$fuse_uring_param"
	for m in $fs_mounts; do
		for i in 1 2 3; do
			is_mounted "$m" || break
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null ||
				umount -l "$m" 2>/dev/null
		done
	done
	for p in $fs_pids; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
		for i in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# A daemonised server has no pid we know; it was started by us with our
	# unique temp path on its command line, so it is found by that and killed
	# by pid if it outlived its mount.
	if [ -n "${T:-}" ] && [ "${AGENTFS_TEST_BINDFS:-0}" != 1 ]; then
		for p in $(lib_our_servers); do
			kill -KILL "$p" 2>/dev/null
		done
	fi
	if [ -n "${T:-}" ] && [ -d "$T" ]; then
		if [ "$(mounts_under "$T")" -eq 0 ]; then
			rm -rf --one-file-system "$T"
		else
			echo "# lib.sh: mounts left under $T, not removing it" >&2
		fi
	fi
	if [ -z "$tap_done" ] && [ "$rc" -ne 77 ]; then
		echo "# test stopped early (status $rc) after $tap_n results"
		[ "$rc" -eq 0 ] && rc=99
	fi
	[ -n "$lib_exit_hook" ] && $lib_exit_hook
	exit "$rc"
}

# lib_our_servers: pids of agentfs processes whose command line names $T
lib_our_servers()
{
	local f p argv0
	for f in $(grep -lsaF -- "$T/" /proc/[0-9]*/cmdline); do
		p=${f#/proc/}
		p=${p%/cmdline}
		argv0=$(head -z -n1 "$f" 2>/dev/null | tr -d '\0')
		case "$argv0" in
		agentfs | */agentfs) echo "$p" ;;
		esac
	done
}

# --- preconditions ----------------------------------------------------------

[ "$(id -u)" -eq 0 ] || skip_all "needs root (FUSE mounts with allow_other as root)"
[ -c /dev/fuse ] || skip_all "/dev/fuse is missing"
if ! (exec 9<>/dev/fuse) 2>/dev/null; then
	skip_all "/dev/fuse cannot be opened"
fi
command -v fusermount3 >/dev/null || skip_all "fusermount3 is missing (apt-get install fuse3)"
if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
	command -v bindfs >/dev/null || skip_all "AGENTFS_TEST_BINDFS=1 but bindfs is missing"
else
	[ -x "$AGENTFS" ] || bail_out "$AGENTFS is not built"
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/agentfs-test.XXXXXX") || bail_out "mktemp failed"
trap lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Physical path: a symlink among TMPDIR's components must not look like a
# symlinked SOURCE.  0755 so the unprivileged identities of fsops get in.
T=$(cd "$T" && pwd -P)
chmod 0755 "$T"
