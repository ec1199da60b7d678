#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-modes: danger-full-access runs unconfined; --cwd before and after the
# bot, and the default folder; the caller's LD_PRELOAD never reaches bwrap;
# without bwrap, or with a bwrap that cannot make its namespaces, nothing
# runs; a bwrap a bot could have written is never run (agentfsd chooses it).
. "$top_srcdir/tests/exec-lib.sh"

W="$T/ws"
mkdir -p "$W/sub" "$T/ws2" "$T/rd" "$T/d" "$T/outside" "$T/fakebin"
own "$W" "$T/ws2"
daemon_start || bail_out "agentfsd did not start"
check "create w1 (workspace-write, a readable root)" \
	afs create w1 "$W" --sandbox workspace-write --no-network --readable "$T/rd"
check "create d1 (danger-full-access)" afs create d1 "$T/d" --sandbox danger-full-access

# --- danger-full-access: unconfined ------------------------------------------
out=$(ex d1 -- sh -c 'echo unconfined >"$1" && echo "$AGENT_SOCKET"' sh "$T/outside/file" </dev/null 2>&1)
is "$(cat "$T/outside/file" 2>&1)" unconfined "danger-full-access writes a host path outside its roots"
is "$out" "$D_SOCK.d/d1.sock" "danger-full-access: AGENT_SOCKET is the bot's socket"
probe="/tmp/agentfs-exec-probe.$$.$RANDOM"
ex d1 -- sh -c 'echo x >"$1"' sh "$probe" </dev/null
[ -e "$probe" ] && ok "danger-full-access: /tmp is the host's" || not_ok "danger-full-access: /tmp is the host's"
rm -f "$probe"
out=$(ex d1 -- sh -c 'echo $$' </dev/null)
[ "${out:-0}" -gt 3 ] && ok "danger-full-access: no pid namespace (pid $out)" ||
	not_ok "danger-full-access: no pid namespace (pid '$out')"
out=$(cd / && ex d1 -- pwd </dev/null 2>&1)
is "$out" "$T/d" "danger-full-access starts in its folder when run from outside it"
out=$(env PATH=/nonexistent "$AGENTFS" --socket "$D_SOCK" exec d1 -- /bin/sh -c 'echo ran' </dev/null 2>&1)
is "$out" ran "danger-full-access needs no bwrap"
ex d1 -- sh -c 'exit 5' </dev/null
is "$?" 5 "danger-full-access: the exit status passes through"

# agentfs itself runs as root inside (exec --as): not a copy the bot may change
cp "$AGENTFS" "$W/agentfs-copy"
err=$("$W/agentfs-copy" --socket "$D_SOCK" exec w1 -- /bin/true </dev/null 2>&1)
is "$?" 125 "an agentfs inside the bot's writable root: exec exits 125"
like "$err" "is inside the bot's writable root" "... and says why"
rm -f "$W/agentfs-copy"

