#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-attack: every way a bot could plant code that git runs later, tried
# through a writable mount (the rule table: agentfs(1), WHAT IS PROTECTED).
# Each attempt must fail with EROFS, refused by the rule it attacks: the
# mount's --log file (one line per refusal, unlike its rate-limited log) must
# name that rule and path (refused_by: tests/guard-lib.sh).  Afterwards plain git runs on the SOURCE
# outside the mount (status, diff, log, commit --allow-empty, submodule
# status in every repository, worktree and submodule) and no PWNED-* marker
# may appear; the git folders must be byte-for-byte what the person left.
#
# The root is itself a repository (top), with a submodule (sub), a linked
# worktree (wt), includes and protected hard links; deep/nest is a nested
# repository with its own submodule (nsub) and worktree (nwt); hp has
# core.hooksPath; symrepo's .git is a symlink and filerepo's a gitdir file
# into store/.  plain/, race/ and bare/ are the bot's own playground.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"      # SOURCE (a repository itself)
M="$T/m"        # its mount point
P="$T/proot"    # a second root that is not a repository
MP="$T/mp"
PAY="$T/payload" # the attacker's scripts, outside the root (its /tmp)
EVIL="$T/outside-evil" # a git folder of the attacker's, outside the root
mkdir -p "$S" "$M" "$P" "$MP" "$PAY"

# ---- payloads (hook, payload: tests/guard-lib.sh) ---------------------------
# script NAME: hook NAME, saved as $PAY/NAME; prints its path
script()
{
	local f="$PAY/$(mark_name "$1")"
	payload "$f" "$1"
	echo "$f"
}
# cfg NAME: config text that runs code: fsmonitor, hooksPath, filter, pager
cfg()
{
	local h="$PAY/hooks-$(mark_name "$1")" n
	mkdir -p "$h"
	for n in pre-commit prepare-commit-msg commit-msg post-commit post-index-change \
		reference-transaction post-checkout; do
		payload "$h/$n" "$1-$n"
	done
	printf '[core]\n\tfsmonitor = %s\n\thooksPath = %s\n\tpager = %s\n' \
		"$(script "$1-fsmonitor")" "$h" "$(script "$1-pager")"
	printf '[filter "evil"]\n\tclean = %s\n\tsmudge = %s\n' \
		"$(script "$1-clean")" "$(script "$1-smudge")"
	printf '[diff]\n\texternal = %s\n' "$(script "$1-diffext")"
}

# ---- on the host, before mounting -------------------------------------------
setup()
{
	# the attacker's own git folder outside the root
	git init -q --bare "$EVIL"
	cfg evilgit >>"$EVIL/config"
	cp "$PAY"/hooks-evilgit/* "$EVIL/hooks/"

	make_upstream "$T/up"

	# mkrepo DIR SUB WT: a repository with a submodule SUB, a linked worktree
	# at ../WT (relative .git file), an armed harmless post-commit hook
	# and a disarmed (not executable) prepare-commit-msg
	mkrepo()
	{
		git init -q "$1"
		(
			cd "$1"
			echo one >a
			git add a
			git commit -qm init
			git -c protocol.file.allow=always submodule add -q "$T/up" "$2"
			git commit -qm "add submodule"
			git worktree add -q "$3" -b "branch-${3##*/}"
			printf '#!/bin/sh\n:\n' >.git/hooks/post-commit
			chmod +x .git/hooks/post-commit
			hook "disarmed-${1##*/}" >.git/hooks/prepare-commit-msg
			chmod -x .git/hooks/prepare-commit-msg
		)
	}
	mkrepo "$S" sub "$S/wt"
	echo "gitdir: ../.git/worktrees/wt" >"$S/wt/.git"
	mkdir -p "$S/deep"
	mkrepo "$S/deep/nest" nsub "$S/deep/nwt"
	echo "gitdir: ../nest/.git/worktrees/nwt" >"$S/deep/nwt/.git"
	mkdir -p "$S/.git/remotes"
	printf '[user]\n\tnote = included\n' >"$S/deep/nest/inc-nest.cfg"
	git -C "$S/deep/nest" config --add include.path ../inc-nest.cfg
	git -C "$S/deep/nest" config --add include.path ../missing-nest.cfg
	git -C "$S/deep/nest" config --add include.path ../missing-nest2.cfg

	# includes: one that exists, one that does not
	printf '[user]\n\tnote = included\n' >"$S/inc.cfg"
	git -C "$S" config --add include.path ../inc.cfg
	git -C "$S" config --add include.path ../missing.cfg

	# core.hooksPath inside the worktree
	git init -q "$S/hp"
	mkdir "$S/hp/hooks-dir"
	printf '#!/bin/sh\n:\n' >"$S/hp/hooks-dir/post-commit"
	chmod +x "$S/hp/hooks-dir/post-commit"
	git -C "$S/hp" config core.hooksPath hooks-dir
	git -C "$S/hp" commit -q --allow-empty -m init

	# a .git symlink and a .git file into store/
	mkdir -p "$S/store"
	git init -q "$S/symrepo"
	mv "$S/symrepo/.git" "$S/store/symrepo-git"
	ln -s ../store/symrepo-git "$S/symrepo/.git"
	git -C "$S/symrepo" commit -q --allow-empty -m init
	git init -q "$S/filerepo"
	mv "$S/filerepo/.git" "$S/store/filerepo-git"
	echo "gitdir: ../store/filerepo-git" >"$S/filerepo/.git"
	git -C "$S/filerepo" commit -q --allow-empty -m init

	# the bot's playground, and host-made hard links to protected files
	mkdir -p "$S/plain/dir" "$S/race/a" "$S/race/b" "$S/bare"
	echo data >"$S/plain/file"
	ln "$S/.git/hooks/post-commit" "$S/plain/hl-post-commit"
	ln "$S/.git/config" "$S/plain/hl-config"
	ln "$S/deep/nest/.git/hooks/post-commit" "$S/plain/hl-nest-post-commit"
}
host_setup "host setup" setup

