#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-index-chain: rule X2 where a hook's path crosses more than one tracked
# symbolic link, or is named by a repository around the work tree through
# more than its own .git/config (red team round 12).  A direct write of the
# hook is refused through the mount in every case; the hole was the index:
# an entry that makes `git restore .` write another target for a link on the
# way, or the bot's blob for a hook an enclosing repository's configuration
# names, and the person's next commit runs it.
#   s (01)  .git/hooks/pre-commit -> ../../tools/x.sh, tools -> lib ->
#           vendor/tools-1.2: the index retargets lib, or makes it a folder
#           holding the bot's x.sh (git replaces the link with the folder)
#   t (01b) core.hooksPath = tools, the same chain: the index retargets lib,
#           or makes it a folder holding the bot's pre-commit
#   u (02)  an enclosing repository's core.hooksPath given in an include
#           leads into an inner clone: the inner index gives that hook the
#           bot's blob
#   x (02c) the same with an absolute core.hooksPath in the include
#   v (02b) the same through the enclosing repository's config.worktree
#   w (03)  the same from an enclosing linked worktree (its .git a file)
# Each refusal is checked by its rule (X2); then plain git on the host
# restores the work trees and commits in each: the person's hooks run, the
# bot's never.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"
M="$T/m"
GUARD_LOG="$T/mount.log"
RAN="$T/RAN-person"
mkdir -p "$S" "$M"

# script FILE LABEL: the person's hook, leaving RAN-LABEL
script()
{
	printf '#!/bin/sh\ntouch %s\n' "$RAN-$2" >"$1" && chmod 755 "$1"
}

# inner DIR LABEL: a clone at DIR with a tracked hooks/pre-commit of the person's
inner()
{
	git init -q "$1"
	mkdir "$1/hooks"
	script "$1/hooks/pre-commit" "$2"
	git -C "$1" add -A
	git -C "$1" commit -qm inner
}

# outer NAME KEY VALUE FILE HOOKSPATH: a repository NAME whose config sets KEY
# to VALUE and whose git folder's FILE gives core.hooksPath = HOOKSPATH, the
# inner clone (ignored) at NAME/inner
outer()
{
	git init -q "$S/$1"
	git -C "$S/$1" config "$2" "$3"
	printf '[core]\n\thooksPath = %s\n' "$5" >"$S/$1/.git/$4"
	echo inner/ >"$S/$1/.gitignore"
	git -C "$S/$1" add .gitignore
	git -C "$S/$1" commit -qm "$1" --no-verify
	inner "$S/$1/inner" "$1"
}

setup()
{
	# s: a hook link through a chain of two tracked links
	git init -q "$S/s"
	mkdir -p "$S/s/vendor/tools-1.2"
	script "$S/s/vendor/tools-1.2/x.sh" s
	ln -s vendor/tools-1.2 "$S/s/lib"
	ln -s lib "$S/s/tools"
	git -C "$S/s" add -A
	git -C "$S/s" commit -qm s
	ln -s ../../tools/x.sh "$S/s/.git/hooks/pre-commit"
	# t: core.hooksPath through the same chain
	git init -q "$S/t"
	mkdir -p "$S/t/vendor/hooks-1.2"
	script "$S/t/vendor/hooks-1.2/pre-commit" t
	ln -s vendor/hooks-1.2 "$S/t/lib"
	ln -s lib "$S/t/tools"
	git -C "$S/t" add -A
	git -C "$S/t" commit -qm t
	git -C "$S/t" config core.hooksPath tools
	# u, x: the enclosing repository's hooksPath in an include (relative, absolute)
	outer u include.path hp.inc hp.inc inner/hooks
	outer x include.path hp.inc hp.inc "$S/x/inner/hooks"
	# v: the enclosing repository's hooksPath in config.worktree
	outer v extensions.worktreeConfig true config.worktree inner/hooks
	# w: an enclosing linked worktree; its main repository's hooksPath
	git init -q "$S/w"
	echo inner/ >"$S/w/.gitignore"
	git -C "$S/w" add .gitignore
	git -C "$S/w" commit -qm w
	git -C "$S/w" worktree add -q "$S/wt" -b wtb
	git -C "$S/w" config core.hooksPath inner/hooks
	inner "$S/wt/inner" w
	rm -f "$RAN"-*
}
host_setup host-setup setup

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"

payload "$T/pay" chain
# bot_folder DIR NAME: a folder of the bot's with its own NAME (the payload), staged
bot_folder()
{
	mkdir -p "$1/evil" && cp "$T/pay" "$1/evil/$2" && chmod 755 "$1/evil/$2" &&
		git -C "$1" add "evil/$2"
}

# ---- s, t: a link in the middle of the chain ------------------------------------
check "s: the bot stages a folder of its own with its x.sh" bot_folder "$M/s" x.sh
lnk=$(printf evil | git -C "$M/s" hash-object -w --stdin)
git_refused "s: the index retargets lib, the middle of the hook link's chain" X2 "$M/s" \
	git update-index --cacheinfo "120000,$lnk,lib"
is "$(git -C "$M/s" ls-files -s lib | cut -d' ' -f2)" "$(git -C "$S/s" rev-parse HEAD:lib)" \
	"s: ... lib's entry is as it was"
blob=$(git -C "$M/s" hash-object -w "$T/pay")
git_refused "s: the index makes lib a folder holding the bot's x.sh" X2 "$M/s" \
	git update-index --replace --add --cacheinfo "100755,$blob,lib/x.sh"
check "t: the bot stages a folder of its own with its pre-commit" bot_folder "$M/t" pre-commit
lnk=$(printf evil | git -C "$M/t" hash-object -w --stdin)
git_refused "t: the index retargets lib, the middle of core.hooksPath's chain" X2 "$M/t" \
	git update-index --cacheinfo "120000,$lnk,lib"
blob=$(git -C "$M/t" hash-object -w "$T/pay")
git_refused "t: the index makes lib a folder holding the bot's pre-commit" X2 "$M/t" \
	git update-index --replace --add --cacheinfo "100755,$blob,lib/pre-commit"
check "t: git add of another file works" sh -c "cd '$M/t' && echo t >t.txt && git add t.txt"

# ---- u, v, w: a repository around the work tree names the hook ---------------------
for r in u/inner x/inner v/inner wt/inner; do
	blob=$(git -C "$M/$r" hash-object -w "$T/pay")
	git_refused "$r: the inner index gives the hook an enclosing repository runs the bot's blob" \
		X2 "$M/$r" git update-index --cacheinfo "100755,$blob,hooks/pre-commit"
	check "$r: git add of another file in the inner clone works" \
		sh -c "cd '$M/$r' && echo x >x.txt && git add x.txt"
done

fs_umount "$M" || not_ok "umount $M"

# ---- the person's plain git on the host --------------------------------------------
for r in s t u/inner x/inner v/inner wt/inner; do
	check "host $r: git restore ." git -C "$S/$r" restore .
done
for rl in s:s t:t u:u x:x v:v wt:w; do
	host_commit "${rl%:*}" "$S/${rl%:*}"
	check "host: the person's hook ran in ${rl%:*}" test -e "$RAN-${rl#*:}"
done
no_marker "host: nothing the bot wrote ran" chain

done_testing
