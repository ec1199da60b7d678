#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-user: a bot's commands run as its user, never as root (unless its
# sandbox is danger-full-access): by default the owner of its folder, or the
# user the operator names; a bot's bots run as its user and may name no
# other. What they make belongs to that user on the host.
. "$top_srcdir/tests/exec-lib.sh"

W="$T/ws" R0="$T/rootdir"
mkdir -p "$W/sub" "$R0" "$T/dr" "$T/du"
own "$W" "$T/du"
daemon_start || bail_out "agentfsd did not start"
check "create u1 over a folder of $EX_USER (no --user)" \
	afs create u1 "$W" --sandbox workspace-write --no-network
is "$(afs --json show u1 | jget bot.user)" "$EX_USER" "show: u1's user is the folder's owner"
is "$(afs --json show u1 | jget bot.uid)" "$EX_UID" "show: u1's uid is $EX_UID"
is "$(afs --json ls | jget 'bots.0.user')" "$EX_USER" "ls --json shows the user"
like "$(afs show u1)" "^user +$EX_USER" "agentfs show prints the user"

# --- the command's identity ---------------------------------------------------
is "$(ex u1 -- id -u </dev/null 2>&1)" "$EX_UID" "id -u inside is the user's uid"
is "$(ex u1 -- id -g </dev/null 2>&1)" "$EX_GID" "id -g inside is the user's group"
like "$(ex u1 -- id -G </dev/null 2>&1)" "(^| )$EX_XGID( |$)" "the user's supplementary group $EX_GROUP is there"
is "$(ex u1 -- sh -c 'echo "$HOME $USER"' </dev/null 2>&1)" "/nonexistent $EX_USER" "HOME and USER are the user's"
out=$(ex u1 -- sh -c 'grep -E "^(CapInh|CapEff|CapPrm|CapAmb|NoNewPrivs):" /proc/self/status' </dev/null 2>&1 | tr -s '\t\n' '  ')
like "$out" "CapInh: 0+ CapPrm: 0+ CapEff: 0+ CapAmb: 0+ NoNewPrivs: 1" "no capabilities, no_new_privs ($out)"
ex u1 -- su -c true root </dev/null >/dev/null 2>&1 && not_ok "su inside fails" || ok "su inside fails"
# the loader's variables reach the command, not the step that still has CAP_SETUID
out=$(LD_LIBRARY_PATH="$W/lib" "$AGENTFS" --socket "$D_SOCK" exec u1 -- sh -c 'echo "$LD_LIBRARY_PATH"; env | grep -c AGENTFS_SAVED' </dev/null 2>&1 | tr '\n' ' ')
is "$out" "$W/lib 0 " "LD_LIBRARY_PATH reaches the command (held back from exec --as)"

# the sandbox's first program is agentfs-enter, which agentfsd named and which
# loads the C library alone, not agentfs with libgit2's twenty libraries
ENTER=$T/bin/agentfs-enter # exec-lib.sh's copy, beside its agentfsd
out=$(ex u1 -- sh -c 'cat /dev/.agentfs-exec' </dev/null 2>/dev/null | cmp - "$ENTER" 2>&1)
is "$out" "" "the sandbox was entered through agentfs-enter"
is "$(raw '{"op":"exec_plan","name":"u1"}' | jget enter)" "$(realpath "$ENTER")" \
	"the exec plan names the agentfs-enter beside agentfsd"
if command -v ldd >/dev/null; then
	# linked statically where configure could (ENTER_LDFLAGS): ldd says so, and no library
	is "$(ldd "$ENTER" 2>&1 | grep -cvE 'linux-vdso|ld-linux|libc\.so|lib(a|ub|t)san|libstdc|libgcc_s|libm\.so|statically linked')" 0 \
		"agentfs-enter links the C library alone (sanitizers' runtimes aside)"
else
	skip "ldd is missing"
fi

# the bot's user comes with the plan, looked up by agentfsd (whose NSS modules
# stay loaded): the client loads none at each start
r=$(raw '{"op":"exec_plan","name":"u1"}')
is "$(printf '%s' "$r" | jget user.name) $(printf '%s' "$r" | jget user.gid) $(printf '%s' "$r" | jget user.home)" \
	"$EX_USER $EX_GID /nonexistent" "the exec plan names the bot's user, its group and its home"
