#!/bin/bash
# SPDX-License-Identifier: MIT
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


# --- global options after the command; list for ls -------------------------------------------
mkdir -p "$T/work" "$T/extra"
daemon_start || bail_out "agentfsd did not start"
expect_ok "create c1" "$(afs --json create --user 65534 c1 "$T/work")"
is "$("$AGENTFS" ls --socket "$D_SOCK" --json | jget 'bots.*.name')" c1 \
	"ls --socket PATH --json: the global options after the command"
is "$("$AGENTFS" ls --json --socket="$D_SOCK" | jget 'bots.*.name')" c1 \
	"ls --json --socket=PATH"
is "$("$AGENTFS" show c1 --json --socket "$D_SOCK" | jget bot.name)" c1 "show NAME --json --socket PATH"
is "$(afs list)" "$(afs ls)" "agentfs list prints what agentfs ls does"
is "$(afs list --json | jget 'bots.*.name')" c1 "agentfs list --json"
expect_ok "configure c1 --ttl 0 --json: options and a global option after the name" \
	"$(afs configure c1 --ttl 0 --json)"
is "$(afs show c1 --json | jget bot.name)" c1 "--json after the name"
out=$(afs --json show c1 --socket 2>&1)
case "$out" in
*"takes one bot name"* | *"--socket"*) ok "--socket without its path is an error ($out)" ;;
*) not_ok "--socket without its path is an error"; diag "$out" ;;
esac
# argument parsing only: a danger-full-access bot runs its command unconfined,
# so no bwrap and no bot user are needed (a confined bot over a root-owned
# folder is refused: it would run as root)
mkdir -p "$T/ex"
expect_ok "create ex (danger-full-access)" \
	"$(afs --json create ex "$T/ex" --sandbox danger-full-access)"
is "$(afs exec ex -- echo --json --socket x 2>&1)" "--json --socket x" \
	"exec: what follows the bot is the command's, global-looking options included"
is "$("$AGENTFS" exec --socket "$D_SOCK" ex -- echo ran 2>&1)" ran \
	"exec --socket PATH BOT: a global option before the bot"
expect_ok "rm ex" "$(afs --json rm ex)"

# --- agentfs's own failures exit 125, as podman's and docker's do ----------------------------
status_of() { "$@" >/dev/null 2>&1; echo $?; }
is "$(status_of afs show nosuch)" 125 "an error the daemon answers (show of no such bot): exit 125"
is "$(status_of afs --json show nosuch)" 125 "... also with --json"
is "$(status_of afs show)" 125 "a usage error (show without a name): exit 125"
is "$(status_of afs --bogus ls)" 125 "an unknown global option: exit 125"
is "$(status_of afs nosuchcommand)" 125 "an unknown command: exit 125"
is "$(status_of "$AGENTFS" --socket "$T/none.sock" ls)" 125 "a daemon out of reach: exit 125"
is "$(status_of afs log nosuch)" 125 "log of no such bot: exit 125"
is "$(status_of afs changes nosuch)" 125 "changes of no such bot: exit 125"
is "$(status_of "$AGENTFS" umount "$T/work")" 125 "umount of what is not an agentfs mount: exit 125"

