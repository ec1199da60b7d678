#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-excl: one server per folder. A seal (a checked file renamed into a
# git folder stays unwritable) counts the handles of one server process, so
# two servers of one folder, or of a folder and one inside it, let a bot keep
# a file open for writing through one, rename it onto a rebase's `strategy`
# through the other and write it. A second server of a folder, of a folder in
# it or of a folder holding it is refused, standalone or agentfsd; one
# agentfsd serves nested roots of its bots; the next agentfsd holds the
# folders after a handover and after a SIGKILL; an unmount lets them go.
. "$top_srcdir/tests/daemon-lib.sh"

mkdir -p "$T/h/a/sub" "$T/b" "$T/s" "$T/bot/in" "$T/bot/other" "$T/m1" "$T/m2" "$T/m3"
chown 65534 "$T/bot" "$T/bot/in" "$T/s"
busy="another agentfs server already serves"

# refused DESC WANT SOURCE MNT [ARGS...]: agentfs mount fails, says WANT, mounts nothing
refused()
{
	local desc="$1" want="$2" src="$3" mnt="$4" out rc
	shift 4
	out=$("$AGENTFS" mount "$@" "$src" "$mnt" 2>&1)
	rc=$?
	case "$rc:$out" in
	"125:agentfs: $want"*) ok "$desc" ;;
	*) not_ok "$desc"; diag "exit $rc: $out" "want exit 125: agentfs: $want..." ;;
	esac
	is_mounted "$mnt" && { not_ok "... and $mnt is not mounted"; fusermount3 -u "$mnt"; return; }
	ok "... and $mnt is not mounted"
}

# --- standalone servers -----------------------------------------------------------------
check "a server of $T/h/a" fs_mount "$T/h/a" "$T/m1"
refused "a second server of the same folder: refused" \
	"source $T/h/a: $busy it, or a folder in it (a seal on git's checked files holds within one server" \
	"$T/h/a" "$T/m2"
refused "a server of a folder in it: refused, naming the folder served" \
	"source $T/h/a/sub: $busy $T/h/a, which holds it" "$T/h/a/sub" "$T/m2"
refused "a server of the folder holding it: refused" "source $T/h: $busy it, or a folder in it" \
	"$T/h" "$T/m2"
refused "a read-only one too (agentfsd may make its read-only roots writable)" \
	"source $T/h/a: $busy it" "$T/h/a" "$T/m2" --ro
check "a server of a folder beside it mounts" fs_mount "$T/b" "$T/m2"
check "unmount the first" fs_umount "$T/m1"
check "... its server lets the folder go" served_free "$T/h/a"
check "... then a folder that was in it mounts" fs_mount "$T/h/a/sub" "$T/m1"
check "unmount both" eval 'fs_umount "$T/m1" && fs_umount "$T/m2"'

# --- a copy of the mount in another mount namespace -------------------------------------
# A namespace made while a folder is mounted (a sandbox or container binding
# a folder above it) holds a copy of the mount; with no propagation from
# here, an unmount here leaves the copy, and its server serves it on (the
# CI's exec tests did this to a test beside them). umount says so and names
# the server; the folder stays served; SIGTERM ends the server and the copy.
served_free "$T/b" || bail_out "$T/b is still served"
echo kept >"$T/b/f"
check "a server of $T/b" fs_mount "$T/b" "$T/m2"
unshare -m --propagation private bash -c '
	until [ -e "$1/go1" ]; do sleep 0.05; done
	cat "$1/m2/f" >"$1/copy1" 2>&1
	until [ -e "$1/go2" ]; do sleep 0.05; done
	cat "$1/m2/f" >"$1/copy2" 2>&1
	sleep 60' copy "$T" &
track_pid $!
wait_until 10 eval '[ "$(readlink /proc/$!/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]'
old_id=$(awk -v p="$T/m2" '$5 == p { print $1 }' /proc/self/mountinfo)
out=$("$AGENTFS" umount "$T/m2" 2>&1)
check "unmount it here" test $? = 0
srv=$(printf '%s\n' "$out" | sed -n 's/.* its server (pid \([0-9]*\)) still runs.*/\1/p')
like "$out" "^agentfs: $T/m2 is unmounted, but its server \\(pid [0-9]+\\) still runs: a copy of the mount lives on in another mount namespace" \
	"... which says its server still runs, and why"
