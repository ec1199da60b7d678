#!/bin/bash
# SPDX-License-Identifier: MIT
# install: `make install DESTDIR=...` from the build tree installs exactly the
# programs, man pages, systemd unit, tmpfiles.d entry, example configuration,
# bash completion and mount helper; the unit's ExecStart line, run as written,
# starts a daemon that answers; the example configuration is accepted; a
# changed configuration survives a reinstall and an uninstall, and an
# unchanged one leaves nothing behind.
. "$top_srcdir/tests/daemon-lib.sh"

# A make run from inside make check must not use its jobserver.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
D="$T/d"

# The build tree's configured value of a make variable, expanded.
mkvar()
{
	make -s --no-print-directory -C "$top_builddir" -f Makefile -f "$T/print.mk" "print-$1"
}
printf 'print-%%:\n\t@echo $($*)\n' >"$T/print.mk"

for v in bindir sbindir pkglibexecdir mandir sysconfdir docdir systemdsystemunitdir tmpfilesdir \
	bashcompletiondir mounthelperdir; do
	eval "$v=\$(mkvar $v)"
done

for v in systemdsystemunitdir tmpfilesdir bashcompletiondir mounthelperdir; do
	[ "${!v}" = no ] && skip_all "configured with $v=no: this test checks a full install"
done

if make -s --no-print-directory -C "$top_builddir" install DESTDIR="$D" >"$T/install.log" 2>&1; then
	ok "make install DESTDIR=... succeeds"
else
	not_ok "make install DESTDIR=... succeeds"
	diag "$(tail -n 20 "$T/install.log")"
	bail_out "nothing installed"
fi

want=$(printf '%s\n' \
	"$bindir/agentfs" \
	"$sbindir/agentfsd" \
	"$pkglibexecdir/agentfs-enter" \
	"$pkglibexecdir/agentfs-local" \
	"$mandir/man1/agentfs.1" \
	"$mandir/man7/agentfs-protocol.7" \
	"$mandir/man8/agentfsd.8" \
	"$systemdsystemunitdir/agentfsd.service" \
	"$tmpfilesdir/agentfs.conf" \
	"$sysconfdir/agentfs/agentfsd.json" \
	"$docdir/README.md" \
	"$docdir/LICENSE" \
	"$docdir/agentfsd.json.example" \
	"$bashcompletiondir/agentfs" \
	"$bashcompletiondir/agentfsd" \
	"$mounthelperdir/mount.fuse.agentfs" \
	$([ -x "$top_builddir/csi/agentfs-csi" ] && echo "$sbindir/agentfs-csi" "$mandir/man8/agentfs-csi.8") |
	sort)
got=$(cd "$D" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort)
is_text "$got" "$want" "the installed files are exactly the expected ones ($(echo "$want" | wc -l))"
for f in "$bindir/agentfs" "$sbindir/agentfsd" "$pkglibexecdir/agentfs-enter" \
	"$pkglibexecdir/agentfs-local" "$mounthelperdir/mount.fuse.agentfs"; do
	[ -x "$D$f" ] && ok "$f is executable" || not_ok "$f is executable"
done
is "$(readlink "$D$bashcompletiondir/agentfsd")" agentfs "agentfsd's completion is agentfs's"
is "$(grep -c '^d /run/agentfs 0755 root root' "$D$tmpfilesdir/agentfs.conf")" 1 \
	"tmpfiles.d makes /run/agentfs"
if command -v systemd-tmpfiles >/dev/null; then
	mkdir -p "$T/root"
	systemd-tmpfiles --create --root="$T/root" "$D$tmpfilesdir/agentfs.conf" >/dev/null 2>&1
	is "$(stat -c '%a %U' "$T/root/run/agentfs" 2>&1)" "755 root" \
		"systemd-tmpfiles makes /run/agentfs from it, mode 0755"
else
	skip "systemd-tmpfiles is not installed"
fi

# --- the unit -----------------------------------------------------------------
unit="$D$systemdsystemunitdir/agentfsd.service"
is "$(grep -c '^Type=notify$' "$unit")" 1 "the unit's Type= is notify: agentfsd says READY=1 once it serves"
is "$(sed -n 's/^FileDescriptorStoreMax=//p' "$unit")" 65536 \
	"the unit keeps an fd store, where a restart keeps the mounts"
is "$(sed -n 's/^ExecReload=//p' "$unit")" '/bin/kill -HUP $MAINPID' "systemctl reload sends SIGHUP"
for bad in PrivateTmp ProtectSystem ProtectHome PrivateDevices PrivateMounts ProtectKernelTunables \
	ProtectKernelModules ProtectKernelLogs ProtectControlGroups ReadOnlyPaths ReadWritePaths \
	InaccessiblePaths TemporaryFileSystem BindPaths MountFlags RootDirectory ProtectProc; do
	grep "^$bad=" "$unit" | grep -qv "^$bad=no$" && found="${found:-}$bad= "
done
is "${found:-}" "" "the unit sets up no mount namespace of its own (mounts stay visible on the host)"
exec_line=$(sed -n 's/^ExecStart=//p' "$unit")
is "$exec_line" "$sbindir/agentfsd" "ExecStart runs the installed agentfsd"
# As written, with the DESTDIR prefix and our configuration, socket and state.
# shellcheck disable=SC2086
if $D$exec_line --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE"; then
	ok "the unit's ExecStart line starts agentfsd (without systemd it returns once it listens)"
else
	not_ok "the unit's ExecStart line starts agentfsd (without systemd it returns once it listens)"
fi
is "$(afs --json status | jget ok)" true "the daemon it started answers on the control socket"
r=$(afs --json status)
pid=$(printf '%s' "$r" | jget pid)
[ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe")" = "$D$sbindir/agentfsd" ] &&
	ok "it is the installed agentfsd (pid $pid)" || not_ok "it is the installed agentfsd (pid $pid)"
