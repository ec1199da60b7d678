#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-hooklink: a hook that is a symbolic link to a tracked script, the
# common recipe (ln -s ../../scripts/pre-commit.sh .git/hooks/pre-commit),
# in .git/hooks and in a core.hooksPath folder.  git runs where the link
# leads, so that file is a hook: D3 keeps it read-only through the mount, and
# other files beside it stay writable.  The person's hook keeps running, and
# plain git on the host afterwards runs nothing the bot wrote.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src" M="$T/m"
mkdir -p "$S" "$M"
RAN="$T/RAN-person"

setup()
{
	for r in a b; do
		git init -q "$S/$r"
		mkdir -p "$S/$r/scripts"
		printf '#!/bin/sh\ntouch %s\n' "$RAN-$r" >"$S/$r/scripts/pre-commit.sh"
		chmod 755 "$S/$r/scripts/pre-commit.sh"
		echo notes >"$S/$r/scripts/notes.txt"
		git -C "$S/$r" add scripts
		git -C "$S/$r" commit -qm scripts
	done
	ln -s ../../scripts/pre-commit.sh "$S/a/.git/hooks/pre-commit"
	mkdir "$S/b/.githooks"
	ln -s ../scripts/pre-commit.sh "$S/b/.githooks/pre-commit"
	ln -s ../scripts/missing.sh "$S/b/.githooks/pre-push"
	git -C "$S/b" config core.hooksPath .githooks
	# c: tracked hooks the person turns on later, while the bot works
	git init -q "$S/c"
	mkdir "$S/c/.githooks"
	printf '#!/bin/sh\ntrue\n' >"$S/c/.githooks/pre-commit"
	chmod 755 "$S/c/.githooks/pre-commit"
	git -C "$S/c" add .githooks
	git -C "$S/c" commit -qm c
	# d: a hooks folder the configuration names before it exists
	git init -q "$S/d"
	git -C "$S/d" config core.hooksPath .githooks
	# e: a hook of the person's own, in .git/hooks, with a second name
	# outside the root (a backup): recorded by inode when it is read (HL)
	git init -q "$S/e"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-e" >"$S/e/.git/hooks/pre-commit"
	chmod 755 "$S/e/.git/hooks/pre-commit"
	ln "$S/e/.git/hooks/pre-commit" "$T/e-hook-backup"
	mkdir "$S/e/work"
	# f: a hook of the person's own with one name when it is read; the
	# person gives it a second one in the work tree later
	git init -q "$S/f"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-f" >"$S/f/.git/hooks/pre-commit"
	chmod 755 "$S/f/.git/hooks/pre-commit"
	printf '#!/bin/sh\ntrue\n' >"$S/f/.git/hooks/post-checkout"
	chmod 755 "$S/f/.git/hooks/post-checkout"
	mkdir "$S/f/work"
	# g: a tracked script the person turns into a hook later, the usual way
	git init -q "$S/g"
	mkdir "$S/g/scripts"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-g" >"$S/g/scripts/check.sh"
	chmod 755 "$S/g/scripts/check.sh"
	git -C "$S/g" add scripts
	git -C "$S/g" commit -qm scripts
	# h: husky's layout: the tracked hook sources .husky/_/husky.sh, which
	# is ignored and made by husky install, in place over what is there
	git init -q "$S/h"
	mkdir "$S/h/.husky"
	printf '#!/bin/sh\n. "$(dirname -- "$0")/_/husky.sh"\ntouch %s\n' "$RAN-h" >"$S/h/.husky/pre-commit"
	chmod 755 "$S/h/.husky/pre-commit"
	printf 'node_modules/\n' >"$S/h/.gitignore"
	git -C "$S/h" add -A
	git -C "$S/h" commit -qm husky
	# i: more include files than the watch had room for (24)
	git init -q "$S/i"
	mkdir "$S/i/scripts"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-i" >"$S/i/scripts/check.sh"
	chmod 755 "$S/i/scripts/check.sh"
	git -C "$S/i" add scripts
	git -C "$S/i" commit -qm scripts
	for k in $(seq 30); do git -C "$S/i" config --add include.path "../conf.d/c$k.inc"; done
	# j: hooks on; the hook sources what is in .githooks/lib
	git init -q "$S/j"
	mkdir -p "$S/j/.githooks/lib" "$S/j/scripts"
	printf '#!/bin/sh\nfor f in "$(dirname -- "$0")"/lib/*.sh; do . "$f"; done\ntouch %s\n' "$RAN-j" \
		>"$S/j/.githooks/pre-commit"
	chmod 755 "$S/j/.githooks/pre-commit"
	printf 'true\n' >"$S/j/.githooks/lib/keep.sh"
	printf 'true\n' >"$S/j/scripts/fmt.sh"
	git -C "$S/j" add -A
	git -C "$S/j" commit -qm j
	git -C "$S/j" config core.hooksPath .githooks
	# k: a hooks folder the bot fills before hooks are on, nine levels deep
	git init -q "$S/k"
	# l, m: symbolic links below the top of a future hooks folder
	git init -q "$S/l"
	git init -q "$S/m"
	# o: the hook link's path goes through a tracked symbolic link (tools -> lib)
	git init -q "$S/o"
	mkdir "$S/o/lib"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-o" >"$S/o/lib/x.sh"
	chmod 755 "$S/o/lib/x.sh"
	ln -s lib "$S/o/tools"
	echo o >"$S/o/README"
	git -C "$S/o" add -A
	git -C "$S/o" commit -qm o
	ln -s ../../tools/x.sh "$S/o/.git/hooks/pre-commit"
	# p: an absolute core.hooksPath through a tracked link (.githooks -> tools/hooks)
	git init -q "$S/p"
	mkdir -p "$S/p/tools/hooks"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-p" >"$S/p/tools/hooks/pre-commit"
	chmod 755 "$S/p/tools/hooks/pre-commit"
	ln -s tools/hooks "$S/p/.githooks"
	git -C "$S/p" add -A
	git -C "$S/p" commit -qm p
	git -C "$S/p" config core.hooksPath "$S/p/.githooks"
	# q: a hook link into a submodule that keeps its own git folder
	git init -q "$S/q"
	git init -q "$S/q/tools"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-q" >"$S/q/tools/lint.sh"
	chmod 755 "$S/q/tools/lint.sh"
	git -C "$S/q/tools" add -A
	git -C "$S/q/tools" commit -qm tools
	git -C "$S/q" submodule add -q ./tools tools
	git -C "$S/q" commit -qm q
	ln -s ../../tools/lint.sh "$S/q/.git/hooks/pre-commit"
	# r: core.hooksPath into a clone inside the repository (tools/hooks)
	git init -q "$S/r"
	git init -q "$S/r/tools"
	mkdir "$S/r/tools/hooks"
	printf '#!/bin/sh\ntouch %s\n' "$RAN-r" >"$S/r/tools/hooks/pre-commit"
	chmod 755 "$S/r/tools/hooks/pre-commit"
	git -C "$S/r/tools" add -A
	git -C "$S/r/tools" commit -qm tools
	git -C "$S/r" config core.hooksPath tools/hooks
	echo tools/ >"$S/r/.gitignore"
	git -C "$S/r" add .gitignore
	git -C "$S/r" commit -qm r
	rm -f "$RAN-r" # that commit ran the hook
}
host_setup host-setup setup

