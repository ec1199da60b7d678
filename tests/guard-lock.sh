#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-lock: rule LK, and the other ways a bot hands its content to the
# person's git: a git folder opened to other accounts (G3), rr-cache (D10),
# autostash (D11).
# LK:  git replaces its index (and refs, packed-refs, HEAD,
# config) by writing NAME.lock and renaming it by path onto NAME.  While the
# person's `git commit -a` waits in the editor, their git holds
# .git/index.lock on the host; a bot that writes a forged index into it,
# renames its own file onto it, or removes it and makes another, has the
# host rename the forgery into place, unchecked by X2.  Through the mount a
# lock file in a git folder that no mount made can be neither written,
# linked, renamed nor removed; the bot's own git, whose locks the mount
# made, works as ever.  Then the person's git on the host writes no hook.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src" M="$T/m" B="$T/bot"
mkdir -p "$S" "$M" "$B"

setup()
{
	git init -q "$S/app"
	cd "$S/app"
	echo a >a
	git add a
	git commit -qm a
}
host_setup host-setup setup

mount_or_stop "writable mount of a repository" fs_mount --log "$GUARD_LOG" "$S" "$M"
G="$M/app/.git"

# the bot's forged index: a hook entry whose blob is the payload
hook lk >"$B/payload"
BLOB=$(cd "$M/app" && git hash-object -w "$B/payload")
A=$(cd "$M/app" && git rev-parse HEAD:a)
python3 "$FORGE" index "$B/forged" 2 "100755:$BLOB:.git/hooks/pre-commit" "100644:$A:a" ||
	bail_out "cannot forge an index"

# the person's git holds index.lock on the host while the editor is open
echo more >>"$S/app/a"
(cd "$S/app" && GIT_EDITOR="sleep 4; echo person >" git commit -q -a) >"$T/person.log" 2>&1 &
person=$!
track_pid "$person"
for _i in $(seq 100); do [ -s "$S/app/.git/index.lock" ] && break; sleep 0.05; done
[ -s "$S/app/.git/index.lock" ] || bail_out "the person's git made no index.lock"

refused_by "the person's index.lock: opening it to write refused" LK \
	try open-trunc "$G/index.lock"
refused_by "... appending to it refused" LK \
	shell_result sh -c "cat '$B/forged' >>'$G/index.lock'"
cp "$B/forged" "$M/app/forged.tmp"
refused_by "... renaming a file onto it refused" LK \
	try rename "$M/app/forged.tmp" "$G/index.lock"
refused_by "... removing it (to make another) refused" LK \
	try unlink "$G/index.lock"
refused_by "... renaming it away refused" LK \
	try rename "$G/index.lock" "$G/moved"
refused_by "... a second name for it refused" LK \
	try link "$G/index.lock" "$G/alias"
rm -f "$M/app/forged.tmp"
wait "$person"
is "$?" 0 "the person's commit -a ends well"
[ -s "$T/person.log" ] && diag "$(cat "$T/person.log")"

# a ref lock the host holds: the same
: >"$S/app/.git/refs/heads/main.lock"
refused_by "a ref's lock made on the host: writing it refused" LK \
	try open-trunc "$G/refs/heads/main.lock"
rm -f "$S/app/.git/refs/heads/main.lock"
: >"$S/app/.git/sharedindex_Ab12Cd"
refused_by "a shared index's temporary made on the host (git renames it onto sharedindex.*): writing it refused" LK \
	try open-trunc "$G/sharedindex_Ab12Cd"
rm -f "$S/app/.git/sharedindex_Ab12Cd"

# a lock the bot made, removed on the host, and its inode given to the next file
set -C
: >"$G/MERGE_RR.lock" || not_ok "a lock made through the mount"
set +C
old_ino=$(stat -c %i "$S/app/.git/MERGE_RR.lock")
rm -f "$S/app/.git/MERGE_RR.lock"
# the mount's own reference to it goes when the kernel forgets the name
reused=$(reuse_ino "$S/app/.git" "$old_ino" host.lock)
if [ "$reused" = yes ]; then
	refused_by "a host lock on the inode number of one the bot made: writing it refused (birth time)" LK \
		try open-trunc "$G/host.lock"
	rm -f "$S/app/.git/host.lock"
else
	skip "this file system gave the freed inode number to none of 20000 new files"
fi

# the git folder opened to every account (another would swap .git/config): G3
refused_by "chmod o+w of a git folder refused" G3 \
	shell_result chmod o+w "$G"
refused_by "... of a folder in it refused" G3 \
	shell_result chmod o+w "$G/info"
refused_by "... of a file in it refused" G3 \
	shell_result chmod o+w "$G/description"
refused_by "... of the work tree's top refused" G3 \
	shell_result chmod o+w "$M/app"
is "$(shell_result chmod g+w "$G" "$G/info")" OK "chmod g+w of a git folder works (core.sharedRepository)"
lines=$(log_lines)
refusal_is "a default ACL on a git folder refused" G3 "$(python3 -c '
import errno, os, struct, sys
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in
      [(1, 7, 0xffffffff), (4, 7, 0xffffffff), (0x20, 7, 0xffffffff)])
try:
    os.setxattr(sys.argv[1], "system.posix_acl_default", acl)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno))' "$G")" "$lines" "$G"
