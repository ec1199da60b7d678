#!/bin/bash
# SPDX-License-Identifier: MIT
# readme-install: README.md's Installing section works copied line by line in
# a fresh clone: each command of its first block runs there as written, but
# `make install` gets DESTDIR (and systemctl, which would touch the host, is
# only checked to be there); the programs, unit, configuration and
# completion land where the section says. A whole build: `make
# check-readme-install` runs it (.ci/run does), not `make check`.
. "$top_srcdir/tests/lib.sh"

command -v git >/dev/null || skip_all "git is missing"
git -C "$top_srcdir" rev-parse --git-dir >/dev/null 2>&1 || skip_all "$top_srcdir is not a git checkout"
# the block: the indented lines after "## Installing", up to the text after it
block=$(awk '/^## Installing/ { f = 1; next } f && /^    / { print substr($0, 5); b = 1; next }
	f && b && /^[^ ]/ { exit }' "$top_srcdir/README.md")
[ -n "$block" ] || bail_out "README.md has no Installing block"
like "$block" "^autoreconf -fi" "the section starts with autoreconf -fi (a clone has no configure)"
like "$block" "systemctl enable --now agentfsd" "... and ends with systemctl enable --now agentfsd"

unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
# a clone of what is committed, as a person would get it
git clone -q "$top_srcdir" "$T/clone" || bail_out "cannot clone $top_srcdir"
D="$T/dest"
while IFS= read -r line; do
	case $line in
	systemctl*) continue ;;
	"make install") line="make install DESTDIR=$D" ;;
	make) line="make -j$(nproc)" ;;
	esac
	out=$(cd "$T/clone" && bash -c "$line" 2>&1)
	rc=$?
	is "$rc" 0 "in a fresh clone: $line"
	[ "$rc" = 0 ] || { diag "$(printf '%s\n' "$out" | tail -n 20)"; bail_out "$line failed"; }
done <<<"$block"
for f in /usr/bin/agentfs /usr/sbin/agentfsd /usr/libexec/agentfs/agentfs-enter /etc/agentfs/agentfsd.json \
	/usr/libexec/agentfs/agentfs-local /usr/share/man/man1/agentfs.1; do
	check "$f is installed" test -e "$D$f"
done
check "the unit is installed" sh -c 'ls "$1"/usr/lib/systemd/system/agentfsd.service "$1"/lib/systemd/system/agentfsd.service 2>/dev/null | grep -q .' _ "$D"
check "the completion is installed" sh -c 'find "$1" -path "*bash-completion*" -name agentfs | grep -q .' _ "$D"
is "$("$D/usr/bin/agentfs" --version)" "agentfs $("$top_builddir/src/agentfs" --version | cut -d' ' -f2)" \
	"the installed client runs"

done_testing
