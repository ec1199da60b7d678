#!/bin/bash
# SPDX-License-Identifier: MIT
# fs-locks: flock and POSIX locks exclude each other across a mount and the
# host; a blocking request waits for the release, and a waiter can be
# interrupted by a signal without leaving a lock behind.  m1 is the host's
# own folder, m2 the mount: one agentfs server per folder (agentfs(1)), so
# the other process that shares a lock with a mount is the host's.
. "$top_srcdir/tests/lib.sh"

[ -x "$LOCKER" ] || bail_out "$LOCKER is not built"

S="$T/src"
M1="$S"
M2="$T/m2"
mkdir -p "$S" "$M2"
chmod 0755 "$S"
: >"$S/lf"

extra=()
# bindfs forwards locks only when asked (and then needs threads)
[ "${AGENTFS_TEST_BINDFS:-0}" = 1 ] && extra=(-o enable-lock-forwarding,multithreaded)
if ! fs_mount "${extra[@]}" "$S" "$M2"; then
	not_ok "mount the folder"
	done_testing
	exit 1
fi
ok "mount the folder"

# hold KIND PATH: start a holder; HOLDER is its pid once it has the lock
hold()
{
	local out="$T/hold.$RANDOM"
	"$LOCKER" "$1" hold "$2" 30 >"$out" 2>&1 &
	HOLDER=$!
	track_pid "$HOLDER"
	if ! wait_until 10 grep -q '^locked' "$out"; then
		diag "holder on $2 did not get the lock: $(cat "$out")"
		return 1
	fi
}

release()
{
	kill -TERM "$HOLDER" 2>/dev/null
	wait "$HOLDER" 2>/dev/null
}

try()
{
	"$LOCKER" "$1" try "$2" 2>&1
}

