#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-layout: what gitguard must know about a repository's layout, tried
# through writable mounts and checked afterwards with plain git on the host.
#   - a folder rename walks the folder without recursion and within bounds:
#     a 5,000-deep chain neither crashes the server (run with 1 MiB stacks)
#     nor hides a git folder at its bottom (G3).
#   - no symbolic link is made in, moved into or hard-linked into a git
#     folder (D9); one planted before the mount makes the repository
#     read-only and its target too.
#   - a relative core.hooksPath is guarded at every worktree top (W2):
#     linked worktrees, --separate-git-dir, a .git symlink, a submodule,
#     config.worktree, an include, and a root that is a linked worktree of
#     a repository outside it; husky hooks of the person's keep running.
#   - absolute hooksPath, include and gitdir paths written through a host
#     symlink alias of the source are found inside the root.
#   - a config, include target or include list changed on the host while
#     the mount is live applies to the bot's next operation.
#   - a root that is a folder of a worktree: the repository above guards its
#     hooks folder and includes inside the root.
#   - the person's global config: a relative hooksPath and includes count
#     for every repository, and a change while mounted too.
#   - a repository made on the host while mounted is read when its top is
#     first looked up.
# Each attack must fail with EROFS, refused by the rule it attacks (every
# mount has --log: refused_by, tests/guard-lib.sh), and no PWNED-* marker may
# appear when git runs on the SOURCE afterwards.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

