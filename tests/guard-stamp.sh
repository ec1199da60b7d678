#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-stamp: the guard sees a host change to a repository's hooks folder by
# its stamp (ctime, mtime, size).  A file system stamps with a coarse clock:
# a second on ext4 with 128-byte inodes (made here on a loop device), a jiffy
# on Linux before 6.13.  So two changes within one tick, the first before
# the guard read the folder and the second after, leave the stamp it took:
# here the person's hook installer writes a file and then links a hook to a
# tracked script, and the guard read the folder in between.  A stamp taken
# within a tick of its change is looked at again until it is older, so the
# link is seen, and the person's plain git commit afterwards runs nothing
# the bot wrote.
#
# Cleanup (trap): agentfs umount, then umount the loop filesystem and
# losetup -d its device, then lib.sh's.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

need_agentfs "a guarded mount"
guard_needs mkfs.ext4 losetup
losetup -f >/dev/null 2>&1 || skip_all "no free loop device (losetup -f fails)"

IMG="$T/disk.img"
L="$T/coarse"
M="$T/m"

stamp_cleanup()
{
	local rc=$?
	set +e
	loop_unmount "$M" "$L" "$IMG"
	(exit "$rc")
	lib_cleanup
}
trap stamp_cleanup EXIT

mkdir -p "$L" "$M"
dd if=/dev/zero of="$IMG" bs=1M count=32 status=none || bail_out "cannot make the image"
mkfs.ext4 -q -F -I 128 "$IMG" >/dev/null 2>&1 || skip_all "mkfs.ext4 -I 128 failed"
mount -o loop "$IMG" "$L" 2>/dev/null || skip_all "cannot loop-mount an ext4 image here"
chmod 0755 "$L"

# the file system keeps whole seconds: two changes within one share a stamp
mkdir "$L/probe"
touch "$L/probe/a"
c1=$(stat -c %z "$L/probe")
touch "$L/probe/b"
c2=$(stat -c %z "$L/probe")
case "$c1" in
*.000000000*) ok "ext4 with 128-byte inodes stamps whole seconds ($c1)" ;;
*) skip_all "this ext4 keeps sub-second stamps with 128-byte inodes ($c1)" ;;
esac
rm -rf "$L/probe"
diag "two changes: $c1 then $c2"

R="$L/r"
RAN="$T/RAN-person"
host_setup repo sh -c "
	git init -q '$R' &&
	mkdir '$R/scripts' &&
	printf '#!/bin/sh\ntouch %s\n' '$RAN' >'$R/scripts/check.sh' &&
	chmod 755 '$R/scripts/check.sh' &&
	echo notes >'$R/scripts/notes.txt' &&
	git -C '$R' add scripts &&
	git -C '$R' commit -qm scripts"
mount_or_stop "a writable mount over the coarse file system" fs_mount --log "$GUARD_LOG" "$L" "$M"
is "$(shell_result append_text "$M/r/scripts/notes.txt" "the bot's note")" OK \
	"the bot works in the repository (it is read)"
is "$(shell_result append_text "$M/r/scripts/check.sh" "# the bot's line")" OK \
	"the tracked script is a plain file while no hook leads to it"
cp "$R/scripts/check.sh" "$T/script"
payload "$T/pay" stamp

# The installer's two steps, within one second, with the guard reading the
# hooks folder between them (the bot's write after the first step is the
# decision the look comes before).  A try that crosses a second is undone
# and made again.
same=no
for try in 1 2 3 4 5 6; do
	sleep "0.$(printf %09d $((999999999 - 10#$(date +%N))))" # to the start of a second
	sleep 0.02
	touch "$R/.git/hooks/installed-$try"
	before=$(stat -c %z "$R/.git/hooks")
	sleep 0.12 # past the guard's 50 ms between looks
	shell_result append_text "$M/r/scripts/notes.txt" "try $try" >/dev/null
	ln -s ../../scripts/check.sh "$R/.git/hooks/pre-commit"
	after=$(stat -c %z "$R/.git/hooks")
	if [ "$before" = "$after" ]; then
		same=yes
		break
	fi
	rm "$R/.git/hooks/pre-commit"
	diag "try $try crossed a second ($before, $after): again"
done
if [ "$same" != yes ]; then
	# four checks ran already: a plan of 1..0 now would be an error, so the
	# eight below are each skipped
	for n in 1 2 3 4 5 6 7 8; do
		skip "no try kept both changes within one second (a busy machine)"
	done
	fs_umount "$M"
	done_testing
	exit 0
fi
ok "the hook link came in the same second as the change before the guard's look ($after)"

sleep 0.12
refused_by "the script the new hook links to: writing it refused" D3 \
	shell_result cp "$T/pay" "$M/r/scripts/check.sh"
refused_by "... appending too" D3 \
	shell_result append_text "$M/r/scripts/check.sh" more
check "the script is as it was when the hook was made" cmp -s "$T/script" "$R/scripts/check.sh"
is "$(shell_result append_text "$M/r/scripts/notes.txt" again)" OK \
	"the file beside it stays writable"

check "host: git commit in the repository" git -C "$R" commit -q --allow-empty -m "host after the bot"
check "host: the person's hook ran" test -e "$RAN"
no_marker "host: the bot's payload did not run" stamp

fs_umount "$M"
done_testing
