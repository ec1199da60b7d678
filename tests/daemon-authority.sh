#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-authority: what a bot may do through its own socket (AGENT_SOCKET),
# resent creates, deleting a parent, and configure changing a live mount.
. "$top_srcdir/tests/daemon-lib.sh"

# write_err FILE: empty if writing FILE works, else the shell's error
write_err()
{
	{ echo data >"$1"; } 2>&1
}

# mount_points BOT: the bot's mount points, on one line
mount_points()
{
	mounts_in "$D_MNT/$1" | awk '{ print $2 }' | sort | tr '\n' ' '
}

mkdir -p "$T/a/sub/g" "$T/a/ro" "$T/other" "$T/b/r" "$T/ro" "$T/s" "$T/bw"
ln -s "$T/other" "$T/a/escape"

daemon_start || bail_out "agentfsd did not start"

expect_ok "operator creates A in \$T/a" "$(afs --json create --user 65534 A "$T/a")"
expect_ok "operator creates B in \$T/b" "$(afs --json create --user 65534 B "$T/b")"

# --- a child inside the bot's folder ----------------------------------------
r=$(as A create c1 "$T/a/sub")
expect_ok "A creates c1 inside its folder" "$r"
is "$(printf '%s' "$r" | jget bot.creator)" A "c1's creator is A"
is "$(printf '%s' "$r" | jget bot.sandbox)" workspace-write "c1 inherits A's sandbox"
is "$(printf '%s' "$r" | jget bot.network)" false "c1 inherits A's network (off)"
is "$(printf '%s' "$r" | jget bot.mounts.0.state)" mounted "c1's folder is mounted"
is "$(as c1 status | jget bot)" c1 "c1's socket answers as c1"
expect_ok "c1 creates g1 inside its folder" "$(as c1 create g1 "$T/a/sub/g")"
expect_ok "A creates a read-only child in its folder" "$(as A create r2 "$T/a/ro" --sandbox read-only)"

# --- beyond the ceiling -------------------------------------------------------
expect_error "A creates a child outside its writable roots" forbidden \
	"$(as A create c2 "$T/other")"
expect_error "A creates a child with an extra writable root outside its own" forbidden \
	"$(as A create c3 "$T/a/sub" --writable "$T/other")"
expect_error "A creates a child with a readable root it cannot read" forbidden \
	"$(as A create c3r "$T/a/sub" --readable "$T/other")"
expect_error "A creates a read-only child on a folder it cannot read" forbidden \
	"$(as A create c3o "$T/other" --sandbox read-only)"
expect_error "A creates a child with a weaker sandbox" forbidden \
	"$(as A create c4 "$T/a/sub" --sandbox danger-full-access)"
expect_error "A (no network) creates a child with network" forbidden \
	"$(as A create c5 "$T/a/sub" --network)"
expect_error "A (no allow_new_repos) creates a child that may make repos" forbidden \
	"$(as A create c6 "$T/a/sub" --allow-new-repos)"
expect_error "r2 (read-only) creates a workspace-write child" forbidden \
	"$(as r2 create r3 "$T/a/ro" --sandbox workspace-write)"
expect_error "A forks c1 with network" forbidden "$(as A fork c1 c7 --network)"
expect_error "A creates a child on a symlink in its folder that leads out" bad_path \
	"$(as A create e1 "$T/a/escape")"
expect_error "A creates a child with a writable root through that symlink" bad_path \
	"$(as A create e2 "$T/a/sub" --writable "$T/a/escape")"
is "$(afs --json ls | names)" "A B c1 g1 r2 " "no refused bot was made"

# --- no power over itself or the daemon --------------------------------------
expect_error "A configures itself (even stricter)" forbidden \
	"$(as A configure A --sandbox read-only)"
expect_error "A shuts the daemon down" forbidden "$(as A shutdown)"
is "$(afs --json status | jget ok)" true "the daemon still answers after a bot's shutdown"
expect_error "A deletes itself" forbidden "$(as A rm A)"
expect_error "A deletes B, which it did not make" not_found "$(as A rm B)"
expect_error "c1 deletes A, its creator" not_found "$(as c1 rm A)"
expect_error "A shows B" not_found "$(as A show B)"
expect_error "A configures B" not_found "$(as A configure B --sandbox read-only)"
expect_error "A forks B" not_found "$(as A fork B b-copy)"
is "$(afs --json show B | jget bot.mounts.0.state)" mounted "B is untouched"
expect_error "A gives c1 network (beyond A's ceiling)" forbidden \
	"$(as A configure c1 --network)"
expect_error "the operator gives c1 network (held to its creator A)" forbidden \
	"$(afs --json configure c1 --network)"
expect_error "the operator widens c1 to danger-full-access (held to A)" forbidden \
	"$(afs --json configure c1 --sandbox danger-full-access)"

# --- what a bot sees -----------------------------------------------------------
is "$(as A ls | names)" "A c1 g1 r2 " "A lists itself and its descendants only"
is "$(as c1 ls | names)" "c1 g1 " "c1 lists itself and g1 only"
is "$(as B ls | names)" "B " "B lists only itself"
is "$(afs --json ls | names)" "A B c1 g1 r2 " "the operator lists every bot"
expect_ok "A forks c1 (its own child) as c1f" "$(as A fork c1 c1f)"
is "$(afs --json show c1f | jget bot.creator)" A "the fork belongs to A"

# --- deleting the parent deletes its children --------------------------------
r=$(afs --json rm A)
is "$(printf '%s' "$r" | jget 'deleted.*' | sort | tr '\n' ' ')" "A c1 c1f g1 r2 " \
	"rm A deletes A, c1, c1f, g1 and r2"
