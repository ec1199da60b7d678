#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-index-hooks: X2's content rule for tracked hooks, wherever git takes
# core.hooksPath from.  A team sets `git config --global core.hooksPath
# .githooks` so each repository's tracked hooks run; one repository reaches
# its hooks folder through a tracked symbolic link (.githooks -> tools/hooks).
# An index that gives a hook the bot's blob must not become the index:
# `git restore .` would write it and the next commit run it.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src" M="$T/m" B="$T/bot"
mkdir -p "$S" "$M" "$B"

setup()
{
	git config --global core.hooksPath .githooks
	git init -q "$S/g"
	cd "$S/g"
	mkdir .githooks
	printf '#!/bin/sh\ntrue\n' >.githooks/pre-commit
	chmod +x .githooks/pre-commit
	echo a >a
	git add -A
	git commit -qm g
	git init -q "$S/s"
	cd "$S/s"
	mkdir -p tools/hooks
	printf '#!/bin/sh\ntrue\n' >tools/hooks/pre-commit
	chmod +x tools/hooks/pre-commit
	ln -s tools/hooks .githooks
	echo a >a
	git add -A
	git commit -qm s
	# the hooks folder by an absolute path, and by one that climbs out and back
	for r in p u; do
		git init -q "$S/$r"
		cd "$S/$r"
		mkdir .myhooks
		printf '#!/bin/sh\ntrue\n' >.myhooks/pre-commit
		chmod +x .myhooks/pre-commit
		echo a >a
		git add -A
		git commit -qm "$r"
	done
	git -C "$S/p" config core.hooksPath "$S/p/.myhooks"
	git -C "$S/u" config core.hooksPath ../u/.myhooks
	# a linked worktree beside the root (git worktree add ../feat): its index
	# lies in the root, its files do not
	git -C "$S/g" worktree add -q "$T/out/feat" -b feat
	# and one whose folder the person removed (git keeps its admin folder until prune)
	git -C "$S/g" worktree add -q "$T/out/gone" -b gone
	rm -rf "$T/out/gone"
	# twenty tracked include targets in the work tree (the check once kept 16)
	git init -q "$S/n"
	cd "$S/n"
	mkdir inc
	for i in $(seq 1 20); do
		printf '[user]\n\tname = n%s\n' "$i" >"inc/$i.cfg"
		git config --add include.path "../inc/$i.cfg"
	done
	git add -A
	git commit -qm n
}
host_setup host-setup setup

mount_or_stop "writable mount, a global core.hooksPath" fs_mount --log "$GUARD_LOG" "$S" "$M"

hook gidx >"$B/payload"
# forged REPO OUT ENTRY: the index git wrote, with ENTRY (mode:sha:path) in place of its path
forged()
{
	local repo="$1" out="$2" e="$3" ents=() mode sha path
	while read -r mode sha _ path; do
		[ "$path" = "${e##*:}" ] || ents+=("$mode:$sha:$path")
	done < <(cd "$M/$repo" && git ls-files -s)
	python3 "$FORGE" index "$out" 2 $(printf '%s\n' "${ents[@]}" "$e" | sort -t: -k3)
}
for r in g s p u; do
	BLOB=$(cd "$M/$r" && git hash-object -w "$B/payload")
	forged "$r" "$B/same-$r" "$(cd "$M/$r" && git ls-files -s a | awk '{ print $1 ":" $2 ":" $4 }')"
	forge_is "$r: the index as git wrote it may be renamed in" ok \
		plant-rename "$M/$r/.git/index.lock" "$M/$r/.git/index" "$B/same-$r"
done
forged g "$B/evil-g" "100755:$(cd "$M/g" && git hash-object "$B/payload"):.githooks/pre-commit"
refused_by "a hook under the global core.hooksPath with the bot's blob: refused" X2 \
	python3 "$FORGE" plant-rename "$M/g/.git/index.lock" "$M/g/.git/index" "$B/evil-g"
