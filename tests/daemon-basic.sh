#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-basic: agentfsd starts, answers, makes a bot with a working mount and
# socket, deletes it, keeps a valid state file, stops on the shutdown op
# leaving nothing mounted, hands its sockets and mounts over on SIGTERM (to
# the keeper, for the next agentfsd; with restart_grace 0 SIGTERM stops as
# shutdown does), and a second daemon on its socket refuses.
. "$top_srcdir/tests/daemon-lib.sh"

mkdir -p "$T/work" "$T/work2"

# --- start ------------------------------------------------------------------
# under umask 077, as systemd's UMask=0077 starts it: neither the sockets'
# nor the mounts' modes may depend on it
umask_was=$(umask)
umask 077
if daemon_start; then ok "agentfsd starts (daemonised, returns once listening)"
else not_ok "agentfsd starts (daemonised, returns once listening)"; fi
umask "$umask_was"
[ -n "$D_PID" ] || bail_out "no agentfsd running after daemon_start"
is "$(afs --json version | jget protocol)" 1 "the control socket answers as soon as agentfsd returns"
check "the daemon runs on in the background (pid $D_PID)" kill -0 "$D_PID"
[ -S "$D_SOCK" ] && ok "control socket is a socket" || not_ok "control socket is a socket"
# no operators' group configured (daemon-lib's D_CONFIG), whatever groups the
# host has: root's alone (daemon-operators checks 0660 with a group)
is "$(stat -c '%a %u %g' "$D_SOCK")" "600 0 0" "control socket is mode 0600, root's"

# --- version handshake ------------------------------------------------------
r=$(raw '{"op":"version","protocol":1,"id":"v1"}')
expect_ok "version with protocol 1" "$r"
is "$(printf '%s' "$r" | jget protocol)" 1 "version reports protocol 1"
is "$(printf '%s' "$r" | jget id)" v1 "version echoes the id"
v=$(printf '%s' "$r" | jget version)
[ -n "$v" ] && ok "version reports a version ($v)" || not_ok "version reports a version"
r=$(raw '{"op":"version","protocol":99,"id":7}')
expect_error "version with protocol 99" unsupported_protocol "$r"
is "$(printf '%s' "$r" | jget id)" 7 "the error echoes a numeric id"

# --- create and show --------------------------------------------------------
r=$(afs --json create --user 65534 b1 "$T/work" --id basic-1)
expect_ok "create b1" "$r"
s=$(afs --json show b1)
is "$(printf '%s' "$s" | jget bot.mounts.0.state)" mounted "show: b1's folder is mounted"
is "$(printf '%s' "$s" | jget bot.mounts.0.mountpoint)" "$D_MNT/b1/0" "show: mount point is STATE/mnt/b1/0"
is "$(printf '%s' "$s" | jget bot.mounts.0.access)" rw "show: workspace-write mounts the folder rw"
is "$(printf '%s' "$s" | jget bot.socket)" "$D_SOCK.d/b1.sock" "show: b1's socket is SOCKET.d/b1.sock"
is "$(printf '%s' "$s" | jget bot.sandbox)" workspace-write "show: default sandbox is workspace-write"
[ -S "$D_SOCK.d/b1.sock" ] && ok "b1's socket exists" || not_ok "b1's socket exists"
is "$("$DCLIENT" req "$D_SOCK.d/b1.sock" '{"op":"status"}' | jget bot)" b1 \
	"b1's socket answers as b1"
is "$(mounts_in "$D_MNT" | awk '{ print $2, $3 }')" "$D_MNT/b1/0 fuse.agentfs" \
	"mountinfo: exactly one fuse.agentfs mount, at STATE/mnt/b1/0"
check "state file is valid JSON after create" state_valid
is "$(jget 'bots.*.name' <"$D_STATE/bots.json")" b1 "state file holds b1"

# --- the mount works --------------------------------------------------------
if echo hello >"$D_MNT/b1/0/hello.txt" 2>/dev/null; then
	ok "write through STATE/mnt/b1/0"