like "$(tr '\0' ' ' <"/proc/${srv:-0}/cmdline" 2>/dev/null)" "agentfs mount $T/b $T/m2" \
	"... naming the server's pid"
touch "$T/go1"
wait_until 10 test -s "$T/copy1"
is "$(cat "$T/copy1")" kept "... which serves the copy on"
refused "... and keeps the folder: a fresh server is refused" "source $T/b: $busy it" "$T/b" "$T/m2"
# The kernel gives a gone mount's id (mountinfo's first field) to the next
# mount, lowest first: small mounts until one has the server's old id. The
# server, ending, detached the mount with that id: someone else's.
# take_old_id ID: sets reused to a small mount that got ID. While another
# process's mount holds ID (a test beside this one), the last small mount goes
# and the next tries again a moment later (3 s at most); the others stay.
mkdir "$T/ids"
nids=0
take_old_id()
{
	local i got waits=0
	reused=
	for i in $(seq $((nids + 1)) $((nids + 300))); do
		nids=$i
		fs_mounts="$T/ids/$i $fs_mounts" # the trap unmounts them
		mkdir "$T/ids/$i" && mount -t tmpfs -o size=4k ids "$T/ids/$i" || return 1
		got=$(awk -v p="$T/ids/$i" '$5 == p { print $1 }' /proc/self/mountinfo)
		[ "$got" = "$1" ] && reused=$T/ids/$i && return 0
		if [ "$got" -gt "$1" ]; then
			umount "$T/ids/$i"
			waits=$((waits + 1))
			[ "$waits" -ge 30 ] && return 1
			sleep 0.1
		fi
	done
	return 1
}
take_old_id "$old_id"
kill -TERM "${srv:-0}" 2>/dev/null
check "SIGTERM ends the server, and the folder is free" served_free "$T/b"
# A neighbour's mount may hold the id longer than that: a fresh server of the
# folder, its mount copied and unmounted here, gets another id to take (two
# more tries). The server must be gone first (5 s at most), or the check is
# skipped: that is this harness's race, not agentfs's.
# fresh_try N: 0 when a small mount took the fresh server's old id before
# its SIGTERM; 1 when none did; 2 when a check failed; 3 when the last
# server did not go
fresh_try()
{
	local cp
	wait_until 5 eval '! kill -0 "${srv:-0}" 2>/dev/null && flock -n "$T/b" true' || return 3
	fs_mounts="$T/m2 $fs_mounts" # not kept from check's subshell
	check "... a fresh server of $T/b (try $1)" fs_mount "$T/b" "$T/m2" || return 2
	unshare -m --propagation private sleep 60 &
	cp=$!
	track_pid "$cp"
	wait_until 10 eval '[ "$(readlink /proc/'"$cp"'/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]'
	old_id=$(awk -v p="$T/m2" '$5 == p { print $1 }' /proc/self/mountinfo)
	out=$("$AGENTFS" umount "$T/m2" 2>&1)
	srv=$(printf '%s\n' "$out" | sed -n 's/.* its server (pid \([0-9]*\)) still runs.*/\1/p')
	like "$out" "its server \\(pid [0-9]+\\) still runs: a copy of the mount lives on" \
		"... unmounted here, a copy keeps it (try $1)" || return 2
	take_old_id "$old_id"
	kill -TERM "$srv"
	check "... SIGTERM ends it, and the folder is free (try $1)" served_free "$T/b" || return 2
	[ -n "$reused" ]
}
try=1
while [ -z "$reused" ] && [ "$try" -lt 3 ]; do
	try=$((try + 1))
	diag "no mount got id $old_id (another took it first): a fresh server, try $try"
	fresh_try "$try"
	case $? in
	2) break ;;
	3)
		diag "the last server of $T/b did not end in 5 s: no fresh try"
		break
		;;
	esac
done
if [ -n "$reused" ]; then
	check "... and the mount that took its old id ($old_id) is left alone" is_mounted "$reused"
else
	skip "... and the mount that took its old id is left alone (no mount got id $old_id in $try tries)"
