#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-reference: git itself is the reference for where hooks run and which
# files configure it.  A corpus of layouts (plain, bare, linked worktrees,
# --separate-git-dir, a .git symlink, submodules absorbed and not, include
# and includeIf of each kind, worktreeConfig, relative, absolute and aliased
# core.hooksPath, husky's .husky/_) is asked, on the host, with git's own
# commands: `rev-parse --git-path hooks` from every worktree top,
# `worktree list --porcelain`, `config --show-origin --list`.  Through a
# mount of the corpus (and through a mount of one linked worktree alone),
# planting a hook wherever git says hooks run, and writing any config file
# git says it reads, must fail with EROFS; then plain git on the host runs
# in every worktree and no planted hook may have run.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"
M="$T/m"
MW="$T/mw"
mkdir -p "$S" "$M" "$MW"
ln -s "$T" "$T/alias" # a host symlink: $T/alias/src is the source by another name

commit_in() { git -C "$1" commit -q --allow-empty -m "$2"; }

# ---- the corpus, made by git on the host ----------------------------------
corpus()
{
	make_upstream "$T/up"

	git init -q "$S/plain"
	commit_in "$S/plain" init
	git -C "$S/plain" worktree add -q ../plain-wt -b plain-wt
	git -C "$S/plain" submodule add -q "$T/up" subm
	git clone -q "$T/up" "$S/plain/subn"
	git -C "$S/plain" submodule add -q "$T/up" subn
	git -C "$S/plain" commit -qm submodules
	git -C "$S/plain/subm" config core.hooksPath subhooks
	# includes of every kind, one of them naming a hooksPath
	printf '[user]\n\tnote = inc\n' >"$S/inc-plain.cfg"
	printf '[user]\n\tnote = gitdir\n' >"$S/incif-gitdir.cfg"
	printf '[user]\n\tnote = gitdiri\n' >"$S/incif-gitdiri.cfg"
	printf '[core]\n\thooksPath = hooks-onbranch\n' >"$S/incif-onbranch.cfg"
	printf '[user]\n\tnote = hasconfig\n' >"$S/incif-hasconfig.cfg"
	git -C "$S/plain" remote add origin https://example.org/plain.git
	git -C "$S/plain" config --add include.path ../../inc-plain.cfg
	git -C "$S/plain" config --add "includeIf.gitdir:$S/plain/.path" ../../incif-gitdir.cfg
	git -C "$S/plain" config --add "includeIf.gitdir/i:$S/PLAIN/.path" ../../incif-gitdiri.cfg
	git -C "$S/plain" config --add "includeIf.onbranch:main.path" ../../incif-onbranch.cfg
	git -C "$S/plain" config --add \
		"includeIf.hasconfig:remote.*.url:https://example.org/**.path" ../../incif-hasconfig.cfg

	mkdir -p "$S/store"
	git init -q --separate-git-dir "$S/store/sep.git" "$S/sep"
	commit_in "$S/sep" init
	git -C "$S/sep" config core.hooksPath sep-hooks

	git init -q "$S/store/symreal"
	commit_in "$S/store/symreal" init
	mv "$S/store/symreal/.git" "$S/store/sym.git"
	mkdir -p "$S/symwt"
	ln -s ../store/sym.git "$S/symwt/.git"
	git -C "$S/symwt" config core.bare false
	git -C "$S/symwt" config core.hooksPath sym-hooks

	git init -q "$S/hp"
	commit_in "$S/hp" init
	git -C "$S/hp" config core.hooksPath hooks-dir
	git -C "$S/hp" worktree add -q ../hp-wt -b hp-wt

	git init -q "$S/wtc"
	commit_in "$S/wtc" init
	git -C "$S/wtc" config extensions.worktreeConfig true
	git -C "$S/wtc" worktree add -q ../wtc-wt -b wtc-wt
	git -C "$S/wtc-wt" config --worktree core.hooksPath wt-hooks

	git init -q "$S/hus"
	commit_in "$S/hus" init
	mkdir -p "$S/hus/.husky/_"
	printf '#!/bin/sh\n: husky\n' >"$S/hus/.husky/_/h"
	git -C "$S/hus" config core.hooksPath .husky/_

	git init -q "$S/abs"
	commit_in "$S/abs" init
	git -C "$S/abs" config core.hooksPath "$T/alias/src/abs/abs-hooks"

	git init -q --bare "$S/bare.git"
	git init -q --bare "$S/bare2.git"
	git -C "$S/bare2.git" config core.hooksPath hk
}
host_setup corpus corpus

TOPS="plain plain-wt plain/subm plain/subn sep symwt hp hp-wt wtc wtc-wt hus abs bare.git bare2.git"
RS=$(realpath "$S")