mount_or_stop "writable mount of two repositories whose hooks are symbolic links" fs_mount --log "$GUARD_LOG" "$S" "$M"

payload "$T/pay" hooklink
for r in a b; do
	refused_by "$r: the script a hook links to: writing it refused" D3 \
		shell_result cp "$T/pay" "$M/$r/scripts/pre-commit.sh"
	refused_by "$r: ... removing it refused" D3 \
		try unlink "$M/$r/scripts/pre-commit.sh"
	refused_by "$r: ... renaming another file onto it refused" D3 \
		try rename "$M/$r/scripts/notes.txt" "$M/$r/scripts/pre-commit.sh"
	is "$(shell_result append_text "$M/$r/scripts/notes.txt" more)" OK \
		"$r: another file beside it stays writable"
done
refused_by "b: the missing file a hook links to: making it refused" D3 \
	shell_result cp "$T/pay" "$M/b/scripts/missing.sh"
check "a: the person's commit through the mount runs their hook" \
	sh -c "cd '$M/a' && git commit -q --allow-empty -m m && test -e '$RAN-a'"

# c: the bot gives the future hook a second name, then the person turns hooks on
check "c: a second name for a file that is not a hook yet" ln "$M/c/.githooks/pre-commit" "$M/c/notes.txt"
git -C "$S/c" config core.hooksPath .githooks
sleep 0.6 # the guard looks at a host change to a config at most every 50 ms, on a decision
refused_by "c: once it is a hook, writing it through its other name refused (HL)" W2 \
	shell_result cp "$T/pay" "$M/c/notes.txt"
