#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-errpaths: agentfsd's failure paths leave what it holds as it was. A
# create, configure or rm that fails part way must close only what it
# opened: before cbf45e0 a mount that failed before its root was open closed
# fd 0 of the daemon, then whatever got fd 0 next (a client's socket). Each
# part below makes requests fail from outside and checks that every
# descriptor the daemon held before is still open on the same file, that
# its standard input is still /dev/null, that another bot's mount still
# serves (through a file held open across it) and that the next
# request is answered:
#  - creates with 1 to 14 descriptors free (RLIMIT_NOFILE of the running
#    daemon lowered): they fail at every step of a mount (the folder, the
#    mount point, its lock, the guard's scan, fsmount) or succeed;
#  - no descriptor free at all: a client is told so within seconds (on the
#    descriptor the daemon keeps in reserve for it), not left waiting, and
#    the log says so once;
#  - roots that are not folders, missing writable paths, a bot's folder
#    removed while it is mounted, then the bot deleted;
#  - a restart whose new daemon is short of descriptors: each bot is mounted
#    (taken over or afresh) or says why not, and the roots it says are
#    mounted serve;
#  - the keeper of the next daemon killed: the daemon starts a new one and
#    gives it everything again, then a create and an rm; it holds what it
#    held but its old keeper's connection, plus exactly the new keeper's;
#  - a daemon that cannot open /proc/self/mountinfo (EMFILE, from
#    tests/fault-inject.so): it takes a bot's root over, and an rm unmounts.
. "$top_srcdir/tests/daemon-lib.sh"

command -v prlimit >/dev/null || skip_all "prlimit is missing (util-linux)"

TAB=$(printf '\t')

# fd_table: "N<TAB>what it is open on" of each descriptor of the daemon, sorted for join
fd_table()
{
	local f
	for f in /proc/"$D_PID"/fd/*; do
		printf '%s\t%s\n' "${f##*/}" "$(readlink "$f" 2>/dev/null)"
	done | sort
}

# fds_changed BEFORE: each descriptor of BEFORE closed or open on something else now
fds_changed()
{
	fd_table >"$T/fds.now"
	join -t "$TAB" "$1" "$T/fds.now" | awk -F '\t' '$2 != $3 { print $1 ": " $2 " -> " $3 }'
	join -t "$TAB" -v 1 "$1" "$T/fds.now" | awk -F '\t' '{ print $1 ": " $2 " -> closed" }'
}

# holds DESC BEFORE: the daemon holds what it held, fd 0 is /dev/null, a's mount
# serves (a fresh read, and the next line of the file held open on fd 7), and
# it answers
HELD=0
holds()
{
	local desc="$1" before="$2" changed line
	changed=$(fds_changed "$before")
	if [ -z "$changed" ]; then
		ok "$desc: every descriptor the daemon held is still open on the same file"
	else
		not_ok "$desc: every descriptor the daemon held is still open on the same file"
		diag "$changed"
	fi
	is "$(readlink "/proc/$D_PID/fd/0")" /dev/null "... its standard input is still /dev/null"
	is "$(timeout 5 cat "$D_MNT/a/0/f" 2>&1)" "a" "... bot a's mount still serves"
	HELD=$((HELD + 1))
	read -r -t 5 line <&7 || line="(no line: $?)"
	is "$line" "line $HELD" "... and the file held open on it reads on"
	is "$(afs --json status | jget pid)" "$D_PID" "... and the next request is answered"
}

# answered DESC REPLY: a reply came, made or an error with a code
answered()
{
	local okv code
	okv=$(printf '%s' "$2" | jget ok 2>/dev/null)
	code=$(printf '%s' "$2" | jget error.code 2>/dev/null)
	case "$okv:$code" in
	true:* | false:?*) return 0 ;;
	esac
	diag "$1: no reply: $2"
	return 1
}

folder()
{
	mkdir -p "$T/$1"
	echo "$1" >"$T/$1/f"
	chown -R 65534 "$T/$1"
}

# restores: how many times a daemon logged that its restore is done (restored_all:
# what the last one handed over and no bot took is closed then)
restores()
{
	local n
	n=$(grep -c ': restored [0-9]* bot' "$D_LOG" 2>/dev/null)
	echo "${n:-0}"
}

# restored N: wait until a daemon is done restoring, the N+1th time
restored()
{
	wait_until 20 eval '[ "$(restores)" -gt '"$1"' ]' ||
		diag "no daemon said it restored its bots (log: $(restores) times)"
	wait_until 20 eval '! afs --json ls | grep -q "\"mounting\""'
}

# keeper_conn: the daemon's end of its connection to the keeper (a socket inode, from ss)
keeper_conn()
{
	ss -xn 2>/dev/null | awk -v p="$D_STATE/keeper.sock" '$1 == "u_seq" && $5 == p { print $8 }'
}

