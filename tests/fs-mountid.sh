#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-mountid: the id /proc/self/mountinfo gives a mount is 32 bits, and the
# kernel gives it again, lowest first, as soon as the mount is gone. A server
# whose mount was unmounted while a copy in another mount namespace kept it
# serving must never act on the mount that took its old id: not when it ends
# (SIGTERM: it detaches its mount), and not through its -o auto_unmount
# watcher when it is killed (the watcher detaches a dead mount).
. "$top_srcdir/tests/lib.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root (agentfs mount)"
[ -c /dev/fuse ] || skip_all "needs /dev/fuse"
command -v unshare >/dev/null || skip_all "unshare is missing (util-linux)"
unshare -m --propagation private true 2>/dev/null || skip_all "cannot make a mount namespace"

mkdir -p "$T/a" "$T/b" "$T/m" "$T/p" "$T/ids"
# (a mount made by `check ... fs_mount` is not in fs_mounts: a subshell's)
fs_mounts="$T/m $T/p $fs_mounts"
echo a >"$T/a/f"
echo b >"$T/b/f"

mount_id()
{
	awk -v p="$1" '$5 == p { id = $1 } END { print id }' /proc/self/mountinfo
}

# copied MNT: a namespace of its own holds a copy of MNT, until the test ends
copied()
{
	unshare -m --propagation private sleep 120 &
	track_pid $!
	wait_until 10 eval '[ "$(readlink /proc/'"$!"'/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]'
}

# take_id ID MOUNT-CMD...: fill the ids below ID with small mounts, then run
# MOUNT-CMD (a mount made by it should get ID: the lowest free one); the
# fillers stay until the end. 0 when ID is free for MOUNT-CMD. While
# another process's mount holds ID (a test beside this one), the filler that
# got a higher id goes and the next tries again a moment later (3 s at most).
nids=0
take_id()
{
	local want="$1" i got waits=0
	shift
	for i in $(seq $((nids + 1)) $((nids + 400))); do
		nids=$i
		fs_mounts="$T/ids/$i $fs_mounts" # the trap unmounts them (umount -l)
		mkdir "$T/ids/$i" && mount -t tmpfs -o size=4k ids "$T/ids/$i" || return 1
		got=$(mount_id "$T/ids/$i")
		if [ "$got" = "$want" ]; then
			umount "$T/ids/$i"
			"$@"
			return
		fi
		if [ "$got" -gt "$want" ]; then
			umount "$T/ids/$i"
			waits=$((waits + 1))
			[ "$waits" -ge 30 ] && return 1
			sleep 0.1
		fi
	done
	return 1
}

# ppid_of PID: its parent's pid (the field after the state in /proc/PID/stat,
# read past the name in parentheses)
ppid_of()
{
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	s=${s#* }
	echo "${s%% *}"
}

# server_of SOURCE MNT: the pid of the agentfs server of SOURCE at MNT, and
# nothing unless exactly one process is it. Its -o auto_unmount watcher is
# a fork of it (src/cli/cmd-mount.c): the same command line, and the same
# name until it has named itself agentfs-unmount, which on a busy machine
# can be after the mount is there. The watcher's parent is the server; the
# server's (it left the `agentfs mount` that started it) is none of ours.
server_of()
{
	local ours p pp found=
	ours=" $(lib_our_servers | tr '\n' ' ') "
	for p in $ours; do
		case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in
		*"agentfs mount "*"$1 $2 ") ;;
		*) continue ;;
		esac
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentfs-unmount ] && continue
		pp=$(ppid_of "$p") || continue
		case "$ours" in *" $pp "*) continue ;; esac
		[ -n "$found" ] && return 1
		found=$p
	done
	[ -n "$found" ] && echo "$found"
}

# no_server MNT: server_of found no one server of MNT: a failure, which
# shows ours, and MNT unmounted for the next part
no_server()
{
	local p
	not_ok "... which is one process of ours$again"
	for p in $(lib_our_servers); do
		diag "pid $p, parent $(ppid_of "$p"), $(cat "/proc/$p/comm" 2>/dev/null):" \
			"  $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done
	"$AGENTFS" umount "$1"
}

# watchers: the pids of our auto_unmount watchers
watchers()
{
	local p
	for p in $(lib_our_servers); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentfs-unmount ] && echo "$p"
	done
}

