#!/bin/bash
# SPDX-License-Identifier: MIT
# service: the systemd unit is as hardened as agentfsd's job allows, and the
# hardening does not break it. systemd-analyze security rates the unit at or
# under 4.5 (OK), offline (systemd is not PID 1 here); the unit makes no mount
# namespace; and every system call agentfsd makes while it makes, serves,
# refuses, records, streams, restarts and deletes bots (seen with strace) is in
# the unit's SystemCallFilter= and none in its deny list, so the filter never
# refuses the daemon's own work. Needs systemd-analyze (the systemd package)
# and strace; each part skips without its tool.
. "$top_srcdir/tests/daemon-lib.sh"

UNIT_IN="$top_srcdir/src/agentfsd.service.in"
unit="$T/agentfsd.service"
sed "s|@sbindir@|$top_builddir/src|g; s|@bindir@|$top_builddir/src|g" "$UNIT_IN" >"$unit"

# --- what the unit sets -----------------------------------------------------------------------
for bad in PrivateTmp ProtectSystem ProtectHome PrivateDevices ProtectKernelTunables \
	ProtectKernelModules ProtectKernelLogs ProtectControlGroups ProtectProc ProcSubset \
	ReadOnlyPaths ReadWritePaths InaccessiblePaths TemporaryFileSystem BindPaths MountFlags \
	RootDirectory PrivateUsers; do
	grep -q "^$bad=" "$unit" && found="${found:-}$bad= "
done
is "${found:-}" "" "no setting that makes a mount namespace (the mounts must show on the host)"
is "$(sed -n 's/^PrivateMounts=//p' "$unit")" no \
	"PrivateMounts=no, which newer systemd needs with PrivateNetwork= to keep the host's"
for want in NoNewPrivileges=yes PrivateNetwork=yes IPAddressDeny=any RestrictAddressFamilies=AF_UNIX \
	RestrictNamespaces=yes RestrictRealtime=yes LockPersonality=yes MemoryDenyWriteExecute=yes \
	ProtectClock=yes ProtectHostname=yes SystemCallArchitectures=native; do
	check "the unit sets $want" grep -qx "$want" "$unit"
done

# --- the score --------------------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1)
	score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for agentfsd.service: \([0-9.]*\).*/\1/p')
	if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 4.5) }'; then
		ok "systemd-analyze security rates the unit $score, at or under 4.5 (OK)"
	else
		not_ok "systemd-analyze security rates the unit at or under 4.5 (got ${score:-nothing})"
		diag "$(printf '%s\n' "$out" | grep -E '✗|Overall' | head -40)"
	fi
else
	skip "systemd-analyze is missing (the systemd package)"
fi

# --- the system calls -------------------------------------------------------------------------
command -v strace >/dev/null || { skip "strace is missing"; done_testing; exit 0; }
# LeakSanitizer cannot run under ptrace, and a sanitizer's runtime makes
# system calls of its own: the filter is checked on the plain build.
if ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib(a|t|ub)san'; then
	skip "agentfsd is built with a sanitizer: its system calls are not the daemon's"
	done_testing
	exit 0
fi
command -v systemd-analyze >/dev/null || { skip "systemd-analyze is missing"; done_testing; exit 0; }

# groups FILTER-LINE...: the system calls the groups and names expand to (systemd-analyze)
declare -A seen_group
expand()
{
	local g=$1 l
	[ -n "${seen_group[$g]:-}" ] && return
	seen_group[$g]=1
	while read -r l; do
		case $l in
		'#'* | '') ;;
		@*) expand "$l" ;;
		*) echo "$l" ;;
		esac
	done < <(systemd-analyze syscall-filter "$g" 2>/dev/null | tail -n +2)
}
syscalls()
{
	local w
	for w in "$@"; do
		case $w in
		@*) expand "$w" ;;
		*) echo "$w" ;;
		esac
	done | sort -u
}
# shellcheck disable=SC2046
syscalls $(sed -n 's/^SystemCallFilter=\([^~].*\)/\1/p' "$unit") >"$T/allowed"
seen_group=()
# shellcheck disable=SC2046
syscalls $(sed -n 's/^SystemCallFilter=~//p' "$unit") >"$T/denied"
[ -s "$T/allowed" ] || bail_out "the unit's SystemCallFilter= expands to nothing"

# agentfsd under strace, following every thread; -D keeps strace out of the
# daemon's ancestry, so it returns once it listens as it does alone
mkdir -p "$T/trace" "$T/w/.git/hooks" "$T/w/sub" "$T/w2"
chown -R 65534 "$T/w" "$T/w2"
strace -D -f -qq -o "$T/trace/t" "$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" ||
	bail_out "agentfsd did not start under strace"
wait_until 10 answers "$D_SOCK" || bail_out "agentfsd does not answer under strace"
expect_ok "create b1" "$(afs --json create b1 "$T/w")"
expect_ok "b1 makes b2" "$(as b1 create b2 "$T/w/sub")"
M="$D_MNT/b1/0"
echo x >"$M/f" && mv "$M/f" "$M/g" && chmod 600 "$M/g" && ln -s g "$M/l" && rm "$M/l" &&
	mkdir "$M/d" && rmdir "$M/d" && cat "$M/g" >/dev/null
echo evil >"$M/.git/hooks/pre-commit" 2>/dev/null
afs log b1 --follow >/dev/null 2>&1 &
follower=$!
expect_ok "configure b1 --readable" "$(afs --json configure b1 --readable "$T/w2")"
afs changes b1 >/dev/null
afs --json changes b1 --mark >/dev/null
afs show b1 >/dev/null
afs ls >/dev/null
expect_ok "delete b1 (and b2)" "$(afs --json rm b1)"
wait "$follower" 2>/dev/null
expect_ok "create b3" "$(afs --json create b3 "$T/w2")"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 20
# and a start over what the last one left
strace -D -f -qq -o "$T/trace/r" "$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" ||
	bail_out "agentfsd did not start again under strace"
wait_until 10 answers "$D_SOCK"
is "$(restored_state b3)" mounted "b3 is mounted again after the restart"
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 20

used=$(cat "$T"/trace/* | sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' | sort -u)
[ -n "$used" ] || bail_out "strace recorded no system call"
out=
for s in $used; do
	grep -qx "$s" "$T/allowed" || out="$out $s"
done
is "${out# }" "" "every system call agentfsd made ($(echo "$used" | wc -w)) is in the unit's SystemCallFilter="
out=
for s in $used; do
	grep -qx "$s" "$T/denied" && out="$out $s"
done
is "${out# }" "" "none is in its deny list"

done_testing
