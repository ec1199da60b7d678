#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-home: rule H1.  A writable root that holds a person's home folder
# (a bot given /home/alice, or /home) must not let the bot write the
# person's own git configuration: ~/.gitconfig, ~/.config/git and what they
# include.  A test user is made with its home inside the source; through the
# mount every way of planting a core.fsmonitor / core.hooksPath config there
# must fail with EROFS.  Then, on the host, that user runs plain git in a
# repository of its own and no marker may appear.  A control shows the same
# config, read by git, does run the payload; a .gitconfig outside a home
# stays writable.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs useradd runuser python3

S="$T/src"   # SOURCE: holds the user's home, home/u
M="$T/m"
UH="$S/home/u"
PAY="$T/pay" # the bot's payloads: outside the root, as in its /tmp
MARKS="$T/marks" # where a payload that ran leaves its marker (the user may write there)
U="agfs-h$$"
U2="agfs-o$$" # a second person, whose home is outside the root
UH2="$T/home2"
U3="agfs-v$$" # a third person, whose home inside the root has no .ssh nor .gnupg yet
UH3="$S/home/v"
mkdir -p "$S/home" "$S/other" "$S/shared" "$M" "$PAY" "$MARKS"
chmod 1777 "$MARKS"

# the users go with the test, whatever happens (lib_cleanup sees our status)
home_cleanup()
{
	local rc=$? u
	for u in "$U" "$U2" "$U3"; do
		host_del userdel "$u"
		host_del groupdel "$u"
	done
	(exit "$rc")
	lib_cleanup
}
trap home_cleanup EXIT
# useradd may meet another test's lock on /etc/passwd: retried
for _i in 1 2 3 4 5 6 7 8 9 10; do
	getent passwd "$U" >/dev/null || useradd -M -U -d "$UH" -s /bin/sh "$U" 2>/dev/null
	getent passwd "$U2" >/dev/null || useradd -M -U -d "$UH2" -s /bin/sh "$U2" 2>/dev/null
	getent passwd "$U3" >/dev/null || useradd -M -U -d "$UH3" -s /bin/sh "$U3" 2>/dev/null
	getent passwd "$U" >/dev/null && getent passwd "$U2" >/dev/null &&
		getent passwd "$U3" >/dev/null && break
	sleep 0.3
done
getent passwd "$U" >/dev/null && getent passwd "$U2" >/dev/null &&
	getent passwd "$U3" >/dev/null || bail_out "cannot make the test users $U, $U2 and $U3"

# as_user CMD...: CMD as the test user, with its home, no inherited git settings
as_user()
{
	runuser -u "$U" -- env -i HOME="$UH" PATH="$PATH" LANG=C "$@"
}
as_user2()
{
	runuser -u "$U2" -- env -i HOME="$UH2" PATH="$PATH" LANG=C "$@"
}

# evil NAME: a config that runs PAY/NAME-* when git reads it
evil()
{
	local n
	for n in fsmonitor pre-commit post-commit; do
		payload "$PAY/$1-$n" "$1-$n"
	done
	mkdir -p "$PAY/$1-hooks"
	cp "$PAY/$1-pre-commit" "$PAY/$1-hooks/pre-commit"
	cp "$PAY/$1-post-commit" "$PAY/$1-hooks/post-commit"
	printf '[core]\n\tfsmonitor = %s\n\thooksPath = %s\n' "$PAY/$1-fsmonitor" "$PAY/$1-hooks"
}

# sshcfg NAME: an ssh config whose ProxyCommand leaves PWNED-NAME-ssh; git over ssh runs it
sshcfg()
{
	payload "$PAY/$1-ssh" "$1-ssh" 1
	printf 'Host *\n\tProxyCommand %s\n' "$PAY/$1-ssh"
}

