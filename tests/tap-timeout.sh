#!/bin/bash
# SPDX-License-Identifier: MIT
# tap-timeout: tests/tap-skip.sh ends a test that hangs. A script that waits
# forever (a child blocked, its trap set) is run through the wrapper with a
# 2 s limit: the wrapper names the processes it was waiting on, bails out,
# the script's trap runs (that is where a test unmounts), the status says it
# was ended, and no process of it is left. A script that ends by itself is
# not touched and its status is kept; a 77 (skip) becomes 0. Needs neither
# root nor a daemon.
top_srcdir=${top_srcdir:-.}
WRAP="$top_srcdir/tests/tap-skip.sh"
. "$top_srcdir/tests/docs-lib.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/agentfs-test.XXXXXX") || { echo "Bail out! mktemp"; exit 99; }
trap 'rm -rf "$T"' EXIT

# a test that hangs in a child; its trap leaves a mark, as a test's cleanup would
cat >"$T/hang.sh" <<EOF
echo 1..2
echo "ok 1 - before"
trap 'echo cleaned >"$T/mark"; exit 143' TERM
sleep 600 &
echo \$! >"$T/child"
wait
echo "ok 2 - never"
EOF
start=$SECONDS
# (a wrapper that does not end it fails here after 60 s instead of hanging)
AGENTFS_TEST_TIMEOUT=2 timeout -k 5 60 bash "$WRAP" "$T/hang.sh" >"$T/out" 2>"$T/err"
rc=$?
took=$((SECONDS - start))
child=$(cat "$T/child" 2>/dev/null)

echo 1..9
[ "$rc" -eq 143 ] && ok "a hanging test is ended (status $rc)" ||
	not_ok "a hanging test is ended (status $rc, want 143)"
[ "$took" -lt 30 ] && ok "... at its limit, not later (${took} s for 2 s)" ||
	not_ok "... at its limit, not later (${took} s for 2 s)"
grep -q '^Bail out! no end after 2 s' "$T/out" && ok "... with a Bail out! the driver counts as an error" ||
	not_ok "... with a Bail out! the driver counts as an error"
grep -Eq "^#  +$child .*sleep 600" "$T/out" && ok "... naming the process it waited on" ||
	not_ok "... naming the process it waited on"
[ "$(cat "$T/mark" 2>/dev/null)" = cleaned ] && ok "... after its trap ran" ||
	not_ok "... after its trap ran"
# gone: no such process, or a zombie not yet reaped by init
gone()
{
	local st
	st=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null)
	[ -z "$st" ] || [ "$st" = Z ]
}
for i in 1 2 3 4 5 6 7 8 9 10; do
	[ -z "$child" ] || gone "$child" && break
	sleep 0.5
done
if [ -n "$child" ] && gone "$child"; then
	ok "... and its child is gone"
else
	not_ok "... and its child is gone"
	kill "$child" 2>/dev/null
fi
grep -q '^# tap-skip: hang.sh ended with status 143 after' "$T/out" && ok "... and the log says how it ended" ||
	not_ok "... and the log says how it ended"
sed 's/^/# /' "$T/out"

printf 'echo "1..0 # SKIP nothing here"\nexit 77\n' >"$T/skip.sh"
AGENTFS_TEST_TIMEOUT=5 bash "$WRAP" "$T/skip.sh" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok "a skip (77) is passed on as 0" || not_ok "a skip (77) is passed on as 0 (got $rc)"
printf 'echo 1..1\necho "not ok 1 - x"\nexit 3\n' >"$T/fail.sh"
start=$SECONDS
AGENTFS_TEST_TIMEOUT=60 bash "$WRAP" "$T/fail.sh" >/dev/null 2>&1
rc=$?
took=$((SECONDS - start))
[ "$rc" -eq 3 ] && [ "$took" -lt 5 ] && ok "a test's own status is kept, with no wait for the limit" ||
	not_ok "a test's own status is kept, with no wait for the limit (status $rc after $took s)"
