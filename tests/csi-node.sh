#!/bin/bash
# SPDX-License-Identifier: MIT
# csi-node: agentfs-csi driven the way kubelet drives it, over its gRPC
# socket (tests/csi-kubelet.py plays kubelet), with a "pod" made of a mount
# namespace and a non-root user (the test's own): Identity, capabilities,
# every error code a publish can get, idempotent publish and unpublish, a
# failed publish leaving nothing mounted, symbolic links on the way to a
# target refused; in the pod, git commit works, a hook write is refused
# (rule D3 in agentfs log) and the person's git on the host then runs
# nothing; the socket volume lets the pod run `agentfs ls` as the bot;
# kill -9 of the plugin keeps what it published working, and the next one
# drops the targets whose pod is gone; a restart of agentfsd.
. "$top_srcdir/tests/exec-lib.sh"

CSI=$top_builddir/csi/agentfs-csi
[ -x "$CSI" ] || skip_all "agentfs-csi is not built (configure says why: it needs gRPC for C++, apt-get install libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc, and --enable-tsan leaves it out)"
[ -n "$PY" ] && "$PY" -c 'import grpc, grpc_tools' 2>/dev/null ||
	skip_all "python3's grpc is missing (apt-get install python3-grpcio python3-grpc-tools)"
command -v unshare >/dev/null && command -v setpriv >/dev/null ||
	skip_all "unshare or setpriv is missing (util-linux)"

export CSI_PY_DIR=$T/py
mkdir -p "$CSI_PY_DIR"
EP=$T/csi.sock
K=$T/kubelet
UIDP=6f1c1b9e-3a55-4d0e-9d59-2f7c9a0b1c11 # the pod's uid, as kubelet makes it
kubelet() { "$PY" "$top_srcdir/tests/csi-kubelet.py" "$EP" "$@"; }

# code REPLY: the status on its first line; body REPLY: the rest
code() { printf '%s\n' "$1" | head -n 1; }
body() { printf '%s\n' "$1" | tail -n +2; }

# expect_code DESC CODE REPLY [MESSAGE-REGEX]
expect_code()
{
	local got
	got=$(code "$3")
	if [ "$got" = "$2" ] && { [ -z "${4:-}" ] || printf '%s' "$(body "$3")" | grep -Eq -- "$4"; }; then
		ok "$1 ($2)"
	else
		not_ok "$1 ($2)"
		diag "want $2${4:+ and a message matching $4}" "got: $3"
	fi
}

# target NAME [UID]: kubelet's folder for volume NAME of the pod (made, with
# the vol_data.json kubelet keeps while the volume is the pod's)
target()
{
	local d="$K/pods/${2:-$UIDP}/volumes/kubernetes.io~csi/$1"
	mkdir -p "$d"
	echo '{"driverName":"csi.agentfs.local"}' >"$d/vol_data.json"
	echo "$d/mount"
}

# pod_attrs [SA [NS [UID]]]: what kubelet puts in volume_context for our pod
pod_attrs()
{
	echo csi.storage.k8s.io/ephemeral=true csi.storage.k8s.io/pod.name=agent-pod \
		"csi.storage.k8s.io/pod.namespace=${2:-team-1}" "csi.storage.k8s.io/pod.uid=${3:-$UIDP}" \
		"csi.storage.k8s.io/serviceAccount.name=${1:-agent}"
}

# pod DIR CMD: run CMD (sh -c) as the test user in a new mount namespace
# where the volume at DIR is bound (with what is mounted inside it) at
# $T/podmnt, as a container runtime binds it at its mountPath (rbind); no
# capabilities, no new privileges.
mkdir -p "$T/podmnt"
pod()
{
	unshare -m --propagation private sh -c '
		mount --rbind "$1" "$2" || exit 99
		cd "$2" || exit 99
		shift 2
		exec setpriv --reuid="$U" --regid="$G" --clear-groups --no-new-privs \
			--inh-caps=-all --bounding-set=-all env -i HOME=/nonexistent \
			PATH=/usr/bin:/bin GIT_CONFIG_NOSYSTEM=1 sh -c "$@"
	' pod "$1" "$T/podmnt" "$2"
}
export U=$EX_UID G=$EX_GID