nfds()
{
	ls "/proc/$D_PID/fd" | wc -l
}

# --- a daemon with one bot, its file held open ----------------------------------------
folder a
seq -f 'line %g' 20 >"$T/a/held"
chown 65534 "$T/a/held"
n=$(restores)
daemon_start || bail_out "agentfsd did not start"
restored "$n"
expect_ok "create bot a" "$(afs --json create --user 65534 a "$T/a")" || bail_out "no bot a"
exec 7<"$D_MNT/a/0/held" || bail_out "cannot open a file of bot a"
fd_table >"$T/fds.0"
diag "the daemon holds $(wc -l <"$T/fds.0") descriptors with one bot"

# --- creates short of descriptors -----------------------------------------------------
# The soft limit of the running daemon is lowered to what it holds plus K for
# one create, then raised back: a create whose client the daemon cannot accept
# yet is answered once the limit is back.
outcomes=
bad=
for k in 1 2 3 4 5 6 7 8 9 10 11 12 14; do
	folder "c$k"
	prlimit --pid "$D_PID" --nofile=$(($(nfds) + k)):4096 || bail_out "prlimit --pid failed"
	rm -f "$T/create.out"
	timeout 30 "$AGENTFS" --socket "$D_SOCK" --json create --user 65534 "c$k" "$T/c$k" \
		>"$T/create.out" 2>&1 &
	cpid=$!
	wait_until 5 eval '! kill -0 $cpid 2>/dev/null'
	prlimit --pid "$D_PID" --nofile=4096:4096
	wait "$cpid"
	r=$(cat "$T/create.out")
	answered "c$k" "$r" || bad="$bad c$k"
	if [ "$(printf '%s' "$r" | jget ok)" = true ]; then
		outcomes="$outcomes c$k:made"
	else
		outcomes="$outcomes c$k:$(printf '%s' "$r" | jget error.message | sed "s|$T/||g")"
	fi
done
diag "creates with few descriptors free:$outcomes"
is "$bad" "" "every create short of descriptors was answered"
holds "after creates short of descriptors" "$T/fds.0"
for b in $(afs --json ls | jget 'bots.*.name'); do
	case "$b" in c*) afs --json rm "$b" >/dev/null || diag "rm $b failed" ;; esac
done
is "$(afs --json ls | names)" "a " "the bots made meanwhile are deleted"

# --- no descriptor free at all ---------------------------------------------------------
# The soft limit at the lowest descriptor free: no accept can work (the
# limit bounds descriptor numbers). Before, a client waited in the backlog
# for as long as the shortage lasted (forever, for a daemon whose mounts'
# open files filled its table) and the log had a line five times a second.
lowest_free()
{
	ls "/proc/$D_PID/fd" | sort -n | awk 'BEGIN { n = 0 } $1 == n { n++ } END { print n }'
}
# fds_settle: wait until the daemon's descriptors stay the same for 0.3 s (the
# servers of the bots just deleted may still be closing theirs; 6 s at most)
fds_settle()
{
	local a b i
	b=$(ls "/proc/$D_PID/fd" | sort -n | tr '\n' ' ')
	for i in $(seq 20); do
		sleep 0.3
		a=$b
		b=$(ls "/proc/$D_PID/fd" | sort -n | tr '\n' ' ')
		[ "$a" = "$b" ] && break
	done
}
# A descriptor the daemon closes meanwhile (the kernel forgetting a node)
# lets the client in: then again, three times at most.
for try in 1 2 3; do
	fds_settle
	mark=$(wc -l <"$D_LOG")
	prlimit --pid "$D_PID" --nofile="$(lowest_free)":4096 || bail_out "prlimit --pid failed"
	start=$SECONDS
	r=$(timeout 30 "$AGENTFS" --socket "$D_SOCK" --json status 2>&1)
	took=$((SECONDS - start))
	sleep 1 # a second more of the shortage: the log must not grow with it
	prlimit --pid "$D_PID" --nofile=4096:4096
	[ "$(printf '%s' "$r" | jget pid)" = "$D_PID" ] || break
	diag "try $try: a descriptor came free, the client was served; again"
	sleep 1
done
expect_error "a client of a daemon with no descriptor free is told so" limit "$r"
like "$(printf '%s' "$r" | jget error.message)" \
	"out of file descriptors \(its limit is [0-9]+\).*Raise its limit" "... saying what to do"
if [ "$took" -lt 10 ]; then
	ok "... within seconds (${took} s), not left waiting"
else
	not_ok "... within seconds (${took} s), not left waiting"
fi
is "$(afs --json status | jget pid)" "$D_PID" "... and with descriptors free again the next client is served"
log=$(tail -n +"$((mark + 1))" "$D_LOG")
is "$(printf '%s\n' "$log" | grep -c 'clients wait until descriptors are free')" 1 \
	"... the daemon logged the shortage once"