fi
for m in $(awk -v p="$T/ids/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo); do
	umount "$m"
done
touch "$T/go2"
wait_until 10 test -s "$T/copy2"
like "$(cat "$T/copy2")" "Transport endpoint is not connected" "... the copy with it"

# --- agentfsd beside standalone servers ---------------------------------------------------
daemon_start || bail_out "agentfsd did not start"
expect_ok "create a bot over $T/bot" "$(afs --json create --user 65534 x "$T/bot")"
expect_ok "a bot of the same agentfsd over a folder in it (one server)" \
	"$(afs --json create --user 65534 y "$T/bot/in")"
refused "a standalone server of the bot's folder: refused" "source $T/bot: $busy it" \
	"$T/bot" "$T/m1"
refused "... of a folder in it: refused" "source $T/bot/other: $busy $T/bot, which holds it" \
	"$T/bot/other" "$T/m1"
refused "... of the other bot's folder: refused" "source $T/bot/in: $busy it" "$T/bot/in" "$T/m1"
check "a standalone server of $T/s" fs_mount "$T/s" "$T/m3"
r=$(afs --json create --user 65534 z "$T/s")
expect_error "a bot over a folder a standalone server serves: refused" mount_failed "$r"
like "$(printf '%s' "$r" | jget error.message)" "source $T/s: $busy it" "... saying why"
# A mount that failed before its root was open closed the daemon's fd 0 (a
# field left 0): the first such failure closed /dev/null there, the next the
# socket of the client that had got fd 0, whose reply was lost.
for i in 2 3; do
	expect_error "... refused again ($i), and answered" mount_failed \
		"$(afs --json create --user 65534 z "$T/s" 2>&1)"
done
check "... the daemon's standard input is still /dev/null" \
	test "$(readlink "/proc/$D_PID/fd/0")" = /dev/null
check "unmount the standalone server" fs_umount "$T/m3"
check "... which lets the folder go" served_free "$T/s"
expect_ok "... then the bot is made" "$(afs --json create --user 65534 z "$T/s")"

# --- the next agentfsd holds the folders -----------------------------------------------
old=$D_PID
kill -TERM "$old"
daemon_start || bail_out "the next agentfsd did not start"
wait_until 10 eval '[ "$(afs --json show x | jget bot.mounts.0.state)" = mounted ]'
is "$(afs --json show x | jget bot.mounts.0.state)" mounted "a handover: x is served by the next agentfsd"
check "... which is another process" test "$D_PID" != "$old"
refused "after a handover, a standalone server of the bot's folder: refused" \
	"source $T/bot: $busy it" "$T/bot" "$T/m1"
refused "... of a folder in it too" "source $T/bot/other: $busy $T/bot" "$T/bot/other" "$T/m1"
daemon_kill9 || bail_out "agentfsd did not die"
daemon_start || bail_out "agentfsd did not start after SIGKILL"
is "$(restored_state x)" mounted "after SIGKILL, x is served again"
refused "after SIGKILL, a standalone server of the bot's folder: refused" \
	"source $T/bot: $busy it" "$T/bot" "$T/m1"

# --- a bot's root unmounted from outside while a copy of it lives on -------------------------
# agentfsd serves the copy on (a sandbox's, in practice) and keeps the folder;
# umount names agentfsd and does not advise a SIGTERM (that would only restart it).
zm=$(afs --json show z | jget bot.mounts.0.mountpoint)
unshare -m --propagation private sleep 60 &
cp=$!
track_pid "$cp"
wait_until 10 eval '[ "$(readlink /proc/'"$cp"'/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ]'
out=$("$AGENTFS" umount "$zm" 2>&1)
like "$out" "^agentfs: $zm is unmounted, but agentfsd \\(pid $D_PID\\) still serves a copy of it in another mount namespace \\(a sandbox of the bot: agentfs ps lists them\\); it lets the folder go when the copy goes\\.$" \
	"a bot's root unmounted here while a copy lives on: umount names agentfsd"
# (that it then lets the folder go is not checked: a sandbox of a test beside
# this one may hold a copy too, for as long as it runs)
kill "$cp"
wait "$cp" 2>/dev/null

# --- deleting the bots lets the folders go ----------------------------------------------
for b in y x z; do expect_ok "rm $b" "$(afs --json rm $b)"; done
wait_until 10 eval '[ -z "$(mounts_in "$D_MNT")" ]'
check "agentfsd lets the bots' folders go" served_free "$T/bot"
check "the bots' folders are free: a standalone server of $T/bot mounts" \
	fs_mount "$T/bot" "$T/m1"
check "unmount it" fs_umount "$T/m1"

done_testing
