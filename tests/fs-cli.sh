#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-cli: `agentfs mount` and `agentfs umount` from the outside: help and
# version, one clear line and a non-zero exit for bad input with nothing left
# mounted, -f that unmounts cleanly on SIGTERM/SIGINT, umount, a mount that
# keeps serving its folder after the host renames it, and a SOURCE reached
# through a symlink refused (DESIGN: a root is opened component by component
# without following links).
. "$top_srcdir/tests/lib.sh"

mkdir -p "$T/src" "$T/mp" "$T/busy" "$T/fg" "$T/m"
chmod 0755 "$T/src"
echo hello >"$T/src/file"
: >"$T/afile"

bindfs_mode=
[ "${AGENTFS_TEST_BINDFS:-0}" = 1 ] && bindfs_mode=1

# bad DESC NEEDLE ARGS...: agentfs ARGS must fail with exactly one line on
# stderr that contains NEEDLE, and leave no new mount under $T
bad()
{
	local desc="$1" needle="$2" rc lines before after
	shift 2
	if [ -n "$bindfs_mode" ]; then
		skip "$desc: the agentfs command line (bindfs stand-in)"
		return
	fi
	before=$(mounts_under "$T")
	timeout -k 2 20 "$AGENTFS" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	after=$(mounts_under "$T")
	lines=$(awk 'END { print NR }' "$T/err")
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$lines" -eq 1 ] &&
		grep -qF -- "$needle" "$T/err" && [ "$before" = "$after" ]; then
		ok "$desc"
		diag "  $(cat "$T/err")"
	else
		not_ok "$desc"
		diag "agentfs $*" "exit status $rc, $lines line(s) on stderr, wanted one naming '$needle'" \
			"mounts under the test folder before $before, after $after"
		sed 's/^/  stderr: /' "$T/err" | head -5 | while IFS= read -r l; do diag "$l"; done
	fi
}

# good DESC NEEDLE ARGS...: agentfs ARGS exits 0 and prints NEEDLE on stdout
good()
{
	local desc="$1" needle="$2" rc
	shift 2
	if [ -n "$bindfs_mode" ]; then
		skip "$desc: the agentfs command line (bindfs stand-in)"
		return
	fi
	timeout -k 2 20 "$AGENTFS" "$@" >"$T/out" 2>"$T/err" </dev/null
	rc=$?
	if [ "$rc" -eq 0 ] && grep -qF -- "$needle" "$T/out"; then
		ok "$desc"
	else
		not_ok "$desc"
		diag "agentfs $*: exit status $rc, wanted 0 and '$needle' on stdout"
		head -5 "$T/out" "$T/err" | while IFS= read -r l; do diag "  $l"; done
	fi
}

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h" 2>/dev/null)
good "agentfs --help" mount --help
good "agentfs mount --help names --ro-path" --ro-path mount --help
good "agentfs --version prints ${version:-the version}" "${version:-.}" --version

bad "no arguments to mount" "" mount
bad "mount with only SOURCE" "" mount "$T/src"
bad "missing SOURCE" "$T/nosuch" mount "$T/nosuch" "$T/mp"
bad "SOURCE is a file" "$T/afile" mount "$T/afile" "$T/mp"
bad "missing MOUNTPOINT" "$T/nomp" mount "$T/src" "$T/nomp"
bad "unknown option" "--bogus" mount --bogus "$T/src" "$T/mp"
bad "unknown option after the paths" "--bogus" mount "$T/src" "$T/mp" --bogus
ln -s src "$T/srclink"
bad "SOURCE is a symlink to a folder: refused" "$T/srclink" mount "$T/srclink" "$T/mp"
ln -s "$T" "$T/tlink"
bad "a symlink among SOURCE's components: refused" "tlink" mount "$T/tlink/src" "$T/mp"
bad "umount of a folder that is not a mount" "$T/mp" umount "$T/mp"
bad "umount without MOUNTPOINT" "" umount
bad "unknown command" "bogus" bogus
bad "--ro-path without its argument" "--ro-path" mount --ro-path
bad "--ro-path leaving SOURCE" "../x" mount --ro-path ../x "$T/src" "$T/mp"
bad "--ro-path absolute" "/etc" mount --ro-path /etc "$T/src" "$T/mp"
bad "--ro-path missing under SOURCE" "nosuch" mount --ro-path nosuch "$T/src" "$T/mp"
bad "unknown -o option" "bogus_opt" mount -o bogus_opt "$T/src" "$T/mp"
bad "-o poll= not a number" "poll=soon" mount -o poll=soon "$T/src" "$T/mp"
bad "-o poll= too long" "poll=20000" mount -o poll=20000 "$T/src" "$T/mp"
bad "-o timeout= negative" "timeout=-1" mount -o timeout=-1 "$T/src" "$T/mp"