else
	not_ok "write through STATE/mnt/b1/0"
fi
is "$(cat "$T/work/hello.txt" 2>/dev/null)" hello "the file appears in the folder"
echo fromhost >"$T/work/host.txt"
(cd "$D_MNT/b1/0" && umask 0 && mkdir modes.d && : >modes.f)
is "$(stat -c %a "$T/work/modes.d" "$T/work/modes.f" 2>&1 | tr '\n' ' ')" "777 666 " \
	"with a caller umask of 0, a folder and a file made through the mount are 0777 and 0666"
rm -rf "$T/work/modes.d" "$T/work/modes.f"
is "$(cat "$D_MNT/b1/0/host.txt" 2>/dev/null)" fromhost "a host file reads through the mount"

# --- ls and status ----------------------------------------------------------
expect_ok "create b2" "$(afs --json create --user 65534 b2 "$T/work2")"
is "$(afs --json ls | jget 'bots.*.name' | sort | tr '\n' ' ')" "b1 b2 " "ls --json lists b1 and b2"
out=$(afs ls)
printf '%s\n' "$out" | grep -q "^b1 .*$T/work\$" && ok "ls (text) shows b1 and its folder" ||
	{ not_ok "ls (text) shows b1 and its folder"; diag "$out"; }
st=$(afs --json status)
is "$(printf '%s' "$st" | jget bots)" 2 "status: 2 bots"
is "$(printf '%s' "$st" | jget mounts)" 2 "status: 2 mounts"
is "$(printf '%s' "$st" | jget pid)" "$D_PID" "status: the daemon's pid"
is "$(printf '%s' "$st" | jget socket)" "$D_SOCK" "status: the control socket"
is "$(printf '%s' "$st" | jget state)" "$D_STATE" "status: the state folder"
# the person's view: every value in one column past the longest key, the start a date
plain=$(afs status)
like "$plain" "^reply_memory [0-9]+$" "status: a key as long as reply_memory still has a space before its value"
like "$plain" "^started +$(date -d "@$(printf '%s' "$st" | jget started)" '+%Y-%m-%d %H:%M:%S')$" \
	"status: the start time as a date, not seconds since 1970"
is "$(printf '%s\n' "$plain" | awk '{ match($0, /^[^ ]+ +/); print RLENGTH }' | sort -u | wc -l)" 1 \
	"status: the values line up in one column"
check "state file is valid JSON after the second create" state_valid

# --- delete -----------------------------------------------------------------
r=$(afs --json rm b1)
is "$(printf '%s' "$r" | jget 'deleted.*')" b1 "rm b1 reports b1 deleted"
is "$(mounts_in "$D_MNT/b1" | wc -l)" 0 "rm b1: its mount is gone from mountinfo"
[ ! -e "$D_SOCK.d/b1.sock" ] && ok "rm b1: its socket file is removed" ||
	not_ok "rm b1: its socket file is removed"
expect_error "show b1 after rm" not_found "$(raw '{"op":"show","name":"b1"}')"
expect_error "rm b1 again" not_found "$(raw '{"op":"delete","name":"b1"}')"
is "$(mounts_in "$D_MNT" | awk '{ print $2 }')" "$D_MNT/b2/0" "b2's mount is untouched"
is "$(cat "$T/work/hello.txt" 2>/dev/null)" hello "rm keeps the bot's files"
check "state file is valid JSON after rm" state_valid
is "$(jget 'bots.*.name' <"$D_STATE/bots.json")" b2 "state file holds only b2"

# --- shutdown op ------------------------------------------------------------
r=$(afs --json shutdown)
expect_ok "shutdown op" "$r"
if daemon_wait_gone 5; then ok "shutdown: the daemon exits"; else not_ok "shutdown: the daemon exits"; fi
[ ! -e "$D_SOCK" ] && ok "shutdown: control socket removed" || not_ok "shutdown: control socket removed"
[ ! -e "$D_SOCK.d/b2.sock" ] && ok "shutdown: bot socket removed" || not_ok "shutdown: bot socket removed"
is "$(mounts_in "$T" | wc -l)" 0 "shutdown: nothing mounted under the temp folder"
check "state file is valid JSON after shutdown" state_valid
is "$(jget 'bots.*.name' <"$D_STATE/bots.json")" b2 "shutdown keeps b2 in the state file"