# a file with several names is logged by the name the mount learned first:
# only the rule is checked when the bot writes it by another
refused_at "c: ... and through its own name" W2 - \
	shell_result sh -c "printf x >>'$M/c/.githooks/pre-commit'"

# d: the person makes the hooks folder on the host while the bot works
mkdir "$S/d/.githooks"
refused_by "d: a hooks folder made on the host after the mount: a hook in it refused" W2 \
	shell_result cp "$T/pay" "$M/d/.githooks/pre-commit"

# e: the host gives that hook a third name where the bot's kernel remembers
# that nothing is (a negative entry, kept up to the 2 s timeout): an open
# with O_CREAT but no O_EXCL then reaches the existing file as a CREATE,
# and is decided as the open for writing it is (HL)
creat_open()
{
	python3 - "$@" <<'PY'
import errno, os, sys
flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if sys.argv[2] == "trunc" else 0)
try:
    fd = os.open(sys.argv[1], flags, 0o755)
    os.write(fd, open(sys.argv[3], "rb").read())
    os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
PY
}
cp "$S/e/.git/hooks/pre-commit" "$T/e-hook"
is "$(try stat "$M/e/work/x")" ENOENT "e: a name that is not there (the kernel remembers it)"
ln "$S/e/.git/hooks/pre-commit" "$S/e/work/x"
refused_by "e: the host links a hook there: O_CREAT without O_EXCL onto it refused" D3 \
	creat_open "$M/e/work/x" keep "$T/pay"
refused_by "e: ... and with O_TRUNC" D3 \
	creat_open "$M/e/work/x" trunc "$T/pay"
check "e: the hook is as the person wrote it" cmp -s "$T/e-hook" "$S/e/.git/hooks/pre-commit"
rm -f "$S/e/work/x"
is "$(creat_open "$M/e/work/y" keep "$T/pay")" OK "e: O_CREAT of a new name still works"

# f: the hook had one name when the repository was read: it is known by
# its inode all the same, so the name the person gives it later is refused
# (nothing looks the hook's own name up through the mount first: the entry
# the kernel holds for it would carry its class to the other name)
cp "$S/f/.git/hooks/pre-commit" "$T/f-hook"
ln "$S/f/.git/hooks/pre-commit" "$S/f/work/run.sh"
refused_at "f: a second name the host gives it later: appending through it refused (HL)" D3 "$M/f/work/run.sh" \
	shell_result sh -c "printf x >>'$M/f/work/run.sh'"
refused_by "f: ... writing it over refused" D3 \
	shell_result cp "$T/pay" "$M/f/work/run.sh"
check "f: the hook is as the person wrote it" cmp -s "$T/f-hook" "$S/f/.git/hooks/pre-commit"
# ... but a hook's number is only its other names' business: the person
# removes another hook, and a new file of the bot's with one name that gets
# its number stays writable
is "$(try stat "$M/f/work")" OK "f: the work folder is looked up (the repository is read)"
f_ino=$(stat -c %i "$S/f/.git/hooks/post-checkout")
rm "$S/f/.git/hooks/post-checkout"
if [ "$(reuse_ino "$S/f/work" "$f_ino" mine)" = yes ]; then
	is "$(shell_result sh -c "printf x >>'$M/f/work/mine'")" OK \
		"f: a removed hook's number, now a new file's: writing it works"
else
	skip "this file system gave the freed inode number to no new file"
fi
# ... and one whose hook was looked up through the mount: a new file that gets
# its number is the bot's to rename and remove. An unlink or rename is
# checked by name and number without a lookup, and takes the class of the
# server's entry with that number if it is the same file (a hard link): not
# one of a file gone (fusefs/inode.c inode_find_file; here the notifier drops
# the gone hook's entry at once, so this guards the behaviour, not the race
# with a late FORGET that made git gc's unlinks fail)
printf '#!/bin/sh\ntrue\n' >"$S/f/.git/hooks/pre-push"
chmod 755 "$S/f/.git/hooks/pre-push"
is "$(try stat "$M/f/.git/hooks/pre-push")" OK "f: a hook the person adds, looked up through the mount"
h_ino=$(stat -c %i "$S/f/.git/hooks/pre-push")
rm "$S/f/.git/hooks/pre-push"
if [ "$(reuse_ino "$S/f/work" "$h_ino" tmp_obj)" = yes ]; then
	is "$(try rename "$M/f/work/tmp_obj" "$M/f/work/tmp_obj2")" OK \
		"f: a new file with the number of a removed hook looked up before: renamed"
	is "$(try unlink "$M/f/work/tmp_obj2")" OK "f: ... and removed"