# source_free SOURCE: no process of ours serves SOURCE or watches a mount of
# it, and no server holds its folder's flock (fusefs/excl.c). A server lets
# its folders go before it exits, and may take a while to (ThreadSanitizer
# sleeps a second at exit): a fresh server beside it would be a second one
# of the same command line.
source_free()
{
	local p
	for p in $(lib_our_servers); do
		case " $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in
		*" $1 "*) return 1 ;;
		esac
	done
	flock -n "$1" true
}

# Each part needs a mount to take the old id of its server's mount; a test
# beside this one (make -j) may make a mount first and hold that id for
# longer than take_id waits. A try that got no such mount ends its server,
# and the part is tried again with a fresh one, 3 times at most. The next
# try starts once the last one's processes are gone and its folders free (5 s
# at most); if they are not, the part is skipped: that is this harness's race
# with the kernel's process teardown, which the checks are not about.
# try_part NAME SKIP-DESC FOLDER...: runs NAME_try (0: its checks ran; 1: no
# mount got the old id, its server ended; 2: it failed, its checks said so)
try_part()
{
	local name="$1" desc="$2" try rc f
	shift 2
	for try in 1 2 3; do
		again=
		[ "$try" -gt 1 ] && again=" (try $try)"
		"${name}_try"
		rc=$?
		[ "$rc" = 1 ] || return 0
		if [ "$try" = 3 ]; then
			skip "$desc (no mount got its old id in 3 tries)"
			return 0
		fi
		for f in "$@"; do
			if ! wait_until 5 source_free "$f"; then
				skip "$desc (the processes of try $try did not let $f go in 5 s)"
				diag "ours still running: $(lib_our_servers | tr '\n' ' ')"
				return 0
			fi
		done
	done
}

# --- SIGTERM: the server detaches its own mount only -------------------------------------
term_try()
{
	check "a server of $T/a$again" fs_mount "$T/a" "$T/m" || return 2
	old=$(mount_id "$T/m")
	srv=$(server_of "$T/a" "$T/m")
	[ -n "$srv" ] || { no_server "$T/m"; return 2; }
	copied
	out=$("$AGENTFS" umount "$T/m" 2>&1)
	like "$out" "still runs: a copy of the mount lives on" "unmounted here; a copy keeps its server$again"
	if take_id "$old" mount -t tmpfs -o size=4k other "$T/p" &&
		[ "$(mount_id "$T/p")" = "$old" ]; then
		kill -TERM "$srv"
		check "SIGTERM ends the server: its folder is free" served_free "$T/a"
		check "... and the mount that has its old id ($old) now is left alone" is_mounted "$T/p"
		umount "$T/p"
		return 0
	fi
	diag "no mount got id $old here: $(mount_id "$T/p") (another took it first)"
	is_mounted "$T/p" && umount "$T/p"
	kill -TERM "$srv"
	return 1
}
try_part term "the mount with its old id is left alone" "$T/a"

# --- SIGKILL: the auto_unmount watcher detaches its own mount only -----------------------
kill_try()
{
	check "a server of $T/b with -o auto_unmount$again" fs_mount -o auto_unmount "$T/b" "$T/m" ||
		return 2
	old=$(mount_id "$T/m")
	srv=$(server_of "$T/b" "$T/m")
	[ -n "$srv" ] || { no_server "$T/m"; return 2; }
	# the watcher must run (it names itself once it does) before the server is killed
	wait_until 5 eval '[ -n "$(watchers)" ]'
	copied
	out=$("$AGENTFS" umount "$T/m" 2>&1)
	like "$out" "still runs: a copy of the mount lives on" "unmounted here; a copy keeps its server$again"
	# another agentfs mount takes the id: the watcher looks for a fuse.agentfs mount
	if take_id "$old" fs_mount "$T/a" "$T/p" && [ "$(mount_id "$T/p")" = "$old" ]; then
		kill -KILL "$srv"
		wait_until 10 eval '[ -z "$(watchers)" ]'
		check "... SIGKILLed, its watcher leaves the agentfs mount that has its old id ($old) alone" \
			is_mounted "$T/p"
		is "$(cat "$T/p/f" 2>&1)" a "... which still serves"
		fs_umount "$T/p"
		return 0
	fi
	diag "no mount got id $old here: $(mount_id "$T/p") (another took it first)"
	is_mounted "$T/p" && fs_umount "$T/p"
	kill -KILL "$srv"
	return 1
}
wait_until 5 source_free "$T/a"
try_part kill "the watcher leaves the mount with its old id alone" "$T/b" "$T/a"

for m in $(awk -v p="$T/ids/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo); do
	umount "$m"
done
done_testing