# -o poll=0 (workers never wait for a next request) and a long poll serve alike
for p in 0 5000; do
	if fs_mount -o poll=$p "$T/src" "$T/mp"; then
		echo "p$p" >"$T/mp/poll$p"
		is "$(cat "$T/src/poll$p" 2>&1)" "p$p" "-o poll=$p: a file written through the mount"
		is "$(ls "$T/mp" | grep -c "^poll$p\$")" 1 "-o poll=$p: and listed"
		check "-o poll=$p: umount" fs_umount "$T/mp"
		rm -f "$T/src/poll$p"
	else
		not_ok "-o poll=$p: mount"
	fi
done

# MOUNTPOINT already a mount point: refused, the first mount untouched
if fs_mount "$T/src" "$T/busy"; then
	mkdir "$T/other"
	bad "MOUNTPOINT busy (already a mount point)" "$T/busy" mount "$T/other" "$T/busy"
	bad "MOUNTPOINT busy, same SOURCE" "$T/busy" mount "$T/src" "$T/busy"
	is "$(awk -v p="$T/busy" '$5 == p { n++ } END { print n + 0 }' /proc/self/mountinfo)" 1 \
		"still exactly one mount at the busy mount point"
	is "$(cat "$T/busy/file" 2>&1)" hello "the first mount still serves"
	check "umount the busy mount point" fs_umount "$T/busy"
else
	not_ok "mount for the busy case"
fi

# without -f: returns once the mount answers
if fs_mount "$T/src" "$T/m"; then
	ok "mount without -f returns with the folder mounted"
	is "$(cat "$T/m/file" 2>&1)" hello "the mount answers right after mount returns"
	is "$(fs_type "$T/m")" "$FS_TYPE" "the mount's type is $FS_TYPE"
	copied=
	if [ -z "$bindfs_mode" ]; then
		out=$("$AGENTFS" umount "$T/m" 2>&1)
		is "$?" 0 "agentfs umount exits 0"
		# A sandbox another test started meanwhile may hold a copy of the
		# mount (the host's / is private here): then the server rightly
		# serves it on, umount says so, and this check cannot be made.
		case "$out" in *"a copy of the mount lives on in another mount namespace"*)
			copied=$out ;;
		*) is "$out" "" "... and says nothing" ;;
		esac
	else
		check "fusermount3 -u exits 0" fusermount3 -u "$T/m"
	fi
	check "nothing is mounted after umount" eval '! is_mounted "$T/m"'
	if [ -n "$copied" ]; then
		skip "the background server exits after umount (not here: $copied)"
		kill -TERM $(lib_our_servers) 2>/dev/null
	elif [ -z "$bindfs_mode" ]; then
		if wait_until 5 eval '[ -z "$(lib_our_servers)" ]'; then
			ok "the background server exits after umount"
		else
			not_ok "the background server exits after umount"
			diag "still running: $(lib_our_servers)"
		fi
	fi
	is "$(ls "$T/m" 2>&1)" "" "the mount point is an empty folder again"
else
	not_ok "mount without -f"
fi

# relative SOURCE and MOUNTPOINT
if [ -z "$bindfs_mode" ]; then
	mkdir "$T/rel"
	if (cd "$T" && "$AGENTFS" mount src rel) 2>"$T/err"; then
		fs_mounts="$T/rel $fs_mounts"
		ok "mount with relative paths"
		is "$(cat "$T/rel/file" 2>&1)" hello "the relative mount serves SOURCE"
		check "umount with a relative path" sh -c 'cd "$1" && "$2" umount rel' - "$T" "$AGENTFS"
		check "nothing mounted after the relative umount" eval '! is_mounted "$T/rel"'
	else
		not_ok "mount with relative paths"
		diag "stderr: $(cat "$T/err")"
	fi
fi