like "$log" "accepting clients again: out of descriptors for [0-9]+ ms at least \(1 told so\)" \
	"... and its end, with how many clients were told"
holds "after no descriptor was free" "$T/fds.0"

# --- roots that are not folders, or go away -------------------------------------------
touch "$T/file"
expect_error "a bot over a file: refused" bad_path \
	"$(afs --json create --user 65534 nf "$T/file")"
expect_error "a bot with a missing writable path: refused" bad_path \
	"$(afs --json create --user 65534 --writable "$T/missing" nw "$T/a")"
folder gone
expect_ok "create bot g" "$(afs --json create --user 65534 g "$T/gone")"
expect_error "configure g with a missing writable path: refused" bad_path \
	"$(afs --json configure --writable "$T/missing" g)"
rm -rf "$T/gone"
r=$(afs --json rm g)
answered "rm g" "$r" && ok "a bot whose folder was removed while mounted: rm is answered"
expect_error "... and its folder cannot be a new bot's" bad_path \
	"$(afs --json create --user 65534 g2 "$T/gone")"
holds "after roots that are not folders or went away" "$T/fds.0"

# --- a restart short of descriptors ----------------------------------------------------
exec 7<&-
for i in 1 2 3 4 5; do
	folder "r$i"
	expect_ok "create bot r$i" "$(afs --json create --user 65534 "r$i" "$T/r$i")"
done
daemon_kill TERM
daemon_wait_gone 10 || bail_out "agentfsd did not stop"
# a limit that leaves some takeovers and some fresh mounts short (what fails varies)
n=$(restores)
prlimit --nofile=56:56 -- "$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" \
	--cgroup "$D_CGROUP" || bail_out "agentfsd did not start under prlimit"
D_PID=$(daemon_pids "$D_SOCK" | head -n 1)
[ -n "$D_PID" ] || bail_out "no agentfsd pid"
restored "$n"
# It answers: its status, or (the servers of the roots it mounted took every
# descriptor left: how many varies) that it is out of descriptors.
r=$(timeout 30 "$AGENTFS" --socket "$D_SOCK" --json status 2>&1)
short=
case "$(printf '%s' "$r" | jget pid):$(printf '%s' "$r" | jget error.code)" in
"$D_PID":) ok "a daemon short of descriptors at a restart answers" ;;
:limit)
	short=1
	ok "a daemon short of descriptors at a restart answers (that it is out of descriptors)"
	;;
*)
	not_ok "a daemon short of descriptors at a restart answers"
	diag "got: $r"
	;;
esac
for f in 0 1 2; do
	is "$(readlink "/proc/$D_PID/fd/$f")" /dev/null "... its fd $f is /dev/null"
done
half=
served=
for b in a r1 r2 r3 r4 r5; do
	[ -z "$short" ] || break
	s=$(timeout 30 "$AGENTFS" --socket "$D_SOCK" --json show "$b" 2>&1)
	st=$(printf '%s' "$s" | jget bot.mounts.0.state)
	if [ "$(printf '%s' "$s" | jget error.code)" = limit ]; then
		short=1
	elif [ "$st" = mounted ]; then
		# it serves: the file, or (its server out of descriptors) EMFILE, not a hang or ENOTCONN
		out=$(timeout 5 cat "$D_MNT/$b/0/f" 2>&1)
		case "$out" in
		"$b") ;;
		*"Too many open files"*) diag "$b answers, out of descriptors: $out" ;;
		*) half="$half $b(mounted, not serving: $out)" ;;
		esac
		served="$served $b"
	elif [ -z "$(printf '%s' "$s" | jget bot.mounts.0.error)" ]; then
		half="$half $b($st without a reason)"
	fi
done
if [ -n "$short" ]; then
	skip "the daemon is out of descriptors after the restart: it cannot say which roots it mounted"
	skip "... nor which mounts are its"
else
	diag "served after the restart:$served"
	is "$half" "" "each bot's root serves, or says why it is not mounted"
	is "$(mounts_in "$D_MNT" | awk '{ print $2 }' | sort)" \
		"$(for b in $served; do echo "$D_MNT/$b/0"; done | sort)" \
		"... and the mounts under the state folder are exactly those said to be mounted"
fi
# --- the keeper killed ------------------------------------------------------------------
# A daemon started as usual takes the mounts over from the one short of
# descriptors; then its keeper is killed: a new one is started and given
# everything again, from what the daemon holds (it holds no copies).
daemon_kill TERM
daemon_wait_gone 10 || bail_out "agentfsd did not stop"
n=$(restores)
daemon_start || bail_out "agentfsd did not start"
restored "$n"
is "$(timeout 5 cat "$D_MNT/a/0/f" 2>&1)" a "the next daemon serves bot a"
exec 7<"$D_MNT/a/0/held" || bail_out "cannot open a file of bot a"
HELD=0
fd_table >"$T/fds.1"
k=$(keeper_pids)
c0=$(keeper_conn)
if [ -z "$k" ]; then
	skip "no keeper runs"