mounted_at() { awk -v p="$1" '$5 == p { n++ } END { print n + 0 }' /proc/self/mountinfo; }

csi_start()
{
	local n
	n=$(grep -c 'agentfs-csi: serving' "$T/csi.log" 2>/dev/null)
	"$CSI" --endpoint "unix://$EP" --node-id node-7 --socket "$D_SOCK" --kubelet-dir "$K" \
		"$@" 2>>"$T/csi.log" &
	CSI_PID=$!
	track_pid "$CSI_PID"
	wait_until 10 serving_more "${n:-0}"
}
serving_more() { [ "$(grep -c 'agentfs-csi: serving' "$T/csi.log")" -gt "$1" ]; }

# --- a bot over a git repository, for the pod's service account ---------------
W=$T/ws
mkdir -p "$W" "$K/pods"
git init -q "$W" && hgit -C "$W" -c user.name=p -c user.email=p@x commit -q --allow-empty -m init
own "$W"
daemon_start || bail_out "agentfsd did not start"
check "create w1 for pod team-1/agent" afs create w1 "$W" --user "$EX_USER" --pod team-1/agent
check "create w2, which names no pods" afs create w2 "$W/.git" --sandbox read-only

csi_start || bail_out "agentfs-csi did not start: $(cat "$T/csi.log")"
ok "agentfs-csi listens on its endpoint"
like "$(stat -c %U:%a "$EP")" '^root:[0-7]00$' "the endpoint is root's only"

# --- Identity and Node's capabilities ---------------------------------------
r=$(kubelet info)
expect_code "GetPluginInfo" OK "$r" '"name": "csi.agentfs.local"'
like "$(body "$r")" "\"vendor_version\": \"[0-9]" "with the version"
expect_code "GetPluginCapabilities: none (a node plugin, no controller)" OK "$(kubelet plugin-caps)" \
	'"capabilities": \[\]'
expect_code "Probe while agentfsd answers: ready" OK "$(kubelet probe)" '"ready": true'
expect_code "NodeGetCapabilities: no staging" OK "$(kubelet node-caps)" '"capabilities": \[\]'
expect_code "NodeGetInfo: the node id" OK "$(kubelet node-info)" '"node_id": "node-7"'
expect_code "NodeStageVolume is not served" UNIMPLEMENTED "$(kubelet stage)"

# --- refusals: each with its code and a message saying which -----------------
TA=$(target work)
A=$(pod_attrs)
nothing_left()
{
	if [ "$(mounted_at "$TA")" = 0 ] && [ ! -e "$TA" ]; then
		ok "... and nothing is mounted or left at the target"
	else
		not_ok "... and nothing is mounted or left at the target"
	fi
}
# shellcheck disable=SC2086
{
expect_code "no volume_id" INVALID_ARGUMENT "$(kubelet publish "" "$TA" $A bot=w1)" volume_id
expect_code "no target_path" INVALID_ARGUMENT "$(kubelet publish v1 "" $A bot=w1)" target_path
expect_code "no volume_capability" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" --no-cap $A bot=w1)" capability
expect_code "a block volume" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" --block $A bot=w1)" block
expect_code "mount flags" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" --flag noexec $A bot=w1)" 'mount flags'
expect_code "not an ephemeral volume" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$TA" ${A/ephemeral=true/ephemeral=false} bot=w1)" 'only ephemeral inline'
expect_code "no pod information (podInfoOnMount off)" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$TA" csi.storage.k8s.io/ephemeral=true bot=w1)" podInfoOnMount
expect_code "no bot attribute" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" $A)" 'bot is missing'
expect_code "a malformed bot name" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" $A bot=../w1)" 'not a bot name'
expect_code "an unknown attribute" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" $A bot=w1 roots=1)" \
	'unknown volume attribute "roots"'
expect_code "root that is not a number" INVALID_ARGUMENT "$(kubelet publish v1 "$TA" $A bot=w1 root=x)" \
	'root must be a number'
expect_code "socket that is not a boolean" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$TA" $A bot=w1 socket=yes)" 'socket must be "true" or "false"'
expect_code "root and socket together" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$TA" $A bot=w1 root=0 socket=true)" 'exclude each other'
expect_code "a root the bot does not have" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$TA" $A bot=w1 root=3)" 'bot w1 has 1 root .* no root 3'
expect_code "a target outside the kubelet folder" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$T/elsewhere/mount" $A bot=w1)" 'not a normalised path under the kubelet folder'
expect_code "a target not shaped as a pod's CSI volume" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$K/plugins/x/mount" $A bot=w1)" "not a pod's CSI volume"
expect_code "a target with .. in it" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$K/pods/$UIDP/volumes/kubernetes.io~csi/work/../work/mount" $A bot=w1)" \
	'not a normalised path'
expect_code "pod information that is not the target's pod (forged by the pod's author)" \
	PERMISSION_DENIED "$(kubelet publish v1 "$TA" $(pod_attrs agent team-1 0000-forged) bot=w1)" \
	'podInfoOnMount'
expect_code "an unknown bot" NOT_FOUND "$(kubelet publish v1 "$TA" $A bot=nosuch)" 'no bot named nosuch'
r=$(kubelet publish v1 "$TA" $(pod_attrs other) bot=w1)
expect_code "a pod whose service account the bot does not name" PERMISSION_DENIED "$r" \
	'pod team-1/other is not one of bot w1.s pods'
expect_code "a pod of another namespace" PERMISSION_DENIED \
	"$(kubelet publish v1 "$TA" $(pod_attrs agent team-2) bot=w1)" 'pod team-2/agent'
expect_code "a bot that names no pods" PERMISSION_DENIED "$(kubelet publish v1 "$TA" $A bot=w2)" \
	'names no pods'
nothing_left
}