# hooks_of TOP: the absolute folder where git runs hooks for TOP, as git says
hooks_of()
{
	local h
	h=$(git -C "$S/$1" rev-parse --git-path hooks) || return 1
	case "$h" in /*) ;; *) h="$S/$1/$h" ;; esac
	realpath -m "$h"
}

# config_files TOP: every file `git config --list` reads for TOP, outside $HOME
config_files()
{
	git -C "$S/$1" config --show-origin --list --show-scope 2>/dev/null |
		awk -F'\t' '$1 == "local" || $1 == "worktree" { print $2 }' |
		sed -n 's/^file://p' | sort -u |
		while read -r f; do
			case "$f" in /*) ;; *) f="$S/$1/$f" ;; esac
			realpath -m "$f"
		done
}

# in_mount HOSTPATH ROOT MNT: HOSTPATH seen through the mount of ROOT at MNT
in_mount()
{
	case "$1" in
	"$2") echo "$3" ;;
	"$2"/*) echo "$3${1#"$2"}" ;;
	*) return 1 ;;
	esac
}

# plant FILE LABEL: write a hook at FILE; prints EROFS, OK or the error
plant()
{
	shell_result payload "$1" "$2"
}

# hook_rule TOP DIR, config_rule FILE: the rule that protects a hooks folder
# git names for TOP, or a config file it reads (agentfs(1)): wtc's config is
# unsafe, so its git folder is read-only as a whole (X3); a git folder's own
# hooks/ (D3) and config (D1); a core.hooksPath folder (W2) and an include
# target (W3) elsewhere
hook_rule()
{
	case "$1:$2" in
	wtc:*) echo X3 ;;
	*.git/hooks) echo D3 ;;
	*) echo W2 ;;
	esac
}
config_rule()
{
	case "$1" in
	*/wtc/.git/*) echo X3 ;;
	*.git/config | */.git/modules/*/config) echo D1 ;;
	*) echo W3 ;;
	esac
}

# the hooks folders must exist for a planted hook to be a threat
for top in $TOPS; do
	h=$(hooks_of "$top") || bail_out "git rev-parse --git-path hooks in $top"
	mkdir -p "$h"
done

# check_root ROOT MNT TOPS...: through MNT (a mount of ROOT), every hooks
# folder and config file git names for each top inside ROOT is protected
check_root()
{
	local root="$1" mnt="$2" top h mh f mf
	shift 2
	for top in "$@"; do
		h=$(hooks_of "$top")
		if mh=$(in_mount "$h" "$root" "$mnt"); then
			refused_by "${mnt##*/}: $top: hook in ${h#"$RS"/} (git rev-parse --git-path hooks)" \
				"$(hook_rule "$top" "$h")" plant "$mh/pre-commit" "$top-pre-commit"
			refused_by "${mnt##*/}: $top: reference-transaction hook in ${h#"$RS"/}" \
				"$(hook_rule "$top" "$h")" plant "$mh/reference-transaction" "$top-reftx"
		else
			diag "${mnt##*/}: $top: hooks at $h, outside the root"
		fi
		while read -r f; do
			[ -n "$f" ] || continue
			mf=$(in_mount "$f" "$root" "$mnt") || continue
			refused_by "${mnt##*/}: $top: config file ${f#"$RS"/} (git config --show-origin)" \
				"$(config_rule "$f")" shell_result append_text "$mf" "$(fsmonitor_cfg "$T/payload")"
		done < <(config_files "$top")
	done
}

# linked worktrees git lists: each top's .git file is a pointer (W1)
check_worktrees()
{
	local root="$1" mnt="$2" wt mw
	while read -r wt; do
		mw=$(in_mount "$(realpath -m "$wt")" "$root" "$mnt") || continue
		[ -f "$wt/.git" ] || continue
		refused_by "${mnt##*/}: .git file of worktree ${wt#"$RS"/} (git worktree list)" W1 \
			shell_result write_text "$mw/.git" "gitdir: $T"
	done < <(for top in plain hp wtc; do
		git -C "$S/$top" worktree list --porcelain | sed -n 's/^worktree //p'
	done)
}

if fs_mount --log "$GUARD_LOG" "$S" "$M"; then
	ok "mount the corpus"
	check_root "$RS" "$M" $TOPS
	check_worktrees "$RS" "$M"
	fs_umount "$M" || not_ok "unmount the corpus"
else
	not_ok "mount the corpus"
fi

# a mount of one linked worktree alone: its common git folder is outside it
if fs_mount --log "$GUARD_LOG" "$S/hp-wt" "$MW"; then
	ok "mount the linked worktree hp-wt alone"
	check_root "$RS/hp-wt" "$MW" hp-wt
	fs_umount "$MW" || not_ok "unmount hp-wt"
else
	not_ok "mount the linked worktree hp-wt alone"
fi

# ---- plain git on the host, in every worktree --------------------------------
# (a bare repository has no work tree to commit in: a commit and a ref
# update run its reference-transaction hook)
for top in $TOPS; do
	case "$top" in
	*.git)
		check "host: git commit-tree and update-ref in $top" sh -c \
			"t=\$(git -C '$S/$top' mktree </dev/null) &&
			 c=\$(git -C '$S/$top' commit-tree \$t -m host) &&
			 git -C '$S/$top' update-ref refs/heads/host \$c" ;;
	*) host_commit "$top" "$S/$top" ;;
	esac
done
no_marker "host git ran no planted hook in any worktree"

done_testing