# snapshot: everything about the source tree except the bot's playground and
# the .gitattributes it may write
PLAY='-path ./plain -o -path ./race -o -path ./bare -o -path ./newsub2 -o -path ./wt/wsub -o -path ./sub/inner -o -path ./deep/nest/nd'
snapshot()
{
	# shellcheck disable=SC2086
	(cd "$S" && find . \( $PLAY \) -prune -o -name .gitattributes -o \
		\( -type d -printf '%p d %m\n' \) -o -printf '%p %y %s %m %n %l\n' | sort &&
		find . \( $PLAY \) -prune -o -type f ! -name .gitattributes -exec sha256sum {} + | sort)
}
before=$(snapshot)

# ---- the attacks (refused_by, allow, try, gtry: tests/guard-lib.sh) ---------------

# fresh KIND: a new entry of the bot's in plain/ (made through the mount), so
# that no case depends on what an earlier one did; prints its path
echo 0 >"$T/fresh.n"
fresh()
{
	local n f
	n=$(($(cat "$T/fresh.n") + 1))
	echo "$n" >"$T/fresh.n"
	f="$M/plain/$1-$n"
	if [ "$1" = name ]; then
		echo "h-$n"
		return
	fi
	case "$1" in
	pay) "$GTRY" put "$f" "$(hook "planted-$n")" ;;
	cfg) "$GTRY" put "$f" "$(cfg "renamed-$n")" ;;
	dotgit) "$GTRY" put "$f" "gitdir: $EVIL" ;;
	dir) "$TRYOP" mkdir "$f" ;;
	link) "$TRYOP" symlink "$EVIL" "$f" ;;
	esac >/dev/null
	echo "$f"
}

mount_or_stop "writable mount of a repository with a submodule, worktree and nested repository" \
	fs_mount_fg --log "$GUARD_LOG" "$S" "$M" 2>"$T/mount.log"

HP="$(hook hl)"
# Host-made hard links, reached first through their ordinary names (fresh
# mount: nothing under .git has been looked up yet).  HL records the inode:
# the refusal names the protected file's own rule (as tests/guard-matrix.sh).
refused_by "hard link to top hooks/post-commit: write through plain/hl-post-commit" D3 \
	gtry put "$M/plain/hl-post-commit" "$HP"
refused_by "hard link to top hooks/post-commit: append through the other name" D3 \
	gtry append "$M/plain/hl-post-commit" "$HP"
refused_by "hard link to top hooks/post-commit: truncate through the other name" D3 \
	try truncate "$M/plain/hl-post-commit"
refused_by "hard link to top hooks/post-commit: chmod through the other name" D3 \
	try chmod "$M/plain/hl-post-commit"
refused_by "hard link to top .git/config: append through plain/hl-config" D1 \
	gtry append "$M/plain/hl-config" "$(cfg hl-config)"
refused_by "hard link to nest hooks/post-commit: write through the other name" D3 \
	gtry put "$M/plain/hl-nest-post-commit" "$HP"
refused_by "hard link to top hooks/post-commit: unlink of the hook itself" D3 \
	try unlink "$M/.git/hooks/post-commit"

# W2/W3 targets, before the git folder whose config names them is looked up
refused_by "fresh mount, root .git not looked up yet: include target inc.cfg: append" W3 \
	gtry append "$M/inc.cfg" "$(cfg inc-first)"
refused_by "fresh mount, deep/nest/.git not looked up yet: include target deep/nest/inc-nest.cfg: append" W3 \
	gtry append "$M/deep/nest/inc-nest.cfg" "$(cfg inc-nest-first)"
refused_by "fresh mount, deep/nest/.git not looked up yet: include target deep/nest/missing-nest.cfg: create" W3 \
	gtry create "$M/deep/nest/missing-nest.cfg" "$(cfg inc-nest-missing-first)"
refused_by "fresh mount, hp/.git not looked up yet: core.hooksPath hp/hooks-dir: create pre-commit" W2 \
	gtry create "$M/hp/hooks-dir/pre-commit" "$(hook hookspath-first)"
refused_by "fresh mount, hp/.git not looked up yet: core.hooksPath hp/hooks-dir: append to post-commit" W2 \
	gtry append "$M/hp/hooks-dir/post-commit" "touch $T/PWNED-hookspath-first-append"

# git folders reached only through a pointer, before the pointer is looked up
refused_by "store/symrepo-git (behind a .git symlink): create hooks/pre-commit first" D3 \
	gtry create "$M/store/symrepo-git/hooks/pre-commit" "$(hook symrepo)"
refused_by "store/filerepo-git (behind a .git file): append to config first" D1 \
	gtry append "$M/store/filerepo-git/config" "$(cfg filerepo)"

# the attacker's material inside the root (allowed: plain files)
allow "prepare plain/pay (a hook payload)" gtry put "$M/plain/pay" "$(hook planted)"
allow "prepare plain/evil.cfg (a config payload)" gtry put "$M/plain/evil.cfg" "$(cfg renamed-cfg)"
allow "prepare plain/evil-dotgit (a .git file payload)" gtry put "$M/plain/evil-dotgit" "gitdir: $EVIL"
allow "prepare plain/evil-dir (a folder)" try mkdir "$M/plain/evil-dir"
allow "prepare plain/evil-link (a symlink out of the root)" try symlink "$EVIL" "$M/plain/evil-link"
allow "write .gitattributes selecting the filter (top)" gtry put "$M/.gitattributes" "* filter=evil diff=evil"
allow "write .gitattributes selecting the filter (nest)" gtry put "$M/deep/nest/.gitattributes" "* filter=evil"

