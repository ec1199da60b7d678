#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-shares: one bot, or one runaway client, at its limit cannot lock
# out the others or the operator: bots made by bots (max_bots), then
# connections (max_clients), open files and blocking lock waiters per
# mount.  With max_clients 64 (shares of a quarter), no process and no bot's
# socket gets more than 16 connections, and the bots' sockets together
# leave 16 to the control socket.
. "$top_srcdir/tests/daemon-lib.sh"

FCLIENT="$top_builddir/tests/fault-client"
[ -x "$FCLIENT" ] || bail_out "$FCLIENT is not built"

printf '{"max_clients": 64, "max_bots": 12, "group": ""}\n' >"$T/cfg.json"
mkdir -p "$T/lead" "$T/other" "$T/third" "$T/op"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start"
expect_ok "create lead" "$(afs --json create --user 65534 lead "$T/lead")"
expect_ok "create other" "$(afs --json create --user 65534 other "$T/other")"


# --- bots: with max_bots 12, a family (an operator-made bot and what it made)
# holds at most 4, and bots' bots leave 4 to the operator ----------------------
for c in l1 l2 l3; do
	mkdir -p "$T/lead/$c"
	expect_ok "lead makes $c" "$(as lead create "$c" "$T/lead/$c")"
done
mkdir -p "$T/lead/l4"
expect_error "lead's fifth in its family is refused" limit "$(as lead create l4 "$T/lead/l4")"
case "$(as lead create l4 "$T/lead/l4")" in
*"their share of max_bots"*) ok "the error says the family is at its share" ;;
*) not_ok "the error says the family is at its share" ;;
esac
expect_error "a child of lead's child is in the same family" limit \
	"$(mkdir -p "$T/lead/l1/g"; as l1 create g1 "$T/lead/l1/g")"
for c in o1 o2 o3; do
	mkdir -p "$T/other/$c"
	expect_ok "other makes $c (its own family)" "$(as other create "$c" "$T/other/$c")"
done
expect_ok "operator makes third" "$(afs --json create --user 65534 third "$T/third")"
mkdir -p "$T/third/t1"
r=$(as third create t1 "$T/third/t1")
expect_error "third's first child is refused: the rest is the operator's" limit "$r"
for c in p1 p2 p3; do
	mkdir -p "$T/op/$c"
	expect_ok "the operator still makes $c" "$(afs --json create --user 65534 "$c" "$T/op/$c")"
done
expect_error "the thirteenth bot is refused" limit "$(afs --json create --user 65534 p4 "$T/op")"
for c in l1 l2 l3 o1 o2 o3 third p1 p2 p3; do
	afs rm "$c" >/dev/null
done

# lead's tools hold 100 connections on its socket
mkdir -p "$T/lead/lk"
expect_ok "lead makes lk, whose socket is its family's too" "$(as lead create lk "$T/lead/lk")"
"$FCLIENT" hold "$D_SOCK.d/lead.sock" 100 30 >"$T/hold-lead.out" 2>&1 &
p_lead=$!
track_pid "$p_lead"
wait_until 10 eval 'grep -q opened "$T/hold-lead.out"' || diag "hold: $(cat "$T/hold-lead.out")"
wait_until 5 eval '[ "$(afs --json status | jget clients)" -le 17 ]'
n=$(afs --json status | jget clients)
ok_if() { if eval "$1"; then ok "$2"; else not_ok "$2"; diag "${3:-}"; fi; }
ok_if '[ "$n" -le 17 ] && [ "$n" -ge 2 ]' "lead's socket holds at most its share (16), not 100" "clients: $n"
r=$(as lead status 2>&1)
case "$r" in
*"too many clients on this bot's socket"*) ok "lead's next client is told its socket is full" ;;
*) not_ok "lead's next client is told its socket is full"; diag "$r" ;;
esac
r=$(as lk status 2>&1)
case "$r" in
*"too many clients on this bot's socket and its family's"*)
	ok "so is the socket of the bot it made: the share is its family's" ;;
*) not_ok "so is the socket of the bot it made: the share is its family's"; diag "$r" ;;
esac
is "$(as other status | jget bot)" other "another bot is still served on its own socket"
expect_ok "the operator is still served: configure lead" "$(afs --json configure lead --ttl 0)"

