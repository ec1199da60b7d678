#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-fds: descriptor exhaustion.
#  - agentfsd under `prlimit --nofile=64:64`: clients connect until the
#    daemon cannot accept more (EMFILE); while the listener stays saturated
#    for 2 s the daemon does not spin (its CPU time over those 2 s stays under
#    1 s), it does not crash, and it answers a client again once the others
#    close.  Creates made while only a few descriptors are free get a reply
#    (made or an error), never a crash or a hang, leave no stray mount, and
#    leak no descriptor.
#  - `agentfs mount` under `prlimit --nofile=64:64` serves a tree of 1,000
#    files: find and cat of every file, twice (its descriptor cache evicts).
. "$top_srcdir/tests/daemon-lib.sh"

FCLIENT="$top_builddir/tests/fault-client"
[ -x "$FCLIENT" ] || bail_out "$FCLIENT is not built (make check builds it)"
command -v prlimit >/dev/null || skip_all "prlimit is missing (util-linux)"

LIMIT=64

nfds()
{
	ls "/proc/$D_PID/fd" 2>/dev/null | wc -l
}

# cpu_ticks PID: utime + stime of the whole process, in clock ticks
cpu_ticks()
{
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# hold N: keep N connections to the control socket in the background;
# HOLD_PID is the holder, $T/hold.out its output
hold()
{
	rm -f "$T/hold.out"
	"$FCLIENT" hold "$D_SOCK" "$1" 30 >"$T/hold.out" 2>"$T/hold.err" &
	HOLD_PID=$!
	track_pid "$HOLD_PID"
	wait_until 10 grep -q '^opened' "$T/hold.out"
}

unhold()
{
	kill -TERM "$HOLD_PID" 2>/dev/null
	wait "$HOLD_PID" 2>/dev/null
}

mkdir -p "$T/w0"
echo zero >"$T/w0/f"

# --- the daemon under a limit of 64 descriptors -----------------------------------------
prlimit --nofile=$LIMIT:$LIMIT -- "$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" ||
	bail_out "agentfsd did not start under prlimit"
D_PID=$(daemon_pids "$D_SOCK" | head -n 1)
[ -n "$D_PID" ] || bail_out "no agentfsd pid"
is "$(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$D_PID/limits")" "$LIMIT:$LIMIT" \
	"agentfsd runs with a limit of $LIMIT open files"
expect_ok "create a bot" "$(afs --json create --user 65534 b0 "$T/w0")"
fds0=$(nfds)
diag "the daemon holds $fds0 descriptors with one bot"

# --- saturate the listener ---------------------------------------------------------------
hold 300
diag "holder: $(cat "$T/hold.out")"
if wait_until 10 eval '[ "$(nfds)" -ge $((LIMIT - 2)) ]'; then
	ok "the daemon accepts until it is out of descriptors ($(nfds) open, limit $LIMIT; inherited ones count too)"
else
	not_ok "the daemon accepts until it is out of descriptors"
	diag "it holds $(nfds)"
fi
# now every accept fails with EMFILE while connections wait in the backlog
c0=$(cpu_ticks "$D_PID")
sleep 2
c1=$(cpu_ticks "$D_PID")
hz=$(getconf CLK_TCK)
used=$(awk -v t=$((c1 - c0)) -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }')
diag "daemon CPU time over 2 s of a saturated listener: $used s"
if [ $((c1 - c0)) -lt "$hz" ]; then
	ok "it does not spin on EMFILE (CPU $used s in 2 s, under 1 s)"
else
	not_ok "it does not spin on EMFILE (CPU $used s in 2 s, under 1 s)"
fi
check "it is alive while saturated" kill -0 "$D_PID"
unhold
if wait_until 10 answers "$D_SOCK"; then
	ok "it answers a client once the others close"
else
	not_ok "it answers a client once the others close"
fi
is "$(afs --json status | jget pid)" "$D_PID" "the same daemon"
if wait_until 10 eval '[ "$(afs --json status | jget clients)" = 1 ]'; then
	ok "every held connection was let go (clients: 1)"
else
	not_ok "every held connection was let go"
	diag "clients: $(afs --json status | jget clients)"
fi

# --- creates with only K descriptors free -------------------------------------------------
outcomes=
bad=
for k in 1 2 3 4 5 6 7 8 10 12; do
	mkdir -p "$T/f$k"
	echo "f$k" >"$T/f$k/f"
	free=$((LIMIT - $(nfds)))
	n=$((free - k))
	[ "$n" -lt 0 ] && n=0
	hold "$n"
	wait_until 5 eval '[ "$(nfds)" -ge $((LIMIT - k)) ]'
	r=$(timeout 20 "$top_builddir/src/agentfs" --socket "$D_SOCK" --json create "f$k" "$T/f$k" 2>&1)
	rc=$?
	okv=$(printf '%s' "$r" | jget ok 2>/dev/null)
	code=$(printf '%s' "$r" | jget error.code 2>/dev/null)
	unhold
	case "$okv" in
	true) outcomes="$outcomes f$k:made" ;;
	false) [ -n "$code" ] && outcomes="$outcomes f$k:$code" || bad="$bad f$k(no code: $r)" ;;
	*) bad="$bad f$k(exit $rc: $r)" ;;
	esac
	kill -0 "$D_PID" 2>/dev/null || { bad="$bad f$k(daemon died)"; break; }