# --- several names for rm and show; ls -q --------------------------------------------------
mkdir -p "$T/m1" "$T/m2" "$T/m1/kid"
expect_ok "create m1" "$(afs --json create --user 65534 m1 "$T/m1")"
expect_ok "create m2" "$(afs --json create --user 65534 m2 "$T/m2")"
expect_ok "m1 makes m1kid" "$(as m1 create m1kid "$T/m1/kid")"
is "$(afs ls -q | tr '\n' ' ')" "c1 m1 m2 m1kid " "ls -q: the names only, one a line, in order made"
is "$(afs ls --quiet --json | tr '\n' ' ')" "c1 m1 m2 m1kid " "ls --quiet wins over --json"
out=$(afs show m1 m2)
is "$(printf '%s\n' "$out" | grep -c '^name ')" 2 "show m1 m2: both bots"
is "$(printf '%s\n' "$out" | grep -c '^$')" 1 "... a blank line between them"
is "$(afs --json show m1 m2 | jget '#')" 2 "show --json m1 m2: a JSON array of two replies"
is "$(afs --json show m1 m2 | jget '1.bot.name')" m2 "... in the order asked"
is "$(afs --json show m1 | jget 'bot.name')" m1 "show --json of one name: the reply itself, as before"
out=$(afs show m1 nosuch m2 2>"$T/err")
rc=$?
is "$rc:$(printf '%s\n' "$out" | grep -c '^name ')" "125:2" "show m1 nosuch m2: the two shown, exit 125"
like "$(cat "$T/err")" "not_found: no bot named nosuch" "... the one missing named on stderr"
is "$(afs --json show m1 nosuch | jget '1.error.code')" not_found "... and in the --json array"
out=$(afs rm m1 m1kid nosuch m2 2>"$T/err")
rc=$?
is "$rc" 125 "rm m1 m1kid nosuch m2: exit 125 for nosuch"
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "deleted m1kid deleted m1 deleted m2 " \
	"... m1kid, deleted with m1, is not asked for again; m2 is deleted after the failure"
is "$(grep -c . "$T/err")" 1 "... one error: nosuch"
is "$(afs ls -q | tr '\n' ' ')" "c1 " "only c1 is left"

# --- a folder given through a symbolic link: what is wrong, and the path to give ---------------
mkdir -p "$T/realdir"
ln -s "$T/realdir" "$T/linkdir"
out=$(afs create --user 65534 sl "$T/linkdir/" 2>&1)
rc=$?
like "$rc:$out" "^125:agentfs: bad_path: $T/linkdir: a component is a symbolic link, which agentfs never follows \\(give the real path\\)" \
	"create over a symlinked folder says a component is a symbolic link, never followed"
like "$out" "agentfs: $T/linkdir leads to $T/realdir: give that" "... and where it leads"
unlike "$out" "Too many levels" "... never the raw errno"

# --- configure refuses a folder that does not exist, as create does -------------------------
expect_error "create with a missing folder" bad_path "$(afs --json create c2 "$T/nosuch")"
expect_error "configure --writable with a missing folder" bad_path \
	"$(afs --json configure c1 --writable "$T/nosuch")"
expect_error "configure --readable with a missing folder" bad_path \
	"$(afs --json configure c1 --readable "$T/nosuch")"
out=$(afs configure c1 --writable "$T/nosuch" 2>&1)
case "$out" in
*"no such folder"*) ok "the message says no such folder ($out)" ;;
*) not_ok "the message says no such folder"; diag "$out" ;;
esac
is "$(afs --json show c1 | jget 'bot.mounts.#')" 1 "c1 is unchanged: one root, no failed one added"
expect_ok "configure --writable with a folder that exists" \
	"$(afs --json configure c1 --writable "$T/extra")"

# --- the control socket out of reach: "root only" --------------------------------------------
if command -v setpriv >/dev/null && setpriv --reuid=4242 --regid=4242 --clear-groups test -x "$T"; then
	as_user() { setpriv --reuid=4242 --regid=4242 --clear-groups "$AGENTFS" --socket "$D_SOCK" "$@"; }
	out=$(as_user status 2>&1)
	rc=$?
	case "$rc:$out" in
	125:*"permission denied"*"root only"*) ok "a user on the 0600 control socket is told it is root only" ;;
	*) not_ok "a user on the 0600 control socket is told it is root only"; diag "$rc: $out" ;;
	esac
	# the daemon's own check, behind a socket mode opened by mistake
	chmod 0666 "$D_SOCK"
	out=$(as_user --json status 2>&1)
	chmod 0600 "$D_SOCK"
	expect_error "the daemon refuses a user the socket's mode let through" forbidden "$out"
	case "$out" in
	*"root only"*) ok "and says root only" ;;
	*) not_ok "and says root only"; diag "$out" ;;
	esac
	is "$(afs --json status | jget ok)" true "the daemon serves root after it"
