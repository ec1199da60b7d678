#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-posix: POSIX behaviour through `agentfs mount` matches a native folder.
# tests/fsops runs on a native temp folder and then inside a mount of another
# temp folder; every one of its checks must pass in both.
. "$top_srcdir/tests/lib.sh"

[ -x "$FSOPS" ] || bail_out "$FSOPS is not built"

mkdir "$T/native" "$T/src" "$T/mnt"
chmod 0755 "$T/native" "$T/src"
# fsops' identity checks run as uid 4242, which must reach the folders
if command -v setpriv >/dev/null &&
	! setpriv --reuid=4242 --regid=4242 --clear-groups test -x "$T/native"; then
	skip_all "uid 4242 cannot reach $T (TMPDIR inside a private folder?); use TMPDIR=/tmp"
fi

tap_include native "$FSOPS" native "$T/native"

if ! fs_mount "$T/src" "$T/mnt"; then
	not_ok "mount $T/src on $T/mnt"
	done_testing
	exit 1
fi
ok "mount $T/src on $T/mnt"
is "$(fs_type "$T/mnt")" "$FS_TYPE" "the mount's type is $FS_TYPE"
case ",$(fs_mopts "$T/mnt")," in
*,default_permissions,*allow_other,* | *,allow_other,*default_permissions,*)
	ok "mounted with default_permissions and allow_other" ;;
*)
	not_ok "mounted with default_permissions and allow_other"
	diag "options: $(fs_mopts "$T/mnt")" ;;
esac

# agentfs refuses setuid and setgid files through its mounts: fsops makes
# the ones it needs in the source
if [ "${AGENTFS_TEST_BINDFS:-0}" = 1 ]; then
	tap_include fuse "$FSOPS" "$FS_KIND" "$T/mnt"
else
	tap_include fuse "$FSOPS" "$FS_KIND" "$T/mnt" "$T/src"
fi

# statfs through the mount reports the source's filesystem
is "$(stat -f -c '%S %b %l' "$T/mnt")" "$(stat -f -c '%S %b %l' "$T/src")" \
	"statfs through the mount matches the source's (block size, blocks, name length)"
is "$(ls -A "$T/src" 2>&1)" "" "fsops left the source folder empty"

check "unmount" fs_umount "$T/mnt"
check "nothing is mounted at $T/mnt afterwards" eval '! is_mounted "$T/mnt"'

# modes: what a caller makes gets the mode it gets natively, whatever the
# umask of the shell that started the server (here 077, as under systemd)
made()
{
	(
		cd "$1" || exit 1
		umask 0
		mkdir d && mkdir -m 0777 dm && mkfifo p &&
			(umask 0157 && : >f) && (umask 022 && mkdir d22) || exit 1
		stat -c '%n %a' d dm p f d22 | tr '\n' ' '
	)
}
mkdir "$T/native2" "$T/src2"
chmod 0755 "$T/src2"
if (umask 077 && fs_mount "$T/src2" "$T/mnt"); then
	fs_mounts="$T/mnt $fs_mounts"
	want=$(made "$T/native2")
	is "$(made "$T/mnt")" "$want" "a server started under umask 077 makes modes as native does ($want)"
	check "unmount the umask 077 mount" fs_umount "$T/mnt"
else
	not_ok "mount under umask 077"
fi
done_testing
