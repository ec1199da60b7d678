#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-walks: one bot renaming a large folder over and over does not stop
# another bot making names. A folder rename holds every name being made in
# the server while the guard walks the folder (fusefs/decide.c): w1 renames a
# folder of 60,000 files from four processes, and w2's mkdir and rmdir went
# from a fraction of a millisecond to waiting on walk after walk, nearly all
# the time. Each user's walks that keep others waiting are now paced to about
# a tenth of the time, while renames that keep no one waiting are not slowed.
. "$top_srcdir/tests/exec-lib.sh"

[ -n "$PY" ] || skip_all "python3 is missing"
N=60000
W="$T/ws"
W2="$T/ws2"
mkdir -p "$W/big" "$W/small" "$W2"
(cd "$W/big" && seq 1 "$N" | sed 's/^/f/' | xargs touch) || bail_out "cannot make $N files"
own "$W" "$W2"
daemon_start || bail_out "agentfsd did not start"
check "create w1" afs create w1 "$W" --sandbox workspace-write --no-network
check "create w2" afs create w2 "$W2" --sandbox workspace-write --no-network

# mk.py DIR SECS: mkdir and rmdir for SECS seconds; the share of that time
# spent in calls that took over 50 ms, and how many calls
cat >"$T/mk.py" <<'PY'
import os, sys, time
d, secs = sys.argv[1], float(sys.argv[2])
t0 = time.monotonic(); slow = 0.0; n = 0
while time.monotonic() - t0 < secs:
    a = time.monotonic()
    os.mkdir("%s/d%d" % (d, n % 16))
    os.rmdir("%s/d%d" % (d, n % 16))
    took = time.monotonic() - a
    if took > 0.05:
        slow += took
    n += 1
print("%d %d" % (round(100 * slow / (time.monotonic() - t0)), n))
PY
# ren.py DIR SECS NAME PROCS: PROCS processes rename DIR/NAME away and back
# for SECS seconds; prints how many renames were done
cat >"$T/ren.py" <<'PY'
import os, sys, time
d, secs, name, procs = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
end = time.monotonic() + secs
r, w = os.pipe()
for k in range(procs):
    if os.fork() == 0:
        n = 0
        while time.monotonic() < end:
            try:
                os.rename("%s/%s" % (d, name), "%s/%s%d" % (d, name, k))
                os.rename("%s/%s%d" % (d, name, k), "%s/%s" % (d, name))
                n += 2
            except OSError:
                time.sleep(0.001)
        os.write(w, b"%d\n" % n)
        os._exit(0)
os.close(w)
for k in range(procs):
    os.wait()
print(sum(int(x) for x in os.fdopen(r).read().split()))
PY

base=$(ex w2 --cwd "$W2" -- "$PY" "$T/mk.py" "$W2" 2)
diag "alone, w2's mkdir+rmdir: $base (percent of time in calls over 50 ms, calls)"
small=$(ex w1 --cwd "$W" -- "$PY" "$T/ren.py" "$W" 2 small 1)
[ "${small:-0}" -ge 200 ] && ok "renames of a small folder are not slowed ($small in 2 s)" ||
	{ not_ok "renames of a small folder are not slowed"; diag "$small in 2 s"; }

ex w1 --cwd "$W" -- "$PY" "$T/ren.py" "$W" 14 big 4 >"$T/ren.out" 2>&1 &
rp=$!
sleep 3
under=$(ex w2 --cwd "$W2" -- "$PY" "$T/mk.py" "$W2" 8)
wait "$rp"
renamed=$(cat "$T/ren.out")
diag "w1 renamed its folder of $N files $renamed times; meanwhile w2's mkdir+rmdir: $under"
[ "${renamed:-0}" -ge 2 ] 2>/dev/null && ok "w1's renames of its large folder went through" ||
	not_ok "w1's renames of its large folder went through"
set -- $under
[ -n "${1:-}" ] && [ "$1" -lt 50 ] && ok "w2 spent under half its time waiting (${1:-?}%)" ||
	{ not_ok "w2 spent under half its time waiting"; diag "${1:-nothing}% of 8 s in calls over 50 ms"; }
is "$(ls "$W/big" | wc -l)" "$N" "the folder is whole, at its name"

done_testing