# a runaway process on the control socket
"$FCLIENT" hold "$D_SOCK" 100 30 >"$T/hold-ctl.out" 2>&1 &
p_ctl=$!
track_pid "$p_ctl"
wait_until 10 eval 'grep -q opened "$T/hold-ctl.out"' || diag "hold: $(cat "$T/hold-ctl.out")"
r=$(afs --json status)
expect_ok "the operator is served while one process holds 100 connections" "$r"
n=$(printf '%s' "$r" | jget clients)
ok_if '[ "$n" -le 34 ]' "the runaway process holds at most its share" "clients: $n"
expect_ok "the operator deletes lead while its tools hold its socket" "$(afs --json rm lead)"

kill "$p_lead" "$p_ctl" 2>/dev/null
wait "$p_lead" "$p_ctl" 2>/dev/null
wait_until 10 eval '[ "$(afs --json status | jget clients)" = 1 ]'
is "$(afs --json status | jget clients)" 1 "every held connection is gone once its holder is"

# --- open files: with 1024 descriptors the daemon has 256 for open handles,
# and with two mounts neither gets more than 64 --------------------------------
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
(ulimit -n 1024 && daemon_start --config "$T/cfg.json") || bail_out "agentfsd did not start again"
D_PID=$(daemon_pids "$D_SOCK" | head -n 1)
expect_ok "create hog" "$(mkdir -p "$T/hog"; afs --json create --user 65534 hog "$T/hog")"
MH=$(mounts_in "$D_MNT/hog" | awk 'NR == 1 { print $2 }')
MO=$(mounts_in "$D_MNT/other" | awk 'NR == 1 { print $2 }')
for i in $(seq 200); do echo "$i" >"$T/hog/f$i"; done
for i in $(seq 20); do echo "$i" >"$T/other/f$i"; done
# hog holds as many opens as it can get, and says how many and why it stopped
python3 - "$MH" >"$T/hog.out" 2>&1 <<'PY' &
import os, sys, time
fds = []
err = "none"
for i in range(1, 201):
    try:
        fds.append(os.open(f"{sys.argv[1]}/f{i}", os.O_RDONLY))
    except OSError as e:
        err = os.strerror(e.errno)
        break