like "$r" "\"groups\":\[([0-9]+,)*$EX_XGID[],]" "... and its supplementary group $EX_GROUP"
# agentfsd keeps what it looked up 10 s while /etc/passwd and /etc/group stay
# as they were: a change to them is seen at the next plan
if command -v gpasswd >/dev/null; then
	for i in 1 2 3 4 5; do # another test may hold the lock of /etc/group
		gpasswd -d "$EX_USER" "$EX_GROUP" >/dev/null 2>&1 && break
		sleep 0.3
	done
	unlike "$(raw '{"op":"exec_plan","name":"u1"}')" "\"groups\":\[([0-9]+,)*$EX_XGID[],]" \
		"a group the user just left is not in the next plan"
	for i in 1 2 3 4 5; do
		gpasswd -a "$EX_USER" "$EX_GROUP" >/dev/null 2>&1 && break
		sleep 0.3
	done
	like "$(raw '{"op":"exec_plan","name":"u1"}')" "\"groups\":\[([0-9]+,)*$EX_XGID[],]" \
		"... and is again once it joins it"
else
	skip "gpasswd is missing"
	skip "gpasswd is missing"
fi
# a "user" that is not whole is agentfsd's fault: nothing runs on it
if command -v python3 >/dev/null; then
	bad_plan()
	{
		python3 - "$T/fake.sock" "$1" <<'PY' &
import json, os, socket, sys
path, user = sys.argv[1], json.loads(sys.argv[2])
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(1)
c, _ = s.accept()
c.makefile().readline()
plan = {"ok": True, "name": "f", "sandbox": "workspace-write", "network": True,
        "uid": 4242, "folder": "/", "socket": "", "control_socket": path,
        "bwrap": "/bin/false", "enter": "/bin/false", "user_namespace": False,
        "binds": [], "hide": [], "user": user}
c.sendall((json.dumps(plan) + "\n").encode())
c.close()
PY
		fake=$!
		wait_until 5 test -S "$T/fake.sock"
		out=$("$AGENTFS" --socket "$T/fake.sock" exec f -- touch "$T/ran" </dev/null 2>&1)
		rc=$?
		wait "$fake"
		rm -f "$T/fake.sock"
	}
	for u in '{"name":"x","home":"/","gid":1,"groups":["1"]}' '{"name":"x","home":"/","gid":-1,"groups":[]}' \
		'{"name":"","home":"/","gid":1,"groups":[1]}' '{"name":"x","gid":1,"groups":[1]}' \
		'{"name":"x","home":"/","gid":4294967296,"groups":[1]}' '[1]'; do
		bad_plan "$u"
		is "$rc $out" '125 agentfs: agentfsd sent a bad exec plan (its "user")' \
			"a plan whose user is $u: exec exits 125 and says so"
	done
	check "... and ran nothing" test ! -e "$T/ran"
else
	skip "python3 is missing: no daemon to send a bad plan"
fi

# agentfs-enter (and exec --as, for an older agentfsd) takes the ids from the
# outer exec; one that does not fit a uid_t is refused, never narrowed to
# another user (2^32 + 1 would be uid 1)
for ids in 4294967297:1:1 4294967295:1:1 -1:1:1 " 1:1:1" 1:4294967298:1 1:1:4294967297; do
	out=$("$ENTER" "$ids" -- id -u </dev/null 2>&1)
	rc=$?
	like "$out" "^agentfs exec: bad arguments: .*only agentfs exec runs it" \
		"agentfs-enter refuses the ids '$ids' (status $rc)"
	out=$("$AGENTFS" exec --as "$ids" -- id -u </dev/null 2>&1)
	rc=$?
	like "$out" "bad arguments" "exec --as refuses the ids '$ids' (status $rc)"
done

# --- what it makes is the user's -----------------------------------------------
check "touch f and mkdir d inside" ex u1 -- sh -c 'touch f && mkdir d && echo x >d/g' </dev/null
is "$(stat -c %u:%g "$W/f" "$W/d" "$W/d/g" 2>&1 | tr '\n' ' ')" \
	"$EX_UID:$EX_GID $EX_UID:$EX_GID $EX_UID:$EX_GID " "on the host they belong to $EX_USER"
out=$(ex u1 -- sh -c 'cp /bin/sh x && chmod 4755 x' </dev/null 2>&1)
like "$out" "Operation not permitted" "cp /bin/sh x && chmod 4755 x inside fails"
is "$(stat -c %a "$W/x" 2>&1)" 755 "the host file is not setuid"
is "$(ex u1 -- sh -c 'echo x >"$1"' sh "$R0/no" </dev/null 2>&1 | grep -c 'Read-only\|Permission')" 1 \
	"a folder outside the roots stays unwritable"