# hooks LABEL D: rule D3 on the hooks/ of git folder D (a mount path)
hooks_attacks()
{
	local l="$1" d="$2"
	refused_by "$l hooks/pre-commit: create with a payload" D3 gtry create "$d/hooks/pre-commit" "$(hook "$l-create")"
	refused_by "$l hooks/pre-commit: mknod" D3 try mknod "$d/hooks/pre-commit"
	refused_by "$l hooks/pre-commit: symlink at it" D3 try symlink "$(script "$l-symlink")" "$d/hooks/pre-commit"
	refused_by "$l hooks/pre-commit: hard link to it" D3 try link "$(fresh pay)" "$d/hooks/pre-commit"
	refused_by "$l hooks/pre-commit: rename onto it" D3 try rename "$(fresh pay)" "$d/hooks/pre-commit"
	refused_by "$l hooks/pre-commit: rename (noreplace) onto it" D3 try rename-noreplace "$(fresh pay)" "$d/hooks/pre-commit"
	refused_by "$l hooks/post-index-change: create" D3 gtry create "$d/hooks/post-index-change" "$(hook "$l-pic")"
	refused_by "$l hooks/: mkdir a folder inside" D3 try mkdir "$d/hooks/newdir"
	refused_by "$l hooks/pre-commit.sample: chmod +x" D3 gtry chmodx "$d/hooks/pre-commit.sample"
	refused_by "$l hooks/pre-commit.sample: write a payload" D3 gtry put "$d/hooks/pre-commit.sample" "$(hook "$l-sample")"
	refused_by "$l hooks/commit-msg.sample: rename to commit-msg" D3 try rename "$d/hooks/commit-msg.sample" "$d/hooks/commit-msg"
	refused_by "$l hooks/pre-push.sample: hard link as pre-commit" D3 try link "$d/hooks/pre-push.sample" "$d/hooks/pre-commit"
	refused_by "$l hooks/pre-push.sample: hard link out to plain/" D3 try link "$d/hooks/pre-push.sample" "$M/plain/hl-$(mark_name "$l")"
	refused_by "$l hooks/pre-push.sample: unlink" D3 try unlink "$d/hooks/pre-push.sample"
	refused_by "$l hooks/pre-push.sample: setxattr" D3 try setxattr "$d/hooks/pre-push.sample"
	refused_by "$l hooks/: rename the folder away" D3 try rename "$d/hooks" "$d/hooks.old"
	refused_by "$l hooks/: exchange with a plain folder" D3 try rename-exchange "$(fresh dir)" "$d/hooks"
	refused_by "$l hooks/: chmod the folder" D3 try chmod "$d/hooks"
}

# existing_hooks LABEL D: the person's armed and disarmed hooks in D/hooks
existing_hooks()
{
	local l="$1" d="$2" h="$2/hooks/post-commit"
	refused_by "$l hooks/post-commit (existing): write a payload" D3 gtry put "$h" "$(hook "$l-overwrite")"
	refused_by "$l hooks/post-commit (existing): append a payload" D3 gtry append "$h" "touch $T/PWNED-$l-append"
	refused_by "$l hooks/post-commit (existing): open O_TRUNC" D3 try open-trunc "$h"
	refused_by "$l hooks/post-commit (existing): truncate" D3 try truncate "$h"
	refused_by "$l hooks/post-commit (existing): fallocate" D3 try fallocate "$h"
	refused_by "$l hooks/post-commit (existing): chmod" D3 try chmod "$h"
	refused_by "$l hooks/post-commit (existing): chown" D3 try chown "$h"
	refused_by "$l hooks/post-commit (existing): unlink" D3 try unlink "$h"
	refused_by "$l hooks/post-commit (existing): rename onto it" D3 try rename "$(fresh pay)" "$h"
	refused_by "$l hooks/post-commit (existing): rename it away" D3 try rename "$h" "$M/plain/moved-$(mark_name "$l")"
	refused_by "$l hooks/post-commit (existing): exchange with plain/pay" D3 try rename-exchange "$(fresh pay)" "$h"
	refused_by "$l hooks/post-commit (existing): hard link out to plain/" D3 try link "$h" "$M/plain/hl2-$(mark_name "$l")"
	refused_by "$l hooks/prepare-commit-msg (disarmed): chmod +x" D3 gtry chmodx "$d/hooks/prepare-commit-msg"
}

# config_attacks LABEL D: rules D1, D2, D4, D7, D8 on git folder D
config_attacks()
{
	local l="$1" d="$2" c="$2/config"
	refused_by "$l config: write a payload (O_TRUNC)" D1 gtry put "$c" "$(cfg "$l-put")"
	refused_by "$l config: append a payload" D1 gtry append "$c" "$(cfg "$l-append")"
	refused_by "$l config: truncate" D1 try truncate "$c"
	refused_by "$l config: chmod" D1 try chmod "$c"
	refused_by "$l config: unlink" D1 try unlink "$c"
	refused_by "$l config: rename onto it" D1 try rename "$(fresh cfg)" "$c"
	refused_by "$l config: rename it away" D1 try rename "$c" "$M/plain/cfg-$(mark_name "$l")"
	refused_by "$l config: RENAME_EXCHANGE with a plain file" D1 try rename-exchange "$(fresh cfg)" "$c"
	refused_by "$l config: RENAME_EXCHANGE from its side" D1 try rename-exchange "$c" "$(fresh cfg)"
	refused_by "$l config: hard link out to plain/" D1 try link "$c" "$M/plain/cfg-hl-$(mark_name "$l")"
	refused_by "$l config: setxattr" D1 try setxattr "$c"
	refused_by "$l config.lock: create with a payload" D1 gtry create "$d/config.lock" "$(cfg "$l-lock")"
	refused_by "$l config.lock: rename a payload onto it" D1 try rename "$(fresh cfg)" "$d/config.lock"
	refused_by "$l config.worktree: create with a payload" D2 gtry create "$d/config.worktree" "$(cfg "$l-cw")"
	refused_by "$l config.worktree: symlink at it" D2 try symlink "$(fresh cfg)" "$d/config.worktree"
	refused_by "$l config.worktree: hard link to it" D2 try link "$(fresh cfg)" "$d/config.worktree"
	refused_by "$l config.worktree: rename onto it" D2 try rename "$(fresh cfg)" "$d/config.worktree"
	refused_by "$l commondir: create pointing outside" D4 gtry create "$d/commondir" "$EVIL"
	refused_by "$l commondir: symlink at it" D4 try symlink "$(fresh dotgit)" "$d/commondir"
	refused_by "$l commondir: rename onto it" D4 try rename "$(fresh dotgit)" "$d/commondir"
	refused_by "$l commondir.lock: create" D4 gtry create "$d/commondir.lock" "$EVIL"
	refused_by "$l objects/info/alternates: create" D7 gtry create "$d/objects/info/alternates" "$EVIL/objects"
	refused_by "$l objects/info/alternates: symlink at it" D7 try symlink "$(fresh dotgit)" "$d/objects/info/alternates"
	refused_by "$l objects/info/alternates: hard link to it" D7 try link "$(fresh dotgit)" "$d/objects/info/alternates"
	refused_by "$l objects/info/alternates: rename onto it" D7 try rename "$(fresh dotgit)" "$d/objects/info/alternates"
	refused_by "$l objects/info/http-alternates: create" D7 gtry create "$d/objects/info/http-alternates" "http://example.org/"
	refused_by "$l branches/x: create" D8 gtry create "$d/branches/x" "file://$EVIL"
	refused_by "$l branches/x: rename onto it" D8 try rename "$(fresh dotgit)" "$d/branches/x"
	if [ -d "$d/remotes" ]; then
		refused_by "$l remotes/x: create" D8 gtry create "$d/remotes/x" "URL: file://$EVIL"
		refused_by "$l remotes/x: symlink at it" D8 try symlink "$(fresh dotgit)" "$d/remotes/x"
	else
		refused_by "$l remotes/: mkdir" D8 try mkdir "$d/remotes"
		refused_by "$l remotes/: rename a folder onto it" D8 try rename "$(fresh dir)" "$d/remotes"
	fi
}