rm -f "$M/g/.git/index.lock"
forged s "$B/evil-s" "100755:$(cd "$M/s" && git hash-object "$B/payload"):tools/hooks/pre-commit"
refused_by "a hook reached through a tracked symlink to the hooks folder: refused" X2 \
	python3 "$FORGE" plant-rename "$M/s/.git/index.lock" "$M/s/.git/index" "$B/evil-s"
rm -f "$M/s/.git/index.lock"
for r in p u; do
	forged "$r" "$B/evil-$r" "100755:$(cd "$M/$r" && git hash-object "$B/payload"):.myhooks/pre-commit"
	refused_by "$r: a hook under core.hooksPath $(git -C "$S/$r" config core.hooksPath | sed "s|$S|\$S|"): bot's blob refused" \
		X2 python3 "$FORGE" plant-rename "$M/$r/.git/index.lock" "$M/$r/.git/index" "$B/evil-$r"
	rm -f "$M/$r/.git/index.lock"
done
# the linked worktree outside the root: its index is compared with the files
# there, read where its gitdir says (another mount's root, or the person's)
fents=$(cd "$T/out/feat" && git ls-files -s | awk '{ print $1 ":" $2 ":" $4 }')
python3 "$FORGE" index "$B/same-feat" 2 $fents
forge_is "a linked worktree outside the root: its index as git wrote it may be renamed in" ok \
	plant-rename "$M/g/.git/worktrees/feat/index.lock" "$M/g/.git/worktrees/feat/index" "$B/same-feat"
refused_by "a linked worktree whose folder is gone: no index is renamed in" X2 \
	python3 "$FORGE" plant-rename "$M/g/.git/worktrees/gone/index.lock" "$M/g/.git/worktrees/gone/index" "$B/same-feat"
rm -f "$M/g/.git/worktrees/gone/index.lock"
python3 "$FORGE" index "$B/evil-feat" 2 $(printf '%s\n' $fents |
	sed "s|^[0-9]*:[0-9a-f]*:.githooks/pre-commit\$|100755:$BLOB:.githooks/pre-commit|")
refused_by "a linked worktree outside the root: an index with the bot's hook is refused" X2 \
	python3 "$FORGE" plant-rename "$M/g/.git/worktrees/feat/index.lock" "$M/g/.git/worktrees/feat/index" "$B/evil-feat"
rm -f "$M/g/.git/worktrees/feat/index.lock"
check "git add and commit through the mount still work" sh -c \
	"cd '$M/g' && echo b >b && git add b && git commit -qm b"

# n: the twentieth include target, staged with the bot's content (a config
# git reads: core.fsmonitor runs at the person's next git status)
payload "$T/nidx-payload" nidx
fsmonitor_cfg "$T/nidx-payload" >"$B/inc20"
nblob=$(cd "$M/n" && git hash-object -w "$B/inc20")
is "$(cd "$M/n" && git update-index --cacheinfo "100644,$nblob,inc/20.cfg" >/dev/null 2>&1 &&
	echo staged || echo refused)" refused "n: the 20th include target with the bot's content: refused"
is "$(cd "$M/n" && git update-index --cacheinfo "100644,$nblob,inc/1.cfg" >/dev/null 2>&1 &&
	echo staged || echo refused)" refused "n: ... and the first"
check "n: git add of another file works" sh -c "cd '$M/n' && echo b >b && git add b"

fs_umount "$M" || not_ok "umount $M"

for r in g s p u n; do
	(cd "$S/$r" && git restore . && git commit -q --allow-empty -m host) >"$T/host-$r.log" 2>&1
	is "$?" 0 "host $r: git restore and commit succeed"
done
(cd "$T/out/feat" && git restore . && git commit -q --allow-empty -m host) >"$T/host-feat.log" 2>&1
is "$?" 0 "host: git restore and commit in the linked worktree outside the root succeed"
no_marker "host: no hook the bot wrote ran"

done_testing