# The caller's LD_PRELOAD reaches the command, never bwrap (root, outside).
if command -v cc >/dev/null; then
	mkdir -p "$T/lib"
	printf '%s\n' '#include <stdio.h>' '#include <string.h>' '#include <unistd.h>' \
		'__attribute__((constructor)) static void mark(void)' '{' \
		'	char exe[256] = "";' \
		'	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);' \
		'	FILE *f;' \
		'	if (n > 0 && strstr(exe, "bwrap") != NULL && (f = fopen(MARK, "a")) != NULL) {' \
		'		fprintf(f, "%d\n", (int)getuid());' \
		'		fclose(f);' \
		'	}' '}' >"$T/lib/mark.c"
	if cc -shared -fPIC -DMARK="\"$T/preloaded-bwrap\"" -o "$T/lib/mark.so" "$T/lib/mark.c" 2>"$T/cc.err"; then
		# (an ASan build of agentfs would refuse a preload ahead of its runtime)
		out=$(LD_PRELOAD="$T/lib/mark.so" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$AGENTFS" --socket "$D_SOCK" exec w1 -- sh -c 'echo "$LD_PRELOAD"' </dev/null 2>&1)
		is "$out" "$T/lib/mark.so" "LD_PRELOAD given to exec reaches the command"
		check "... and was not loaded into bwrap, which runs as root" test ! -e "$T/preloaded-bwrap"
	else
		diag "$(cat "$T/cc.err")"
		skip "cc cannot build a shared library"
		skip "cc cannot build a shared library"
	fi
else
	skip "no cc: the LD_PRELOAD check needs one"
	skip "no cc: the LD_PRELOAD check needs one"
fi

# --- -e and --env-file -----------------------------------------------------------
is "$(ex -e FOO=bar w1 -- sh -c 'echo "$FOO"' </dev/null 2>&1)" bar "-e NAME=VALUE before the bot"
is "$(ex w1 -e FOO=bar --env X=1 --env=Y=2 -- sh -c 'echo "$FOO$X$Y"' </dev/null 2>&1)" bar12 \
	"-e, --env and --env= after the bot"
is "$(FOO=fromhere ex -e FOO w1 -- sh -c 'echo "$FOO"' </dev/null 2>&1)" fromhere "-e NAME passes the caller's value"
is "$(ex -e 'V=a=b c' w1 -- sh -c 'echo "$V"' </dev/null 2>&1)" "a=b c" "a value keeps '=' and spaces"
is "$(ex -e FOO=bar d1 -- sh -c 'echo "$FOO"' </dev/null 2>&1)" bar "-e for a danger-full-access bot"
printf '# a comment\n\n  A=1\nB=two words\r\nC=x=y\nD\n' >"$T/envfile"
out=$(D=fromhere ex --env-file "$T/envfile" w1 -- sh -c 'echo "$A|$B|$C|$D"' </dev/null 2>&1)
is "$out" "1|two words|x=y|fromhere" "--env-file: comments, blank lines, NAME alone, the rest of the line as it is"
is "$(ex --env-file <(printf 'P=piped\n') w1 -- sh -c 'echo "$P"' </dev/null 2>&1)" piped "--env-file from a pipe"
is "$(ex --env-file "$T/envfile" -e A=2 w1 -- sh -c 'echo "$A"' </dev/null 2>&1)" 2 "taken in order: -e after the file wins"
for bad in AGENT_SOCKET=/x AGENTFS_SOCKET=/x AGENTFS_SAVED_LD_PRELOAD=/x SSH_AUTH_SOCK=/x 1BAD=x =x 'A B=x'; do
	err=$(ex -e "$bad" w1 -- sh -c 'echo ran >"$1/ran.env"' sh "$W" </dev/null 2>&1)
	rc=$?
	if [ "$rc" = 125 ] && [ ! -e "$W/ran.env" ]; then
		ok "-e $bad is refused (125) and nothing runs"
	else
		not_ok "-e $bad is refused (125) and nothing runs"
		diag "status $rc: $err"
	fi
done
like "$(ex -e AGENT_SOCKET=/x w1 -- true </dev/null 2>&1)" "the sandbox sets AGENT_SOCKET itself" \
	"... saying the sandbox sets AGENT_SOCKET"
like "$(ex -e SSH_AUTH_SOCK=/x w1 -- true </dev/null 2>&1)" "keeps the caller's agents" \
	"... and that exec keeps the caller's agents out"
printf 'OK=1\nAGENT_SOCKET=/x\n' >"$T/envbad"
is "$(ex --env-file "$T/envbad" w1 -- true </dev/null >/dev/null 2>&1; echo $?)" 125 \
	"--env-file with a refused name: 125"
is "$(ex --env-file "$T/nosuch" w1 -- true </dev/null >/dev/null 2>&1; echo $?)" 125 "--env-file missing: 125"
# An env file in the bot's folder is the bot's: a symbolic link it made there
# (or a folder on the way) must not make root's exec read a file of root's
# and hand it to the command. Links of root's (or the caller's) are followed.
mkdir -p "$T/secrets" && printf 'SECRET=hunter2\n' >"$T/secrets/root.env" && chmod 600 "$T/secrets/root.env"
chmod 700 "$T/secrets"
ex w1 -- sh -c 'ln -s "$1/secrets/root.env" "$2/.env" && ln -s "$1/secrets" "$2/cfg"' sh "$T" "$W" </dev/null
for f in "$W/.env" "$W/cfg/root.env" "$W/./cfg/../.env"; do
	out=$(ex --env-file "$f" w1 -- sh -c 'echo "[$SECRET]"' </dev/null 2>&1)
	rc=$?
	if [ "$rc" = 125 ] && ! printf '%s' "$out" | grep -q hunter2; then
		ok "--env-file $f through the bot's link to a root-only file: refused (125)"
	else
		not_ok "--env-file $f through the bot's link to a root-only file: refused (125)"
		diag "status $rc: $out"
	fi
done
like "$(ex --env-file "$W/.env" w1 -- true </dev/null 2>&1)" "symbolic link .* not root's" \
	"... saying the link is not root's"
ln -s "$T/secrets/root.env" "$T/rootlink.env"
is "$(ex --env-file "$T/rootlink.env" w1 -- sh -c 'echo "[$SECRET]"' </dev/null 2>&1)" "[hunter2]" \
	"--env-file through root's own link works"
is "$(ex --env-file /dev/stdin w1 -- sh -c 'echo "$P"' < <(printf 'P=stdin\n') 2>&1)" stdin \
	"--env-file /dev/stdin (root's links to a pipe) works"
is "$(ex -e LD_LIBRARY_PATH=/nonexistent-$$ w1 -- sh -c 'echo "$LD_LIBRARY_PATH"' </dev/null 2>&1)" \
	"/nonexistent-$$" "-e LD_LIBRARY_PATH reaches the command (held back from bwrap)"

# --- errors from the daemon: nothing runs -------------------------------------
err=$(ex nosuchbot -- /bin/sh -c '/usr/bin/touch "$1"' sh "$W/marker3" </dev/null 2>&1 >/dev/null)
rc=$?
is "$rc" 125 "exec of a bot that does not exist exits 125"
like "$err" "not_found" "and says not_found"
[ -e "$W/marker3" ] && not_ok "and runs nothing" || ok "and runs nothing"

# --- --cwd ---------------------------------------------------------------------
is "$(ex --cwd "$W/sub" w1 -- pwd </dev/null 2>&1)" "$W/sub" "--cwd DIR before the bot"
is "$(ex w1 --cwd "$W/sub" -- pwd </dev/null 2>&1)" "$W/sub" "--cwd DIR after the bot"
is "$(ex w1 --cwd="$W/sub" pwd </dev/null 2>&1)" "$W/sub" "--cwd=DIR after the bot, no --"
is "$(cd "$W" && ex w1 --cwd sub -- pwd </dev/null 2>&1)" "$W/sub" "a relative --cwd is taken from the current folder"
is "$(cd "$W/sub" && ex --cwd .. w1 -- pwd </dev/null 2>&1)" "$W" "--cwd .. from a subfolder"
is "$(ex w1 --cwd /etc -- pwd </dev/null 2>&1)" /etc "--cwd a host folder outside the roots (read-only there)"
out=$(ex w1 --cwd "$W/nosuch" -- /bin/sh -c '/usr/bin/touch "$1"' sh "$W/marker4" </dev/null 2>&1)
rc=$?
[ "$rc" -ne 0 ] && [ ! -e "$W/marker4" ] && ok "--cwd a missing folder fails (status $rc) and runs nothing" ||
	{ not_ok "--cwd a missing folder fails and runs nothing"; diag "status $rc: $out"; }
is "$(ex w1 -- sh -c 'echo "$@"' sh --cwd x </dev/null 2>&1)" "--cwd x" "a --cwd after the command is the command's"
is "$(ex w1 echo --cwd x </dev/null 2>&1)" "--cwd x" "a --cwd after the command (no --) is the command's"

# the default: the current folder if inside a root, else the bot's folder
is "$(cd "$W/sub" && ex w1 -- pwd </dev/null 2>&1)" "$W/sub" "default cwd: the current folder, inside the bot's folder"
is "$(cd "$W" && ex w1 -- pwd </dev/null 2>&1)" "$W" "default cwd: the bot's folder itself"
is "$(cd "$T/rd" && ex w1 -- pwd </dev/null 2>&1)" "$T/rd" "default cwd: the current folder, inside a readable root"
is "$(cd / && ex w1 -- pwd </dev/null 2>&1)" "$W" "default cwd from / (outside every root): the bot's folder"
is "$(cd "$T" && ex w1 -- pwd </dev/null 2>&1)" "$W" "default cwd from the folder's parent: the bot's folder"
is "$(cd "$T/ws2" && ex w1 -- pwd </dev/null 2>&1)" "$W" "default cwd from $T/ws2 (a prefix look-alike of ws): the bot's folder"
# --- which bwrap: agentfsd's choice -------------------------------------------
# bwrap runs as root (or as the operator the bot runs as) outside the sandbox:
# agentfsd decides which (its config's "bwrap", else the first in its PATH),
# one no bot could have written. Each case starts agentfsd again.
ex_daemon_again --config "$(ex_bwrap_config "$T/nonexistent/bwrap")"
err=$(ex w1 -- /bin/sh -c '/usr/bin/touch "$1"' sh "$W/marker1" </dev/null 2>&1 >/dev/null)
is "$?" 125 "a configured bwrap that does not exist: exec exits 125"
like "$err" "no_bwrap: cannot resolve $T/nonexistent/bwrap" "... naming it (no_bwrap)"
check "... and the command did not run" test ! -e "$W/marker1"
ex_daemon_again
out=$(env PATH=/nonexistent "$AGENTFS" --socket "$D_SOCK" exec w1 -- /bin/sh -c 'echo ran' </dev/null 2>&1)
is "$out" ran "the caller's PATH does not decide which bwrap runs"
afs shutdown >/dev/null 2>&1
daemon_wait_gone 20 || bail_out "agentfsd did not stop"
env PATH=/nonexistent "$AGENTFSD" --config "$D_CONFIG" --socket "$D_SOCK" --state "$D_STATE" \
	--cgroup "$D_CGROUP" || bail_out "agentfsd did not start"
err=$(ex w1 -- /bin/sh -c '/usr/bin/touch "$1"' sh "$W/marker1" </dev/null 2>&1 >/dev/null)
is "$?" 125 "no bwrap in agentfsd's PATH: exec exits 125"
like "$err" "no_bwrap: bwrap not found in /nonexistent" "... and says so"
check "... and the command did not run" test ! -e "$W/marker1"

# a bwrap that cannot make its namespaces: every try fails, nothing runs
cat >"$T/fakebin/bwrap" <<'EOF'
#!/bin/sh
echo "bwrap: Creating new namespace failed: Operation not permitted" >&2
exit 1
EOF
chmod +x "$T/fakebin/bwrap"
ex_daemon_again --config "$(ex_bwrap_config "$T/fakebin/bwrap")"
err=$(ex w1 -- /bin/sh -c '/usr/bin/touch "$1"' sh "$W/marker2" </dev/null 2>&1 >/dev/null)
rc=$?
is "$rc" 125 "a bwrap that fails before starting the command: exec exits 125"
like "$err" "Nothing was run" "it says nothing was run"
like "$err" "Creating new namespace failed" "bwrap's own message is shown"
check "the command did not run" test ! -e "$W/marker2"

# a bwrap a bot could have written is never run
mkdir -p "$T/botbin" "$T/wwbin" "$T/linkbin"
for d in botbin wwbin; do
	printf '#!/bin/sh\ntouch "%s/ran-%s"\nexit 0\n' "$T" "$d" >"$T/$d/bwrap"
	chmod 755 "$T/$d/bwrap"
done
chown -R 65534 "$T/botbin"
chmod 0777 "$T/wwbin"
ln -s "$T/botbin/bwrap" "$T/linkbin/bwrap"
ex_daemon_again --config "$(ex_bwrap_config "$T/botbin/bwrap")"
err=$(ex w1 -- /bin/true </dev/null 2>&1 >/dev/null)
is "$?" 125 "a bwrap owned by another user: exec exits 125"
like "$err" "botbin/bwrap is not trusted" "... and says the bwrap is not trusted"
check "... and it did not run" test ! -e "$T/ran-botbin"
ex_daemon_again --config "$(ex_bwrap_config "$T/wwbin/bwrap")"
err=$(ex w1 -- /bin/true </dev/null 2>&1 >/dev/null)
is "$?" 125 "a bwrap in a folder anyone may write: exec exits 125"
like "$err" "mode 0777" "... and names the folder's mode"
check "... and it did not run" test ! -e "$T/ran-wwbin"
ex_daemon_again --config "$(ex_bwrap_config "$T/linkbin/bwrap")"
err=$(ex w1 -- /bin/true </dev/null 2>&1 >/dev/null)
is "$?" 125 "a trusted folder's symlink to an untrusted bwrap: exec exits 125"
check "... and it did not run" test ! -e "$T/ran-botbin"

# agentfs-enter, the sandbox's first program (root with CAP_SETUID until it
# becomes the bot's user), is agentfsd's choice and must be trusted like bwrap:
# an agentfsd copied beside one anyone may write runs nothing
mkdir -p "$T/enterbin"
cp "$AGENTFSD" "$T/enterbin/agentfsd"
cp "$top_builddir/src/agentfs-enter" "$T/enterbin/agentfs-enter"
chmod 0757 "$T/enterbin/agentfs-enter"
AGENTFSD=$T/enterbin/agentfsd ex_daemon_again
err=$(ex w1 -- sh -c ': >"$0"' "$W/ran-enter" </dev/null 2>&1 >/dev/null)
is "$?" 125 "an agentfs-enter anyone may write: exec exits 125"
like "$err" "enterbin/agentfs-enter is not trusted.*mode 0757" "... and says it is not trusted, and why"
check "... and nothing ran" test ! -e "$W/ran-enter"
chmod 0755 "$T/enterbin/agentfs-enter"
out=$(ex w1 -- sh -c 'cmp /dev/.agentfs-exec "$0" && echo same' "$T/enterbin/agentfs-enter" </dev/null 2>&1)
is "$out" same "once it is root's alone, the one beside agentfsd enters the sandbox"
is "$(pgrep -fa "bwrap .*$T/")" "" "no sandbox is left running"

done_testing
