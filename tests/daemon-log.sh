#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-log: agentfsd's log goes somewhere, always: --log-target (or the
# configuration's log_target) journal, syslog, stderr or file:PATH; without
# one, a daemon under systemd logs to the journal, one with a syslog to it,
# and one with neither to STATE/agentfsd.log, and says so when it starts. A
# target named but absent stops the start. The journal and syslog here are
# stand-ins of the test's own (python3) bound over the real paths in a
# private mount namespace, so nothing depends on the host's. Bot-chosen
# names reach the file escaped; a file past 8 MiB is moved to NAME.1.
# agentfsd --check validates a configuration and exits.
. "$top_srcdir/tests/daemon-lib.sh"

command -v unshare >/dev/null || skip_all "unshare is missing"
command -v python3 >/dev/null || skip_all "python3 is missing"

# --- --check ---------------------------------------------------------------------------------
printf '{"group": "", "workers": 2, "log_target": "file:/var/log/x.log", "passthrough": false}\n' >"$T/good.json"
out=$("$AGENTFSD" --check --config "$T/good.json" 2>&1)
is "$?:$out" "0:agentfsd: $T/good.json is valid" "--check of a valid configuration: exit 0, says so"
chmod 755 "$T"
chmod 644 "$T/good.json"
if command -v setpriv >/dev/null; then
	out=$(setpriv --reuid=4242 --regid=4242 --clear-groups "$AGENTFSD" --check --config "$T/good.json" 2>&1)
	is "$?:$out" "0:agentfsd: $T/good.json is valid" "--check needs no root"
else
	skip "setpriv is missing"
fi
chmod 700 "$T"
for bad in '{"log_target": "nowhere"}|"log_target" must be' '{"workers": 0}|"workers" must be' \
	'{"nosuch": 1}|unknown field "nosuch"' '{"group": "afs-no-such-group"}|no group named' \
	'{"passthrough": "no"}|"passthrough" must be true or false' 'not json|is not a JSON object'; do
	printf '%s\n' "${bad%%|*}" >"$T/bad.json"
	out=$("$AGENTFSD" --check --config "$T/bad.json" 2>&1)
	rc=$?
	case "$rc:$out" in
	"1:agentfsd: "*"${bad#*|}"*) ok "--check refuses ${bad%%|*}: exit 1, naming the fault" ;;
	*) not_ok "--check refuses ${bad%%|*}"; diag "exit $rc: $out" ;;
	esac
done
out=$("$AGENTFSD" --check --config "$T/good.json" --log-target bogus 2>&1)
like "$?:$out" "^2:agentfsd: --log-target takes journal, syslog, stderr or file:/ABSOLUTE/PATH" \
	"--log-target bogus is a usage error"
check "--check starts no daemon" test ! -e "$D_SOCK"

# --- file:PATH, and what a bot chose reaches it escaped ----------------------------------------
mkdir -p "$T/w/.git/hooks"
chown -R 65534 "$T/w"
daemon_start --log-target "file:$T/named.log" || bail_out "agentfsd did not start"
expect_ok "create b1" "$(afs --json create b1 "$T/w")"
sh -c 'echo x >"$1"' sh "$D_MNT/b1/0/.git/hooks/evil
line"$'\e]0;title\a' 2>/dev/null
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
like "$(grep -m 1 ' listening on ' "$T/named.log")" "^[0-9T:-]+ agentfsd\\[[0-9]+\\]: agentfsd .* listening on $D_SOCK$" \
	"--log-target file:PATH: the start, with time and pid"
like "$(cat "$T/named.log")" "refused create of .*/hooks/evil\\\\nline\\\\x1b\\]0;title\\\\x07" \
	"a refused name with a newline and escapes is logged escaped"
is "$(grep -c '^line' "$T/named.log")" 0 "... and forges no line"
like "$(tail -n 1 "$T/named.log")" "agentfsd\\[[0-9]+\\]: stopped$" "the stop"

# --- rotation: a file past 8 MiB moves to NAME.1 -----------------------------------------------
head -c 9000000 /dev/zero | tr '\0' 'x' >"$T/big.log"
daemon_start --log-target "file:$T/big.log" || bail_out "agentfsd did not start"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
is "$(stat -c %s "$T/big.log.1")" 9000000 "a log past 8 MiB is moved to NAME.1 whole"
# The new file starts with a whole line of this daemon's (what it restored
# may come before or after its "listening" line), and holds that line.
like "$(head -n 1 "$T/big.log")" "^[0-9T:-]+ agentfsd\\[[0-9]+\\]: " "... and the new one starts with the next line"
like "$(cat "$T/big.log")" "agentfsd .* listening on $D_SOCK$" "... which is this daemon's start"

# --- stderr: kept by a daemon that detaches -----------------------------------------------------
daemon_start --log-target stderr 2>"$T/stderr.log" || bail_out "agentfsd did not start"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
like "$(cat "$T/stderr.log")" "agentfsd: stopped" "--log-target stderr: a daemon that detaches keeps its stderr for the log"

