#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-flood: while one client floods the control socket (pipelined version
# requests as fast as the socket takes them, never reading a reply, coming
# back whenever it is dropped), another opens and closes connections in a
# storm, a third holds half a line, and a fourth sends bursts and vanishes in
# the middle of the replies, a normal client's version round trips are all
# answered.  The latencies (median and max of 50) are printed as diagnostics;
# the only timed assertion is a 5 s ceiling per request, to catch a hang.
# At the end the daemon is the same process, holds no leaked clients or
# descriptors, and still serves its bot.
. "$top_srcdir/tests/daemon-lib.sh"

FCLIENT="$top_builddir/tests/fault-client"
[ -x "$FCLIENT" ] || bail_out "$FCLIENT is not built (make check builds it)"

LOAD_SECONDS=6

mkdir -p "$T/w"
echo data >"$T/w/f"

us_to_ms()
{
	awk -v u="$1" 'BEGIN { printf "%.2f", u / 1000 }'
}

daemon_start || bail_out "agentfsd did not start"
pid0=$D_PID
expect_ok "create a bot (so list replies have a body)" "$(afs --json create --user 65534 b "$T/w")"
fds0=$(ls "/proc/$pid0/fd" | wc -l)

# --- baseline ----------------------------------------------------------------------
r=$("$FCLIENT" latency "$D_SOCK" 50 0)
rc=$?
is "$rc" 0 "quiet daemon: 50 version round trips answered"
set -- $r
[ "$rc" = 0 ] && diag "quiet daemon: version latency median $(us_to_ms "$1") ms, max $(us_to_ms "$2") ms"

# --- under load ---------------------------------------------------------------------
"$FCLIENT" blast "$D_SOCK" "$LOAD_SECONDS" >"$T/blast.out" 2>&1 &
p_blast=$!
"$FCLIENT" storm "$D_SOCK" "$LOAD_SECONDS" >"$T/storm.out" 2>&1 &
p_storm=$!
"$FCLIENT" stall "$D_SOCK" "$LOAD_SECONDS" >"$T/stall.out" 2>&1 &
p_stall=$!
"$FCLIENT" midreply "$D_SOCK" "$LOAD_SECONDS" >"$T/midreply.out" 2>&1 &
p_mid=$!
for p in $p_blast $p_storm $p_stall $p_mid; do track_pid "$p"; done
sleep 0.5

# 50 requests 60 ms apart: about 3 s inside the 6 s of load
r=$("$FCLIENT" latency "$D_SOCK" 50 60 2>"$T/lat.err")
rc=$?
if [ "$rc" = 0 ]; then
	ok "under load: 50 version round trips, each answered within 5 s"
	set -- $r
	diag "under load: version latency median $(us_to_ms "$1") ms, max $(us_to_ms "$2") ms"
else
	not_ok "under load: 50 version round trips, each answered within 5 s"
	diag "exit status $rc: $(cat "$T/lat.err")"
fi
# a fresh connection per request, also under load (connect + accept + reply)
bad=0
t0=$(date +%s%N)
for i in $(seq 1 10); do
	timeout 5 "$DCLIENT" req "$D_SOCK" '{"op":"version"}' >/dev/null 2>&1 || bad=$((bad + 1))
done
t1=$(date +%s%N)
is "$bad" 0 "under load: 10 new connections each get a version answer"
diag "under load: new connection + version, mean $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e7 }') ms (including process start)"

wait $p_blast $p_storm $p_stall $p_mid
set -- $(cat "$T/blast.out")
diag "flooder: $1 version requests pipelined unread over ${LOAD_SECONDS} s ($(($1 / LOAD_SECONDS))/s) on $2 connection(s)"
diag "storm: $(cat "$T/storm.out") connect-send-close cycles"
diag "midreply: $(cat "$T/midreply.out") bursts abandoned mid-reply"
diag "staller: $(cat "$T/stall.out") after ${LOAD_SECONDS} s"
like "$(cat "$T/stall.out")" '^(stalled|closed)$' "the half-sent line got no answer (kept open or dropped)"
case "$(cat "$T/blast.out")" in
[0-9]*" "[0-9]*) ok "the flooder ran to its end" ;;
*) not_ok "the flooder ran to its end"; diag "$(cat "$T/blast.out")" ;;
esac
[ "${1:-0}" -ge 1000 ] && ok "the flooder sent thousands of requests ($1)" ||
	not_ok "the flooder sent thousands of requests ($1)"

# --- afterwards ----------------------------------------------------------------------
is "$(afs --json status | jget pid)" "$pid0" "the same daemon answers afterwards"
if wait_until 10 eval '[ "$(afs --json status | jget clients)" = 1 ]'; then
	ok "no client connection is leaked"
else
	not_ok "no client connection is leaked"
	diag "clients: $(afs --json status | jget clients)"
fi
if wait_until 10 eval '[ "$(ls "/proc/$pid0/fd" | wc -l)" -le "$fds0" ]'; then
	ok "the daemon holds no more descriptors than before ($fds0)"
else
	not_ok "the daemon holds no more descriptors than before ($fds0)"
	diag "now: $(ls "/proc/$pid0/fd" | wc -l)"
fi
is "$(timeout 5 cat "$D_MNT/b/0/f" 2>&1)" data "the bot's mount still answers"
r=$("$FCLIENT" latency "$D_SOCK" 50 0)
rc=$?
is "$rc" 0 "quiet again: 50 version round trips answered"
set -- $r
[ "$rc" = 0 ] && diag "quiet again: version latency median $(us_to_ms "$1") ms, max $(us_to_ms "$2") ms"
expect_ok "delete the bot" "$(afs --json rm b)"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"

done_testing