elif ! command -v ss >/dev/null; then
	skip "ss is missing (iproute2): the keeper's connection cannot be told"
else
	is "$(grep -c "$TAB""socket:\[$c0\]\$" "$T/fds.1")" 1 "the daemon holds one connection to its keeper"
	mark=$(wc -l <"$D_LOG")
	kill -KILL $k
	wait_until 5 eval '! kill -0 '"$k"' 2>/dev/null && [ -n "$(keeper_pids)" ] && [ -n "$(keeper_conn)" ]'
	wait_until 5 eval 'tail -n +'"$((mark + 1))"' "$D_LOG" | grep -q "a new keeper holds the"'
	c1=$(keeper_conn)
	is "$(keeper_pids | wc -w):$([ -n "$c1" ] && [ "$c1" != "$c0" ] && echo new)" "1:new" \
		"with the keeper killed, a new keeper runs, connected to the daemon"
	like "$(tail -n +"$((mark + 1))" "$D_LOG")" "a new keeper holds the [0-9]+ descriptors" \
		"... and the daemon says it gave it everything again"
	folder nk
	expect_ok "... a bot is made" "$(afs --json create --user 65534 nk "$T/nk")"
	is "$(timeout 5 cat "$D_MNT/nk/0/f" 2>&1)" nk "... and serves"
	expect_ok "... and is deleted" "$(afs --json rm nk)"
	# the old keeper's connection goes; the new keeper's is the one descriptor more
	grep -v "$TAB""socket:\[$c0\]\$" "$T/fds.1" >"$T/fds.1k"
	fd_table >"$T/fds.2"
	is "$(join -t "$TAB" -v 2 "$T/fds.1k" "$T/fds.2" | cut -f 2)" "socket:[$c1]" \
		"... and the daemon holds one descriptor more than before but the old keeper's: the new keeper's connection"
	holds "after the keeper was killed" "$T/fds.1k"
fi
exec 7<&-
# --- the mount table unreadable ---------------------------------------------------------
# A process out of descriptors cannot open /proc/self/mountinfo. Read as "not
# mounted there", that failed a takeover and left the kernel mount it should
# have ended in place, dead at the bot's mount point (mounted afresh: "already
# a mount point"), and an rm left the bot's root mounted. The fault library
# refuses every open of the mount table (EMFILE) in the next daemon.
FAULT_SO="$top_builddir/tests/fault-inject.so"
[ -f "$FAULT_SO" ] || bail_out "$FAULT_SO is not built (make check builds it)"
if ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib[at]san'; then
	skip "agentfsd is built with a sanitizer: the fault library cannot be preloaded"
else
	daemon_kill TERM
	daemon_wait_gone 10 || bail_out "agentfsd did not stop"
	n=$(restores)
	daemon_start || bail_out "agentfsd did not start"
	restored "$n"
	folder u
	seq -f 'line %g' 20 >"$T/u/held"
	expect_ok "create bot u" "$(afs --json create --user 65534 u "$T/u")"
	exec 8<"$D_MNT/u/0/held" || bail_out "cannot open a file of bot u"
	daemon_kill TERM
	daemon_wait_gone 10 || bail_out "agentfsd did not stop"
	n=$(restores)
	LD_PRELOAD="$FAULT_SO" FAULT_MOUNTINFO=1 FAULT_LOG="$T/faults" daemon_start ||
		bail_out "agentfsd does not start with the fault library"
	restored "$n"
	like "$(cat "$T/faults" 2>/dev/null)" "mountinfo" \
		"a daemon that cannot read the mount table starts (the fault was hit)"
	is "$(afs --json show u | jget bot.mounts.0.state)" mounted "... and takes bot u's root over"
	read -r -t 5 line <&8 || line="(no line: $?)"
	is "$line" "line 1" "... the file held open on it across the restart reads on"
	exec 8<&-
	expect_ok "... rm u" "$(afs --json rm u)"
	is "$(mounts_in "$D_MNT/u")" "" "... which leaves nothing mounted"
	folder v
	expect_ok "... a bot made there" "$(afs --json create --user 65534 v "$T/v")"
	is "$(timeout 5 cat "$D_MNT/v/0/f" 2>&1)" v "... serves"
	expect_ok "... and is deleted" "$(afs --json rm v)"
	is "$(mounts_in "$D_MNT/v")" "" "... which leaves nothing mounted"
fi
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"

done_testing