# chain DIR DEPTH [LEAF]: a chain of DEPTH folders "d" below DIR, made one
# level at a time with mkdirat/openat (no path is longer than a name); with
# LEAF, a git-shaped folder (HEAD, objects/, refs/) named LEAF at the bottom
chain()
{
	python3 - "$1" "$2" "${3:-}" <<'EOF'
import os, sys
top, depth, leaf = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
for i in range(depth):
    os.mkdir("d", dir_fd=fd)
    nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.close(fd)
    fd = nfd
if leaf:
    os.mkdir(leaf, dir_fd=fd)
    g = os.open(leaf, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    os.mkdir("objects", dir_fd=g)
    os.mkdir("refs", dir_fd=g)
    h = os.open("HEAD", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=g)
    os.write(h, b"ref: refs/heads/main\n")
    os.close(h)
    os.close(g)
os.close(fd)
EOF
}

# bottom DIR: go down the chain of "d" below DIR by openat and make a file there
bottom()
{
	python3 - "$1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
while True:
    try:
        nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    except FileNotFoundError:
        break
    os.close(fd)
    fd = nfd
os.close(os.open("bottom", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
EOF
}

# ---- 1. the folder-rename walk: deep chains ---------------------------------
S1="$T/deep-src"
M1="$T/deep-m"
mkdir -p "$S1/plain" "$S1/plain2" "$S1/hidden" "$S1/near" "$M1"
git init -q "$S1"
git -C "$S1" commit -q --allow-empty -m init
# a git folder at the bottom of deep chains, made on the host (the bot may
# not make one): one beyond the walk's depth bound, one within it
chain "$S1/hidden" 5000 repo.git
chain "$S1/near" 1000 repo.git

# 1 MiB stacks: what crashed the recursive walk at 4,500 levels
FS_WRAP=(prlimit --stack=1048576 --)
if fs_mount_fg --log "$GUARD_LOG" "$S1" "$M1" 2>"$T/deep-mount.log"; then
	ok "mount with 1 MiB stacks"
	check "bot builds a 5000-deep chain through the mount" chain "$M1/plain" 5000
	got=$(try rename "$M1/plain/d" "$M1/plain/moved" 2>&1)
	case "$got" in
	OK | EROFS) ok "rename the top of a 5000-deep chain: done or refused ($got)" ;;
	*) not_ok "rename the top of a 5000-deep chain: done or refused"; diag "got: $got" ;;
	esac
	check "the server survived: the mount still answers" stat "$M1/plain"
	check "bot builds a 3000-deep chain" chain "$M1/plain2" 3000
	allow "rename the top of a 3000-deep chain (within the walk's bounds)" \
		try rename "$M1/plain2/d" "$M1/plain2/moved"
	check "a file made at the bottom of the moved chain" bottom "$M1/plain2/moved"
	if kill -0 "$FS_PID" 2>/dev/null; then
		ok "the server is still running"
	else
		not_ok "the server is still running"
		diag "$(tail -5 "$T/deep-mount.log")"
	fi
	refused_by "rename a folder with a git folder 5000 levels down" G3 \
		try rename "$M1/hidden/d" "$M1/hidden/moved"
	refused_by "rename a folder with a git folder 1000 levels down" G3 \
		try rename "$M1/near/d" "$M1/near/moved"
	check "the server survived the refusals" stat "$M1/hidden/d"
	if grep -q "refused rename of /near/d to /near/moved: rule G3 (git folder" "$T/deep-mount.log"; then
		ok "the git folder 1000 levels down is found (G3)"
	else
		not_ok "the git folder 1000 levels down is found (G3)"
	fi
	fs_umount "$M1"
	wait_until 10 sh -c "! kill -0 $FS_PID" || diag "the mount -f server did not exit"
else
	not_ok "mount with 1 MiB stacks"
	diag "$(cat "$T/deep-mount.log")"
fi
FS_WRAP=()
check "the hidden chain is where it was" test -d "$S1/hidden/d"

# ---- 2. symbolic links inside a git folder (D9) -----------------------------
S2="$T/sl-src"
M2="$T/sl-m"
OUTOBJ="$T/outside-objects" # where a planted objects/XX link would send objects
EVIL2="$T/evil-repo"        # a repository of the attacker's, outside the root
mkdir -p "$S2" "$M2" "$OUTOBJ"
git init -q --bare "$EVIL2"
setup_sl()
{
	git init -q "$S2"
	cd "$S2"
	echo one >a
	git add a
	git commit -qm init
	mkdir -p plain/linkdir
	# a repository whose objects/info a bot replaced before agentfs guarded it
	git init -q pre
	git -C pre commit -q --allow-empty -m init
	mkdir pre/botinfo
	rm -rf pre/.git/objects/info
	ln -s ../../botinfo pre/.git/objects/info
	# a person who prefers symbolic-link refs: git makes HEAD a symlink
	git init -q psr
	git -C psr config core.preferSymlinkRefs true
	git -C psr commit -q --allow-empty -m init
}
host_setup sl-setup setup_sl
ln -s "$OUTOBJ" "$S2/plain/linkdir/out"

if fs_mount --log "$GUARD_LOG" "$S2" "$M2"; then
	G="$M2/.git"
	allow "bot folder plain/botinfo" try mkdir "$M2/plain/botinfo"
	allow "a symlink in a plain folder" try symlink ../../.. "$M2/plain/up"
	allow "move objects/info aside" try rename "$G/objects/info" "$M2/plain/info-old"
	refused_by "symlink objects/info -> a bot folder" D9 \
		try symlink ../../plain/botinfo "$G/objects/info"
	refused_by "rename a symlink onto objects/info" D9 try rename "$M2/plain/up" "$G/objects/info"
	refused_by "hard link a symlink in as objects/info" D9 try link "$M2/plain/up" "$G/objects/info"
	allow "move objects/info back" try rename "$M2/plain/info-old" "$G/objects/info"
	made=0
	for x in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
		for y in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
			[ -e "$G/objects/$x$y" ] && continue
			[ "$(try symlink "$OUTOBJ" "$G/objects/$x$y")" = EROFS ] || made=$((made + 1))
		done
	done
	is "$made" 0 "symlink objects/XX -> a folder outside the root, for every missing XX: EROFS"
	# names git keeps there, so that D9 decides and not D12 (a name git never makes)
	refused_by "symlink objects/tmp_objdir-x (a quarantine git writes objects into) -> outside" D9 \
		try symlink "$OUTOBJ" "$G/objects/tmp_objdir-x"
	refused_by "symlink objects/pack/x -> a folder outside the root" D9 \
		try symlink "$OUTOBJ" "$G/objects/pack/x"
	refused_by "symlink refs/heads/x" D9 try symlink ../../../plain/up "$G/refs/heads/x"
	refused_by "symlink logs/x" D9 try symlink ../plain "$G/logs/x"
	refused_by "symlink ORIG_HEAD -> outside" D9 try symlink "$EVIL2/HEAD" "$G/ORIG_HEAD"
	refused_by "symlink objects/pack2 (a name git never makes)" D12 \
		try symlink "$OUTOBJ" "$G/objects/pack2"
	refused_by "rename a folder holding a symlink into objects/" D9 \
		try rename "$M2/plain/linkdir" "$G/objects/cd"
	allow "the same folder may move elsewhere" try rename "$M2/plain/linkdir" "$M2/plain/linkdir2"
	refused_by "pre-existing objects/info -> botinfo: write alternates in the bot folder" D9 \
		gtry create "$M2/pre/botinfo/alternates" "$EVIL2/objects"
	refused_at "pre-existing objects/info -> botinfo: write alternates through the link" D9 \
		"$M2/pre/botinfo/alternates" gtry create "$M2/pre/.git/objects/info/alternates" "$EVIL2/objects"
	refused_by "pre-existing objects/info -> botinfo: commit in that repository (read-only)" X3 \
		gtry create "$M2/pre/.git/objects/new-file" x
	check "preferSymlinkRefs: git checkout -b makes HEAD a symlink through the mount" \
		git -C "$M2/psr" checkout -q -b other
	check "HEAD is a symlink to refs/heads/other" test -L "$S2/psr/.git/HEAD"
	check "git commit through the mount in a guarded repository" \
		sh -c "cd '$M2' && echo two >>a && git commit -qam two"
	fs_umount "$M2"
else
	not_ok "mount $S2"
fi
check "host git commit in the repository" sh -c "cd '$S2' && echo three >>a && git commit -qam three"
check "host git status in pre" git -C "$S2/pre" status
is "$(ls -A "$OUTOBJ" 2>&1)" "" "no object was written outside the root"
is "$(ls -A "$S2/pre/botinfo" 2>&1)" "" "nothing written in the folder pre's objects/info points to"
no_marker "symlinks in git folders: no PWNED marker"

# ---- 3. a relative core.hooksPath at every worktree top (W2) ----------------
# githooks(5): relative to the top of the worktree where git runs.
S3="$T/hp-src"
M3="$T/hp-m"
OUT3="$T/hp-out"     # a main repository outside the root ...
OWT="$T/hp-out-wt"   # ... whose linked worktree is a root of its own
MW="$T/hp-mw"
mkdir -p "$S3" "$M3" "$MW"
# person_hook NAME: a harmless hook of the person's, leaving $T/RAN-NAME
person_hook()
{
	printf '#!/bin/sh\ntouch %s/RAN-%s\n' "$T" "$1"
}
setup_hp()
{
	cd "$S3"
	# hp: hooksPath=hooks-dir, a person's hook in it, committed so every
	# worktree has the folder; a linked worktree hp-wt
	git init -q hp
	mkdir hp/hooks-dir
	person_hook hp >hp/hooks-dir/post-commit
	chmod +x hp/hooks-dir/post-commit
	git -C hp add hooks-dir
	git -C hp commit -qm init
	git -C hp config core.hooksPath hooks-dir
	git -C hp worktree add -q ../hp-wt -b wtb
	# husky: hooksPath=.husky/_, the person's hook calls .husky/pre-commit
	git init -q husky
	mkdir -p husky/.husky/_
	printf '#!/bin/sh\n. "$(dirname "$0")/../pre-commit"\n' >husky/.husky/_/pre-commit
	person_hook husky >husky/.husky/pre-commit
	chmod +x husky/.husky/_/pre-commit husky/.husky/pre-commit
	git -C husky add .husky
	git -C husky commit -qm init --no-verify
	git -C husky config core.hooksPath .husky/_
	git -C husky worktree add -q ../husky-wt -b wtb
	# sep: git init --separate-git-dir
	mkdir store
	git init -q --separate-git-dir="$S3/store/sep-git" sep
	mkdir sep/hooks-dir
	git -C sep config core.hooksPath hooks-dir
	git -C sep commit -q --allow-empty -m init --no-verify
	# lnk: .git is a symlink into store/
	git init -q lnk
	mv lnk/.git store/lnk-git
	ln -s ../store/lnk-git lnk/.git
	mkdir lnk/hooks-dir
	git -C lnk config core.hooksPath hooks-dir
	git -C lnk commit -q --allow-empty -m init --no-verify
	# super: a submodule whose own config has hooksPath=hooks-dir
	git init -q up
	git -C up commit -q --allow-empty -m up
	git init -q super
	git -C super commit -q --allow-empty -m init
	git -C super -c protocol.file.allow=always submodule add -q "$S3/up" sub
	git -C super commit -qm sub
	git -C super/sub config core.hooksPath hooks-dir
	mkdir super/sub/hooks-dir
	# wtc: hooksPath in config.worktree (extensions.worktreeConfig)
	git init -q wtc
	git -C wtc config extensions.worktreeConfig true
	git -C wtc config --worktree core.hooksPath wthooks
	mkdir wtc/wthooks
	# inc: hooksPath in an included file
	git init -q inc
	printf '[core]\n\thooksPath = inchooks\n' >inc/inc.cfg
	git -C inc config include.path ../inc.cfg
	mkdir inc/inchooks
	# a main repository outside the root, its linked worktree the root
	git init -q "$OUT3"
	mkdir "$OUT3/hooks-dir"
	person_hook out >"$OUT3/hooks-dir/post-commit"
	chmod +x "$OUT3/hooks-dir/post-commit"
	git -C "$OUT3" add hooks-dir
	git -C "$OUT3" commit -qm init
	git -C "$OUT3" config core.hooksPath hooks-dir
	git -C "$OUT3" worktree add -q "$OWT" -b wtb
}
host_setup hp-setup setup_hp

if fs_mount --log "$GUARD_LOG" "$S3" "$M3"; then
	for w in hp hp-wt husky husky-wt sep lnk super/sub wtc inc; do
		case "$w" in
		husky*) h=.husky/_ ;;
		wtc) h=wthooks ;;
		inc) h=inchooks ;;
		*) h=hooks-dir ;;
		esac
		refused_by "$w: create $h/post-checkout" W2 gtry create "$M3/$w/$h/post-checkout" "$(hook "$w-post-checkout")"
		refused_by "$w: rename a payload onto $h/commit-msg" W2 \
			try rename "$(gtry put "$M3/pay-$(echo "$w" | tr / -)" "$(hook "$w-msg")" >/dev/null &&
				echo "$M3/pay-$(echo "$w" | tr / -)")" "$M3/$w/$h/commit-msg"
		refused_by "$w: rename $h away" W2 try rename "$M3/$w/$h" "$M3/$w/hooks-old"
	done
	refused_by "hp-wt: write the person's post-commit" W2 gtry append "$M3/hp-wt/hooks-dir/post-commit" \
		"touch $T/PWNED-hp-wt-append"
	check "husky: commit through the mount runs the person's husky hook" \
		sh -c "cd '$M3/husky' && echo x >f && git add f && git commit -qm x"
	check "husky: the person's hook ran" test -e "$T/RAN-husky"
	check "hp-wt: commit through the mount in the linked worktree" \
		sh -c "cd '$M3/hp-wt' && echo x >f && git add f && git commit -qm x"
	fs_umount "$M3"