# --- SIGTERM: a restart ------------------------------------------------------
daemon_start && ok "agentfsd starts again" || not_ok "agentfsd starts again"
is "$(restored_state b2)" mounted "after a restart b2 is mounted again"
check "b2's mount answers" timeout 5 ls "$D_MNT/b2/0"
# a repository a bot made is still its own after a takeover (found by its
# path from the root, and its birth time, not its inode number alone)
mkdir -p "$T/work3"
expect_ok "create b3, which may make repositories" \
	"$(afs --json create --user 65534 b3 "$T/work3" --allow-new-repos)"
check "b3 makes a repository" git init -q "$D_MNT/b3/0/mine"
check "... and writes a hook in it" sh -c "echo one >'$D_MNT/b3/0/mine/.git/hooks/pre-commit'"
mounts_before=$(mounts_in "$T")
kill -TERM "$D_PID"
if daemon_wait_gone 5; then ok "SIGTERM: the daemon exits"; else not_ok "SIGTERM: the daemon exits"; fi
[ -S "$D_SOCK" ] && ok "SIGTERM: the control socket stays for the next agentfsd" ||
	not_ok "SIGTERM: the control socket stays for the next agentfsd"
[ -S "$D_SOCK.d/b2.sock" ] && ok "SIGTERM: so does the bot's socket" || not_ok "SIGTERM: so does the bot's socket"
is "$(mounts_in "$T")" "$mounts_before" "SIGTERM: the mounts stay, the same ones"
[ -n "$(keeper_pids)" ] && ok "SIGTERM: the keeper holds them" || not_ok "SIGTERM: the keeper holds them"
check "state file is valid JSON after SIGTERM" state_valid
# a client connecting while no agentfsd runs waits for the next one
raw '{"op":"status"}' >"$T/waited" 2>&1 &
waiter=$!
sleep 0.3
daemon_start && ok "agentfsd starts over them" || not_ok "agentfsd starts over them"
wait "$waiter"
is "$(jget pid <"$T/waited")" "$D_PID" "the client that connected in between is answered by it"
is "$(mounts_in "$T")" "$mounts_before" "it took the same mounts over"
check "b3's repository is still its own: it writes the hook again" \
	sh -c "echo two >'$D_MNT/b3/0/mine/.git/hooks/pre-commit'"
expect_ok "rm b3" "$(afs --json rm b3)"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 5
wait_until 5 eval '[ -z "$(keeper_pids)" ]'
is "$(keeper_pids)" "" "shutdown after the restart: the keeper exits too"
is "$(mounts_in "$T" | wc -l)" 0 "shutdown after the restart: nothing mounted under the temp folder"
[ ! -e "$D_SOCK" ] && ok "shutdown after the restart: control socket removed" ||
	not_ok "shutdown after the restart: control socket removed"