# worktree_admin LABEL A: rule D5 (and D1-D3) on the admin folder A = D/worktrees/<id>
worktree_admin()
{
	local l="$1" a="$2"
	refused_by "$l commondir: write pointing outside" D5 gtry put "$a/commondir" "$EVIL"
	refused_by "$l commondir: append" D5 gtry append "$a/commondir" "x"
	refused_by "$l commondir: truncate" D5 try truncate "$a/commondir"
	refused_by "$l commondir: unlink (its folder would become a git folder of its own)" D5 try unlink "$a/commondir"
	refused_by "$l commondir: rename onto it" D5 try rename "$(fresh dotgit)" "$a/commondir"
	refused_by "$l commondir: rename it away" D5 try rename "$a/commondir" "$M/plain/cd-$(mark_name "$l")"
	refused_by "$l commondir: exchange with a plain file" D5 try rename-exchange "$(fresh dotgit)" "$a/commondir"
	refused_by "$l gitdir: write another path" D5 gtry put "$a/gitdir" "$T/victim/.git"
	refused_by "$l gitdir: truncate" D5 try truncate "$a/gitdir"
	refused_by "$l gitdir: unlink" D5 try unlink "$a/gitdir"
	refused_by "$l gitdir: rename onto it" D5 try rename "$(fresh dotgit)" "$a/gitdir"
	refused_by "$l locked: create" D5 gtry create "$a/locked" "mine"
	refused_by "$l locked: symlink at it" D5 try symlink "$(fresh pay)" "$a/locked"
	refused_by "$l config: create (a config of its own)" D1 gtry create "$a/config" "$(cfg "$l-config")"
	refused_by "$l config: hard link to it" D1 try link "$(fresh cfg)" "$a/config"
	refused_by "$l config.worktree: create" D2 gtry create "$a/config.worktree" "$(cfg "$l-cw")"
	refused_by "$l config.worktree: rename onto it" D2 try rename "$(fresh cfg)" "$a/config.worktree"
	refused_by "$l hooks/: mkdir" D3 try mkdir "$a/hooks"
	refused_by "$l hooks/: symlink at it" D3 try symlink "$PAY/hooks-evilgit" "$a/hooks"
	refused_by "$l hooks/: rename a folder onto it" D3 try rename "$(fresh dir)" "$a/hooks"
	refused_by "$l: rename the admin folder" G3 try rename "$a" "$a-renamed"
}

# dotgit_file LABEL F: rule W1 on a .git file F
dotgit_file()
{
	local l="$1" f="$2"
	refused_by "$l .git file: write gitdir pointing outside" W1 gtry put "$f" "gitdir: $EVIL"
	refused_by "$l .git file: append" W1 gtry append "$f" "x"
	refused_by "$l .git file: truncate" W1 try truncate "$f"
	refused_by "$l .git file: unlink" W1 try unlink "$f"
	refused_by "$l .git file: rename onto it" W1 try rename "$(fresh dotgit)" "$f"
	refused_by "$l .git file: exchange with a plain file" W1 try rename-exchange "$(fresh dotgit)" "$f"
	refused_by "$l .git file: replace it by a symlink (rename onto)" W1 try rename "$(fresh link)" "$f"
}

# --- the top-level repository (the root itself)
hooks_attacks top "$M/.git"
existing_hooks top "$M/.git"
config_attacks top "$M/.git"
refused_by "top worktrees/: mkdir a new <id>" D5 try mkdir "$M/.git/worktrees/evil"
refused_by "top worktrees/: rename a folder onto a new <id>" D5 try rename "$(fresh dir)" "$M/.git/worktrees/evil2"
refused_by "top worktrees/: symlink a new <id>" D5 try symlink "$EVIL" "$M/.git/worktrees/evil3"
refused_by "top worktrees/: create a file" D5 gtry create "$M/.git/worktrees/evilfile" "x"
refused_by "top modules/: mkdir a new module" D6 try mkdir "$M/.git/modules/evil"
refused_by "top modules/: rename a folder onto a new module" D6 try rename "$(fresh dir)" "$M/.git/modules/evil2"
refused_by "top modules/: rename the submodule's git folder" D6 try rename "$M/.git/modules/sub" "$M/.git/modules/sub2"
refused_by "top modules/: rename modules/ away" D6 try rename "$M/.git/modules" "$M/.git/modules.old"
worktree_admin "top worktrees/wt" "$M/.git/worktrees/wt"
hooks_attacks "top modules/sub" "$M/.git/modules/sub"
config_attacks "top modules/sub" "$M/.git/modules/sub"
refused_by "top modules/sub/modules/x: mkdir" D6 try mkdir "$M/.git/modules/sub/modules"
# (a submodule's git folder has the rules of any git folder: guard-git.sh commits in it)
dotgit_file "top wt" "$M/wt/.git"
dotgit_file "top sub" "$M/sub/.git"