setup()
{
	mkdir -p "$UH/.config/git" "$UH/work" "$UH/.ssh/config.d" "$S/dots/ssh/stow.d" \
		"$S/dots/gnupg" "$UH3"
	# the common split ssh setup: config Includes every file of config.d; GNU
	# stow folds stow.d, and all of ~/.gnupg, into a dotfiles folder in the root
	printf 'Include config.d/*\nInclude stow.d/*\nInclude %s\n' "$S/shared/ssh-team.conf" \
		>"$UH/.ssh/config"
	printf '# the team ssh settings\n' >"$S/shared/ssh-team.conf"
	chown "$U" "$S/shared/ssh-team.conf"
	ln -s ../../../dots/ssh/stow.d "$UH/.ssh/stow.d"
	ln -s ../../dots/gnupg "$UH/.gnupg"
	printf 'keyid-format long\n' >"$UH/.gnupg/gpg.conf"
	chown -R "$U" "$S/dots"
	chown "$U3" "$UH3"
	: >"$UH/.ssh/known_hosts"
	printf '[user]\n\tname = u\n\temail = u@example.org\n[include]\n\tpath = inc.cfg\n' \
		>"$UH/.gitconfig"
	printf '[init]\n\tdefaultBranch = main\n' >"$UH/.config/git/config"
	chown -R "$U" "$UH"
	chmod 755 "$T" "$S" "$S/home" "$PAY"
	# the user's repository on the host, outside the root
	mkdir "$T/repo"
	chown "$U" "$T/repo"
	as_user git init -q "$T/repo"
	as_user sh -c "cd '$T/repo' && echo a >a && git add a && git commit -qm a"
	# the second person includes a team config that lies inside the root
	mkdir -p "$UH2" "$T/repo2"
	printf '[user]\n\tname = o\n\temail = o@example.org\n' >"$S/shared/team.cfg"
	printf '[include]\n\tpath = %s\n' "$S/shared/team.cfg" >"$UH2/.gitconfig"
	# ... and takes the templates of new repositories from there (init.templateDir)
	mkdir -p "$S/shared/tmpl/hooks"
	printf '[init]\n\ttemplateDir = %s\n' "$S/shared/tmpl" >>"$UH2/.gitconfig"
	chown -R "$U2" "$UH2" "$T/repo2"
	as_user2 git init -q "$T/repo2"
	as_user2 sh -c "cd '$T/repo2' && echo a >a && git add a && git commit -qm a"
	cp "$UH/.gitconfig" "$T/gitconfig.before"
	cp "$UH/.config/git/config" "$T/xdgconfig.before"
	evil bot >"$PAY/bot.cfg"
	sshcfg bot >"$PAY/bot.ssh"
	evil control >"$PAY/control.cfg"
}
host_setup host-setup setup

# ---- control: this config, read by the user's git, runs the payload --------
mkdir -p "$T/ctl"
cp "$PAY/control.cfg" "$T/ctl/.gitconfig"
chown -R "$U" "$T/ctl"
runuser -u "$U" -- env -i HOME="$T/ctl" PATH="$PATH" git -C "$T/repo" status >/dev/null 2>&1
if [ -e "$MARKS/PWNED-control-fsmonitor" ]; then
	ok "control: a planted ~/.gitconfig runs the bot's program on git status"
else
	skip "control: this git does not run core.fsmonitor (the attacks below prove less)"
fi

# ssh reads the config of the user's passwd home, whatever HOME says
mkdir -p "$UH2/.ssh"
sshcfg control >"$UH2/.ssh/config"
chown -R "$U2" "$UH2/.ssh"
chmod 700 "$UH2/.ssh"
as_user2 timeout 20 git ls-remote ssh://git@example.invalid/x.git >/dev/null 2>&1
rm -rf "$UH2/.ssh"
if [ -e "$MARKS/PWNED-control-ssh" ]; then
	ok "control: a planted ~/.ssh/config runs the bot's program on git over ssh"
else
	skip "control: this ssh does not run ProxyCommand here (the ssh attack below proves less)"
fi
# the second person's dotfiles live in the root (the bot is given ~/src): stow links ssh.d there
mkdir -p "$UH2/.ssh" "$S/dots2/ssh.d"
printf 'Include ssh.d/*\n' >"$UH2/.ssh/config"
ln -s "$S/dots2/ssh.d" "$UH2/.ssh/ssh.d"
chown -R "$U2" "$UH2/.ssh" "$S/dots2"
chmod 700 "$UH2/.ssh"