done
diag "creates under pressure:$outcomes"
if [ -z "$bad" ]; then
	ok "every create under fd pressure got a reply (made or an error code)"
else
	not_ok "every create under fd pressure got a reply (made or an error code)"
	diag "bad:$bad"
fi
check "the daemon survived the creates" kill -0 "$D_PID"
wait_until 10 eval '[ "$(afs --json status | jget clients)" = 1 ]'

# every listed bot: each root mounted, or reported unmounted with a reason;
# and the mounts in mountinfo are exactly the roots reported mounted
mounted_want=
half=
for b in $(afs --json ls | jget 'bots.*.name'); do
	s=$(afs --json show "$b")
	i=0
	while st=$(printf '%s' "$s" | jget "bot.mounts.$i.state") && [ -n "$st" ]; do
		mp=$(printf '%s' "$s" | jget "bot.mounts.$i.mountpoint")
		if [ "$st" = mounted ]; then
			mounted_want="$mounted_want$mp
"
		elif [ -z "$(printf '%s' "$s" | jget "bot.mounts.$i.error")" ]; then
			half="$half $b/$i($st without a reason)"
		else
			diag "$b root $i: $st ($(printf '%s' "$s" | jget "bot.mounts.$i.error"))"
		fi
		i=$((i + 1))
	done
done
is "$half" "" "every listed bot's roots are mounted or say why not"
is "$(mounts_in "$D_MNT" | awk '{ print $2 }' | sort)" "$(printf '%s' "$mounted_want" | sort)" \
	"the mounts under the state folder are exactly the roots reported mounted"
for b in $(afs --json ls | jget 'bots.*.name'); do
	case "$b" in f*)
		mp=$(afs --json show "$b" | jget 'bot.mounts.0.mountpoint')
		if [ "$(afs --json show "$b" | jget 'bot.mounts.0.state')" = mounted ]; then
			is "$(timeout 5 cat "$mp/f" 2>&1)" "$b" "$b (made under pressure) serves its folder"
		fi
	esac
done
for b in $(afs --json ls | jget 'bots.*.name'); do
	[ "$b" = b0 ] || afs rm "$b" >/dev/null 2>&1 || diag "rm $b failed"
done
is "$(afs --json ls | jget 'bots.*.name' | tr '\n' ' ')" "b0 " "the others deleted"
if wait_until 5 eval '[ "$(nfds)" -le "$fds0" ]'; then
	ok "no descriptor leaked: back to $fds0"
else
	not_ok "no descriptor leaked: back to $fds0"
	diag "now $(nfds):" "$(ls -l "/proc/$D_PID/fd" | sed 1d | awk '{ print $NF }' | sort | uniq -c)"
fi
is "$(timeout 5 cat "$D_MNT/b0/0/f" 2>&1)" zero "b0's mount still answers"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted by the daemon"

# --- agentfs mount under a limit of 64 descriptors -----------------------------------------
S="$T/src"
M="$T/mnt"
mkdir -p "$S" "$M"
make_tree "$S" 10 100
is "$(find "$S" -type f | wc -l)" 1000 "a tree of 1,000 files"
if ! fs_mount_nofile "$LIMIT:$LIMIT" "$S" "$M"; then
	not_is "$(timeout 10 cat "$M/d0/f00" 2>&1)" "file 0/00" \
	"agentfs mount -f under prlimit --nofile=$LIMIT:$LIMIT serves the tree"
	done_testing
	exit 1
fi
is "$(timeout 10 cat "$M/d0/f00" 2>&1)" "file 0/00" \
	"agentfs mount -f under prlimit --nofile=$LIMIT:$LIMIT serves the tree"
is "$(awk '/^Max open files/ { print $4 ":" $5 }' "/proc/$FS_PID/limits")" "$LIMIT:$LIMIT" \
	"the server runs with its limit"
want_list=$(cd "$S" && find . | sort)
want_sum=$(cd "$S" && find . -type f | sort | xargs cat | sha256sum)
for pass in 1 2; do
	is "$(cd "$M" && timeout 30 find . | sort)" "$want_list" "pass $pass: find lists the 1,011 entries"
	is "$(cd "$M" && timeout 30 find . -type f | sort | timeout 30 xargs cat | sha256sum)" "$want_sum" \
		"pass $pass: cat of every file matches the host"
done
# many files open at once in the mount: each open holds a server descriptor
exec 7<"$M/d0/f00" 8<"$M/d1/f01" 9<"$M/d2/f02"
is "$(cat "$M/d9/f99")" "file 9/99" "with files held open, another still reads"
exec 7<&- 8<&- 9<&-
check "the server is still running" kill -0 "$FS_PID"
check "unmount" fs_umount "$M"

done_testing