else
	not_ok "mount $S3"
fi
if fs_mount --log "$GUARD_LOG" "$OWT" "$MW"; then
	refused_by "root = a linked worktree of an outside repository: create hooks-dir/pre-commit" W2 \
		gtry create "$MW/hooks-dir/pre-commit" "$(hook owt-pre-commit)"
	refused_by "root = a linked worktree: write the person's post-commit" W2 \
		gtry append "$MW/hooks-dir/post-commit" "touch $T/PWNED-owt-append"
	fs_umount "$MW"
else
	not_ok "mount the linked worktree $OWT"
fi
for w in hp hp-wt husky husky-wt sep lnk super super/sub inc; do
	host_commit "$w" "$S3/$w"
done
check "host: git commit in the outside repository's worktree" \
	git -C "$OWT" commit -q --allow-empty -m "host after attacks"
no_marker "hooksPath at every worktree top: no PWNED marker"

# ---- 4. absolute config paths through a host alias of the source -------------
# $T/alias -> data, and the source is $T/data/src: git on the host resolves
# $T/alias/src/... into the source.
S4="$T/data/src"
M4="$T/alias-m"
mkdir -p "$S4" "$M4"
ln -s data "$T/alias"
A4="$T/alias/src"
setup_abs()
{
	cd "$S4"
	git init -q abs
	git -C abs commit -q --allow-empty -m init
	mkdir abs/hooks-abs
	git -C abs config core.hooksPath "$A4/abs/hooks-abs"
	git -C abs config include.path "$A4/abs/inc-abs.cfg"
	git -C abs config includeIf.gitdir:/.path "$A4/abs/incif-abs.cfg"
	# a linked worktree whose .git file and gitdir name the alias path,
	# with a relative hooksPath in the main repository
	git init -q rel
	git -C rel commit -q --allow-empty -m init
	git -C rel config core.hooksPath hooks-rel
	git -C rel worktree add -q ../relwt -b wtb
	mkdir relwt/hooks-rel
	echo "gitdir: $A4/rel/.git/worktrees/relwt" >relwt/.git
	echo "$A4/relwt/.git" >rel/.git/worktrees/relwt/gitdir
	git -C relwt status >/dev/null
}
host_setup abs-setup setup_abs