# less's binary lesskey (lesskey -o): its env section's LESSOPEN runs on a paged git log
LESSKEY_BIN=$(command -v lesskey)
# lesskey_bin LABEL OUT: a binary lesskey file whose LESSOPEN leaves PWNED-LABEL
lesskey_bin()
{
	printf '#env\nLESSOPEN=|-touch %s/PWNED-%s; cat %%s\n' "$MARKS" "$1" >"$2.src" &&
		"$LESSKEY_BIN" -o "$2" "$2.src" 2>/dev/null
}
# paged_log HOME: the user's git log on a terminal, paged as git pages it (less)
paged_log()
{
	runuser -u "$U" -- env -i HOME="$1" PATH="$PATH" TERM=xterm LANG=C \
		script -qc "git -C '$T/repo' log" /dev/null >/dev/null 2>&1
}
if [ -n "$LESSKEY_BIN" ] && command -v script >/dev/null; then
	mkdir -p "$T/ctl-less"
	lesskey_bin less-control "$T/ctl-less/.less"
	chown -R "$U" "$T/ctl-less"
	paged_log "$T/ctl-less"
	if [ -e "$MARKS/PWNED-less-control" ]; then
		ok "control: a planted binary ~/.less runs the bot's program on a paged git log"
	else
		skip "control: less does not read a binary ~/.less here (the attack below proves less)"
	fi
	lesskey_bin bot-less "$PAY/bot.less"
else
	skip "control: lesskey or script is missing"
	printf 'x' >"$PAY/bot.less"
fi

GUARD_LOG="$T/mount.log"
mount_or_stop "writable mount of a folder that holds a home" fs_mount --log "$GUARD_LOG" "$S" "$M"
H="$M/home/u"

# plant FILE [PAYLOAD]: append PAYLOAD (the bot's git config) to FILE; prints OK, EROFS or the error
plant()
{
	shell_result append_text "$1" "$(cat "${2:-$PAY/bot.cfg}")"
}

# ---- ~/.gitconfig -----------------------------------------------------------
is "$(plant "$H/.gitconfig")" EROFS "~/.gitconfig: appending a config refused"
is "$(try open-trunc "$H/.gitconfig")" EROFS "~/.gitconfig: truncating refused"
is "$(try unlink "$H/.gitconfig")" EROFS "~/.gitconfig: unlink refused"
is "$(try rename "$H/.gitconfig" "$H/gitconfig.old")" EROFS "~/.gitconfig: rename away refused"
cp "$PAY/bot.cfg" "$H/new.cfg"
is "$(try rename "$H/new.cfg" "$H/.gitconfig")" EROFS "~/.gitconfig: rename onto refused"
is "$(try link "$H/.gitconfig" "$H/gc-alias")" EROFS "~/.gitconfig: a second name refused"
is "$(try rename-exchange "$H/new.cfg" "$H/.gitconfig")" EROFS "~/.gitconfig: exchange refused"
rm -f "$H/new.cfg"
is "$(try chmod "$H/.gitconfig")" EROFS "~/.gitconfig: chmod refused"

# ---- the include it names (inc.cfg, missing) --------------------------------
is "$(plant "$H/inc.cfg")" EROFS "include target of ~/.gitconfig: create refused"
is "$(try symlink "$PAY/bot.cfg" "$H/inc.cfg")" EROFS "include target: symlink refused"
is "$(try mkdir "$H/inc.cfg")" EROFS "include target: mkdir refused"
cp "$PAY/bot.cfg" "$H/new.cfg"
is "$(try link "$H/new.cfg" "$H/inc.cfg")" EROFS "include target: hard link refused"
is "$(try rename "$H/new.cfg" "$H/inc.cfg")" EROFS "include target: rename onto refused"
rm -f "$H/new.cfg"

# ---- ~/.config/git ----------------------------------------------------------
is "$(plant "$H/.config/git/config")" EROFS "~/.config/git/config: appending refused"
is "$(plant "$H/.config/git/config.new")" EROFS "~/.config/git: a new file refused"
is "$(try mkdir "$H/.config/git/hooks")" EROFS "~/.config/git: a hooks folder refused"
is "$(try rename "$H/.config/git" "$H/.config/git.old")" EROFS "~/.config/git: rename away refused"
is "$(try rename "$H/.config" "$H/config.old")" EROFS "~/.config: rename away refused"
is "$(try rmdir "$H/.config")" ENOTEMPTY "~/.config: rmdir fails, it holds git/config"
mkdir -p "$H/cfg2/git"
cat "$PAY/bot.cfg" >"$H/cfg2/git/config"
is "$(try rename "$H/cfg2" "$H/.config")" EROFS "~/.config: a new one renamed over it refused"
is "$(try rename-exchange "$H/cfg2" "$H/.config")" EROFS "~/.config: exchanged refused"
echo hi >"$H/work/notes.txt" 2>/dev/null
is "$(cat "$H/work/notes.txt" 2>/dev/null)" hi "other files in the home stay writable"
is "$(try mkdir "$H/.config/other-app")" OK "other folders in ~/.config stay writable"

