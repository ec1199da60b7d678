#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-kill: agentfsd is killed with SIGKILL at a random moment while a
# background loop creates, configures, forks and deletes bots through the
# control socket and writes files through their mounts.  After each kill the
# state file is one whole JSON object (never a partial write); the restarted
# daemon (same --socket and --state) answers, lists exactly the bots in the
# state file, every one of them is mounted and answers a cat, and the mounts
# under the state folder are exactly one per root of a listed bot (nothing
# stale, nothing half-made: a bot whose create was in flight may or may not
# exist, but if it is listed it is mounted).
#
# Anything that touches a path under a mount runs under `timeout`: a dead
# mount must not hang the test.
. "$top_srcdir/tests/daemon-lib.sh"

ROUNDS=${FAULT_KILL_ROUNDS:-5}
NCHURN=4

have_python=
command -v python3 >/dev/null 2>&1 && have_python=1

# --- the folders ----------------------------------------------------------------
for b in s1 s2 s3; do
	mkdir -p "$T/w/$b"
	echo "$b" >"$T/w/$b/f"
done
for i in $(seq 1 $NCHURN); do
	mkdir -p "$T/c/c$i"
	echo "c$i" >"$T/c/c$i/f"
done
chmod -R a+rwX "$T/w" "$T/c"

names_of()
{
	jget 'bots.*.name' | sort | tr '\n' ' '
}

# state_names: the names in the state file, sorted, one line
state_names()
{
	jget 'bots.*.name' <"$D_STATE/bots.json" | sort | tr '\n' ' '
}

daemon_start || bail_out "agentfsd did not start"
for b in s1 s2 s3; do
	expect_ok "create $b" "$(afs --json create --user 65534 "$b" "$T/w/$b")"
done

# --- the workload ------------------------------------------------------------------
# One background loop.  It stops at $T/stop (or after 120 s); while $T/pause
# exists it does nothing and says so with $T/idle, so the checks below see a
# quiet daemon.  Every command is bounded by timeout; failures (the daemon is
# dead half the time) are expected and ignored.
workload()
{
	local i=0 k s end=$((SECONDS + 120))
	while [ ! -e "$T/stop" ] && [ "$SECONDS" -lt "$end" ]; do
		if [ -e "$T/pause" ]; then
			: >"$T/idle"
			sleep 0.05
			continue
		fi
		i=$((i + 1))
		k=$((i % NCHURN + 1))
		s=$((i % 3 + 1))
		case $((i % 5)) in
		0 | 1) timeout 5 "$AGENTFS" --socket "$D_SOCK" create --user 65534 "c$k" "$T/c/c$k" --id "r$i" ;;
		2) timeout 5 "$AGENTFS" --socket "$D_SOCK" configure "c$k" --network --ttl 0 ;;
		3) timeout 5 "$AGENTFS" --socket "$D_SOCK" fork "s$s" "c$k" ;;
		4) timeout 5 "$AGENTFS" --socket "$D_SOCK" rm "c$k" ;;
		esac
		timeout 3 sh -c 'echo "$2" >"$1/out.$2" && cat "$1/f"' sh "$D_MNT/s$s/0" "$i"
		timeout 3 sh -c 'mkdir -p "$1/d" && echo x >"$1/d/n.$2"' sh "$D_MNT/c$k/0" "$i"
		timeout 5 "$AGENTFS" --socket "$D_SOCK" configure "s$s" --no-network
		timeout 3 sh -c 'rm -f "$1/out.$2"' sh "$D_MNT/s$s/0" "$((i - 3))"
	done >/dev/null 2>&1
	: >"$T/idle"
}

workload &
WL=$!
track_pid "$WL"

pause_workload()
{
	rm -f "$T/idle"
	: >"$T/pause"
	wait_until 20 test -e "$T/idle"
}

resume_workload()
{
	rm -f "$T/pause" "$T/idle"
}

# expected_mounts: the mount point of every root of every listed bot
expected_mounts()
{
	local b
	for b in $(afs --json ls | jget 'bots.*.name'); do
		afs --json show "$b" | jget 'bot.mounts.*.mountpoint'
	done | sort
}