if fs_mount --log "$GUARD_LOG" "$S4" "$M4"; then
	refused_by "absolute hooksPath through a host alias: create pre-commit" W2 \
		gtry create "$M4/abs/hooks-abs/pre-commit" "$(hook abs-pre-commit)"
	refused_by "absolute hooksPath through a host alias: rename the folder away" W2 \
		try rename "$M4/abs/hooks-abs" "$M4/abs/hooks-old"
	refused_by "absolute include.path through a host alias: create the missing target" W3 \
		gtry create "$M4/abs/inc-abs.cfg" "$(fsmonitor_cfg "$T/payload-abs")"
	refused_by "absolute includeIf path through a host alias: create the missing target" W3 \
		gtry create "$M4/abs/incif-abs.cfg" "$(fsmonitor_cfg "$T/payload-abs")"
	refused_by "gitdir through a host alias: relative hooksPath at that worktree's top" W2 \
		gtry create "$M4/relwt/hooks-rel/pre-commit" "$(hook relwt-pre-commit)"
	fs_umount "$M4"
else
	not_ok "mount $S4"
fi
payload "$T/payload-abs" abs-fsmonitor
host_commit "abs" "$S4/abs"
host_commit "relwt" "$S4/relwt"
no_marker "absolute paths through a host alias: no PWNED marker"

