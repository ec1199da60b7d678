#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-host-init: the person makes a repository, or moves a hooks folder
# into place, on the host while a mount is live: at the root itself, or where
# a bot process sits (its cwd, which it never looks up by name again).  The
# classes computed before are stale, yet what the new repository guards (a
# global relative core.hooksPath at its top, a bare repository's hooks/, the
# moved folder) is refused through the mount, also where the bot sits deeper
# than the new repository's top (fanotify tells the guard what the host
# made), and plain git on the host afterwards runs nothing the bot wrote.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src" M="$T/m" R="$T/root" RM="$T/rm"
mkdir -p "$S/proj" "$S/srv" "$S/deep/.githooks" "$S/srv2/hooks" "$S/srv3" "$M" "$R" "$RM"

setup()
{
	git config --global core.hooksPath .githooks
	# rev: its hooks folder (.githooks, from the global config) does not exist yet;
	# tools/hooks is where the bot wrote hooks for the person to review
	git init -q "$S/rev"
	mkdir -p "$S/rev/tools/hooks"
	printf '#!/bin/sh\ntrue\n' >"$S/rev/tools/hooks/pre-commit"
	chmod 755 "$S/rev/tools/hooks/pre-commit"
	echo a >"$S/rev/a"
	git -C "$S/rev" add a
	git -C "$S/rev" commit -qm rev
	echo code >"$S/proj/main.c"
	echo code >"$R/main.c"
}
host_setup host-setup setup

mount_or_stop "writable mount of plain folders" fs_mount --log "$GUARD_LOG" "$S" "$M"
mount_or_stop "a second mount whose root is a plain folder" fs_mount --log "$GUARD_LOG" "$R" "$RM"
payload "$T/pay" hostinit

# bot DIR NAME CODE: a process whose cwd is DIR (through the mount); once
# $T/go-NAME exists it runs the python statements CODE there and prints OK or
# the errno in $T/out-NAME
bot()
{
	local dir="$1" name="$2" code="$3"
	log_lines >"$T/from-$name"
	python3 -c '
import errno, os, sys, time
os.chdir(sys.argv[1])
open(sys.argv[2] + ".ready", "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
time.sleep(0.2)
pay = open(sys.argv[3], "rb").read()
try:
    exec(sys.argv[4])
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
' "$dir" "$T/go-$name" "$T/pay" "$code" >"$T/out-$name" 2>&1 &
	track_pid $!
	for _ in $(seq 100); do
		[ -e "$T/go-$name.ready" ] && return 0
		sleep 0.05
	done
}
# bot_refused DESC RULE NAME PATH: the bot NAME's answer is EROFS, by RULE for
# PATH (the mount's log names it: refusal_is, tests/guard-lib.sh)
bot_refused()
{
	refusal_is "$1" "$2" "$(cat "$T/out-$3")" "$(cat "$T/from-$3")" "$4"
}
# wait_for_file FILE: until the bot has said something (10 s at most)
wait_for_file()
{
	for _ in $(seq 200); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
}
put='
def put(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)
    os.write(fd, pay)
    os.close(fd)
'
# 1. git init (and a first commit) in the folder the bot's shell sits in
bot "$M/proj" init "$put
os.mkdir('.githooks')
put('.githooks/pre-commit')"
git -C "$S/proj" init -q && git -C "$S/proj" add -A && git -C "$S/proj" commit -qm person
touch "$T/go-init"
wait_for_file "$T/out-init"
bot_refused "git init where the bot's cwd is: .githooks (global core.hooksPath) cannot be made from there" W2 init \
	"$M/proj/.githooks"

# 2. git init --bare on an empty folder the bot's shell sits in
bot "$M/srv" bare "$put
put('hooks/post-update')"
git init -q --bare "$S/srv"
touch "$T/go-bare"
wait_for_file "$T/out-bare"
bot_refused "git init --bare where the bot's cwd is: hooks/post-update cannot be made" D3 bare \
	"$M/srv/hooks/post-update"

# 3. the person moves reviewed hooks into place while the bot sits in that folder
bot "$M/rev/tools/hooks" mv "$put
put('pre-commit')"
mv "$S/rev/tools/hooks" "$S/rev/.githooks"
touch "$T/go-mv"
wait_for_file "$T/out-mv"
# (the log names the file by the path the mount knew, rev/tools/hooks: no path is checked)
bot_refused "hooks moved into .githooks on the host: the bot, sitting in that folder, cannot rewrite them" W2 mv -

# 5. deeper: the bot sits in a plain .githooks it made; the person runs git init above it
bot "$M/deep/.githooks" deep "$put
put('pre-commit')"
git -C "$S/deep" init -q && git -C "$S/deep" commit -q --allow-empty -m person
touch "$T/go-deep"
wait_for_file "$T/out-deep"
bot_refused "git init above the folder the bot sits in (.githooks): the hook cannot be written" W2 deep \
	"$M/deep/.githooks/pre-commit"

# 6. the same for a bare repository: the bot sits in srv2/hooks, a plain folder it made
bot "$M/srv2/hooks" baredeep "$put
put('post-update')"
git init -q --bare "$S/srv2"
touch "$T/go-baredeep"
wait_for_file "$T/out-baredeep"
bot_refused "git init --bare above the folder the bot sits in (hooks/): post-update cannot be made" D3 baredeep \
	"$M/srv2/hooks/post-update"

# 7. no process needed: the bot links srv3/hooks to a folder of its own first; git
# init --bare keeps the link, and hooks would run from the bot's folder
check "a plain folder and a link to it from srv3/hooks" sh -c "mkdir '$M/h' && ln -s ../h '$M/srv3/hooks'"
git init -q --bare "$S/srv3"
sleep 0.2
refused_by "git init --bare where srv3/hooks links to the bot's folder: post-update cannot be made there" D9 \
	try create "$M/h/post-update"

# 4. git init of the root itself, after the bot wrote its code there
git -C "$R" init -q && git -C "$R" add -A && git -C "$R" commit -qm person
sleep 0.2
refused_by "git init of the root: .githooks cannot be made at the root" W2 \
	try mkdir "$RM/.githooks"

fs_umount "$RM" || not_ok "umount $RM"
fs_umount "$M" || not_ok "umount $M"

for d in "$S/proj" "$S/rev" "$S/deep" "$R"; do
	(cd "$d" && git commit -q --allow-empty -m host) >>"$T/host.log" 2>&1 ||
		not_ok "host: a commit in $d"
done
git -C "$S/proj" push -q "$S/srv" HEAD:main >>"$T/host.log" 2>&1 || not_ok "host: push to srv"
git -C "$S/proj" push -q "$S/srv2" HEAD:main >>"$T/host.log" 2>&1 || not_ok "host: push to srv2"
git -C "$S/proj" push -q "$S/srv3" HEAD:main >>"$T/host.log" 2>&1 || not_ok "host: push to srv3"
no_marker "host: commits and a push run nothing the bot wrote"

done_testing