# ---- ~/.ssh/config -------------------------------------------------------------
is "$(plant "$H/.ssh/config" "$PAY/bot.ssh")" EROFS "~/.ssh/config: appending refused"
is "$(try unlink "$H/.ssh/config")" EROFS "~/.ssh/config: unlink refused"
cp "$PAY/bot.ssh" "$H/ssh.new"
is "$(try rename "$H/ssh.new" "$H/.ssh/config")" EROFS "~/.ssh/config: rename onto refused"
rm -f "$H/ssh.new"
is "$(try symlink "$PAY/bot.ssh" "$H/.ssh/config2")" EROFS "~/.ssh: a symlink refused"
is "$(try rename "$H/.ssh" "$H/ssh-old")" EROFS "~/.ssh: rename away refused"
[ -d "$H/ssh-old" ] && mv "$H/ssh-old" "$H/.ssh" # unguarded: put it back for the git below
# all of ~/.ssh: its config may Include other files there, and authorized_keys lets a bot back in
is "$(plant "$H/.ssh/config.d/bot" "$PAY/bot.ssh")" EROFS "~/.ssh/config.d (an Include target): a config refused"
is "$(try mkdir "$H/.ssh/more.d")" EROFS "~/.ssh: a new folder refused"
is "$(try create "$H/.ssh/authorized_keys")" EROFS "~/.ssh/authorized_keys: create refused"
is "$(plant "$H/.ssh/known_hosts")" EROFS "~/.ssh/known_hosts: append refused"
# ~/.gnupg: gpg-agent runs the pinentry-program gpg-agent.conf names when a signing git asks
is "$(try create "$H/.gnupg/gpg-agent.conf")" EROFS "~/.gnupg/gpg-agent.conf: create refused"
is "$(plant "$H/.gnupg/gpg.conf")" EROFS "~/.gnupg/gpg.conf: append refused"
is "$(try rename "$H/.gnupg" "$H/gnupg-old")" EROFS "~/.gnupg: rename away refused"
[ -d "$H/gnupg-old" ] && mv "$H/gnupg-old" "$H/.gnupg"
# H-a: where symlinks as and in ~/.ssh, ~/.gnupg lead (GNU stow's dotfiles folder)
is "$(plant "$M/dots/ssh/stow.d/bot" "$PAY/bot.ssh")" EROFS "a folder a link in ~/.ssh names (stow): a config refused"
is "$(plant "$H/.ssh/stow.d/bot2" "$PAY/bot.ssh")" EROFS "... and through the link"
is "$(try create "$M/dots/gnupg/gpg-agent.conf")" EROFS "the folder ~/.gnupg links to: gpg-agent.conf refused"
is "$(plant "$M/dots/gnupg/gpg.conf")" EROFS "... its gpg.conf read-only"
is "$(try rename "$M/dots/ssh" "$M/dots/ssh2")" EROFS "... the folders on the way pinned"
[ -d "$M/dots/ssh2" ] && mv "$M/dots/ssh2" "$M/dots/ssh" # unguarded: put it back for the git below
is "$(plant "$M/dots/notes")" OK "other files in the dotfiles folder writable"
is "$(plant "$M/dots2/ssh.d/bot" "$PAY/bot.ssh")" EROFS "a home outside the root: the folder its ~/.ssh links to (stow) refused"
# H-d: a file ~/.ssh/config Includes elsewhere in the root
is "$(plant "$M/shared/ssh-team.conf" "$PAY/bot.ssh")" EROFS "a file ~/.ssh/config Includes by absolute path: refused"
# H-b: no chmod opening them to other accounts
is "$(shell_result chmod 0777 "$H/.ssh")" EROFS "~/.ssh: chmod refused"
is "$(shell_result chmod 0777 "$M/dots/gnupg")" EROFS "the folder ~/.gnupg links to: chmod refused"
# ... nor the home, ~/.config and the folder above the home (another account would swap ~/.gitconfig)
is "$(shell_result chmod 0777 "$H")" EROFS "the home: chmod 0777 refused"
is "$(shell_result chmod 0775 "$H/.config")" EROFS "~/.config: chmod g+w refused"
is "$(shell_result chmod 0777 "$M/home")" EROFS "the folder above a home: chmod 0777 refused"
is "$(shell_result chmod 0700 "$H/work")" OK "other folders in a home: chmod allowed"
is "$(shell_result chmod 0755 "$H")" OK "the home: chmod 0755 allowed"
# ... nor by a POSIX ACL, the same change by setxattr (other::rwx, a named user with write)
acl_set()
{
	python3 - "$@" <<'PY' 2>&1
import errno, os, struct, sys
U = 0xffffffff
ents = [(1, 7, U), (2, 7, 4242), (4, 5, U), (0x10, 7, U), (0x20, 7, U)]
acl = struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, i) for t, p, i in ents)
try:
    os.setxattr(sys.argv[1], sys.argv[2], acl)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