# symbolic links on the way: in the target's parents, and the target itself
mkdir -p "$T/outside"
mkdir -p "$K/pods/uid-link/volumes"
ln -s "$T/outside" "$K/pods/uid-link/volumes/kubernetes.io~csi"
# shellcheck disable=SC2086
r=$(kubelet publish v1 "$K/pods/uid-link/volumes/kubernetes.io~csi/x/mount" \
	$(pod_attrs agent team-1 uid-link) bot=w1)
expect_code "a symbolic link in the target's parents" INVALID_ARGUMENT "$r" 'symbolic link'
TL=$(target linked)
ln -s "$T/outside" "$TL"
# shellcheck disable=SC2086
expect_code "a target that is a symbolic link" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$TL" $A bot=w1)" 'symbolic link'
is "$(awk -v p="$T/outside" 'index($5, p) == 1' /proc/self/mountinfo | wc -l)" 0 \
	"nothing was mounted where the links lead"
ln -s "$T/outside" "$T/klink"
# shellcheck disable=SC2086
expect_code "a kubelet folder reached through a link" INVALID_ARGUMENT \
	"$(kubelet publish v1 "$T/klink/pods/$UIDP/volumes/kubernetes.io~csi/work/mount" $A bot=w1)" \
	'under the kubelet folder'

# --- publish, twice; the pod works in it; hooks stay the bot's to not write ---
# shellcheck disable=SC2086
r=$(kubelet publish v1 "$TA" $A bot=w1)
expect_code "publish w1's folder for team-1/agent" OK "$r"
is "$(mounted_at "$TA")" 1 "the target is mounted once"
like "$(awk -v p="$TA" '$5 == p' /proc/self/mountinfo)" ' - fuse\.agentfs ' "a bind of w1's agentfs mount"
like "$(awk -v p="$TA" '$5 == p { print $6 }' /proc/self/mountinfo)" 'rw,nosuid,nodev' \
	"writable, nosuid, nodev"
# shellcheck disable=SC2086
expect_code "publishing it again answers OK" OK "$(kubelet publish v1 "$TA" $A bot=w1)"
is "$(mounted_at "$TA")" 1 "... and mounts nothing more"
# shellcheck disable=SC2086
expect_code "the same target read-only is another volume" ALREADY_EXISTS \
	"$(kubelet publish v1 "$TA" --ro $A bot=w1)" 'unpublish it first'