# --- the nested repository
hooks_attacks nest "$M/deep/nest/.git"
existing_hooks nest "$M/deep/nest/.git"
config_attacks nest "$M/deep/nest/.git"
refused_by "nest worktrees/: mkdir a new <id>" D5 try mkdir "$M/deep/nest/.git/worktrees/evil"
refused_by "nest modules/: mkdir a new module" D6 try mkdir "$M/deep/nest/.git/modules/evil"
worktree_admin "nest worktrees/nwt" "$M/deep/nest/.git/worktrees/nwt"
hooks_attacks "nest modules/nsub" "$M/deep/nest/.git/modules/nsub"
config_attacks "nest modules/nsub" "$M/deep/nest/.git/modules/nsub"
dotgit_file "nest nwt" "$M/deep/nwt/.git"
dotgit_file "nest nsub" "$M/deep/nest/nsub/.git"
dotgit_file "filerepo" "$M/filerepo/.git"

# --- .git symlink and the folder it names
refused_by "symrepo .git symlink: unlink" W1 try unlink "$M/symrepo/.git"
refused_by "symrepo .git symlink: rename a symlink out of the root onto it" W1 try rename "$(fresh link)" "$M/symrepo/.git"
refused_by "symrepo .git symlink: chown" W1 try chown "$M/symrepo/.git"
refused_by "store/symrepo-git: append to config" D1 gtry append "$M/store/symrepo-git/config" "$(cfg symrepo)"
refused_by "store/symrepo-git: rename the git folder" G3 try rename "$M/store/symrepo-git" "$M/store/other"
refused_by "store/filerepo-git: create hooks/pre-commit" D3 gtry create "$M/store/filerepo-git/hooks/pre-commit" "$(hook filerepo)"

# --- includes (W3) and core.hooksPath (W2)
refused_by "include target inc.cfg (exists): write a payload" W3 gtry put "$M/inc.cfg" "$(cfg inc)"
refused_by "include target inc.cfg (exists): append a payload" W3 gtry append "$M/inc.cfg" "$(cfg inc-append)"
refused_by "include target inc.cfg (exists): truncate" W3 try truncate "$M/inc.cfg"
refused_by "include target inc.cfg (exists): unlink" W3 try unlink "$M/inc.cfg"
refused_by "include target inc.cfg (exists): rename onto it" W3 try rename "$(fresh cfg)" "$M/inc.cfg"
refused_by "include target missing.cfg: create" W3 gtry create "$M/missing.cfg" "$(cfg inc-missing)"
refused_by "include target missing.cfg: symlink at it" W3 try symlink plain/evil.cfg "$M/missing.cfg"
refused_by "include target missing.cfg: hard link to it" W3 try link "$(fresh cfg)" "$M/missing.cfg"
refused_by "include target missing.cfg: rename onto it" W3 try rename "$(fresh cfg)" "$M/missing.cfg"
stat "$M/hp/.git" "$M/deep/nest/.git" >/dev/null
refused_by "hard link to top hooks/post-commit (after .git was looked up): append through the other name" D3 \
	gtry append "$M/plain/hl-post-commit" "touch $T/PWNED-hl-after"
refused_by "hard link to top .git/config (after .git was looked up): append through the other name" D1 \
	gtry append "$M/plain/hl-config" "$(cfg hl-config-after)"
H="$M/hp/hooks-dir"
refused_by "core.hooksPath hp/hooks-dir (after hp/.git was looked up): create commit-msg" W2 \
	gtry create "$H/commit-msg" "$(hook hookspath)"
refused_by "core.hooksPath hp/hooks-dir (after lookup): symlink at prepare-commit-msg" W2 \
	try symlink "$(script hookspath-sl)" "$H/prepare-commit-msg"
refused_by "core.hooksPath hp/hooks-dir (after lookup): rename onto post-index-change" W2 \
	try rename "$(fresh pay)" "$H/post-index-change"
refused_by "core.hooksPath hp/hooks-dir (after lookup): write the existing post-commit" W2 \
	gtry put "$H/post-commit" "$(hook hookspath-pc)"
refused_by "core.hooksPath hp/hooks-dir (after lookup): chmod the existing post-commit" W2 try chmod "$H/post-commit"
refused_by "core.hooksPath hp/hooks-dir (after lookup): rename the folder away" W2 try rename "$H" "$M/hp/hooks-old"
refused_by "core.hooksPath hp/hooks-dir (after lookup): exchange with a plain folder" W2 \
	try rename-exchange "$(fresh dir)" "$H"
refused_by "core.hooksPath (after lookup): rename hp (the folder above hooks-dir)" G3 try rename "$M/hp" "$M/hp-moved"
refused_by "include target deep/nest/inc-nest.cfg (after lookup): write" W3 gtry put "$M/deep/nest/inc-nest.cfg" "$(cfg inc-nest)"
refused_by "include target deep/nest/missing-nest2.cfg (after lookup): create" W3 \
	gtry create "$M/deep/nest/missing-nest2.cfg" "$(cfg inc-nest-missing)"
refused_by "include target deep/nest/missing-nest2.cfg (after lookup): symlink at it" W3 \
	try symlink ../../plain/file "$M/deep/nest/missing-nest2.cfg"