PY
}
is "$(acl_set "$H" system.posix_acl_access)" EROFS "the home: an access ACL granting writes refused"
is "$(acl_set "$H" system.posix_acl_default)" EROFS "the home: a default ACL refused"
is "$(acl_set "$M/home" system.posix_acl_access)" EROFS "the folder above a home: an ACL refused"
is "$(stat -c %a "$S/home/u")" 755 "the home's mode is unchanged on the host"
is "$(acl_set "$H/work" system.posix_acl_access)" OK "other folders in a home: an ACL allowed"
# H-c: a missing ~/.ssh, ~/.gnupg is not the bot's to make
is "$(try mkdir "$M/home/v/.ssh")" EROFS "a missing ~/.ssh: mkdir refused"
is "$(try mkdir "$M/home/v/.gnupg")" EROFS "a missing ~/.gnupg: mkdir refused"
is "$(try mkdir "$M/home/v/work")" OK "... other folders in that home may be made"
is "$(try mkdir "$M/other/.ssh")" OK "a folder named .ssh outside a home: mkdir"
is "$(plant "$M/other/.ssh/config" "$PAY/bot.ssh")" OK "... and a config in it is writable"

# ---- a home outside the root: what its config includes inside the root --------
is "$(plant "$M/shared/team.cfg")" EROFS "an include of a home's config outside the root: refused"
is "$(try rename "$M/shared" "$M/shared2")" EROFS "... and the folder on its way pinned"
is "$(plant "$M/shared/other.cfg")" OK "... other files beside it writable"
hook_plant()
{
	shell_result sh -c "printf '#!/bin/sh\ntouch %s\n' '$MARKS/PWNED-bot-template' >'$1' && chmod +x '$1'"
}
is "$(hook_plant "$M/shared/tmpl/hooks/post-checkout")" EROFS \
	"a home's init.templateDir inside the root: a hook in it refused"
is "$(try mkdir "$M/shared/tmpl/info")" EROFS "... anything made in the template folder refused"
is "$(try rename "$M/shared/tmpl" "$M/shared/tmpl-old")" EROFS "... the template folder pinned"
[ -d "$M/shared/tmpl-old" ] && mv "$M/shared/tmpl-old" "$M/shared/tmpl" # unguarded: put it back

# ---- the person changes their configuration on the host while mounted --------
as_user git config --global --add include.path later.cfg
sleep 0.2
is "$(plant "$H/later.cfg")" EROFS "an include the person adds while mounted: refused"
as_user git config --global --add core.hooksPath "$S/home/u/githooks"
sleep 0.2
is "$(try mkdir "$H/githooks")" EROFS "a hooksPath the person adds while mounted: refused"

# ---- what the pager and the editor git starts read: lesskey's #env, a vimrc -----
is "$(plant "$H/.lesskey" "$PAY/bot.cfg")" EROFS "~/.lesskey (less, git's pager): making it refused"
is "$(plant "$H/.vimrc")" EROFS "~/.vimrc (git's editor): making it refused"
is "$(try mkdir "$H/.vim")" EROFS "~/.vim: making it refused"
is "$(try mkdir "$H/.config/nvim")" EROFS "~/.config/nvim: making it refused"
is "$(plant "$H/.config/lesskey")" EROFS "~/.config/lesskey: making it refused"
is "$(plant "$H/.huskyrc")" EROFS "~/.huskyrc (sourced before every husky hook): making it refused"
refused_by "~/.gitk (gitk's Tcl settings, sourced when ~/.config/git/gitk is missing)" H1 \
	shell_result write_text "$H/.gitk" "exec touch $MARKS/PWNED-gitk"
refused_by "~/.less (less's binary lesskey, whose LESSOPEN runs on a paged git log)" H1 \
	python3 "$FORGE" plant-new "$H/.less" "$PAY/bot.less"
