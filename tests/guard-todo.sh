#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-todo: rule X6.  A rebase that stopped (at an edit or a conflict)
# keeps what is left to do in .git/rebase-merge/git-rebase-todo, and the
# next `git rebase --continue` works through it: an `exec CMD` line (or
# `x CMD`) runs CMD with the shell of whoever continues, the person, outside
# any sandbox.  Through the mount every way of planting such a line must
# fail with EROFS (a write in place, in one piece or appended, a rename onto
# it, a link, a folder renamed in, the bot's own `git rebase -x`), while a
# rebase without exec lines works as ever, editing its todo included.  Then
# plain git on the host continues the rebase and no marker may appear.  A
# control plants the same on the host directly and shows git would run it.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src"
M="$T/m"
B="$T/bot"
C="$T/control" # the control: planted on the host, no mount
mkdir -p "$S" "$M" "$B" "$C"

# stopped DIR: a repository of 4 commits on main and a rebase of the last 3
# stopped at an edit of the first of them
stopped_repo()
{
	git init -q "$1"
	cd "$1"
	for n in 1 2 3 4; do
		echo "$n" >"f$n"
		git add "f$n"
		git commit -qm "c$n"
	done
}
stop_at_edit()
{
	GIT_SEQUENCE_EDITOR="sed -i 1s/^pick/edit/" git rebase -q -i HEAD~3 >/dev/null 2>&1
}

setup()
{
	(stopped_repo "$S/rb")
	(stopped_repo "$S/ok")
	(stopped_repo "$S/x")
	(stopped_repo "$C/rb" && stop_at_edit)
}
host_setup "host-setup" setup

# ---- control: on the host, git runs an exec line planted in the todo --------
(
	cd "$C/rb" &&
		{ printf 'exec touch %s/PWNED-x6-control\n' "$MARKS"; cat .git/rebase-merge/git-rebase-todo; } \
			>"$T/todo.control" &&
		cp "$T/todo.control" .git/rebase-merge/git-rebase-todo && git rebase --continue
) >"$T/control.log" 2>&1
if [ -e "$MARKS/PWNED-x6-control" ]; then
	ok "control: an exec line planted on the host runs on git rebase --continue"
	rm -f "$MARKS/PWNED-x6-control"
else
	skip "control: this git did not run a planted exec line (the attacks below prove less)"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"

# ---- what a bot's rebase does without exec lines keeps working ---------------
(cd "$M/ok" && stop_at_edit)
check "rebase -i through the mount stops at the edit" test -f "$M/ok/.git/rebase-merge/git-rebase-todo"
T6="$M/ok/.git/rebase-merge/git-rebase-todo"
(cd "$M/ok" && GIT_SEQUENCE_EDITOR="sed -i -e 1s/^pick/reword/ -e '\$abreak'" git rebase --edit-todo) \
	>"$T/edit.log" 2>&1
is "$?" 0 "rebase --edit-todo through the mount rewrites the todo (a rename)"
check "the edited todo says reword" grep -q '^reword' "$T6"
check "the edited todo ends with a break" grep -q '^break' "$T6"
refused_by "todo: git's todo, renamed in, is not written in place" X6 \
	python3 "$FORGE" plant-append "$T6" "break"
(cd "$M/ok" && GIT_EDITOR=true git rebase --continue) >"$T/ok.log" 2>&1
check "rebase --continue through the mount stops at the break" test -d "$M/ok/.git/rebase-merge"
(cd "$M/ok" && git rebase --continue) >>"$T/ok.log" 2>&1
is "$?" 0 "rebase --continue through the mount finishes"
is "$(cd "$M/ok" && git log --format=%s | tr '\n' ' ')" "c4 c3 c2 c1 " "the rebased history is whole"

# ---- a bot's own rebase -x is refused, and says why -------------------------
git_refused "git rebase -x through the mount" X6 "$M/x" \
	git rebase -x "touch $MARKS/PWNED-x6-bot-rebase-x" HEAD~2
check "git says it could not write the todo" grep -q 'git-rebase-todo' "$T/git.out"
(cd "$M/x" && git rebase --abort) >/dev/null 2>&1
is "$(cd "$M/x" && git log --format=%s | tr '\n' ' ')" "c4 c3 c2 c1 " "the refused rebase -x left the history as it was"

# ---- a stopped rebase, through the mount: every way to plant an exec line ----
R="$M/rb"
(cd "$R" && stop_at_edit)
check "a second rebase through the mount stops at the edit" test -d "$R/.git/rebase-merge"
RM="$R/.git/rebase-merge"
cp "$RM/git-rebase-todo" "$B/clean"
{ printf 'exec touch %s/PWNED-x6-bot-1\n' "$MARKS"; cat "$B/clean"; } >"$B/exec"
{ cat "$B/clean"; printf '  \tx touch %s/PWNED-x6-bot-2\n' "$MARKS"; } >"$B/x-blank"
{ cat "$B/clean"; printf 'x\ttouch %s/PWNED-x6-bot-3\r\n' "$MARKS"; } >"$B/x-tab-cr"
{ cat "$B/clean"; printf 'pick 0000000 \0\nexec touch %s/PWNED-x6-bot-4\n' "$MARKS"; } >"$B/nul"