# ---- 5. a config changed on the host while the mount is live ----------------
S5="$T/live-src"
M5="$T/live-m"
mkdir -p "$S5" "$M5"
setup_live()
{
	git init -q "$S5"
	git -C "$S5" commit -q --allow-empty -m init
	printf '[user]\n\tnote = inc\n' >"$S5/inc.cfg"
	git -C "$S5" config include.path ../inc.cfg
	git -C "$S5" worktree add -q "$S5/lwt" -b wtb
}
host_setup live-setup setup_live

if fs_mount --log "$GUARD_LOG" "$S5" "$M5"; then
	allow "bot makes a plain folder already-there/ before any hooksPath names it" \
		try mkdir "$M5/already-there"
	allow "and a plain folder lwt/already-there/ in the linked worktree" \
		try mkdir "$M5/lwt/already-there"
	git -C "$S5" config core.hooksPath newhooks
	sleep 0.2
	refused_by "host set core.hooksPath=newhooks while mounted: bot makes newhooks/" W2 \
		try mkdir "$M5/newhooks"
	refused_by "host set core.hooksPath=newhooks: bot makes newhooks/ in the linked worktree" W2 \
		try mkdir "$M5/lwt/newhooks"
	git -C "$S5" config core.hooksPath already-there
	sleep 0.2
	refused_by "host set core.hooksPath=already-there (a folder the bot made): create pre-commit" W2 \
		gtry create "$M5/already-there/pre-commit" "$(hook live-already)"
	refused_by "the same in the linked worktree" W2 \
		gtry create "$M5/lwt/already-there/pre-commit" "$(hook live-already-wt)"
	git -C "$S5" worktree add -q "$S5/lwt2" -b wtb2 >/dev/null 2>&1
	sleep 0.2
	refused_by "host added a linked worktree lwt2 while mounted: bot makes lwt2/already-there/" W2 \
		try mkdir "$M5/lwt2/already-there"
	printf '[core]\n\thooksPath = inchooks\n' >>"$S5/inc.cfg"
	sleep 0.2
	refused_by "host edited an include target to set hooksPath=inchooks: bot makes inchooks/" W2 \
		try mkdir "$M5/inchooks"
	git -C "$S5" config --add include.path ../inc2.cfg
	sleep 0.2
	refused_by "host added include.path=../inc2.cfg: bot makes inc2.cfg" W3 \
		gtry create "$M5/inc2.cfg" "$(fsmonitor_cfg "$T/payload-live")"
	fs_umount "$M5"