else
	skip "setpriv is missing or uid 4242 cannot reach $T"
fi

# --- .ci/demo: colour only on a terminal -----------------------------------------------------
if [ -f "$top_srcdir/.ci/demo" ]; then
	{
		sed -n '/^# colours:/,/^say()/p' "$top_srcdir/.ci/demo"
		echo 'say heading'
	} >"$T/say.sh"
	out=$(TERM=xterm bash "$T/say.sh" | od -An -c)
	case "$out" in
	*033*) not_ok ".ci/demo writes no colour codes into a pipe"; diag "$out" ;;
	*) ok ".ci/demo writes no colour codes into a pipe" ;;
	esac
	if command -v script >/dev/null; then
		out=$(TERM=xterm script -qc "bash $T/say.sh" /dev/null | od -An -c)
		case "$out" in
		*033*) ok ".ci/demo makes its headings bold on a terminal" ;;
		*) not_ok ".ci/demo makes its headings bold on a terminal"; diag "$out" ;;
		esac
	fi
else
	skip ".ci/demo is not in this tree"
fi

# --- agentfs-local: mount, umount and audit in a program of their own -----------------------
# agentfs itself loads neither libfuse3 nor libgit2 (and libgit2's TLS, SSH and
# Kerberos): every exec and request starts without them; the three commands
# that need them run agentfs-local, the one beside agentfs, else the installed one
if command -v ldd >/dev/null; then
	is "$(ldd "$AGENTFS" | grep -cE 'libgit2|libfuse3|libssh2|libmbed|libkrb5|libcrypto')" 0 \
		"agentfs links neither libgit2 nor libfuse3 (nor what libgit2 pulls in)"
	is "$(ldd "$top_builddir/src/agentfs-local" | grep -cE 'libgit2|libfuse3')" 2 \
		"agentfs-local links libgit2 and libfuse3"
else
	skip "ldd is missing"
	skip "ldd is missing"
fi
mkdir -p "$T/alone" "$T/tree"
cp "$AGENTFS" "$T/alone/agentfs"
installed=$(grep -ao '/[^[:cntrl:]]*/agentfs-local' "$AGENTFS" | head -n 1)
if [ -n "$installed" ] && [ ! -e "$installed" ]; then
	out=$("$T/alone/agentfs" audit "$T/tree" 2>&1)
	is "$?" 125 "agentfs audit without agentfs-local beside it or installed exits 125"
	like "$out" "cannot run $installed, which agentfs audit needs \\(make install puts it there\\)" \
		"... and names the agentfs-local it looked for"
else
	skip "agentfs-local is installed on this host ($installed)"
	skip "agentfs-local is installed on this host ($installed)"
fi
cp "$top_builddir/src/agentfs-local" "$T/alone/"
printf '#!/bin/sh\n' >"$T/tree/hook"
mkdir -p "$T/tree/.git/hooks" && mv "$T/tree/hook" "$T/tree/.git/hooks/pre-commit" &&
	chmod +x "$T/tree/.git/hooks/pre-commit"
out=$("$T/alone/agentfs" audit "$T/tree" 2>&1)
rc=$?
like "$rc $out" "^[1-9].*pre-commit" "agentfs audit runs the agentfs-local beside agentfs: it finds a hook"
out=$("$T/alone/agentfs" mount --help 2>&1)
like "$out" "^usage: agentfs mount" "agentfs mount --help is mount's help, as before"
"$T/alone/agentfs-local" >/dev/null 2>&1
is "$?" 125 "agentfs-local run by itself, without a command, exits 125"

done_testing
