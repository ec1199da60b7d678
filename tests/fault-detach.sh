#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-detach: a daemon out of descriptors still detaches the mounts it
# ends. Detaching checks an O_PATH descriptor of the mount's root (that the
# mount there is ours: by id, device and unique id) and acts through it;
# when that open failed with EMFILE the mount was left, dead, in the bot's
# way until the next start. Now the same check and umount go by the path.
# Made here with tests/fault-inject.so's FAULT_OPEN_NAME (a root's mount
# point, STATE/mnt/BOT/0, cannot be opened), lifted as soon as the act is
# done (FAULT_OPEN_WHILE):
#  - rm of a bot whose mount point cannot be opened;
#  - a mount handed over at a restart that no bot takes (its bot gone from
#    bots.json while no daemon ran), ended by the next daemon.
. "$top_srcdir/tests/daemon-lib.sh"

FAULT_SO="$top_builddir/tests/fault-inject.so"
[ -f "$FAULT_SO" ] || bail_out "$FAULT_SO is not built (make check builds it)"
ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib[at]san' && skip_all "agentfsd is built with a sanitizer"

for b in d e f; do
	mkdir -p "$T/$b"
	echo "$b" >"$T/$b/file"
	chown -R 65534 "$T/$b"
done
mounted() { mounts_in "$D_MNT/$1" | grep -q .; }
# gone BOT DESC: no mount is left at BOT's mount points
gone()
{
	if mounted "$1"; then
		not_ok "$2"
		diag "$(mounts_in "$D_MNT/$1")"
	else
		ok "$2"
	fi
}
# start_faulty BOT: a daemon that cannot open BOT's mount point while $T/on exists
start_faulty()
{
	LD_PRELOAD="$FAULT_SO" FAULT_OPEN_NAME="mnt/$1/0" FAULT_OPEN_WHILE="$T/on" \
		FAULT_LOG="$T/faults" daemon_start
}

start_faulty d || bail_out "agentfsd does not start with the fault library"
for b in d e f; do
	expect_ok "create bot $b" "$(afs --json create --user 65534 "$b" "$T/$b")" ||
		bail_out "no bot $b"
done
is "$(cat "$D_MNT/d/0/file")" d "bot d serves"

# --- rm while the mount point cannot be opened ---------------------------------------
from=$(($(wc -l <"$D_LOG") + 1))
: >"$T/on"
expect_ok "rm of bot d while its mount point cannot be opened (EMFILE)" "$(afs --json rm d)"
rm -f "$T/on"
like "$(cat "$T/faults" 2>/dev/null)" open "... (the fault was hit)"
gone d "... and its mount is gone"
like "$(tail -n +"$from" "$D_LOG")" "out of descriptors: detaching it by its path" \
	"... the log says how it was detached"
is "$(cat "$D_MNT/e/0/file")" e "bot e still serves"

# --- a handed mount no bot takes -------------------------------------------------------
daemon_kill TERM
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
check "bot e's mount is handed over, mounted" mounted e
python3 - "$D_STATE/bots.json" <<'PY' || bail_out "cannot edit bots.json"
import json, sys
p = sys.argv[1]
with open(p) as f:
    s = json.load(f)
s["bots"] = [b for b in s["bots"] if b.get("name") != "e"]
with open(p, "w") as f:
    json.dump(s, f)
PY
: >"$T/faults"
: >"$T/on"
from=$(($(wc -l <"$D_LOG") + 1))
start_faulty e || bail_out "agentfsd did not start again"
wait_until 10 eval '[ -s "$T/faults" ] && ! mounted e'
rm -f "$T/on"
like "$(cat "$T/faults" 2>/dev/null)" open "the next daemon, its mount points unopenable: the fault was hit"
gone e "... the mount of e, which no bot takes, is gone"
is "$(restored_state f)" mounted "... bot f is taken over"
is "$(cat "$D_MNT/f/0/file")" f "... and serves"
expect_ok "rm f" "$(afs --json rm f)"
check "... and its mount is gone" eval '! mounted f'

done_testing
