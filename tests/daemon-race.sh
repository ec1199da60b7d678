#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-race: a guard's check and the operation it allows are one step
# against every mount agentfsd serves.  Two bots over one folder race to
# complete a bare repository's shape (HEAD + objects/ + refs/) in the same
# folder, one half each, released together; the guard must refuse the
# second half every time (G2), or the person's git would take the folder
# for a repository and run what its config names (core.fsmonitor).
# Afterwards plain git on the host finds no repository in any of them.
. "$top_srcdir/tests/daemon-lib.sh"

[ -x "$RACER" ] || bail_out "$RACER is not built"
command -v git >/dev/null || skip_all "git is missing"

ROUNDS=1500
S="$T/shared"
mkdir -p "$S"
chmod 0755 "$S"
for i in $(seq 0 $((ROUNDS - 1))); do
	mkdir -p "$S/q$i/objects"
done

daemon_start || bail_out "agentfsd did not start"
expect_ok "operator creates A over the folder" "$(afs --json create --user 65534 A "$S")"
expect_ok "operator creates B over the same folder" "$(afs --json create --user 65534 B "$S")"
MA=$(mounts_in "$D_MNT/A" | awk 'NR == 1 { print $2 }')
MB=$(mounts_in "$D_MNT/B" | awk 'NR == 1 { print $2 }')
[ -d "$MA/q0" ] && [ -d "$MB/q0" ] || bail_out "the bots' roots are not mounted"

out=$(timeout -k 5 120 "$RACER" g2 "$MA" "$MB" "$ROUNDS")
diag "racer: $out"
read -r _ both _ one _ none _ erofs <<<"$out"
is "$both" 0 "no round completed the shape through both mounts"
is "$one" "$ROUNDS" "every round made exactly one half"
is "$erofs" "$ROUNDS" "the other half was refused with EROFS"

complete=0
for i in $(seq 0 $((ROUNDS - 1))); do
	[ -e "$S/q$i/HEAD" ] && [ -d "$S/q$i/refs" ] && complete=$((complete + 1))
done
is "$complete" 0 "no folder on the host has HEAD, objects/ and refs/"
# 128: git's status for "not a git repository" (a missing folder gives another)
gd=$(GIT_CEILING_DIRECTORIES="$S" git -C "$S/q7" rev-parse --git-dir 2>&1)
is "$?" 128 "host git finds no repository in a raced folder" || diag "git: $gd"

done_testing