# -f: SIGTERM and SIGINT unmount cleanly and exit 0
for sig in TERM INT; do
	if fs_mount_fg "$T/src" "$T/fg"; then
		ok "mount -f: mounted ($sig case)"
		is "$(cat "$T/fg/file" 2>&1)" hello "mount -f serves the folder"
		kill -$sig "$FS_PID"
		timeout 10 tail --pid="$FS_PID" -f /dev/null
		if kill -0 "$FS_PID" 2>/dev/null; then
			not_ok "mount -f exits on SIG$sig"
		else
			wait "$FS_PID"
			is "$?" 0 "mount -f exits 0 on SIG$sig"
		fi
		check "mount -f: nothing mounted after SIG$sig" eval '! is_mounted "$T/fg"'
		is "$(ls "$T/fg" 2>&1)" "" "mount -f: the mount point is usable again after SIG$sig"
	else
		not_ok "mount -f: mounted ($sig case)"
	fi
done

# -f: an unmount from outside ends the foreground server, with status 0
if fs_mount_fg "$T/src" "$T/fg"; then
	check "mount -f, then umount from outside" fs_umount "$T/fg"
	timeout 10 tail --pid="$FS_PID" -f /dev/null
	if kill -0 "$FS_PID" 2>/dev/null; then
		not_ok "mount -f exits once unmounted from outside"
	else
		wait "$FS_PID"
		is "$?" 0 "mount -f exits 0 once unmounted from outside"
	fi
else
	not_ok "mount -f: mounted (umount case)"
fi

# the mount keeps serving the folder it opened when the host renames it
mkdir "$T/src2"
chmod 0755 "$T/src2"
echo one >"$T/src2/a"
if fs_mount "$T/src2" "$T/m"; then
	is "$(cat "$T/m/a" 2>&1)" one "before the rename: the mount serves SOURCE"
	mv "$T/src2" "$T/src2.moved"
	mkdir "$T/src2"
	echo decoy >"$T/src2/a"
	sleep 0.2
	is "$(cat "$T/m/a" 2>&1)" one "after the host renames SOURCE, the mount serves the same folder"
	echo new >"$T/m/b"
	is "$(cat "$T/src2.moved/b" 2>&1)" new "a file made through the mount lands in the renamed folder"
	check "nothing lands in the new folder at the old path" test ! -e "$T/src2/b"
	is "$(ls "$T/m" | tr '\n' ' ')" "a b " "the listing is the renamed folder's"
	check "umount" fs_umount "$T/m"
else
	not_ok "mount for the rename case"
fi