# --- new repositories (G1, G2)
refused_by "new .git folder in plain/" G1 try mkdir "$M/plain/.git"
refused_by "new .git file in plain/" G1 gtry create "$M/plain/.git" "gitdir: $EVIL"
refused_by "new .git symlink in plain/" G1 try symlink "$EVIL" "$M/plain/.git"
refused_by "new .GIT folder (case) in plain/" G1 try mkdir "$M/plain/.GIT"
refused_by "new .git by mknod" G1 try mknod "$M/plain/dir/.git"
refused_by "new .git by renaming a folder" G1 try rename "$(fresh dir)" "$M/plain/.git"
refused_by "new .git by renaming a file" G1 try rename "$(fresh dotgit)" "$M/plain/dir/.git"
refused_by "new .git by hard link" G1 try link "$(fresh dotgit)" "$M/plain/dir/.git"
allow "mkdir newsub2 in the top repository's worktree" try mkdir "$M/newsub2"
refused_by "new .git folder in newsub2 (would become a gitlink)" G1 try mkdir "$M/newsub2/.git"
allow "mkdir wsub in the linked worktree" try mkdir "$M/wt/wsub"
refused_by "new .git folder in the linked worktree's wsub" G1 try mkdir "$M/wt/wsub/.git"
allow "mkdir inner in the submodule's worktree" try mkdir "$M/sub/inner"
refused_by "new .git file in the submodule's inner/" G1 gtry create "$M/sub/inner/.git" "gitdir: $EVIL"
allow "mkdir nd in the nested repository's worktree" try mkdir "$M/deep/nest/nd"
refused_by "new .git symlink in the nested repository's nd/" G1 try symlink "$EVIL" "$M/deep/nest/nd/.git"
refused_by "new NAME.git folder" G2 try mkdir "$M/plain/evil.git"
allow "bare-shaped q1: mkdir q1" try mkdir "$M/bare/q1"
allow "bare-shaped q1: mkdir objects/" try mkdir "$M/bare/q1/objects"
allow "bare-shaped q1: mkdir refs/" try mkdir "$M/bare/q1/refs"
refused_by "bare-shaped q1 (objects/ + refs/): create HEAD" G2 gtry create "$M/bare/q1/HEAD" "ref: refs/heads/main"
refused_by "bare-shaped q1 (objects/ + refs/): rename a file onto HEAD" G2 try rename "$(fresh pay)" "$M/bare/q1/HEAD"
refused_by "bare-shaped q1 (objects/ + refs/): symlink HEAD" G2 try symlink "../../plain/pay" "$M/bare/q1/HEAD"
try mkdir "$M/bare/q2" >/dev/null
allow "bare-shaped q2: create HEAD" gtry create "$M/bare/q2/HEAD" "ref: refs/heads/main"
allow "bare-shaped q2: mkdir objects/" try mkdir "$M/bare/q2/objects"
refused_by "bare-shaped q2 (HEAD + objects/): mkdir refs" G2 try mkdir "$M/bare/q2/refs"
refused_by "bare-shaped q2 (HEAD + objects/): rename a folder onto refs" G2 try rename "$(fresh dir)" "$M/bare/q2/refs"
refused_by "bare-shaped q2 (HEAD + objects/): symlink refs" G2 try symlink ../q1/refs "$M/bare/q2/refs"
try mkdir "$M/bare/q3" >/dev/null
allow "bare-shaped q3: create HEAD" gtry create "$M/bare/q3/HEAD" "ref: refs/heads/main"
refused_by "bare-shaped q3 (HEAD): create commondir" G2 gtry create "$M/bare/q3/commondir" "$EVIL"
try mkdir "$M/bare/q4" >/dev/null
try mkdir "$M/bare/q4/objects" >/dev/null
allow "bare-shaped q4: symlink refs -> objects" try symlink objects "$M/bare/q4/refs"
refused_by "bare-shaped q4 (objects/ + refs symlink): create HEAD" G2 gtry create "$M/bare/q4/HEAD" "ref: refs/heads/main"
allow "bare-shaped q5: a folder with HEAD + objects/ + refs-x/" sh -c \
	"mkdir '$M/bare/q5' && '$GTRY' create '$M/bare/q5/HEAD' 'ref: refs/heads/main' >/dev/null &&
	 mkdir '$M/bare/q5/objects' '$M/bare/q5/refs-x' && echo OK"
refused_by "bare-shaped q5: rename refs-x to refs" G2 try rename "$M/bare/q5/refs-x" "$M/bare/q5/refs"

# --- moving git folders and the folders above them (G3)
refused_by "rename the root's .git" G3 try rename "$M/.git" "$M/git-old"
# a folder above protected entries (deep/nwt/.git: W1; deep/nest/inc-nest.cfg:
# W3) is refused as G3, whichever entry the walk meets first
refused_by "rename deep/ (above a nested .git)" G3 try rename "$M/deep" "$M/deep2"
refused_by "rename deep/ into plain/" G3 try rename "$M/deep" "$M/plain/deep"
refused_by "rename deep/nest (the nested repository)" G3 try rename "$M/deep/nest" "$M/nest-moved"
# a refused rename is logged from where to where, as a rename that succeeds
like "$(tail -n 1 "$GUARD_LOG")" \
	"refused rename of $M/deep/nest to $M/nest-moved: rule G3 " \
	"a refused rename names its source and its destination"
refused_by "rename deep/nest/.git" G3 try rename "$M/deep/nest/.git" "$M/deep/nest/.git-old"
refused_by "rename deep/nest/.git out into plain/" G3 try rename "$M/deep/nest/.git" "$M/plain/stolen-git"
# an rmdir that can only fail is answered so, with no decision and nothing
# logged (git's remove_path tries each folder above a file it removed)
lines=$(wc -l <"$GUARD_LOG")
is "$(try rmdir "$M/deep/nest/.git")" ENOTEMPTY "rmdir deep/nest/.git: not empty"
is "$(tail -n +"$((lines + 1))" "$GUARD_LOG")" "" "... and no refusal logged"
mkdir "$S/deep/nest/.git/hooks/empty"
refused_by "rmdir of an empty folder in a hooks folder" D3 try rmdir "$M/deep/nest/.git/hooks/empty"
rmdir "$S/deep/nest/.git/hooks/empty"
refused_by "exchange plain/evil-dir with deep/" G3 try rename-exchange "$(fresh dir)" "$M/deep"
refused_by "exchange plain/evil-dir with deep/nest/.git" G3 try rename-exchange "$(fresh dir)" "$M/deep/nest/.git"
refused_by "exchange plain/evil-dir with the root's .git" G3 try rename-exchange "$(fresh dir)" "$M/.git"
refused_by "rename store/ (holds git folders behind pointers)" G3 try rename "$M/store" "$M/store2"