else
	not_ok "mount $S5"
fi
payload "$T/payload-live" live-fsmonitor
git -C "$S5" config core.hooksPath already-there
check "host: git commit after the live changes" git -C "$S5" commit -q --allow-empty -m "host after attacks"
host_commit "the linked worktree" "$S5/lwt"
check "host: git commit in the linked worktree made while mounted" \
	git -C "$S5/lwt2" commit -q --allow-empty -m "host after"
no_marker "config changed while mounted: no PWNED marker"

# ---- 6. a root that is a folder of a worktree: the repository above ---------
S6="$T/above"
M6="$T/above-m"
M6W="$T/above-mw"
mkdir -p "$S6" "$M6" "$M6W"
setup_above()
{
	git init -q "$S6/app"
	mkdir -p "$S6/app/docs/hooks-dir"
	person_hook above >"$S6/app/docs/hooks-dir/post-commit"
	chmod +x "$S6/app/docs/hooks-dir/post-commit"
	git -C "$S6/app" add docs
	git -C "$S6/app" commit -qm init
	git -C "$S6/app" config core.hooksPath docs/hooks-dir
	git -C "$S6/app" config include.path ../docs/inc.cfg
	git -C "$S6/app" worktree add -q "$S6/app-wt" -b wtb
}
host_setup above-setup setup_above