where()
{
	case "$1" in
	"$M1"/*) echo m1 ;;
	"$M2"/*) echo m2 ;;
	*) echo host ;;
	esac
}

for kind in flock posix ofd; do
	# holder in one mount, attempts from the other mount, the host and the
	# same mount
	if ! hold $kind "$M1/lf"; then
		not_ok "$kind: take the lock in m1"
		continue
	fi
	ok "$kind: take the lock in m1"
	is "$(try $kind "$M2/lf")" EAGAIN "$kind: held in m1, a non-blocking attempt in m2 gets EAGAIN"
	is "$(try $kind "$S/lf")" EAGAIN "$kind: held in m1, a non-blocking attempt on the host gets EAGAIN"
	is "$(try $kind "$M1/lf")" EAGAIN "$kind: held in m1, another process in m1 gets EAGAIN"
	if [ $kind != flock ]; then
		is "$("$LOCKER" $kind getlk "$M2/lf")" F_WRLCK "$kind: held in m1, F_GETLK in m2 reports the write lock"
		is "$("$LOCKER" $kind getlk "$S/lf")" F_WRLCK "$kind: held in m1, F_GETLK on the host reports the write lock"
	fi

	# a blocking waiter in m2 waits for the release
	"$LOCKER" $kind wait "$M2/lf" >"$T/waiter.out" 2>&1 &
	waiter=$!
	track_pid "$waiter"
	sleep 1
	if kill -0 "$waiter" 2>/dev/null && [ ! -s "$T/waiter.out" ]; then
		ok "$kind: a blocking attempt in m2 waits while m1 holds the lock"
	else
		not_ok "$kind: a blocking attempt in m2 waits while m1 holds the lock"
		diag "waiter said: $(cat "$T/waiter.out")"
	fi
	release
	if wait_until 10 grep -q '^locked' "$T/waiter.out"; then
		ok "$kind: the waiter in m2 gets the lock once m1 releases it"
	else
		not_ok "$kind: the waiter in m2 gets the lock once m1 releases it"
		diag "waiter said: $(cat "$T/waiter.out")"
	fi
	wait "$waiter" 2>/dev/null
	is "$(try $kind "$M2/lf")" OK "$kind: free again once everybody let go"

	# holder on the host, attempt through a mount
	if hold $kind "$S/lf"; then
		is "$(try $kind "$M2/lf")" EAGAIN "$kind: held on the host, a non-blocking attempt in m2 gets EAGAIN"
		release
		is "$(try $kind "$M2/lf")" OK "$kind: released on the host, m2 gets it"
	else
		not_ok "$kind: take the lock on the host"
	fi

	# a waiter interrupted by a signal returns, and leaves nothing behind
	if hold $kind "$M1/lf"; then
		out=$(timeout -k 2 5 "$LOCKER" $kind wait "$M2/lf" 1 2>&1)
		rc=$?
		is "$rc:$out" "0:EINTR" "$kind: a waiter in m2 interrupted by SIGALRM returns EINTR"
		release
		sleep 1
		is "$(try $kind "$S/lf")" OK "$kind: the interrupted waiter left no lock behind (host can lock)"
		is "$(try $kind "$M2/lf")" OK "$kind: the interrupted waiter left no lock behind (m2 can lock)"
	else
		not_ok "$kind: take the lock in m1 again"
	fi

	# the lock goes with a holder killed by SIGKILL
	if hold $kind "$M1/lf"; then
		kill -KILL "$HOLDER"
		wait "$HOLDER" 2>/dev/null
		if wait_until 5 sh -c '[ "$("$1" "$2" try "$3")" = OK ]' - "$LOCKER" $kind "$M2/lf"; then
			ok "$kind: a holder killed by SIGKILL releases the lock"
		else
			not_ok "$kind: a holder killed by SIGKILL releases the lock"
			diag "m2 still gets: $(try $kind "$M2/lf")"
		fi
	else
		not_ok "$kind: take the lock in m1 once more"
	fi
done

# POSIX and OFD locks share one lock space
if hold posix "$M1/lf"; then
	is "$(try ofd "$M2/lf")" EAGAIN "a POSIX lock in m1 blocks an OFD lock in m2"
	release
fi
if hold ofd "$M2/lf"; then
	is "$(try posix "$M1/lf")" EAGAIN "an OFD lock in m2 blocks a POSIX lock in m1"
	release
fi

# blocked waiters must not hold the server's workers: with many of them
# waiting, the mount still answers
echo data >"$S/other"
if hold flock "$M1/lf"; then
	waiters=
	for i in $(seq 1 12); do
		"$LOCKER" flock wait "$M2/lf" >/dev/null 2>&1 &
		waiters="$waiters $!"
		track_pid "$!"
		"$LOCKER" posix wait "$M1/lf" >/dev/null 2>&1 &
		waiters="$waiters $!"
		track_pid "$!"
	done
	sleep 1
	is "$(timeout 10 cat "$M2/other" 2>&1)" data "with 12 flock waiters blocked in m2, m2 still answers a read"
	is "$(timeout 10 cat "$M1/other" 2>&1)" data "with 12 POSIX waiters blocked in m1, m1 still answers a read"
	check "with waiters blocked, m2 still makes a file" timeout 10 touch "$M2/made-while-blocked"
	release
	alive()
	{
		local p
		for p in $waiters; do
			kill -0 "$p" 2>/dev/null && echo "$p"
		done
	}
	wait_until 20 eval '[ -z "$(alive)" ]'
	is "$(alive | wc -l)" 0 "all 24 waiters got the lock in turn once it was released"
	for p in $waiters; do
		wait "$p" 2>/dev/null
	done
else
	not_ok "flock: take the lock in m1 for the many-waiters case"
fi

# flock(1) from util-linux, as build tools use it
if hold flock "$M1/lf"; then
	flock -n "$M2/lf" true
	is "$?" 1 "flock -n in m2 fails at once while m1 holds the lock"
	timeout -k 2 5 flock -w 1 "$M2/lf" true
	is "$?" 1 "flock -w 1 in m2 gives up after its timeout"
	timeout -k 2 -s INT 1 flock "$M2/lf" true
	is "$?" 124 "a blocking flock in m2 is interrupted by SIGINT (not only by SIGKILL)"
	flock -n "$S/lf" true
	is "$?" 1 "flock -n on the host fails while m1 holds the lock"
	release
	sleep 1
	check "flock -n in m2 succeeds after the release" flock -n "$M2/lf" true
	# m2's own lock goes when the kernel's RELEASE for its file reaches the
	# server, which FUSE sends asynchronously a moment after the last close.
	for _ in $(seq 20); do flock -n "$S/lf" true && break; sleep 0.1; done
	check "flock -n on the host succeeds after the release" flock -n "$S/lf" true
else
	not_ok "flock: take the lock in m1 for flock(1)"
fi

# waiters granted the moment they queue: each churner's wait races the
# other's release, so the lock thread grants while the worker that queued the
# waiter is still setting it up (a use-after-free there killed the server)
for kind in flock posix; do
	pids=
	for mnt in "$M1" "$M2" "$M1" "$M2"; do
		"$LOCKER" $kind churn "$mnt/lf" 2000 >"$T/churn.$kind.${#pids}" 2>&1 &
		pids="$pids $!"
		track_pid "$!"
	done
	bad=0
	for p in $pids; do
		wait "$p" || bad=1
	done
	is "$bad:$(cat "$T"/churn.$kind.* | sort -u | tr '\n' ' ')" "0:done " \
		"$kind: 4 churners take and drop the lock 2000 times each across m1 and m2"
	is "$(timeout 10 cat "$M2/other" 2>&1)" data "$kind: m2 still answers after the churn"
done

check "unmount m2" fs_umount "$M2"
done_testing