is "$(stat -c %a "$S/app/.git" "$S/app")" "$(printf '775\n755')" "the host modes are as before but g+w"
# an access ACL of owner, group and others only is the chmod it stands for:
# sed -i and cp -p copy one from a file with no ACL
acl_min()
{
	acl_set_min "$1" system.posix_acl_access "$2"
}
# acl_set_min PATH XATTR UGO: set the ACL of owner, group and others only
# with the permission digits UGO; prints OK or the errno's name
acl_set_min()
{
	python3 - "$@" <<'PY' 2>&1
import errno, os, struct, sys
u, g, o = (int(c) for c in sys.argv[3])
acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, 0xffffffff)
                                      for t, p in [(1, u), (4, g), (0x20, o)])
try:
    os.setxattr(sys.argv[1], sys.argv[2], acl)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
PY
}
printf 'x\n' >"$G/COMMIT_EDITMSG"
is "$(acl_min "$G/COMMIT_EDITMSG" 644)" OK "an ACL that is mode 0644 on a file in a git folder: allowed"
is "$(stat -c %a "$S/app/.git/COMMIT_EDITMSG")" 644 "... its mode on the host"
lines=$(log_lines)
refusal_is "an ACL that is mode 0646 there refused" G3 "$(acl_min "$G/COMMIT_EDITMSG" 646)" \
	"$lines" "$G/COMMIT_EDITMSG"
lines=$(log_lines)
refusal_is "an ACL that is mode 0755 on a hook refused" D3 \
	"$(acl_min "$G/hooks/pre-commit.sample" 755)" "$lines" "$G/hooks/pre-commit.sample"
# a default ACL overrides the umask of what is made in the folder later: one
# giving every account write makes the git folder the person makes there
# (git init, a clone) writable by another account, its config included
acl_default()
{
	acl_set_min "$1" system.posix_acl_default "$2"
}
mkdir -p "$M/vendor" "$M/docs"
lines=$(log_lines)
refusal_is "a default ACL giving every account write, on a plain folder, refused" G3 \
	"$(acl_default "$M/vendor" 777)" "$lines" "$M/vendor"
is "$(acl_default "$M/docs" 755)" OK "a default ACL of mode 0755 on a plain folder: allowed"

mkdir "$G/rebase-merge"
printf 'pick 1\npick 2\n' >"$G/rebase-merge/git-rebase-todo"
is "$(cd "$G/rebase-merge" && sed -i 1d git-rebase-todo 2>&1; echo "status $?")" "status 0" \
	"sed -i of a rebase's todo: no warning (it copies the file's mode as an ACL)"
is "$(cat "$S/app/.git/rebase-merge/git-rebase-todo")" "pick 2" "... and the todo is edited"
rm -r "$G/rebase-merge"

# rr-cache (D10): a planted resolution would be written at the person's next conflict
refused_by "making rr-cache (it turns rerere on) refused" D10 \
	try mkdir "$G/rr-cache"
mkdir "$S/app/.git/rr-cache"
sleep 2.2 # the mount's negative entry for it times out (2 s)
refused_by "a resolution in the person's rr-cache refused" D10 \
	try mkdir "$G/rr-cache/0123abcd"
rmdir "$S/app/.git/rr-cache"

# autostash (D11): the person's next plain `git commit` applies the stash that
# MERGE_AUTOSTASH names (a stash of the bot's could add a hook); a rebase
# applies rebase-merge/autostash when it ends
refused_by "MERGE_AUTOSTASH cannot be made" D11 \
	try create "$G/MERGE_AUTOSTASH"
check "a rebase state folder may be made (the bot's own rebase)" "$TRYOP" mkdir "$G/rebase-merge"
refused_by "rebase-merge/autostash cannot be made" D11 \
	try create "$G/rebase-merge/autostash"
check "and the folder removed again" rmdir "$G/rebase-merge"

# the bot's own git: its locks are the mount's
check "git add and commit through the mount" sh -c \
	"cd '$M/app' && echo b >b && git add b && git commit -qm b"
check "a lock the bot made may be written and removed" sh -c \
	"set -C; : >'$G/index.lock' && echo x >>'$G/index.lock' && rm '$G/index.lock'"
check "gc and a branch through the mount" sh -c "cd '$M/app' && git branch x && git gc -q"

fs_umount "$M" || not_ok "umount $M"

(cd "$S/app" && git restore . && git commit -q --allow-empty -m host) >"$T/host.log" 2>&1
is "$?" 0 "host: git restore and commit succeed"
[ -s "$T/host.log" ] && diag "$(cat "$T/host.log")"
is "$(git -C "$S/app" ls-files | tr '\n' ' ')" "a b " "host: the index is the person's and the bot's commit"
is "$(ls "$S/app/.git/hooks" | grep -v '\.sample$' | tr '\n' ' ')" "" "host: no hook appeared"
no_marker "host: nothing the bot planted ran"
(umask 022 && git init -q "$S/vendor/lib")
is "$(stat -c %a "$S/vendor/lib/.git/config" "$S/vendor/lib/.git/hooks")" "$(printf '644\n755')" \
	"host: the person's git init in the folder: its config and hooks are not others' to write"

done_testing
