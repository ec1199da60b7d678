#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-jobs: one bot's flood of creates, each walking a large root, keeps
# neither the operator nor another family waiting (agentfsd(8), LIMITS,
# Jobs). A lead with 60,000 files as a read-only root asks for 48 bots over
# it at once (one connection each, none reading its answer); meanwhile the
# operator's create of a bot over an empty folder, and another family's,
# are answered while the flood is still being made. Before, the
# daemon had one job thread taking jobs in the order asked for: each waited
# for the whole flood. The seconds each took are printed, not asserted
# (speed is bench/'s); the order is what the test holds. Then every bot of
# the flood is made, with its roots mounted.
. "$top_srcdir/tests/daemon-lib.sh"

command -v python3 >/dev/null || skip_all "python3 is not installed"
FCLIENT="$top_builddir/tests/fault-client"
[ -x "$FCLIENT" ] || bail_out "$FCLIENT is not built"

FLOOD=48
mkdir -p "$T/lead" "$T/op1" "$T/other/kid" "$T/big"
python3 - "$T/big" <<'PY'
import os, sys
for i in range(300):
    d = os.path.join(sys.argv[1], "d%d" % i)
    os.mkdir(d)
    for k in range(200):
        open(os.path.join(d, "f%d" % k), "w").close()
PY
printf '{"group": ""}\n' >"$T/cfg.json"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start"
expect_ok "create the lead, with 60,000 files as a read-only root" \
	"$(afs --json create --user 65534 lead "$T/lead" --readable "$T/big")"
expect_ok "create another family's bot" "$(afs --json create --user 65534 other "$T/other")"

now() { date +%s.%N; }
# secs START: seconds since START, with milliseconds
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
# made: how many bots of the flood are made (both their roots mounted)
made() { mounts_in "$D_MNT" | awk '$2 ~ /\/c[0-9]+\/[01]$/' | wc -l | awk '{ print int($1 / 2) }'; }

for i in $(seq 0 $((FLOOD - 1))); do
	mkdir -p "$T/lead/c$i"
done
t0=$(now)
"$FCLIENT" hoard "$D_SOCK.d/lead.sock" "$FLOOD" 1 \
	"{\"op\":\"create\",\"name\":\"c%d\",\"folder\":\"$T/lead/c%d\",\"readable\":[\"$T/big\"]}" \
	600 >"$T/flood.out" 2>&1 &
p_flood=$!
track_pid "$p_flood"
wait_until 30 grep -q "^opened $FLOOD sent $FLOOD" "$T/flood.out" ||
	bail_out "the flood was not all sent: $(cat "$T/flood.out")"
# the whole flood is asked for (a bot counts from its create on), its first still walking
wait_until 30 eval '[ "$(afs --json status | jget bots)" -ge $((FLOOD + 2)) ]' ||
	bail_out "the flood was not all asked for within 30 s"
diag "the flood was asked for; $(made) of its $FLOOD bots made so far"

# during WHO CMD...: run the create CMD during the flood; it is answered
# before the flood is done (the seconds it took are printed, not held)
during()
{
	local who="$1" t r secs_taken n
	shift
	t=$(now)
	r=$("$@")
	secs_taken=$(secs "$t")
	n=$(made)
	expect_ok "$who create during the flood" "$r"
	diag "$who create took $secs_taken s, answered with $n of the flood's $FLOOD bots made"
	check "$who create was answered before the flood was done ($n of $FLOOD made)" \
		[ "$n" -lt "$FLOOD" ]
}
during "the operator's" afs --json create --user 65534 op1 "$T/op1"
during "another family's" as other create kid "$T/other/kid"

wait_until 600 eval '[ "$(made)" -ge $FLOOD ]'
diag "the flood took $(secs "$t0") s in all"
is "$(made)" "$FLOOD" "every bot of the flood is made, with its two roots mounted"
is "$(afs --json status | jget bots)" "$((FLOOD + 4))" "and nothing else was made"
kill "$p_flood" 2>/dev/null
wait "$p_flood" 2>/dev/null

done_testing