refused_by "todo: an exec line written in place refused" X6 \
	python3 "$FORGE" plant-write "$RM/git-rebase-todo" "$B/exec"
refused_by "todo: made anew with an exec line refused" X6 \
	python3 "$FORGE" plant-new "$RM/git-rebase-todo" "$B/exec"
refused_by "todo: an exec line appended in a second write refused" X6 \
	python3 "$FORGE" plant-append "$RM/git-rebase-todo" "exec touch $MARKS/PWNED-x6-bot-5"
refused_by "todo: 'x' after blanks, renamed onto it, refused" X6 \
	python3 "$FORGE" plant-rename "$RM/git-rebase-todo.lock" "$RM/git-rebase-todo" "$B/x-blank"
rm -f "$RM/git-rebase-todo.lock"
refused_by "todo: 'x' with a tab and CRLF, renamed onto it, refused" X6 \
	python3 "$FORGE" plant-rename "$RM/todo.tmp" "$RM/git-rebase-todo" "$B/x-tab-cr"
rm -f "$RM/todo.tmp"
refused_by "todo: an exec line after a NUL refused" X6 \
	python3 "$FORGE" plant-rename "$RM/todo.tmp" "$RM/git-rebase-todo" "$B/nul"
rm -f "$RM/todo.tmp"
cp "$B/exec" "$R/exec-in-root"
mv "$RM/git-rebase-todo" "$RM/todo.save"
refused_by "todo: a hard link onto it refused" X6 \
	python3 "$FORGE" plant-link "$R/exec-in-root" "$RM/git-rebase-todo"
mv "$RM/todo.save" "$RM/git-rebase-todo"
is "$?" 0 "todo: git's own todo renamed back in place"
cmp -s "$RM/git-rebase-todo" "$B/clean"
is "$?" 0 "the todo still holds what git wrote"
# a clean todo mapped shared and writable, its descriptor closed (RELEASE),
# renamed onto the todo, then written through the mapping: with kernel
# passthrough the mapping keeps the backing file open for writing after
# the release, which the handles' count does not see
refused_by "todo: a clean one still mapped for writing, renamed onto it, refused" X6 \
	python3 - "$RM/todo.map" "$RM/git-rebase-todo" "$B/clean" "$MARKS" <<'PY'
import ctypes, errno, os, sys, time
# libc's mmap: Python's mmap keeps a duplicate of the descriptor open
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
src, dst, clean, marks = sys.argv[1:5]
base = open(clean, "rb").read()
good = base + b"#" * 200 + b"\n"
bad = base + (b"exec touch %s/PWNED-x6-bot-mmap" % marks.encode()).ljust(200) + b"\n"
fd = os.open(src, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, good)
p = libc.mmap(None, len(good), 3, 1, fd, 0)  # PROT_READ|PROT_WRITE, MAP_SHARED
if p in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap failed")
os.close(fd)
time.sleep(0.2)
try:
    os.rename(src, dst)
    res = "OK"
except OSError as e:
    res = errno.errorcode.get(e.errno, str(e.errno))
ctypes.memmove(p, bad, len(bad))
libc.msync(p, len(bad), 4)  # MS_SYNC
libc.munmap(p, len(bad))
print(res)
PY
rm -f "$RM/todo.map"
cmp -s "$RM/git-rebase-todo" "$B/clean"
is "$?" 0 "... and the todo still holds what git wrote"

# a whole rebase-merge folder with an exec line, renamed in
mkdir -p "$M/ok/rm.tmp"
cp -a "$RM/." "$M/ok/rm.tmp/" 2>/dev/null
cp "$B/exec" "$M/ok/rm.tmp/git-rebase-todo"
# no other content-checked file (X7's counts, R1's head-name): the walk refuses
# a folder by the first protected entry readdir gives
rm -f "$M/ok/rm.tmp/msgnum" "$M/ok/rm.tmp/end" "$M/ok/rm.tmp/head-name" "$M/ok/rm.tmp/update-refs"
lines=$(log_lines)
refusal_is "rebase-merge: a folder holding an exec line renamed in refused" X6 "$(python3 -c "
import os
try:
    os.rename('$M/ok/rm.tmp', '$M/ok/.git/rebase-merge'); print('ok')
except OSError as e:
    print(e.errno == 30 and 'EROFS' or e)")" "$lines" "$M/ok/.git/rebase-merge"
rm -rf "$M/ok/rm.tmp"

fs_umount "$M" || not_ok "umount $M"

# ---- the person continues on the host ---------------------------------------
(cd "$S/rb" && git rebase --continue) >"$T/host-rb.log" 2>&1
is "$?" 0 "host: git rebase --continue finishes"
is "$(cd "$S/rb" && git log --format=%s | tr '\n' ' ')" "c4 c3 c2 c1 " "host: the history is whole"
check "host: the refused folder rename left no rebase-merge" test ! -e "$S/ok/.git/rebase-merge"
no_marker "host: no planted exec line ran" x6-bot

done_testing