# --- the conventions of mount(8), bindfs and sshfs -------------------------------------------
# mtab SOURCE MNT: "SOURCE OPTIONS" of the mount at MNT in /proc/mounts
mtab() { awk -v p="$1" '$2 == p { print $1, $4 }' /proc/self/mounts; }
has_opt() { case ",$(mtab "$1" | cut -d' ' -f2)," in *",$2,"*) return 0 ;; esac; return 1; }
if [ -z "$bindfs_mode" ]; then
	# read-only: the mount table says so
	for ro in --ro "-o ro"; do
		# shellcheck disable=SC2086
		if fs_mount $ro "$T/src" "$T/m"; then
			check "$ro: /proc/mounts shows ro" has_opt "$T/m" ro
			is "$(touch "$T/m/x" 2>&1 | grep -c 'Read-only file system')" 1 "$ro: a write fails with EROFS"
			check "$ro: umount" fs_umount "$T/m"
		else
			not_ok "$ro: mount"
		fi
	done

	# fsname: the source's absolute path, even when given relative
	if (cd "$T" && "$AGENTFS" mount src m); then
		fs_mounts="$T/m $fs_mounts"
		is "$(mtab "$T/m" | cut -d' ' -f1)" "$T/src" "the mount's source in /proc/mounts is SOURCE's absolute path"
		check "rw by default" has_opt "$T/m" rw
		check "nosuid by default" has_opt "$T/m" nosuid
		check "nodev by default" has_opt "$T/m" nodev
		check "relatime by default" has_opt "$T/m" relatime
		check "umount" fs_umount "$T/m"
	else
		not_ok "mount with a relative SOURCE for fsname"
	fi
	if fs_mount -o fsname=myname "$T/src" "$T/m"; then
		is "$(mtab "$T/m" | cut -d' ' -f1)" myname "-o fsname=myname names the mount"
		check "umount" fs_umount "$T/m"
	fi

	# noexec/exec, suid, dev, noatime, nodiratime are the kernel mount's flags
	printf '#!/bin/sh\necho ran\n' >"$T/src/prog"
	chmod 0755 "$T/src/prog"
	if fs_mount -o noexec,suid,dev,noatime,nodiratime "$T/src" "$T/m"; then
		for o in noexec noatime nodiratime; do
			check "-o $o shows in /proc/mounts" has_opt "$T/m" $o
		done
		check "-o suid: no nosuid in /proc/mounts" eval '! has_opt "$T/m" nosuid'
		check "-o dev: no nodev in /proc/mounts" eval '! has_opt "$T/m" nodev'
		is "$("$T/m/prog" 2>&1 | grep -c 'Permission denied')" 1 "-o noexec: a program in the mount does not run"
		# the kernel keeps no atime on FUSE: the source's is what the server's reads leave
		echo data >"$T/src/at"
		touch -a -d 2001-01-01 "$T/src/at" "$T/src"
		before=$(stat -c %X "$T/src/at")
		cat "$T/m/at" >/dev/null
		is "$(stat -c %X "$T/src/at")" "$before" "-o noatime: a read through the mount leaves the file's atime"
		before=$(stat -c %X "$T/src")
		ls "$T/m" >/dev/null
		is "$(stat -c %X "$T/src")" "$before" "-o nodiratime: a listing leaves the folder's atime"
		check "umount" fs_umount "$T/m"
	else
		not_ok "mount -o noexec,suid,dev,noatime,nodiratime"
	fi
	if fs_mount -o noexec,exec "$T/src" "$T/m"; then
		is "$("$T/m/prog" 2>&1)" ran "-o exec (the last one wins): a program in the mount runs"
		touch -a -d 2001-01-01 "$T/src/at"
		cat "$T/m/at" >/dev/null
		if [ "$(stat -c %X "$T/src/at")" != "$(date -d 2001-01-01 +%s)" ]; then
			ok "without noatime, a read through the mount updates the source's atime (relatime)"
		else
			# the source's own mount may be noatime
			skip "the source's filesystem keeps no atime"
		fi
		check "umount" fs_umount "$T/m"
	else
		not_ok "mount -o noexec,exec"
	fi

	# a mount point with entries is refused, unless -o nonempty or it is the source
	mkdir "$T/full"
	echo hidden >"$T/full/hidden"
	bad "a non-empty MOUNTPOINT is refused" "-o nonempty" mount "$T/src" "$T/full"
	if fs_mount -o nonempty "$T/src" "$T/full"; then
		is "$(cat "$T/full/file" 2>&1)" hello "-o nonempty mounts over a folder with entries"
		check "umount" fs_umount "$T/full"
	else
		not_ok "mount -o nonempty"
	fi
	is "$(cat "$T/full/hidden" 2>&1)" hidden "what the folder held is there again"
	if fs_mount "$T/src" "$T/src"; then
		ok "mounting over SOURCE itself needs no -o nonempty"
		check "umount" fs_umount "$T/src"
	else
		not_ok "mounting over SOURCE itself needs no -o nonempty"
	fi

	# auto_unmount: a server killed with SIGKILL leaves no dead mount behind
	if fs_mount -o auto_unmount "$T/src" "$T/m"; then
		# the watcher is the server's child; it names itself once it runs,
		# which on a busy machine can be after the mount is there
		find_watcher()
		{
			local p
			srv=
			for p in $(lib_our_servers); do
				[ "$(cat "/proc/$p/comm" 2>/dev/null)" = agentfs-unmount ] &&
					srv="$srv $(awk '/^PPid:/ { print $2 }' "/proc/$p/status")"
			done
			[ -n "$srv" ]
		}
		wait_until 5 find_watcher
		is "$(echo $srv | wc -w)" 1 "-o auto_unmount: a watcher runs beside the server"
		# shellcheck disable=SC2086
		kill -KILL $srv
		if wait_until 5 eval '! is_mounted "$T/m"'; then
			ok "-o auto_unmount: the mount goes when its server is killed"
		else
			not_ok "-o auto_unmount: the mount goes when its server is killed"
			diag "$(mtab "$T/m")"
		fi
		if wait_until 5 eval '[ -z "$(lib_our_servers)" ]'; then
			ok "-o auto_unmount: its watcher exits too"
		else
			not_ok "-o auto_unmount: its watcher exits too"
		fi
	else
		not_ok "mount -o auto_unmount"
	fi
	if fs_mount "$T/src" "$T/m"; then
		kill -KILL $(lib_our_servers)
		sleep 0.5
		check "without auto_unmount, a killed server leaves its mount (as FUSE does)" is_mounted "$T/m"
		fusermount3 -uz "$T/m" 2>/dev/null || umount -l "$T/m"
	fi

	# the server keeps no thread in the folder it was started from
	mkdir "$T/tm"
	if mount -t tmpfs none "$T/tm" 2>/dev/null; then
		if (cd "$T/tm" && "$AGENTFS" mount "$T/src" "$T/m"); then
			fs_mounts="$T/m $fs_mounts"
			check "the folder agentfs mount was run from can be unmounted while it serves" \
				umount "$T/tm"
			check "umount" fs_umount "$T/m"
		else
			not_ok "mount from a folder on a tmpfs"
		fi
		is_mounted "$T/tm" && umount -l "$T/tm"
	else
		skip "cannot mount a tmpfs here"
	fi

	# -o debug without -f: nothing on the terminal once agentfs has returned
	if "$AGENTFS" mount -o debug "$T/src" "$T/m" >"$T/debug.out" 2>&1; then
		fs_mounts="$T/m $fs_mounts"
		ls "$T/m" >/dev/null
		cat "$T/m/file" >/dev/null
		check "umount" fs_umount "$T/m"
		# read once the server is gone: it has written all it ever will
		wait_until 5 eval '[ -z "$(lib_our_servers)" ]' || diag "the server outlived its mount"
		is "$(wc -c <"$T/debug.out")" 0 "-o debug without -f writes nothing to the caller's output"
	else
		not_ok "mount -o debug without -f"
	fi
	# --log FILE: every refusal, with the process that asked; the log itself is rate-limited
	mkdir -p "$T/lsrc/ro" "$T/lm"
	if "$AGENTFS" mount --ro-path ro --log "$T/refused.log" "$T/lsrc" "$T/lm"; then
		fs_mounts="$T/lm $fs_mounts"
		for i in 1 2 3; do
			sh -c 'echo x >"$1/ro/f"' sh "$T/lm" 2>/dev/null
		done
		is "$(grep -c 'refused create of '"$T"'/lm/ro/f: read-only path (pid [0-9]* sh)' \
			"$T/refused.log")" 3 "--log: each refusal one line, with path, reason, pid and command"
		check "umount (--log)" fs_umount "$T/lm"
	else
		not_ok "mount --log"
	fi
	if "$AGENTFS" mount --ro-path ro --log-json "$T/refused.json" "$T/lsrc" "$T/lm"; then
		fs_mounts="$T/lm $fs_mounts"
		touch "$T/lm/ro/new" 2>/dev/null
		check "--log-json: one JSON object with type, path, op and rule" grep -qF \
			'"type":"refused","path":"'"$T"'/lm/ro/new","dir":false,"op":"create","rule":"read-only path"' \
			"$T/refused.json"
		check "--log-json: the command name" grep -qF '"comm":"touch"' "$T/refused.json"
		check "umount (--log-json)" fs_umount "$T/lm"
	else
		not_ok "mount --log-json"
	fi
	# --log that cannot be written (a full disk): said once, not once a refusal
	if [ ! -w /dev/full ]; then
		skip "--log on a full disk: no /dev/full"
	elif fs_mount_fg --ro-path ro --log /dev/full "$T/lsrc" "$T/lm" 2>"$T/full.err"; then
		for i in 1 2 3; do
			sh -c 'echo x >"$1/ro/f"' sh "$T/lm" 2>/dev/null
		done
		check "umount (--log /dev/full)" fs_umount "$T/lm"
		wait_until 10 sh -c "! kill -0 $FS_PID" || diag "the mount -f server did not exit"
		is "$(grep -c 'cannot append to the --log file: No space left on device' "$T/full.err")" 1 \
			"--log on a full disk: three refusals, the failure said once"
	else
		not_ok "mount --log /dev/full"
	fi
	bad "--log in a missing folder" "$T/nosuch/log" mount --log "$T/nosuch/log" "$T/lsrc" "$T/lm"
fi
done_testing