else
	skip "this file system gave the freed inode number to no new file"
	skip "... (and removed)"
fi

# g: the bot has worked in the repository; then the person links a hook to a
# tracked script on the host (the hooks folder changes: the repository is
# read again before the bot's next decision)
is "$(shell_result append_text "$M/g/scripts/check.sh" "# the bot's note")" OK \
	"g: the script is a plain file while no hook leads to it"
cp "$S/g/scripts/check.sh" "$T/g-script"
ln -s ../../scripts/check.sh "$S/g/.git/hooks/pre-commit"
sleep 0.1 # the guard looks at the repository's files at most every 50 ms
refused_by "g: a hook symlink the person adds on the host: the script it leads to is refused" D3 \
	shell_result cp "$T/pay" "$M/g/scripts/check.sh"
refused_by "g: ... appending too" D3 \
	shell_result append_text "$M/g/scripts/check.sh" more
check "g: the script is as it was when the hook was made" cmp -s "$T/g-script" "$S/g/scripts/check.sh"
# ... and in a core.hooksPath folder (b's): the file beside the hook script
ln -s ../scripts/notes.txt "$S/b/.githooks/post-commit"
sleep 0.1
refused_by "b: a second hook symlink the person adds to the hooksPath folder: its file is refused" D3 \
	shell_result append_text "$M/b/scripts/notes.txt" again

# h: before hooks are on, the bot makes husky.sh and gives it a second name
# where git does not look; husky install writes the real one over it in
# place and turns hooks on: every file of the hooks folder's tree is known
# by its inode, so the other name is refused too
mkdir -p "$M/h/.husky/_" "$M/h/node_modules/.cache"
printf '*\n' >"$M/h/.husky/_/.gitignore"
printf '# placeholder\n' >"$M/h/.husky/_/husky.sh"
check "h: the bot links husky.sh where git does not look" ln "$M/h/.husky/_/husky.sh" "$M/h/node_modules/.cache/h"
printf '#!/bin/sh\n# husky.sh, as husky install writes it\n' >"$S/h/.husky/_/husky.sh"
cp "$S/h/.husky/_/husky.sh" "$T/h-husky"
git -C "$S/h" config core.hooksPath .husky
sleep 0.1
refused_at "h: a file the hooks source, nested in the hooksPath folder: its other name refused (HL)" W2 "$M/h/node_modules/.cache/h" \
	shell_result sh -c "cat '$T/pay' >>'$M/h/node_modules/.cache/h'"
refused_at "h: ... and its own name" W2 - \
	shell_result append_text "$M/h/.husky/_/husky.sh" more
check "h: husky.sh is as husky wrote it" cmp -s "$T/h-husky" "$S/h/.husky/_/husky.sh"

# i: a configuration with 30 includes: the hooks folder is still watched
is "$(try stat "$M/i/scripts/check.sh")" OK "i: the repository with 30 includes is read"
ln -s ../../scripts/check.sh "$S/i/.git/hooks/pre-commit"
sleep 0.1
refused_by "i: a hook symlink added on the host: its target refused despite the includes" D3 \
	shell_result cp "$T/pay" "$M/i/scripts/check.sh"

# j: the bot gives a tracked script a second name; the person reviews it and
# moves it into a folder inside the hooks folder on the host: that folder is
# watched too, and the file is known by its inode before the bot's next write
check "j: the bot gives scripts/fmt.sh a second name" \
	sh -c "mkdir -p '$M/j/.cache' && ln '$M/j/scripts/fmt.sh' '$M/j/.cache/fmt.sh'"
git -C "$S/j" mv scripts/fmt.sh .githooks/lib/fmt.sh
sleep 0.1
refused_at "j: a file the person moves into a folder of the hooks folder: its other name refused (HL)" W2 "$M/j/.cache/fmt.sh" \
	shell_result sh -c "cat '$T/pay' >>'$M/j/.cache/fmt.sh'"