afs shutdown >/dev/null
daemon_wait_gone 10 && ok "it stops on shutdown" || not_ok "it stops on shutdown"

# The unit's hardening that systemd applies without a namespace (the
# capability bounding set and no_new_privs) leaves agentfsd working: it
# mounts a bot's root, and files are made through it as root and as a user.
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr 'A-Z ' 'a-z,' | sed 's/cap_/+/g')
if command -v setpriv >/dev/null && [ -n "$caps" ] &&
	setpriv --bounding-set "-all,$caps" --no-new-privs $D$exec_line --config "$D_CONFIG" \
		--socket "$D_SOCK" --state "$D_STATE" 2>"$T/err"; then
	ok "agentfsd starts with the unit's capabilities ($caps) and no_new_privs"
	mkdir -p "$T/hard"
	chown 65534 "$T/hard"
	afs create hard "$T/hard" >/dev/null
	m="$D_MNT/hard/0"
	pid=$(afs --json status | jget pid)
	is "$(awk '/^NoNewPrivs/ { print $2 }' "/proc/$pid/status")" 1 "it runs with no_new_privs"
	echo root >"$m/by-root" 2>/dev/null
	chown 65534 "$m/by-root" 2>/dev/null
	mkdir "$m/dir" 2>/dev/null
	is "$(stat -c '%u %F' "$T/hard/by-root" "$T/hard/dir" 2>&1 | tr '\n' ' ')" \
		"65534 regular file 0 directory " \
		"files and folders are made and given away through its mount"
	afs rm hard >/dev/null
	afs shutdown >/dev/null
	daemon_wait_gone 10
else
	not_ok "agentfsd starts with the unit's capabilities ($caps) and no_new_privs"
	diag "$(cat "$T/err" 2>/dev/null)"
fi

# The example configuration, installed where agentfsd reads it, is valid.
# --cgroup keeps its sandboxes' cgroups under the test's own (the example
# names none, so the daemon would make the host's default).
if "$D$sbindir/agentfsd" --config "$D$sysconfdir/agentfs/agentfsd.json" \
	--socket "$D_SOCK" --state "$D_STATE" --cgroup "$D_CGROUP" 2>"$T/err"; then
	ok "agentfsd accepts the installed example configuration"
	afs shutdown >/dev/null
	daemon_wait_gone 10
else
	not_ok "agentfsd accepts the installed example configuration"
	diag "$(cat "$T/err")"
fi
cmp -s "$D$sysconfdir/agentfs/agentfsd.json" "$D$docdir/agentfsd.json.example" &&
	ok "the installed configuration is the example" ||
	not_ok "the installed configuration is the example"
"$D$sbindir/agentfsd" --help | grep -qF "$sysconfdir/agentfs/agentfsd.json" &&
	ok "agentfsd --help names the configuration it reads by default" ||
	not_ok "agentfsd --help names the configuration it reads by default"

if command -v systemd-analyze >/dev/null; then
	mkdir -p "$T/unit"
	sed "s|^ExecStart=|ExecStart=$D|" "$unit" >"$T/unit/agentfsd.service"
	if out=$(systemd-analyze verify --man=no "$T/unit/agentfsd.service" 2>&1) && [ -z "$out" ]; then
		ok "systemd-analyze verify finds nothing wrong with the unit"
	else
		not_ok "systemd-analyze verify finds nothing wrong with the unit"
		diag "$out"
	fi
else
	skip "systemd-analyze is not installed"
fi

# --- bash completion ----------------------------------------------------------
. "$top_srcdir/tests/complete-lib.sh"
# completes WORD...: what the installed completion offers for the last WORD, on one line
completes() { complete_line "$D$bashcompletiondir/agentfs" "$@" | paste -sd ' '; }
is "$(completes agentfs cr)" create "completion: commands"
is "$(completes agentfs create x /tmp --sa)" --sandbox "completion: a command's options, from its --help"
is "$(completes agentfs create x /tmp --sandbox w)" workspace-write "completion: --sandbox values"
is "$(completes agentfs exec bot -- l)" command-at-4 "completion: exec completes the command after --"
mkdir -p "$T/work"
daemon_start || bail_out "agentfsd does not start"
afs create alpha "$T/work" --user 65534 >/dev/null && afs create beta "$T/work" --user 65534 >/dev/null
is "$(completes agentfs --socket "$D_SOCK" rm "")" "alpha beta" \
	"completion: bot names from agentfs ls, on the --socket given"

# --- reinstall and uninstall ----------------------------------------------------
conf="$D$sysconfdir/agentfs/agentfsd.json"
echo '{"workers": 2}' >"$conf"
make -s --no-print-directory -C "$top_builddir" install DESTDIR="$D" >"$T/install.log" 2>&1
is "$(cat "$conf")" '{"workers": 2}' "make install keeps a configuration that exists"
make -s --no-print-directory -C "$top_builddir" uninstall DESTDIR="$D" >"$T/install.log" 2>&1
is "$(cd "$D" && find . \( -type f -o -type l \) | sed 's|^\.||')" "$sysconfdir/agentfs/agentfsd.json" \
	"make uninstall removes everything but a changed configuration"
rm -f "$conf"
make -s --no-print-directory -C "$top_builddir" install DESTDIR="$D" >"$T/install.log" 2>&1
make -s --no-print-directory -C "$top_builddir" uninstall DESTDIR="$D" >"$T/install.log" 2>&1
is "$(cd "$D" && find . \( -type f -o -type l \) | wc -l)" 0 \
	"make uninstall leaves nothing when the configuration is the example"

done_testing