refused_by "~/.config/less (the same, where less looks under XDG)" H1 \
	python3 "$FORGE" plant-new "$H/.config/less" "$PAY/bot.less"
cp "$PAY/bot.less" "$M/other/bot.less" 2>/dev/null || { mkdir -p "$M/other" && cp "$PAY/bot.less" "$M/other/bot.less"; }
refused_by "~/.less renamed in from elsewhere in the root" H1 try rename "$M/other/bot.less" "$H/.less"
refused_by "~/.git-credentials (git credential-store's file)" H1 \
	shell_result write_text "$H/.git-credentials" "https://bot:pw@example.invalid"
refused_by "~/.git-credential-cache (credential-cache's socket folder)" H1 try mkdir "$H/.git-credential-cache"
is "$(try mkdir "$H/.config/husky")" EROFS "~/.config/husky (husky 9's init.sh): making it refused"
is "$(plant "$H/.bashrc")" OK "~/.bashrc is not git's: writable (a home in a root is guarded for git)"
rm -f "$H/.bashrc"

# ---- no false positives outside a home ---------------------------------------
is "$(try mkdir "$M/other/.gitconfig")" OK "a folder named .gitconfig outside a home: mkdir"
is "$(try create "$M/other/.gitconfig/x")" OK "... a file in it"
is "$(try rename "$M/other/.gitconfig" "$M/other/gc")" OK "... renamed"
is "$(plant "$M/other/.gitconfig")" OK "a file named .gitconfig outside a home is writable"
mkdir -p "$M/other/.config/git" 2>/dev/null
is "$(plant "$M/other/.config/git/config")" OK "other/.config/git/config is writable"

is "$(try rename "$H" "$M/home/u-old")" EROFS "the home itself: rename away refused"
[ -d "$M/home/u-old" ] && mv "$M/home/u-old" "$H" # unguarded: put it back for the git below
is "$(try rename "$M/home" "$M/home-old")" EROFS "the folder above a home: rename refused"
[ -d "$M/home-old" ] && mv "$M/home-old" "$M/home"

fs_umount "$M" || not_ok "umount $M"

# ---- the person's git on the host -------------------------------------------
as_user git config --global --unset-all include.path later.cfg
as_user git config --global --unset-all core.hooksPath
cmp -s "$UH/.gitconfig" "$T/gitconfig.before"
is "$?" 0 "host: ~/.gitconfig is what the person left"
cmp -s "$UH/.config/git/config" "$T/xdgconfig.before"
is "$?" 0 "host: ~/.config/git/config is what the person left"
check "host: no include target appeared" test ! -e "$UH/inc.cfg"
check "host: no ssh config in the stow folder" test ! -e "$S/dots/ssh/stow.d/bot"
check "host: no gpg-agent.conf" test ! -e "$S/dots/gnupg/gpg-agent.conf"
for _d in "$UH" "$UH/.config" "$S/home"; do
	check "host: ${_d#"$S"/} not opened to other accounts" test "$(stat -c %a "$_d")" = 755
done
check "host: ~/.ssh not opened to other accounts" test "$(stat -c %a "$UH/.ssh")" != 777
check "host: the gnupg folder not opened to other accounts" test "$(stat -c %a "$S/dots/gnupg")" != 777
as_user git -C "$T/repo" status >"$T/host.log" 2>&1
is "$?" 0 "host: the user's git status runs"
as_user git -C "$T/repo" commit -q --allow-empty -m x >>"$T/host.log" 2>&1
is "$?" 0 "host: the user's git commit runs"
as_user timeout 20 git ls-remote ssh://git@example.invalid/x.git >>"$T/host.log" 2>&1
as_user2 timeout 20 git ls-remote ssh://git@example.invalid/x.git >>"$T/host.log" 2>&1
as_user2 git -C "$T/repo2" status >>"$T/host.log" 2>&1
is "$?" 0 "host: the second person's git status runs"
as_user2 git -C "$T/repo2" commit -q --allow-empty -m x >>"$T/host.log" 2>&1
is "$?" 0 "host: the second person's git commit runs"
as_user2 git clone -q "$T/repo2" "$UH2/clone" >>"$T/host.log" 2>&1
is "$?" 0 "host: the second person's git clone (with their templates) runs"
[ -n "$LESSKEY_BIN" ] && paged_log "$UH"
no_marker "host: nothing the bot planted ran (a paged git log too)" bot

done_testing