# --- without a target: the journal, syslog, or STATE/agentfsd.log --------------------------------
# in_host JOURNAL SYSLOG CMD...: run CMD in a private mount namespace whose
# journal and syslog sockets are the given stand-ins ("-": none there)
in_host()
{
	unshare -m --propagation private bash -c '
		j=$1 s=$2; shift 2
		mkdir -p /run/systemd/journal 2>/dev/null
		mount -t tmpfs tmpfs /run/systemd/journal || exit 90
		if [ "$j" != - ]; then
			: >/run/systemd/journal/socket && mount --bind "$j" /run/systemd/journal/socket || exit 91
		fi
		# a /dev of our own: the few devices agentfsd opens, and /dev/log only if given
		mkdir -p "$T/hostdev" && mount --rbind /dev "$T/hostdev" && mount -t tmpfs tmpfs /dev || exit 92
		for d in null zero urandom fuse; do
			[ -e "$T/hostdev/$d" ] || continue
			: >"/dev/$d" && mount --bind "$T/hostdev/$d" "/dev/$d" || exit 93
		done
		if [ "$s" != - ]; then : >/dev/log && mount --bind "$s" /dev/log || exit 94; fi
		exec "$@"' sh "$@"
}
export T
# A datagram listener: prints each message it gets, one a line.
cat >"$T/listen.py" <<'EOF'
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
open(out + ".ready", "w").close()
with open(out, "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536).replace(b"\n", b"|") + b"\n")
EOF
listen()
{
	python3 "$T/listen.py" "$1" "$2" &
	track_pid $!
	wait_until 10 test -e "$2.ready" || bail_out "the stand-in on $1 did not start"
}
listen "$T/journal.sock" "$T/journal.got"
listen "$T/syslog.sock" "$T/syslog.got"

# D_CONFIG names a file: these daemons are given none
printf '{"group": "", "cgroup": ""}\n' >"$T/plain.json"
# neither: STATE/agentfsd.log, and the start says so
if out=$(in_host - - env -u INVOCATION_ID "$AGENTFSD" --config "$T/plain.json" --socket "$D_SOCK" --state "$D_STATE" 2>&1); then
	is "$out" "agentfsd: no journal or syslog here: agentfsd logs to $D_STATE/agentfsd.log" \
		"neither journal nor syslog: the start says the log goes to STATE/agentfsd.log"
	expect_ok "shutdown" "$(afs --json shutdown)"
	daemon_wait_gone 10
	like "$(cat "$D_STATE/agentfsd.log")" "listening on $D_SOCK" "... and it does"
else
	diag "$out"
	skip "cannot run agentfsd in a private mount namespace here"; skip "(see above)"; skip "(see above)"
fi
# a syslog, no systemd: syslog
if in_host - "$T/syslog.sock" env -u INVOCATION_ID "$AGENTFSD" --config "$T/plain.json" --socket "$D_SOCK" --state "$D_STATE"; then
	expect_ok "shutdown" "$(afs --json shutdown)"
	daemon_wait_gone 10
	wait_until 5 grep -q 'agentfsd\[[0-9]*\]: stopped' "$T/syslog.got"
	like "$(cat "$T/syslog.got")" "^<30>.*agentfsd\\[[0-9]+\\]: agentfsd .* listening on $D_SOCK" \
		"with a syslog and no systemd: syslog (facility daemon, info)"
else
	skip "cannot run agentfsd in a private mount namespace here"
fi
# under systemd (INVOCATION_ID) with a journal: the journal, natively
if in_host "$T/journal.sock" "$T/syslog.sock" env INVOCATION_ID=0123 "$AGENTFSD" --config "$T/plain.json" --socket "$D_SOCK" --state "$D_STATE"; then
	expect_ok "shutdown" "$(afs --json shutdown)"
	daemon_wait_gone 10
	wait_until 5 grep -q 'MESSAGE=stopped' "$T/journal.got"
	like "$(cat "$T/journal.got")" "PRIORITY=6\\|SYSLOG_FACILITY=3\\|SYSLOG_IDENTIFIER=agentfsd\\|SYSLOG_PID=[0-9]+\\|MESSAGE=agentfsd .* listening on $D_SOCK" \
		"under systemd: the journal, by its native protocol"
else
	skip "cannot run agentfsd in a private mount namespace here"
fi
# named but absent: the start fails and says why
out=$(in_host - - "$AGENTFSD" --config "$T/plain.json" --socket "$D_SOCK" --state "$D_STATE" --log-target syslog 2>&1)
like "$?:$out" "^1:agentfsd: log target syslog: no syslog listens on /dev/log" \
	"--log-target syslog without a syslog: no start, and why"
out=$(in_host - - "$AGENTFSD" --config "$T/plain.json" --socket "$D_SOCK" --state "$D_STATE" --log-target journal 2>&1)
like "$?:$out" "^1:agentfsd: log target journal: no journal listens on /run/systemd/journal/socket" \
	"--log-target journal without a journal: no start, and why"
check "no daemon was left" test -z "$(daemon_pids)"

done_testing