# --- symlinks into git folders (X1)
refused_by "symlink h -> .git/hooks" X1 try symlink .git/hooks "$M/h"
refused_by "symlink h -> .git" X1 try symlink .git "$M/h"
refused_by "symlink plain/h -> ../.git/hooks" X1 try symlink ../.git/hooks "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> dir/../../.git/config" X1 try symlink dir/../../.git/config "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> ../deep/nest/.git/hooks" X1 try symlink ../deep/nest/.git/hooks "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> ../.git/modules/sub/hooks" X1 try symlink ../.git/modules/sub/hooks "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> ../.git/worktrees/wt" X1 try symlink ../.git/worktrees/wt "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> absolute SOURCE/.git/hooks" X1 try symlink "$S/.git/hooks" "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> ../store/symrepo-git/hooks (a git folder without a .git name)" X1 \
	try symlink ../store/symrepo-git/hooks "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> /..SOURCE/store/symrepo-git/hooks (\"/..\" is \"/\")" X1 \
	try symlink "/..$S/store/symrepo-git/hooks" "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> ../../src/store/symrepo-git/hooks (out of the root and back in)" X1 \
	try symlink ../../src/store/symrepo-git/hooks "$M/plain/$(fresh name)"
refused_by "symlink plain/h -> ../symrepo/.git/hooks (through a .git symlink)" X1 \
	try symlink ../symrepo/.git/hooks "$M/plain/$(fresh name)"
h=$(fresh name)
got=$(try symlink ../hp/hooks-dir "$M/plain/$h")
if [ "$got" = EROFS ]; then
	ok "symlink plain/h -> ../hp/hooks-dir (core.hooksPath): refused at creation (EROFS)"
else
	refused_at "symlink plain/h -> ../hp/hooks-dir (core.hooksPath, made: $got): create pre-merge-commit through it" \
		W2 "$M/hp/hooks-dir/pre-merge-commit" \
		gtry create "$M/plain/$h/pre-merge-commit" "$(hook hookspath-via-symlink)"
fi
refused_by "symlink plain/h -> ../.GIT/hooks (case)" X1 try symlink ../.GIT/hooks "$M/plain/$(fresh name)"

# --- X1 resolves a target as the kernel will: store/symrepo-git has no .git in its path
# x1_refuse DESC TARGET HOOK [FOLDER]: a symlink h to TARGET (a hooks folder) in FOLDER
# (plain/) is refused; had it been made, creating h/HOOK through it must fail too (and
# plain git on the host runs HOOK in symrepo at the end)
x1_refuse()
{
	local h="${4:-$M/plain}/$(fresh name)"
	refused_by "symlink $1" X1 try symlink "$2" "$h"
	if [ -L "$h" ]; then
		is "$(gtry create "$h/$3" "$(hook "x1-$3")")" EROFS \
			"symlink $1 (made): create hooks/$3 through it: EROFS"
	fi
}
allow "prepare plain/x1s -> ../store (a plain folder)" try symlink ../store "$M/plain/x1s"
x1_refuse "plain/h -> x1s/symrepo-git/hooks (through a symlink the bot made)" \
	x1s/symrepo-git/hooks pre-commit
x1_refuse "plain/h -> x1s/symrepo-git/ (a git folder through a symlink)" \
	x1s/symrepo-git/ hooks/commit-msg
allow "prepare plain/x1d -> ../deep (a plain folder)" try symlink ../deep "$M/plain/x1d"
x1_refuse "plain/h -> x1d/../store/symrepo-git/hooks (\"..\" where x1d leads)" \
	x1d/../store/symrepo-git/hooks post-commit
allow "symlink plain/h -> x1d/nest/a (through a symlink to a work tree file)" \
	try symlink x1d/nest/a "$M/plain/$(fresh name)"
ln -s "$S/store" "$T/x1host"
x1_refuse "plain/h -> a host symlink into the root's store/symrepo-git/hooks" \
	"$T/x1host/symrepo-git/hooks" reference-transaction
x1_refuse "plain/h -> nothere/../../store/symrepo-git/hooks (\"..\" after a missing name)" \
	nothere/../../store/symrepo-git/hooks post-index-change
# the walk does not enter another filesystem from outside the root (this mount among them:
# a worker asking its own mount could wait forever); only names count there
allow "symlink plain/h -> MOUNT/store/symrepo-git/hooks (answered, by name only)" \
	timeout 20 "$TRYOP" symlink "$M/store/symrepo-git/hooks" "$M/plain/$(fresh name)"
allow "prepare plain/x1m/e -> symrepo-git (dangling there)" \
	sh -c "\"$TRYOP\" mkdir \"$M/plain/x1m\" >/dev/null && \"$TRYOP\" symlink symrepo-git \"$M/plain/x1m/e\""
refused_by "rename plain/x1m/e into store/ (it would lead into store/symrepo-git)" X1 \
	try rename "$M/plain/x1m/e" "$M/store/x1e"
refused_by "hard-link plain/x1m/e into store/" X1 try link "$M/plain/x1m/e" "$M/store/x1e2"
allow "rename plain/x1m/e within its folder" try rename "$M/plain/x1m/e" "$M/plain/x1m/e2"
# a folder moved to another parent with a relative symlink leading out of it
allow "prepare plain/x1f/e -> ../symrepo-git (dangling there)" \
	sh -c "\"$TRYOP\" mkdir \"$M/plain/x1f\" >/dev/null && \"$TRYOP\" symlink ../symrepo-git \"$M/plain/x1f/e\""
