#!/bin/bash
# cli-conv: the conventions a user expects of the agentfs client and of the
# build: global options after the command, `list` for `ls`, configure refusing
# a missing folder as create does, one clear message when the control socket
# is out of reach, and a fresh `autoreconf -fi` with no warnings.
. "$top_srcdir/tests/daemon-lib.sh"

# --- the build: a fresh autoreconf prints no warnings ------------------------------------------
if command -v autoreconf >/dev/null && command -v automake >/dev/null; then
	mkdir "$T/ac"
	(
		cd "$top_srcdir" || exit 1
		for f in configure.ac Makefile.am */local.mk tests/*.mk; do
			mkdir -p "$T/ac/$(dirname "$f")" && cp "$f" "$T/ac/$f" || exit 1
		done
	)
	out=$(cd "$T/ac" && autoreconf -fi 2>&1)
	rc=$?
	warn=$(printf '%s\n' "$out" | grep -v "^[^ ]*: installing '" | grep .)
	is "$rc:$warn" "0:" "a fresh autoreconf -fi succeeds and prints nothing but what it installs"
else
	skip "autoreconf or automake is not installed"
fi

done_testing