out=$(pod "$TA" 'id -u; git -c user.name=bot -c user.email=bot@x commit -q --allow-empty -m from-pod && echo committed' 2>&1)
like "$out" "^$EX_UID" "the pod runs as the test user"
like "$out" committed "git commit works in the pod"
is "$(hgit -C "$W" log -1 --format=%s)" from-pod "the commit is in the bot's folder on the host"
out=$(pod "$TA" 'printf "#!/bin/sh\ntouch /tmp/PWNED-csi\n" > .git/hooks/pre-commit' 2>&1)
like "$out" 'Read-only file system' "writing .git/hooks/pre-commit in the pod is refused (EROFS)"
like "$(afs log w1)" "refused create of $W/.git/hooks/pre-commit: rule D3 \\(hooks\\)" \
	"agentfs log w1 names rule D3"
out=$(pod "$TA" 'git config core.hooksPath /tmp/h 2>&1; echo status $?')
unlike "$out" 'status 0' "git config core.hooksPath in the pod fails"
rm -f /tmp/PWNED-csi
hgit -C "$W" -c user.name=p -c user.email=p@x commit -q --allow-empty -m host
[ ! -e /tmp/PWNED-csi ] && [ ! -e "$W/.git/hooks/pre-commit" ] &&
	ok "the person's git on the host then runs nothing" ||
	not_ok "the person's git on the host then runs nothing"
is "$(hgit -C "$W" config --get core.hooksPath)" "" "and its config names no hooks folder"

# read-only: by the request, by the attribute, by the access mode
TR=$(target ro)
# shellcheck disable=SC2086
expect_code "publish read-only (readonly)" OK "$(kubelet publish v2 "$TR" --ro $A bot=w1)"
like "$(awk -v p="$TR" '$5 == p { print $6 }' /proc/self/mountinfo)" '^ro,' "the bind is read-only"
like "$(pod "$TR" 'touch new-file 2>&1')" 'Read-only file system' "the pod cannot write through it"
expect_code "unpublish it" OK "$(kubelet unpublish v2 "$TR")"
# shellcheck disable=SC2086
expect_code "publish with readonly=true" OK "$(kubelet publish v2 "$TR" $A bot=w1 readonly=true)"
like "$(awk -v p="$TR" '$5 == p { print $6 }' /proc/self/mountinfo)" '^ro,' "read-only too"
kubelet unpublish v2 "$TR" >/dev/null
# shellcheck disable=SC2086
expect_code "publish with a reader-only access mode" OK \
	"$(kubelet publish v2 "$TR" --mode MULTI_NODE_READER_ONLY $A bot=w1)"
like "$(awk -v p="$TR" '$5 == p { print $6 }' /proc/self/mountinfo)" '^ro,' "read-only too"

# --- the socket volume ----------------------------------------------------------
TS=$(target sock)
# shellcheck disable=SC2086
expect_code "publish w1's socket" OK "$(kubelet publish v3 "$TS" $A bot=w1 socket=true)"
# shellcheck disable=SC2086
expect_code "publishing it again answers OK" OK "$(kubelet publish v3 "$TS" $A bot=w1 socket=true)"
out=$(pod "$TS" "ls; $AGENTFS --socket ./agent.sock --json ls" 2>&1)
like "$out" '^agent\.sock' "the volume holds agent.sock"
like "$out" '"name":"w1"' "the pod runs agentfs ls as w1 through it"
unlike "$out" '"name":"w2"' "and sees only what w1 sees"
like "$(pod "$TS" 'touch x 2>&1')" 'Read-only file system' "the pod makes nothing in the socket's folder"