left=
for b in A c1 c1f g1 r2; do
	[ -e "$D_SOCK.d/$b.sock" ] && left="$left $b"
done
is "$left" "" "their sockets are gone"
is "$(mounts_in "$D_MNT" | awk '{ print $2 }')" "$D_MNT/B/0" "only B's mount is left"
is "$(afs --json ls | names)" "B " "only B is left"
check "the state file is valid JSON" state_valid

# --- resent create -------------------------------------------------------------
r1=$(afs --json create --user 65534 R1 "$T/b/r" --id resend-1)
expect_ok "create R1 with id resend-1" "$r1"
r2=$(afs --json create --user 65534 R1 "$T/b/r" --id resend-1)
expect_ok "the same create resent (same id, same caller) succeeds" "$r2"
is "$(printf '%s' "$r2" | jget bot.name) $(printf '%s' "$r2" | jget bot.created)" \
	"R1 $(printf '%s' "$r1" | jget bot.created)" "the resend returns the bot the first made"
is "$(printf '%s' "$r2" | jget id)" resend-1 "the resend's reply echoes its id"
is "$(afs --json ls | names)" "B R1 " "there is one R1"
expect_error "the same id from another caller (B)" exists \
	"$(as B create R1 "$T/b/r" --id resend-1)"
expect_error "a new id for an existing name" exists "$(afs --json create --user 65534 R1 "$T/b/r" --id resend-2)"

# --- resent fork after its source is gone ----------------------------------------
expect_ok "create S" "$(afs --json create --user 65534 S "$T/s")"
r1=$(afs --json fork S Sf --id fork-1)
expect_ok "fork S as Sf with id fork-1" "$r1"
expect_ok "delete S" "$(afs --json rm S)"
r2=$(afs --json fork S Sf --id fork-1)
expect_ok "the fork resent after S is gone is answered from the first" "$r2"
is "$(printf '%s' "$r2" | jget bot.name) $(printf '%s' "$r2" | jget bot.created)" \
	"Sf $(printf '%s' "$r1" | jget bot.created)" "with the same Sf"
expect_error "a new fork of the gone S" not_found "$(afs --json fork S Sg --id fork-2)"

# --- configure adds and removes roots ----------------------------------------------
idB=$(mounts_in "$D_MNT/B" | awk '{ print $1 }')
r=$(afs --json configure B --writable "$T/bw")
expect_ok "configure B --writable \$T/bw" "$r"
is "$(printf '%s' "$r" | jget 'bot.mounts.*.state' | tr '\n' ' ')" "mounted mounted " \
	"B's new root is mounted"
newmp=$(printf '%s' "$r" | jget bot.mounts.1.mountpoint)
case "$newmp" in
"$D_MNT"/B/[0-9]*) ok "the new root's mount point is STATE/mnt/B/N (${newmp##*/})" ;;
*) not_ok "the new root's mount point is STATE/mnt/B/N"; diag "got: $newmp" ;;
esac
is "$(mount_points B)" "$D_MNT/B/0 $newmp " "mountinfo: B/0 and the new one"
expect_ok "configure B --no-writable" "$(afs --json configure B --no-writable)"
is "$(mount_points B)" "$D_MNT/B/0 " "the removed root is detached"
is "$(mounts_in "$D_MNT/B" | awk '{ print $1 }')" "$idB" "B's folder kept its mount"

# --- configure applies to the live mount ---------------------------------------
expect_ok "create RO read-only" "$(afs --json create --user 65534 RO "$T/ro" --sandbox read-only)"
is "$(afs --json show RO | jget bot.mounts.0.access)" ro "RO's folder is mounted ro"
kflags() { awk -v p="$D_MNT/RO/0" '$2 == p { split($4, o, ","); print o[1] }' /proc/self/mounts; }
is "$(kflags)" ro "/proc/mounts shows RO's mount ro"
id1=$(mounts_in "$D_MNT/RO" | awk '{ print $1 }')
echo held >"$T/ro/held"
# A file held open across the changes: a remount would cut it off.
exec 7<"$D_MNT/RO/0/held"
e=$(write_err "$D_MNT/RO/0/f1")
case "$e" in
*"Read-only file system"*) ok "a write in RO's mount fails with EROFS" ;;
*) not_ok "a write in RO's mount fails with EROFS"; diag "got: '$e'" ;;
esac
expect_ok "configure RO --sandbox workspace-write" \
	"$(afs --json configure RO --sandbox workspace-write)"
is "$(afs --json show RO | jget bot.mounts.0.access)" rw "show: RO's folder is now rw"
e=$(write_err "$D_MNT/RO/0/f1")
is "$e" "" "the same write now works on the existing mount"
is "$(cat "$T/ro/f1" 2>/dev/null)" data "the file is in RO's folder"
is "$(mounts_in "$D_MNT/RO" | awk '{ print $1 }')" "$id1" "same mount id: no remount"
is "$(kflags)" rw "/proc/mounts shows it rw now"
expect_ok "configure RO --sandbox read-only again" "$(afs --json configure RO --sandbox read-only)"
e=$(write_err "$D_MNT/RO/0/f2")
case "$e" in
*"Read-only file system"*) ok "writes fail again at once" ;;
*) not_ok "writes fail again at once"; diag "got: '$e'" ;;
esac
is "$(mounts_in "$D_MNT/RO" | awk '{ print $1 }')" "$id1" "still the same mount id"
is "$(kflags)" ro "/proc/mounts shows it ro again"
is "$(timeout 5 cat /proc/self/fd/7 2>&1)" held "a file opened before both changes still reads"
exec 7<&-
check "the state file is valid JSON" state_valid

expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 5
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"

done_testing
