#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-roots: create, fork and configure refuse a bot that could never run
# or should never be: a confined bot whose user would be root (with the words
# exec uses), a root on a pseudo file system (proc, sysfs, devtmpfs, cgroup,
# ...: decided by the opened folder's file system, so a bind mount or a
# subfolder is refused too), and a root at or in agentfsd's own state folder
# or bots' socket folder, or at its control socket's folder, and a read-only
# root inside a writable one (it would be writable). Each refusal leaves
# nothing made, mounted or changed.
. "$top_srcdir/tests/daemon-lib.sh"

mkdir -p "$T/rootowned" "$T/mine" "$T/bind"
chown 65534 "$T/mine"
daemon_start || bail_out "agentfsd did not start"

# refused NAME DESC CODE WANT ARGS...: `agentfs ARGS` fails with exit 125 and
# error CODE, its message holds WANT, and no bot NAME is left
refused()
{
	local name="$1" desc="$2" code="$3" want="$4" out rc
	shift 4
	out=$(afs "$@" 2>&1)
	rc=$?
	case "$rc:$out" in
	"125:agentfs: $code: "*"$want"*) ok "$desc" ;;
	*) not_ok "$desc"; diag "exit $rc: $out" "want exit 125, $code: ...$want..." ;;
	esac
	afs --json show "$name" 2>/dev/null | grep -q '"ok":true' &&
		{ not_ok "... and no bot $name is left"; return; }
	[ -e "$D_MNT/$name" ] && { not_ok "... and nothing of $name is left in $D_MNT"; return; }
	ok "... and nothing of $name is left"
}

# --- a confined bot whose user would be root ----------------------------------------------
refused r1 "create over a root-owned folder, no user: refused" forbidden \
	"bot r1 would run as root (the owner of $T/rootowned): a bot runs as root only with sandbox danger-full-access. Make it again with --user USER" \
	create r1 "$T/rootowned"
refused r2 "create --user root: refused" forbidden "bot r2 would run as root (--user names root)" \
	create r2 "$T/mine" --user root
refused r3 "create --user 0 --sandbox read-only: refused" forbidden "would run as root" \
	create r3 "$T/mine" --user 0 --sandbox read-only
expect_ok "create over a root-owned folder with --user 65534" \
	"$(afs --json create u1 "$T/rootowned" --user 65534)"
is "$(afs --json show u1 | jget bot.uid)" 65534 "... runs as 65534"
expect_ok "a folder owned by 65534, no user: runs as its owner" "$(afs --json create u2 "$T/mine")"
expect_ok "danger-full-access over a root-owned folder: allowed, it runs unconfined as root" \
	"$(afs --json create full "$T/rootowned" --sandbox danger-full-access)"
refused f1 "fork of it into a workspace-write bot: refused" forbidden \
	"bot f1 would run as root (the user of the bot it comes from)" \
	fork full f1 --sandbox workspace-write
expect_ok "fork of it, danger-full-access still: allowed" "$(afs --json fork full f2)"
out=$(afs configure full --sandbox read-only 2>&1)
rc=$?
like "$rc:$out" "^125:agentfs: forbidden: bot full would run as root \\(its user\\)" \
	"configure of it to read-only: refused, exit 125"
is "$(afs --json show full | jget bot.sandbox)" danger-full-access "... and it is unchanged"
# the words are exec's own: one message for every place that refuses it
out=$(afs exec full -- true 2>&1)
is "$?" 0 "exec of the danger-full-access bot runs (as root)"

# --- pseudo file systems ------------------------------------------------------------------
refused p1 "create over /proc: refused" bad_path "/proc is on a proc file system, a kernel interface" \
	create p1 /proc --user 65534
refused p2 "create over /proc/sys (a folder in it): refused" bad_path "/proc/sys is on a proc file system" \
	create p2 /proc/sys --user 65534
refused p3 "create over /sys: refused" bad_path "/sys is on a sysfs file system" \
	create p3 /sys --user 65534