print(len(fds), err, flush=True)
time.sleep(20)
PY
p_hog=$!
track_pid "$p_hog"
wait_until 10 eval '[ -s "$T/hog.out" ]'
read -r held why <"$T/hog.out"
is "$held $why" "64 Too many open files in system" "hog gets its share of open files (64), then ENFILE"
r=$(python3 -c '
import os, sys
fds = [os.open(f"{sys.argv[1]}/f{i}", os.O_RDONLY) for i in range(1, 21)]
print(len(fds))' "$MO" 2>&1)
is "$r" 20 "another bot opens its files meanwhile"
kill "$p_hog" 2>/dev/null
wait "$p_hog" 2>/dev/null
r=$(python3 -c '
import os, sys
fds = [os.open(f"{sys.argv[1]}/f{i}", os.O_RDONLY) for i in range(1, 65)]
print(len(fds))' "$MH" 2>&1 | tail -1)
is "$r" 64 "once hog closed its files its whole share is free again"

# --- lock waiters: a bot's mount holds at most a quarter (1024) of the 4096
# blocking lock requests the daemon queues; the next gets ENOLCK while another
# bot's blocking lock still waits and is granted ----------------------------
cat >"$T/holder.py" <<'PY'
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
while os.path.exists(sys.argv[2]):
    time.sleep(0.05)
PY
cat >"$T/waiters.py" <<'PY'
import errno, fcntl, os, sys, threading, time
fd = os.open(sys.argv[1], os.O_RDWR)
n = int(sys.argv[2])
threading.stack_size(65536)
count = {"enolck": 0, "granted": 0, "other": ""}
mu = threading.Lock()
def wait():
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        k = "granted"
    except OSError as e:
        k = "enolck" if e.errno == errno.ENOLCK else "other"
        if k == "other":
            count["other"] = os.strerror(e.errno)
    with mu:
        if k != "other":
            count[k] += 1
ts = [threading.Thread(target=wait) for _ in range(n)]
for t in ts:
    t.start()
deadline = time.time() + 60
while time.time() < deadline and count["enolck"] + count["granted"] < n - 1024:
    time.sleep(0.1)
time.sleep(0.5)
print(count["enolck"], count["granted"], count["other"] or "-", flush=True)
for t in ts:
    t.join()
print(count["enolck"], count["granted"], count["other"] or "-", flush=True)
PY
echo x >"$T/hog/lk"
echo x >"$T/other/lk"
python3 "$T/holder.py" "$MH/lk" "$T/hog.held" &
p_hold=$!
track_pid "$p_hold"
wait_until 10 test -e "$T/hog.held" || bail_out "the hog's lock holder did not start"
python3 "$T/waiters.py" "$MH/lk" 1100 >"$T/waiters.out" 2>&1 &
p_wait=$!
track_pid "$p_wait"
wait_until 60 eval '[ -s "$T/waiters.out" ]'
is "$(head -n 1 "$T/waiters.out")" "76 0 -" \
	"hog's 1100 blocking locks: 1024 wait (its share), 76 get ENOLCK at once"
python3 "$T/holder.py" "$MO/lk" "$T/other.held" &
p_ohold=$!
track_pid "$p_ohold"
wait_until 10 test -e "$T/other.held" || bail_out "the other bot's lock holder did not start"
(sleep 0.5; rm -f "$T/other.held") &
r=$(timeout 20 python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("granted")' "$MO/lk" 2>&1)
is "$r" granted "meanwhile another bot's blocking lock waits and is granted"
rm -f "$T/hog.held"
wait "$p_wait" 2>/dev/null
is "$(tail -n 1 "$T/waiters.out")" "76 1024 -" "once hog's holder lets go, its 1024 waiters are granted"
wait "$p_hold" "$p_ohold" 2>/dev/null

# --- a bot's share is its own, not each of its mounts': hog with four roots holds
# 64 open files in all, and another bot still opens its own ----------------------
mkdir -p "$T/hog2" "$T/hog3" "$T/hog4"
for d in hog2 hog3 hog4; do for i in $(seq 60); do echo "$i" >"$T/$d/f$i"; done; done
expect_ok "hog gets three more roots" \
	"$(afs --json configure hog --writable "$T/hog2" --writable "$T/hog3" --writable "$T/hog4")"
python3 - $(mounts_in "$D_MNT/hog" | awk '{ print $2 }') >"$T/hog4.out" 2>&1 <<'PY' &
import os, sys, time
fds, err = [], "none"
try:
    for i in range(1, 61):
        for m in sys.argv[1:]:
            name = os.path.join(m, "f%d" % i)
            if os.path.exists(name):
                fds.append(os.open(name, os.O_RDONLY))
except OSError as e:
    err = os.strerror(e.errno)
print(len(sys.argv) - 1, len(fds), err, flush=True)
time.sleep(20)
PY
p_hog=$!
track_pid "$p_hog"
wait_until 10 eval '[ -s "$T/hog4.out" ]'
is "$(cat "$T/hog4.out")" "4 64 Too many open files in system" \
	"hog's four mounts hold its share of open files together (64 of 256), then ENFILE"
r=$(python3 -c '
import os, sys
fds = [os.open(f"{sys.argv[1]}/f{i}", os.O_RDONLY) for i in range(1, 21)]
print(len(fds))' "$MO" 2>&1)
is "$r" 20 "another bot opens its files meanwhile"
kill "$p_hog" 2>/dev/null
wait "$p_hog" 2>/dev/null

# --- mounts: a family holds at most a quarter of the 1,000 the daemon serves -------
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
rm -rf "$D_STATE"
printf '{"group": ""}\n' >"$T/cfg-mounts.json"
daemon_start --config "$T/cfg-mounts.json" || bail_out "agentfsd did not start again"
mkdir -p "$T/ml" "$T/mo"
expect_ok "create ml" "$(afs --json create --user 65534 ml "$T/ml")"
made=0
for k in 1 2 3 4; do
	args=()
	mkdir -p "$T/ml/k$k/w"
	for i in $(seq 64); do
		mkdir -p "$T/ml/k$k/r$i"
		args+=(--readable "$T/ml/k$k/r$i")
	done
	r=$(as ml create "k$k" "$T/ml/k$k/w" "${args[@]}")
	[ "$(printf '%s' "$r" | jget ok)" = true ] || break
	made=$k
done
is "$made" 3 "ml makes three bots of 65 roots each (196 mounts in its family)"
expect_error "its fourth would pass its family's share of mounts" limit "$r"
like "$(printf '%s' "$r" | jget error.message)" "bot ml's family is at its share of mounts \\(250 of 1000\\)" \
	"the error says whose share"
is "$(mounts_in "$D_MNT/k4" | wc -l)" 0 "none of the fourth's roots stays mounted"
expect_ok "the operator still makes a bot (another family)" \
	"$(afs --json create --user 65534 mo "$T/mo")"
is "$(mounts_in "$D_MNT/mo" | wc -l)" 1 "and it is mounted"

done_testing