# --- a second daemon on the same socket ------------------------------------
daemon_start && ok "agentfsd starts a third time" || not_ok "agentfsd starts a third time"
first=$D_PID
err=$("$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$T/state2" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && ok "a second agentfsd on the same socket fails (status $rc)" ||
	not_ok "a second agentfsd on the same socket fails"
case "$err" in
*"another agentfsd is listening on $D_SOCK"*) ok "it says another agentfsd is listening there" ;;
*) not_ok "it says another agentfsd is listening there"; diag "stderr: $err" ;;
esac
is "$(daemon_pids | tr '\n' ' ')" "$first " "only the first daemon runs"
is "$(afs --json status | jget pid)" "$first" "the first daemon still answers on the socket"
restored_state b2 >/dev/null # the first daemon may still be mounting b2
is "$(mounts_in "$D_MNT" | wc -l)" 1 "the first daemon's mount is untouched"
err=$("$AGENTFSD" -f --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && ok "a second agentfsd -f with the same state fails too (status $rc)" ||
	not_ok "a second agentfsd -f with the same state fails too"
is "$(restored_state b2)" mounted "and b2 stays mounted"
is "$(mounts_in "$D_MNT" | wc -l)" 1 "still exactly one mount"
is "$(stat -c %a "$D_SOCK.d/b2.sock")" 600 "b2's socket is mode 0600"

# --- a second daemon on the same state folder (another socket) --------------
# It would take the running daemon's mounts for stale ones and detach them.
mounts_before=$(mounts_in "$D_MNT")
err=$("$AGENTFSD" --config "$D_CONFIG" --socket "$T/other.sock" --state "$D_STATE" 2>&1)
rc=$?
[ "$rc" -ne 0 ] && ok "a second agentfsd on the same state folder fails" ||
	{ not_ok "a second agentfsd on the same state folder fails"; diag "it started: $err"; }
# a detach or a mount over it shows in mountinfo at once (mount ids included)
is "$(mounts_in "$D_MNT")" "$mounts_before" "it detached or replaced none of the first daemon's mounts"
is "$(restored_state b2)" mounted \
	"the first daemon still has b2 mounted"
# If it did start, stop it before the first one.
if [ -S "$T/other.sock" ] && answers "$T/other.sock"; then
	"$top_builddir/src/agentfs" --socket "$T/other.sock" shutdown >/dev/null
	wait_until 5 eval '[ -z "$(daemon_pids "$T/other.sock")" ]'
fi

expect_ok "final shutdown" "$(afs --json shutdown)"
daemon_wait_gone 5
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"

# --- a config file: workers and poll_us ---------------------------------------
cs="$T/cfg.sock"
cafs() { "$top_builddir/src/agentfs" --socket "$cs" "$@"; }
printf '{"workers": 2, "poll_us": 0, "group": "", "cgroup": "", "restart_grace": 0}
' >"$T/cfg.json"
mkdir -p "$T/cfgwork"
if "$AGENTFSD" --socket "$cs" --state "$T/cfgstate" --config "$T/cfg.json"; then
	ok "agentfsd starts with --config (workers 2, poll_us 0, restart_grace 0)"
	r=$(cafs --json status)
	is "$(printf '%s' "$r" | jget workers)" 2 "status reports the configured workers"
	is "$(printf '%s' "$r" | jget poll_us)" 0 "status reports poll_us 0 (workers never poll)"
	expect_ok "create a bot under that config" "$(cafs --json create --user 65534 cb "$T/cfgwork")"
	echo cfg >"$T/cfgstate/mnt/cb/0/f" 2>/dev/null
	is "$(cat "$T/cfgwork/f" 2>&1)" cfg "its mount serves writes"
	is "$(cafs --json status | jget restart)" off "status: restarts are stops (restart_grace 0)"
	kill -TERM "$(daemon_pids "$cs")"
	wait_until 5 eval '[ -z "$(daemon_pids "$cs")" ]'
	[ ! -e "$cs" ] && ok "restart_grace 0: SIGTERM removes the control socket" ||
		not_ok "restart_grace 0: SIGTERM removes the control socket"
	is "$(mounts_in "$T/cfgstate" | wc -l)" 0 "restart_grace 0: SIGTERM leaves nothing mounted"
else
	not_ok "agentfsd starts with --config (workers 2, poll_us 0)"
fi
# The longest poll and two workers (so one poller at most): a mount kept
# busy without pause must not keep another mount of the daemon waiting.
printf '{"workers": 2, "poll_us": 10000, "group": "", "cgroup": ""}\n' >"$T/cfg.json"
mkdir -p "$T/busy" "$T/calm"
echo calm >"$T/calm/f"
if "$AGENTFSD" --socket "$cs" --state "$T/cfgstate" --config "$T/cfg.json"; then
	is "$(cafs --json status | jget poll_us)" 10000 "status reports a configured poll_us 10000"
	expect_ok "create a busy bot" "$(cafs --json create --user 65534 busy "$T/busy")"
	expect_ok "create a calm bot" "$(cafs --json create --user 65534 calm "$T/calm")"
	: >"$T/busy/x"
	# open and close without pause: OPEN and RELEASE requests back to back
	(end=$((SECONDS + 8)); while [ $SECONDS -lt $end ]; do
		for i in 1 2 3 4 5 6 7 8 9 10; do : <"$T/cfgstate/mnt/busy/0/x"; done
	done) 2>/dev/null &
	hammer=$!
	track_pid "$hammer"
	sleep 1
	is "$(timeout 5 cat "$T/cfgstate/mnt/calm/0/f" 2>&1)" calm \
		"while another mount is kept busy, a second mount still answers"
	is "$(timeout 5 ls "$T/cfgstate/mnt/calm/0" 2>&1)" f "and lists its folder"
	kill "$hammer" 2>/dev/null
	wait "$hammer" 2>/dev/null
	expect_ok "shutdown of the polling daemon" "$(cafs --json shutdown)"
	wait_until 5 eval '[ -z "$(daemon_pids "$cs")" ]'
else
	not_ok "agentfsd starts with workers 2, poll_us 10000"
fi
for bad in '{"poll_us": "fast"}' '{"poll_us": 20000}' '{"poll_us": -1}'; do
	printf '%s\n' "$bad" >"$T/cfg.json"
	err=$("$AGENTFSD" --socket "$cs" --state "$T/cfgstate" --config "$T/cfg.json" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && [[ "$err" == *poll_us* ]]; then
		ok "config $bad: refused, naming poll_us"
	else
		not_ok "config $bad: refused, naming poll_us"
		diag "status $rc: $err"
		cafs shutdown >/dev/null 2>&1
	fi
done
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted after the config daemons"

# --- folders root goes on using by path must be root's alone ------------------
# A socket or state folder another user may write would let it swap in a
# symbolic link, and root would bind, chown and chmod the socket (or write the
# state) wherever that points: agentfsd refuses to start, naming the folder.
untrusted()
{
	local desc="$1" want="$2" err rc
	shift 2
	err=$("$AGENTFSD" --config "$D_CONFIG" "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ] && [[ "$err" == *"$want"* ]]; then
		ok "$desc: refused, naming $want"
	else
		not_ok "$desc: refused, naming $want"
		diag "status $rc: $err"
	fi
	[ -z "$(daemon_pids "$T/pub/d.sock")$(daemon_pids "$T/ok.sock")" ] ||
		not_ok "$desc: ... and no daemon runs"
}
mkdir -m 0777 "$T/pub"
untrusted "a socket in a folder anyone may write" "$T/pub is not trusted" \
	--socket "$T/pub/d.sock" --state "$T/st1"
is "$(ls -A "$T/pub")" "" "... and made nothing there"
mkdir -p "$T/pub/st"
untrusted "a state folder inside a folder anyone may write" "$T/pub/st is not trusted" \
	--socket "$T/ok.sock" --state "$T/pub/st"
mkdir "$T/own"
chown 65534 "$T/own"
untrusted "a state folder in a folder of another user's" "$T/own/st is not trusted" \
	--socket "$T/ok.sock" --state "$T/own/st"
# a symbolic link in a folder only root writes is fine; one in another's is not
mkdir -m 0755 "$T/real"
ln -s "$T/real" "$T/link"
if "$AGENTFSD" --config "$D_CONFIG" --socket "$T/link/l.sock" --state "$T/link/st"; then
	ok "a socket and state through a symbolic link in root's own folder: started"
	"$top_builddir/src/agentfs" --socket "$T/link/l.sock" shutdown >/dev/null
	wait_until 5 eval '[ -z "$(daemon_pids "$T/link/l.sock")" ]'
else
	not_ok "a socket and state through a symbolic link in root's own folder: started"
fi
ln -s "$T/real" "$T/own/link"
untrusted "a state folder through a symbolic link in another user's folder" \
	"$T/own/link/st is not trusted" --socket "$T/ok.sock" --state "$T/own/link/st"

done_testing
