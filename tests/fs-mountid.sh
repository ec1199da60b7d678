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
# fillers stay until the end. 0 when ID is free for MOUNT-CMD.
nids=0
take_id()
{
	local want="$1" i got
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
		[ "$got" -gt "$want" ] && return 1
	done
	return 1
}

# server_of MNT: the pid of the agentfs server of MNT (its command line)
server_of()
{
	local p
	for p in $(lib_our_servers); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentfs-unmount ] && continue
		case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in
		*"agentfs mount "*" $1 ") echo "$p" ;;
		esac
	done | head -n 1
}

# watchers: the pids of our auto_unmount watchers
watchers()
{
	local p
	for p in $(lib_our_servers); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentfs-unmount ] && echo "$p"
	done
}

# --- SIGTERM: the server detaches its own mount only -------------------------------------
check "a server of $T/a" fs_mount "$T/a" "$T/m"
old=$(mount_id "$T/m")
srv=$(server_of "$T/m")
copied
out=$("$AGENTFS" umount "$T/m" 2>&1)
like "$out" "still runs: a copy of the mount lives on" "unmounted here; a copy keeps its server"
fs_mounts="$T/p $fs_mounts"
if take_id "$old" mount -t tmpfs -o size=4k other "$T/p" && [ "$(mount_id "$T/p")" = "$old" ]; then
	kill -TERM "$srv"
	check "SIGTERM ends the server: its folder is free" served_free "$T/a"
	check "... and the mount that has its old id ($old) now is left alone" is_mounted "$T/p"
	umount "$T/p"
else
	skip "the mount with its old id is left alone (no mount got id $old here)"
	kill -TERM "$srv"
fi

# --- SIGKILL: the auto_unmount watcher detaches its own mount only -----------------------
check "a server of $T/b with -o auto_unmount" fs_mount -o auto_unmount "$T/b" "$T/m"
old=$(mount_id "$T/m")
# the watcher is the server's child, with its command line; it names itself
# once it runs, which on a busy machine can be after the mount is there
wait_until 5 eval '[ -n "$(watchers)" ]'
srv=$(server_of "$T/m")
copied
out=$("$AGENTFS" umount "$T/m" 2>&1)
like "$out" "still runs: a copy of the mount lives on" "unmounted here; a copy keeps its server"
# another agentfs mount takes the id: the watcher looks for a fuse.agentfs mount
served_free "$T/a"
if take_id "$old" fs_mount "$T/a" "$T/p" && [ "$(mount_id "$T/p")" = "$old" ]; then
	kill -KILL "$srv"
	wait_until 10 eval '[ -z "$(watchers)" ]'
	check "... SIGKILLed, its watcher leaves the agentfs mount that has its old id ($old) alone" \
		is_mounted "$T/p"
	is "$(cat "$T/p/f" 2>&1)" a "... which still serves"
	fs_umount "$T/p"
else
	skip "the watcher leaves the mount with its old id alone (no mount got id $old here: $(mount_id "$T/p"))"
	kill -KILL "$srv"
fi

for m in $(awk -v p="$T/ids/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo); do
	umount "$m"
done
done_testing