# every other type, mounted under $T for this test where the kernel lets us
# (else the host's own mount of it, else skipped): a cgroup v1 hierarchy is
# only ever the host's, since mounting one would leave a hierarchy behind
k=3
for t in devtmpfs cgroup cgroup2 debugfs tracefs securityfs bpf configfs pstore efivarfs devpts mqueue; do
	d=
	if [ "$t" != cgroup ] && mkdir -p "$T/pfs/$t" && mount -t "$t" "$t" "$T/pfs/$t" 2>/dev/null; then
		d="$T/pfs/$t"
	else
		d=$(awk -v t="$t" '{ for (i = 7; $i != "-"; i++) ; if ($(i + 1) == t) { print $5; exit } }' \
			/proc/self/mountinfo)
	fi
	if [ -z "$d" ]; then
		skip "no $t file system could be mounted here"; skip "no $t file system could be mounted here"
		continue
	fi
	k=$((k + 1))
	refused "p$k" "create over $d ($t): refused" bad_path "$d is on a $t file system" \
		create "p$k" "$d" --user 65534
	case "$d" in "$T"/*) umount "$d" ;; esac
done
# a bind mount of /proc's folder elsewhere: the file system decides, not the path
if mount --bind /proc/sys "$T/bind" 2>/dev/null; then
	refused p20 "create over a bind mount of /proc/sys: refused" bad_path "is on a proc file system" \
		create p20 "$T/bind" --user 65534
	umount "$T/bind"
else
	skip "cannot bind-mount /proc/sys"; skip "cannot bind-mount /proc/sys"
fi
out=$(afs configure u1 --readable /proc 2>&1)
like "$?:$out" "^125:agentfs: bad_path: /proc is on a proc file system" \
	"configure --readable /proc: refused before anything changes"
out=$(afs configure u1 --writable /sys 2>&1)
like "$?:$out" "^125:agentfs: bad_path: /sys is on a sysfs file system" "configure --writable /sys: refused"
is "$(afs --json show u1 | jget 'bot.mounts.#')" 1 "... and u1 keeps its one root"

# --- agentfsd's own folders ---------------------------------------------------------------
refused s1 "create over the state folder: refused" bad_path \
	"$D_STATE is, or lies in, agentfsd's own state folder" create s1 "$D_STATE" --user 65534
refused s2 "create over the mount folder in it: refused" bad_path \
	"$D_MNT is, or lies in, agentfsd's own state folder" create s2 "$D_MNT" --user 65534
refused s3 "create over the bots' socket folder: refused" bad_path \
	"$D_SOCK.d is, or lies in, agentfsd's own folder of the bots' sockets" create s3 "$D_SOCK.d" --user 65534
refused s4 "create over the control socket's folder: refused" bad_path \
	"$T is agentfsd's own folder of the control socket" create s4 "$T" --user 65534
if mount --bind "$D_STATE" "$T/bind" 2>/dev/null; then
	refused s5 "create over a bind mount of the state folder: refused" bad_path \
		"agentfsd's own state folder" create s5 "$T/bind" --user 65534
	umount "$T/bind"
else
	skip "cannot bind-mount the state folder"; skip "cannot bind-mount the state folder"
fi
out=$(afs configure u1 --readable "$D_STATE/changes" 2>&1)
like "$?:$out" "^125:agentfs: bad_path: $D_STATE/changes is, or lies in, agentfsd's own state folder" \
	"configure --readable STATE/changes: refused"
expect_ok "a folder beside the control socket is no folder of agentfsd's" \
	"$(afs --json configure u1 --readable "$T/mine")"

# --- a read-only root inside a writable one -----------------------------------------------
# Served by the writable root's mount, it would be writable: refused, never granted quietly.
mkdir -p "$T/mine/docs" "$T/w/sub"
chown 65534 "$T/w" "$T/mine/docs"
refused ro1 "create --readable inside the bot's folder: refused" bad_path \
	"$T/mine/docs: a read-only root inside the writable root $T/mine would be writable" \
	create ro1 "$T/mine" --user 65534 --readable "$T/mine/docs"
refused ro2 "create --readable inside a --writable root: refused" bad_path \
	"$T/w/sub: a read-only root inside the writable root $T/w would be writable" \
	create ro2 "$T/mine" --user 65534 --writable "$T/w" --readable "$T/w/sub"
refused ro3 "create --readable equal to a --writable root: refused" bad_path \
	"$T/w: a read-only root inside the writable root $T/w would be writable" \
	create ro3 "$T/mine" --user 65534 --writable "$T/w" --readable "$T/w"
out=$(afs configure u1 --readable "$T/rootowned/sub" 2>&1)
like "$?:$out" "^125:agentfs: bad_path: $T/rootowned/sub: a read-only root inside the writable root $T/rootowned" \
	"configure --readable inside the folder: refused"
is "$(afs --json show u1 | jget 'bot.readable.#')" 1 "... and u1 keeps its readable roots"
expect_ok "a read-only bot may name a readable root inside its folder (nothing is writable)" \
	"$(afs --json create ro4 "$T/mine" --user 65534 --sandbox read-only --readable "$T/mine/docs")"
is "$(afs --json show ro4 | jget 'bot.mounts.0.access')" ro "... and its folder is served read-only"
expect_ok "a readable root holding the writable folder is not inside it" \
	"$(afs --json create ro5 "$T/mine/docs" --user 65534 --readable "$T/mine")"
expect_ok "rm ro4" "$(afs --json rm ro4)"
expect_ok "rm ro5" "$(afs --json rm ro5)"

is "$(afs --json ls | names)" "f2 full u1 u2 " "only the bots allowed exist"
check "the state file is valid" state_valid

done_testing