# k: nine folders deep in the hooks folder, linked before hooks are on
kd=.githooks/a/b/c/d/e/f/g/h/i
mkdir -p "$M/k/$kd" "$M/k/.cache"
printf '#!/bin/sh\n. "$(dirname -- "$0")/a/b/c/d/e/f/g/h/i/x.sh"\ntouch %s\n' "$RAN-k" >"$M/k/.githooks/pre-commit"
chmod 755 "$M/k/.githooks/pre-commit"
printf 'true\n' >"$M/k/$kd/x.sh"
check "k: the bot links a file nine folders down in a future hooks folder" ln "$M/k/$kd/x.sh" "$M/k/.cache/x.sh"
git -C "$S/k" config core.hooksPath .githooks
sleep 0.1
refused_at "k: once hooks are on, its other name is refused (HL, at any depth)" W2 "$M/k/.cache/x.sh" \
	shell_result sh -c "cat '$T/pay' >>'$M/k/.cache/x.sh'"

# l: the hook sources lib/x.sh, a symbolic link to a script of the work tree
mkdir -p "$M/l/.githooks/lib" "$M/l/scripts"
printf '#!/bin/sh\n. "$(dirname -- "$0")/lib/x.sh"\ntouch %s\n' "$RAN-l" >"$M/l/.githooks/pre-commit"
chmod 755 "$M/l/.githooks/pre-commit"
printf 'true\n' >"$M/l/scripts/x.sh"
ln -s ../../scripts/x.sh "$M/l/.githooks/lib/x.sh"
git -C "$S/l" config core.hooksPath .githooks
sleep 0.1
refused_at "l: where a link below the top of the hooks folder leads: refused (as D3 describes; the folder is core.hooksPath's)" W2 "$M/l/scripts/x.sh" \
	shell_result sh -c "cat '$T/pay' >>'$M/l/scripts/x.sh'"

# m: lib is a link to a folder of the work tree, a file in it has a second name
mkdir -p "$M/m/.githooks" "$M/m/tools/lib" "$M/m/.cache"
printf '#!/bin/sh\n. "$(dirname -- "$0")/lib/x.sh"\ntouch %s\n' "$RAN-m" >"$M/m/.githooks/pre-commit"
chmod 755 "$M/m/.githooks/pre-commit"
printf 'true\n' >"$M/m/tools/lib/x.sh"
ln -s ../tools/lib "$M/m/.githooks/lib"
ln "$M/m/tools/lib/x.sh" "$M/m/.cache/x.sh"
git -C "$S/m" config core.hooksPath .githooks
sleep 0.1
refused_at "m: a file in the folder a hook link leads to: its other name refused (HL)" D3 "$M/m/.cache/x.sh" \
	shell_result sh -c "cat '$T/pay' >>'$M/m/.cache/x.sh'"
refused_at "m: ... and its own" D3 - \
	shell_result append_text "$M/m/tools/lib/x.sh" more
printf 'true\n' >"$M/m/y.sh"
ln "$M/m/y.sh" "$M/m/.cache/y.sh"
mv "$S/m/y.sh" "$S/m/tools/lib/y.sh"
sleep 0.1
refused_at "m: a file the host moves into that folder later: its other name refused (HL)" D3 "$M/m/.cache/y.sh" \
	shell_result sh -c "cat '$T/pay' >>'$M/m/.cache/y.sh'"

# n: the index may not give the file a hook link leads to other content:
# the person's `git restore .` (what git status suggests) would write it
# (red team round 10, finding 01)
for r in a b; do
	blob=$(git -C "$M/$r" hash-object -w "$T/pay")
	before=$(git -C "$M/$r" ls-files -s scripts/pre-commit.sh)
	is "$(git -C "$M/$r" update-index --cacheinfo "100755,$blob,scripts/pre-commit.sh" \
		>/dev/null 2>&1 && echo staged || echo refused)" refused \
		"n/$r: staging the bot's blob for the script a hook links to: refused"
	is "$(git -C "$M/$r" ls-files -s scripts/pre-commit.sh)" "$before" "n/$r: ... the index is as it was"
	is "$(git -C "$M/$r" update-index --add --cacheinfo "100644,$blob,scripts/other.txt" >/dev/null 2>&1 &&
		echo staged || echo refused)" staged "n/$r: staging another file in that folder works"
	git -C "$M/$r" rm -q --cached scripts/other.txt