refused_by "rename plain/x1f (e -> ../symrepo-git) into store/" X1 try rename "$M/plain/x1f" "$M/store/x1f"
allow "rename plain/x1f within plain/" try rename "$M/plain/x1f" "$M/plain/x1f2"
# the host moves a folder out of the root while the bot holds a descriptor of it
# (or swaps it with a symlink, tests/fs-race.sh): a symlink made relative to that
# descriptor is judged from the folder itself; one that climbs out of it still
# needs the folder's place in the root, and there is none
mkdir -p "$S/plain/x1mv"
lines=$(wc -l <"$GUARD_LOG")
got=$(python3 - "$M/plain/x1mv" "$S/plain/x1mv" "$T/x1moved" <<'PYEOF'
import errno, os, sys
d = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
os.rename(sys.argv[2], sys.argv[3])
out = []
for name, target in (("l1", "r0"), ("l2", "sub/r0"), ("l3", "../src/store/symrepo-git/hooks")):
    try:
        os.symlink(target, name, dir_fd=d)
        out.append("OK")
    except OSError as e:
        out.append(errno.errorcode[e.errno])
print(" ".join(out))
PYEOF
)
is "$got" "OK OK EROFS" \
	"a folder the host moved out of the root, through a descriptor: symlinks r0 and sub/r0 made, ../src/store/symrepo-git/hooks refused"
new=$(tail -n +"$((lines + 1))" "$GUARD_LOG")
if printf '%s\n' "$new" | refusal_named X1; then
	ok "a folder the host moved out of the root: the symlink is refused by rule X1"
else
	not_ok "a folder the host moved out of the root: the symlink is refused by rule X1"
	diag "logged: ${new:-nothing}"
fi
# 300 folders deep: the symlink's folder is judged where it is, not cut at 256 names
x1deep="$M/plain/x1deep$(printf '/d%.0s' $(seq 300))"
mkdir -p "$x1deep"
x1_refuse "plain/x1deep/d x300/h -> ../ x302 store/symrepo-git/hooks" \
	"$(printf '../%.0s' $(seq 302))store/symrepo-git/hooks" prepare-commit-msg "$x1deep"
allow "symlink plain/x1deep/d x300/h -> ../ x302 plain/file" \
	try symlink "$(printf '../%.0s' $(seq 302))plain/file" "$x1deep/$(fresh name)"

# --- a racer: folders move while another process writes hooks by changing paths
allow "race: symlink race/lp -> a" try symlink a "$M/race/lp"
"$GTRY" race-rename 3 "$M" >"$T/race-rename.out" 2>&1 &
rpid=$!
track_pid "$rpid"
"$GTRY" race-write 3 "$M" "$(hook race)" >"$T/race-write.out" 2>"$T/race-write.err"
wait "$rpid"
diag "race-rename: $(cat "$T/race-rename.out")" "race-write: $(cat "$T/race-write.out")"
is "$(awk '{ print $4 }' "$T/race-rename.out")" 0 "race: no forbidden folder move succeeded"
is "$(awk '{ print $4 }' "$T/race-write.out")" 0 "race: no hook planted while folders moved"
[ -s "$T/race-write.err" ] && diag "$(head -5 "$T/race-write.err")"
mkdir -p "$S/bare/race"
"$GTRY" race-bare 2 "$M/bare/race" >"$T/race-bare.out" 2>"$T/race-bare.err"
diag "race-bare: $(cat "$T/race-bare.out")"
is "$(awk '{ print $4 }' "$T/race-bare.out")" 0 \
	"race: mkdir refs/ and create HEAD at once never complete a bare-shaped folder (G2)"
[ -s "$T/race-bare.err" ] && diag "$(head -3 "$T/race-bare.err")"

# --- the refusals are logged with their rule
if grep -q "refused .* of /.git/hooks/pre-commit: rule D3" "$T/mount.log"; then
	ok "the refusals are logged with their rule (D3 hooks)"
else
	not_ok "the refusals are logged with their rule (D3 hooks)"
	diag "$(head -5 "$T/mount.log")"
fi

fs_umount "$M"
wait_until 10 sh -c "! kill -0 $FS_PID" || diag "the mount -f server did not exit"

# ---- a root that is not a repository: .git at the root itself ---------------
if fs_mount --log "$GUARD_LOG" "$P" "$MP"; then
	refused_by "plain root: new .git folder at the root" G1 try mkdir "$MP/.git"
	refused_by "plain root: new .git file at the root" G1 gtry create "$MP/.git" "gitdir: $EVIL"
	refused_by "plain root: new .git symlink at the root" G1 try symlink "$EVIL" "$MP/.git"
	try mkdir "$MP/objects" >/dev/null
	try mkdir "$MP/refs" >/dev/null
	refused_by "plain root: HEAD completing a bare-shaped root" G2 gtry create "$MP/HEAD" "ref: refs/heads/main"
	fs_umount "$MP"
else
	not_ok "mount a plain root"
fi

# ---- afterwards: the git folders are untouched and plain git runs nothing --
is_text "$(snapshot)" "$before" "nothing changed outside the bot's playground"
for bad in "$S"/plain/.git "$S"/plain/.GIT "$S"/plain/dir/.git "$S"/newsub2/.git "$S"/wt/wsub/.git "$S"/sub/inner/.git "$S"/deep/nest/nd/.git "$S"/plain/evil.git \
	"$S"/bare/q1/HEAD "$S"/bare/q2/refs "$S"/bare/q3/commondir "$S"/bare/q4/HEAD "$S"/bare/q5/refs \
	"$P"/.git "$P"/HEAD "$S"/race/*/.git "$S"/race/*/*/.git "$S"/h; do
	if [ -e "$bad" ] || [ -L "$bad" ]; then
		planted="${planted:-} ${bad#"$T"/}"
	fi
done
is "${planted:-}" "" "nothing planted: no new .git, bare-shaped folder or symlink into a git folder on the host"

host_git top "$S"
host_git "top worktree wt" "$S/wt"
host_git "top submodule sub" "$S/sub"
host_git nest "$S/deep/nest"
host_git "nest worktree nwt" "$S/deep/nwt"
host_git "nest submodule nsub" "$S/deep/nest/nsub"
host_git hp "$S/hp"
host_git symrepo "$S/symrepo"
host_git filerepo "$S/filerepo"
check "host: git add and commit a file in top (filters and hooks would run)" \
	sh -c "cd '$S' && echo x >>a && git add a && git commit -qm 'host edit'"

no_marker "no PWNED marker: nothing the bot planted ran"

done_testing