if fs_mount --log "$GUARD_LOG" "$S6/app/docs" "$M6" && fs_mount --log "$GUARD_LOG" "$S6/app-wt/docs" "$M6W"; then
	refused_by "root = app/docs: hooksPath docs/hooks-dir of the repository above: create pre-commit" W2 \
		gtry create "$M6/hooks-dir/pre-commit" "$(hook above-pre-commit)"
	refused_by "root = app/docs: include ../docs/inc.cfg of the repository above: create it" W3 \
		gtry create "$M6/inc.cfg" "$(fsmonitor_cfg "$T/payload-above")"
	refused_by "root = app-wt/docs (a linked worktree's folder): create hooks-dir/pre-commit" W2 \
		gtry create "$M6W/hooks-dir/pre-commit" "$(hook above-wt-pre-commit)"
	allow "root = app/docs: other files stay writable" gtry create "$M6/notes.md" notes
	fs_umount "$M6W"
	fs_umount "$M6"
else
	not_ok "mount app/docs and app-wt/docs"
fi
payload "$T/payload-above" above-fsmonitor
host_commit "app" "$S6/app"
host_commit "app-wt" "$S6/app-wt"
no_marker "the repository above the root: no PWNED marker"

# ---- 7. the person's global config: a relative hooksPath for every repository
S7="$T/global-src"
M7="$T/global-m"
mkdir -p "$S7" "$M7"
setup_global()
{
	git init -q "$S7/r"
	git -C "$S7/r" commit -q --allow-empty -m init
	printf '[user]\n\tnote = shared\n' >"$S7/shared.cfg"
	git config --global core.hooksPath .githooks
	git config --global include.path "$S7/shared.cfg"
	# a person's ~/.gitconfig is often a symlink into a dotfiles folder
	mkdir -p "$HOME/dotfiles"
	mv "$HOME/.gitconfig" "$HOME/dotfiles/gitconfig"
	ln -s dotfiles/gitconfig "$HOME/.gitconfig"
}
host_setup global-setup setup_global
if fs_mount --log "$GUARD_LOG" "$S7" "$M7"; then
	refused_by "global core.hooksPath=.githooks: bot makes r/.githooks" W2 try mkdir "$M7/r/.githooks"
	refused_by "global include.path into the root: bot writes it" W3 \
		gtry append "$M7/shared.cfg" "$(fsmonitor_cfg "$T/payload-global")"
	git config --global core.hooksPath .hooks2
	sleep 0.2
	refused_by "global core.hooksPath changed to .hooks2 while mounted: bot makes r/.hooks2" W2 \
		try mkdir "$M7/r/.hooks2"
	fs_umount "$M7"
else
	not_ok "mount $S7"
fi
payload "$T/payload-global" global-fsmonitor
host_commit "r" "$S7/r"
git config --global --unset core.hooksPath
git config --global --unset include.path
no_marker "the person's global config: no PWNED marker"

# ---- 8. a repository the person makes on the host while the mount is live --
S8="$T/new-src"
M8="$T/new-m"
mkdir -p "$S8" "$M8"
setup_new()
{
	git init -q "$S8/newrepo"
	git -C "$S8/newrepo" config core.hooksPath hk
	mkdir "$S8/store"
	git init -q --separate-git-dir="$S8/store/sg" "$S8/newsep"
	git -C "$S8/newsep" config core.hooksPath hk
}
if fs_mount --log "$GUARD_LOG" "$S8" "$M8"; then
	host_setup new-setup setup_new
	refused_by "a repository made on the host while mounted: bot makes newrepo/hk" W2 \
		try mkdir "$M8/newrepo/hk"
	refused_by "a --separate-git-dir repository made on the host while mounted: bot makes newsep/hk" W2 \
		try mkdir "$M8/newsep/hk"
	fs_umount "$M8"
else
	not_ok "mount $S8"
fi
host_commit "newrepo" "$S8/newrepo"
host_commit "newsep" "$S8/newsep"
no_marker "repositories made while mounted: no PWNED marker"

done_testing