# --- kill -9 of the plugin, and the sweep at start ---------------------------------
TG=$(target gone)
# shellcheck disable=SC2086
expect_code "publish one more, for a pod that will go" OK "$(kubelet publish v4 "$TG" $A bot=w1)"
kill -9 "$CSI_PID"
wait "$CSI_PID" 2>/dev/null
out=$(pod "$TA" 'echo after-kill > after-kill.txt && cat after-kill.txt' 2>&1)
is "$out" after-kill "after kill -9 of the plugin, the pod still writes in its volume"
is "$(cat "$W/after-kill.txt" 2>/dev/null)" after-kill "... into the bot's folder"
rm "$(dirname "$TG")/vol_data.json" # kubelet forgot the volume: its pod is gone
csi_start || bail_out "agentfs-csi did not start again"
like "$(cat "$T/csi.log")" "dropped $TG: its pod is gone" "the next plugin drops the target whose pod is gone"
is "$(mounted_at "$TG")" 0 "... it is unmounted"
[ ! -e "$TG" ] && ok "... and its folder removed" || not_ok "... and its folder removed"
is "$(mounted_at "$TA")$(mounted_at "$TS")" 11 "the targets kubelet keeps stay published"
# shellcheck disable=SC2086
expect_code "a publish kubelet repeats after the restart answers OK" OK \
	"$(kubelet publish v1 "$TA" $A bot=w1)"

# --- agentfsd, unreachable, then restarted ----------------------------------------
EP2=$T/csi2.sock
"$CSI" --endpoint "unix://$EP2" --node-id node-7 --socket "$T/no-agentfsd.sock" \
	--kubelet-dir "$K" 2>>"$T/csi2.log" &
track_pid $!
wait_until 10 test -S "$EP2"
r=$("$PY" "$top_srcdir/tests/csi-kubelet.py" "$EP2" probe)
expect_code "Probe without agentfsd: not ready" FAILED_PRECONDITION "$r" 'cannot reach agentfsd'
TU=$(target unavail)
# shellcheck disable=SC2086
r=$("$PY" "$top_srcdir/tests/csi-kubelet.py" "$EP2" publish v5 "$TU" $A bot=w1)
expect_code "publish without agentfsd" UNAVAILABLE "$r" 'cannot reach agentfsd'
is "$(mounted_at "$TU")" 0 "... mounts nothing"

# A published volume keeps working across a restart of agentfsd, even
# kill -9: the bot's mounts outlive it (their FUSE connections are kept for
# the next agentfsd), so kubelet's bind is still on the same, served mount,
# never one that answers ENOTCONN until it is published again.
daemon_kill9 || bail_out "agentfsd did not die"
daemon_start || bail_out "agentfsd did not start again"
restored_state w1 >/dev/null
is "$(pod "$TA" 'echo after-restart > r.txt && cat r.txt' 2>&1)" after-restart \
	"after agentfsd is killed and started again the pod still writes in its volume"
like "$(pod "$TA" 'echo x > .git/hooks/post-commit' 2>&1)" 'Read-only file system' \
	"... and its hooks are still refused"

# --- unpublish ---------------------------------------------------------------------
for t in "$TA" "$TR" "$TS"; do
	expect_code "unpublish ${t#"$K"/pods/"$UIDP"/volumes/}" OK "$(kubelet unpublish v "$t")"
	[ "$(mounted_at "$t")" = 0 ] && [ ! -e "$t" ] && ok "... it is unmounted and removed" ||
		not_ok "... it is unmounted and removed"
done
expect_code "unpublishing it again answers OK" OK "$(kubelet unpublish v "$TA")"
expect_code "unpublishing a target never published answers OK" OK \
	"$(kubelet unpublish v "$K/pods/$UIDP/volumes/kubernetes.io~csi/never/mount")"
expect_code "unpublish without a volume_id" INVALID_ARGUMENT "$(kubelet unpublish "" "$TA")" volume_id
expect_code "unpublish outside the kubelet folder" INVALID_ARGUMENT \
	"$(kubelet unpublish v "$T/outside/mount")" 'kubelet folder'
mkdir -p "$(dirname "$(target foreign)")/mount"
mount -t tmpfs foreign "$(target foreign)"
expect_code "unpublish a mount the plugin did not make" FAILED_PRECONDITION \
	"$(kubelet unpublish v "$(target foreign)")" 'did not make'
umount "$(target foreign)"
is "$(awk -v p="$K" 'index($5, p) == 1' /proc/self/mountinfo | wc -l)" 0 \
	"nothing is left mounted under the kubelet folder"

kill "$CSI_PID"
wait "$CSI_PID" 2>/dev/null
is "$?" 0 "SIGTERM stops the plugin cleanly"
[ ! -e "$EP" ] && ok "... and removes its endpoint" || not_ok "... and removes its endpoint"

done_testing