# --- root is refused -------------------------------------------------------------
out=$(afs create r0 "$R0" --sandbox workspace-write 2>&1)
like "$out" "forbidden: bot r0 would run as root \\(the owner of $R0\\).*--user" \
	"create r0 over a root-owned folder is refused, saying how to fix it"
# A confined root bot can still come from a state file written before create
# refused them: exec refuses it in the same words.
check "create r0 over the root-owned folder, danger-full-access" \
	afs create r0 "$R0" --sandbox danger-full-access
expect_ok "shutdown" "$(afs --json shutdown)"
daemon_wait_gone 10
sed -i 's/"danger-full-access"/"workspace-write"/' "$D_STATE/bots.json"
daemon_start || bail_out "agentfsd did not start again"
is "$(afs --json show r0 | jget bot.sandbox):$(afs --json show r0 | jget bot.uid)" workspace-write:0 \
	"r0 came back from the state file confined, as root"
out=$(ex r0 -- sh -c 'touch "$1/ran"' sh "$R0" </dev/null 2>&1)
rc=$?
like "$out" "bot r0 would run as root \\(the owner of $R0\\): a bot runs as root only with sandbox danger-full-access.*--user" \
	"exec of a root bot is refused, saying how to fix it"
[ "$rc" -eq 125 ] && [ ! -e "$R0/ran" ] && ok "nothing ran (status $rc)" || not_ok "nothing ran (status $rc)"
check "create r1 over the root-owned folder --user $EX_USER" \
	afs create r1 "$R0" --sandbox workspace-write --user "$EX_USER"
is "$(ex r1 -- id -un </dev/null 2>&1)" "$EX_USER" "r1 runs as $EX_USER"
like "$(ex r1 -- touch "$R0/f" </dev/null 2>&1)" "Permission denied" \
	"r1 cannot write the root-owned folder (as natively)"
check "create r2 --user $EX_UID (a uid)" afs create r2 "$R0" --sandbox read-only --user "$EX_UID"
is "$(afs --json show r2 | jget bot.user)" "$EX_USER" "a uid given is shown by name"
expect_error "create --user nosuchuser-$$: bad_value" bad_value \
	"$(afs --json create r3 "$R0" --user "nosuchuser-$$" 2>&1)"

# --- a bot's bots ----------------------------------------------------------------
out=$(ex u1 -- "$AGENTFS" --json create c1 "$W/sub" </dev/null 2>/dev/null)
expect_ok "inside, u1 creates c1" "$out"
is "$(afs --json show c1 | jget bot.user)" "$EX_USER" "c1 inherits u1's user"
out=$(ex u1 -- "$AGENTFS" --json create c2 "$W/sub" --user root </dev/null 2>/dev/null)
expect_error "inside, u1 cannot name root as c2's user" forbidden "$out"
out=$(ex u1 -- "$AGENTFS" --json create c3 "$W/sub" --user "$EX_USER" </dev/null 2>/dev/null)
expect_ok "inside, u1 may name its own user" "$out"
out=$(ex u1 -- "$AGENTFS" exec c1 -- id -u </dev/null 2>&1)
like "$out" "forbidden: a bot cannot run a confined bot's commands" "inside, u1 cannot exec c1: agentfsd's plan refuses a bot, saying why"

# --- danger-full-access ------------------------------------------------------------
check "create du (danger-full-access, folder of $EX_USER)" afs create du "$T/du" --sandbox danger-full-access
is "$(ex du -- id -u </dev/null 2>&1)" "$EX_UID" "danger-full-access runs as the user too"
check "create dr (danger-full-access, root's folder)" afs create dr "$T/dr" --sandbox danger-full-access
is "$(ex dr -- id -u </dev/null 2>&1)" 0 "danger-full-access over root's folder runs as root"

# --- kept across a restart --------------------------------------------------------
daemon_kill TERM
daemon_wait_gone 10
daemon_start || bail_out "agentfsd did not restart"
restored_state r1 >/dev/null
is "$(afs --json show r1 | jget bot.user)" "$EX_USER" "r1's user is kept across a restart"
is "$(ex r1 -- id -u </dev/null 2>&1)" "$EX_UID" "and its commands still run as $EX_USER"

done_testing
