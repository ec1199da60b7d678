#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-progress: making a bot over a large tree scans it; a request with
# "progress": true gets progress lines (entries scanned, repositories found)
# before its reply, and the client shows them on stderr only on a terminal.
. "$top_srcdir/tests/daemon-lib.sh"


command -v script >/dev/null || skip_all "script(1) is needed for a terminal"

mkdir -p "$T"/big/d{1..50}/e{1..100}
for i in 1 2 3; do
	git init -q "$T/big/d$i/repo" || bail_out "git init failed"
done

daemon_start || bail_out "agentfsd did not start"

# the protocol: progress lines first, then the reply
out=$(printf '%s\n' '{"op":"create","name":"P1","folder":"'"$T"'/big","user":"65534","progress":true,"id":"p1"}' |
	"$DCLIENT" pipe "$D_SOCK" 2)
first=$(printf '%s\n' "$out" | head -n 1)
is "$(printf '%s' "$first" | jget progress.root)" "$T/big" "the first line is progress for the root"
if [ "$(printf '%s' "$first" | jget progress.entries)" -ge 4096 ]; then
	ok "it counts the entries scanned"
else
	not_ok "it counts the entries scanned"
	diag "$first"
fi
is "$(printf '%s' "$first" | jget progress.repos)" 3 "and the repositories found"
expect_ok "without progress, the reply alone" \
	"$(raw '{"op":"create","name":"P2","folder":"'"$T"'/big","user":"65534"}')"

# the client: on a terminal only
script -qec "'$AGENTFS' --socket '$D_SOCK' create --user 65534 P3 '$T/big'" /dev/null >"$T/tty.out" 2>&1
if grep -aqE "scanning $T/big: [0-9]+ entries, 3 repositories" "$T/tty.out"; then
	ok "on a terminal, the client shows the scan's progress"
else
	not_ok "on a terminal, the client shows the scan's progress"
	diag "$(cat -v "$T/tty.out")"
fi
last=$(tr '\r' '\n' <"$T/tty.out" | grep -a scanning | tail -n 1 | sed 's/^.*: \([0-9]*\) entries.*/\1/')
if [ "${last:-0}" -gt 5000 ]; then
	ok "its last line has the whole tree ($last entries)"
else
	not_ok "its last line has the whole tree (${last:-none})"
fi
"$AGENTFS" --socket "$D_SOCK" create --user 65534 P4 "$T/big" >"$T/plain.out" 2>"$T/plain.err"
is "$(cat "$T/plain.err")" "" "not on a terminal, nothing on stderr"
is "$(sed -n 1p "$T/plain.out")" "name            P4" "and the reply as always"

done_testing