done
# ... while the person's own unstaged edit of that script stops no git add
printf '# the person is editing\n' >>"$S/a/scripts/pre-commit.sh"
is "$(git -C "$M/a" update-index --add --cacheinfo "100644,$blob,scripts/other.txt" >/dev/null 2>&1 &&
	echo staged || echo refused)" staged "n/a: the person edits the script: the bot's git add still works"
git -C "$M/a" rm -q --cached scripts/other.txt
is "$(git -C "$M/a" update-index --cacheinfo "100755,$blob,scripts/pre-commit.sh" >/dev/null 2>&1 &&
	echo staged || echo refused)" refused "n/a: ... and the script's own entry still may not change"

# o: the index may not make the folder on the hook link's way a folder with
# the bot's file in it (git restore . replaces the link tools -> lib with it)
# (red team round 11, finding 02)
blob=$(git -C "$M/o" hash-object -w "$T/pay")
is "$(git -C "$M/o" update-index --force-remove tools --add --cacheinfo "100755,$blob,tools/x.sh" \
	>/dev/null 2>&1 && echo staged || echo refused)" refused \
	"o: the bot's file where the hook link's path crosses a tracked link: refused"
is "$(git -C "$M/o" ls-files -s tools | cut -c1-6)" 120000 "o: ... the link's entry is as it was"
check "o: git add of another file works (the link's own entry, kept, passes)" \
	sh -c "cd '$M/o' && echo more >>README && git add README"
# p: the same for an absolute core.hooksPath (round 11, finding 02b)
blob=$(git -C "$M/p" hash-object -w "$T/pay")
is "$(git -C "$M/p" update-index --force-remove .githooks \
	--add --cacheinfo "100755,$blob,.githooks/pre-commit" >/dev/null 2>&1 &&
	echo staged || echo refused)" refused \
	"p: the bot's hook under an absolute core.hooksPath, by the link's path: refused"
# q: the submodule entry on the hook link's way stops no git add (finding 05)
check "q: git add in the repository whose hook leads into its submodule works" \
	sh -c "cd '$M/q' && echo q >q.txt && git add q.txt"
# ... and the submodule's own index may not give that script the bot's blob
# (finding 04); nor a clone's, where the outer core.hooksPath leads (r)
blob=$(git -C "$M/q/tools" hash-object -w "$T/pay")
is "$(git -C "$M/q/tools" update-index --cacheinfo "100755,$blob,lint.sh" >/dev/null 2>&1 &&
	echo staged || echo refused)" refused \
	"q: the submodule's index with the bot's blob for the outer hook's script: refused"
blob=$(git -C "$M/r/tools" hash-object -w "$T/pay")
is "$(git -C "$M/r/tools" update-index --cacheinfo "100755,$blob,hooks/pre-commit" >/dev/null 2>&1 &&
	echo staged || echo refused)" refused \
	"r: an inner clone's index with the bot's hook for the outer core.hooksPath: refused"
check "r: git add of another file in the inner clone works" \
	sh -c "cd '$M/r/tools' && echo r >r.txt && git add r.txt"

fs_umount "$M" || not_ok "umount $M"

for r in a b o p q/tools r/tools; do
	check "host $r: git restore . after the bot" git -C "$S/$r" restore .
done
for r in a b c d e f g h i j k l m o p q r; do
	host_commit "$r" "$S/$r"
done
check "host: the person's hook ran in b" test -e "$RAN-b"
check "host: the person's hook ran in e" test -e "$RAN-e"
check "host: the person's hook ran in f" test -e "$RAN-f"
check "host: the person's hook ran in g" test -e "$RAN-g"
check "host: the person's hook ran in h" test -e "$RAN-h"
check "host: the person's hook ran in i" test -e "$RAN-i"
check "host: the person's hook ran in j" test -e "$RAN-j"
check "host: the person's hook ran in k" test -e "$RAN-k"
check "host: the person's hook ran in l" test -e "$RAN-l"
check "host: the person's hook ran in m" test -e "$RAN-m"
check "host: the person's hook ran in o" test -e "$RAN-o"
check "host: the person's hook ran in p" test -e "$RAN-p"
check "host: the person's hook ran in q" test -e "$RAN-q"
check "host: the person's hook ran in r" test -e "$RAN-r"
no_marker "host: nothing the bot wrote ran"

done_testing