for round in $(seq 1 "$ROUNDS"); do
	resume_workload
	# a random moment: 0.3 to 2.0 s into the stream
	ms=$((300 + RANDOM % 1700))
	sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
	if daemon_kill9; then
		ok "round $round: SIGKILL after $ms ms of writes and creates"
	else
		not_ok "round $round: SIGKILL after $ms ms of writes and creates"
	fi
	pause_workload || diag "round $round: the workload did not pause within 20 s"

	# --- the state file the dead daemon left ---------------------------------------
	if state_valid; then
		ok "round $round: bots.json is one JSON object"
	else
		not_ok "round $round: bots.json is one JSON object"
		diag "$(head -c 2000 "$D_STATE/bots.json")"
	fi
	if [ -n "$have_python" ]; then
		check "round $round: python3 -m json.tool parses bots.json" \
			python3 -m json.tool "$D_STATE/bots.json"
	else
		skip "round $round: python3 is missing"
	fi
	tail=$(tail -c 2 "$D_STATE/bots.json" | tr -d '\n')
	is "$tail" "}" "round $round: bots.json ends with its closing brace (not cut off)"
	extra=$(cd "$D_STATE" && ls -A | grep -vxE 'bots\.json|lock|mnt' | tr '\n' ' ')
	[ -n "$extra" ] && diag "round $round: other files in the state folder after the kill: $extra"
	want=$(state_names)
	diag "round $round: state file holds: $want"

	# --- restart --------------------------------------------------------------------
	if daemon_start; then
		ok "round $round: agentfsd restarts on the same socket and state"
	else
		not_ok "round $round: agentfsd restarts on the same socket and state"
		bail_out "agentfsd did not restart"
	fi
	# A request the workload sent while no daemon ran waited in the control
	# socket's backlog (the keeper holds the socket) and the new daemon
	# answers it now, though its client gave up (timeout): it may make a bot
	# the dead daemon's state did not hold. So: every bot that state held is
	# listed, and, once the new daemon is done with what waited, the bots
	# listed are the bots of the state file it keeps.
	r=$(afs --json ls)
	expect_ok "round $round: ls answers" "$r"
	missing=
	for b in $want; do
		case " $(printf '%s' "$r" | names_of)" in *" $b "*) ;; *) missing="$missing $b" ;; esac
	done
	is "$missing" "" "round $round: every bot in the dead daemon's state file is listed"
	for b in $(printf '%s' "$r" | jget 'bots.*.name'); do
		wait_until 10 eval '[ "$(afs --json show "$b" | jget "bot.mounts.*.state" | sort -u)" = mounted ]'
	done
	r=$(afs --json ls)
	want=$(state_names)
	is "$(printf '%s' "$r" | names_of)" "$want" \
		"round $round: the bots listed are the bots in the state file"
	# every listed bot is mounted and its mount answers
	bad=
	for b in $(printf '%s' "$r" | jget 'bots.*.name'); do
		if ! wait_until 10 eval '[ "$(afs --json show "$b" | jget "bot.mounts.*.state" | sort -u)" = mounted ]'; then
			bad="$bad $b(not mounted: $(afs --json show "$b" | jget 'bot.mounts.*.state' | tr '\n' ,))"
			continue
		fi
		mp=$(afs --json show "$b" | jget 'bot.mounts.0.mountpoint')
		got=$(timeout 5 cat "$mp/f" 2>&1)
		case "$b" in
		s*) wantf=$b ;;
		c*) wantf=$(cat "$T/c/$b/f" 2>/dev/null)
		    # a fork of sN has sN's folder
		    [ "$(afs --json show "$b" | jget bot.folder)" = "$T/c/$b" ] || wantf=$(cat "$(afs --json show "$b" | jget bot.folder)/f") ;;
		esac
		[ "$got" = "$wantf" ] || bad="$bad $b(cat: $got)"
		answers "$D_SOCK.d/$b.sock" || bad="$bad $b(socket does not answer)"
	done
	if [ -z "$bad" ]; then
		ok "round $round: every listed bot is mounted, its mount and socket answer"
	else
		not_ok "round $round: every listed bot is mounted, its mount and socket answer"
		diag "bad:$bad"
	fi
	# the mounts under the state folder: one per root of a listed bot
	is "$(mounts_in "$D_MNT" | awk '{ print $2 }' | sort)" "$(expected_mounts)" \
		"round $round: mounts under the state folder are one per root of a listed bot"
	is "$(mounts_in "$D_MNT" | awk '{ print $3 }' | sort -u | tr -d '\n')" fuse.agentfs \
		"round $round: all of them fuse.agentfs"
	# no socket of a bot that is not listed
	stale=
	for s in "$D_SOCK.d"/*.sock; do
		[ -e "$s" ] || continue
		b=${s##*/}
		b=${b%.sock}
		case " $want" in *" $b "*) ;; *) stale="$stale $b" ;; esac
	done
	if is "$stale" "" "round $round: no socket left for a bot that is not listed"; then :; else
		for b in $stale; do
			if answers "$D_SOCK.d/$b.sock"; then diag "$b.sock answers"; else diag "$b.sock is a dead socket file (nothing listens)"; fi
			diag "$b in the state file: $(jget 'bots.*.name' <"$D_STATE/bots.json" | grep -cx "$b")"
		done
	fi
	# leftovers that are not asserted on: mount folders of unlisted bots, temp files
	for d in "$D_MNT"/*; do
		[ -e "$d" ] || continue
		case " $want" in *" ${d##*/} "*) ;; *) diag "round $round: mount folder left for unlisted ${d##*/}" ;; esac
	done
	extra=$(cd "$D_STATE" && ls -A | grep -vxE 'bots\.json|lock|mnt' | tr '\n' ' ')
	[ -n "$extra" ] && diag "round $round: after the restart the state folder also holds: $extra"
done

# --- the end ----------------------------------------------------------------------
: >"$T/stop"
resume_workload
# each pass of the loop is bounded by its timeouts (16 s in all)
if wait_until 30 eval '! kill -0 "$WL"'; then
	ok "the workload loop stopped when asked"
else
	not_ok "the workload loop stopped when asked"
fi
wait "$WL" 2>/dev/null
for b in s1 s2 s3; do
	is "$(timeout 5 cat "$D_MNT/$b/0/f" 2>&1)" "$b" "$b still serves its folder"
done
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
is "$(daemon_pids)" "" "no agentfsd left"
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"

done_testing
