#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-mergetool: rule X8 (red team, round three).  git mergetool (2.39's
# git-mergetool.sh, mergetool.writeToTemp off by default) works beside the
# conflicted file and takes what is there as it is: `mv -- MERGED
# NAME_BACKUP_PID.EXT`, then after the merge `mv -- BACKUP NAME.orig`
# (mergetool.keepBackup, on by default), and shell redirects into
# NAME_BASE_PID.EXT, NAME_LOCAL_PID.EXT, NAME_REMOTE_PID.EXT; git apply
# --reject fopens NAME.rej, git format-patch NNNN-SUBJECT.patch.  A symlink
# the bot leaves under such a name,
# leading to a folder out of the root (~/.local/bin, a folder of files the
# shell sources), makes the person's mergetool move the bot's file there.
# Through the mount no symlink gets such a name (made, renamed in its
# folder or from another, hard linked, exchanged); files and other names
# stay allowed.  A host control shows the move; after the attacks the
# person's merge and mergetool on the host move nothing out of the tree.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"

S="$T/src"
M="$T/m"
C="$T/control"
OUT="$T/outside"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$C" "$OUT"

# conflicted DIR: main and a branch bot that both change tools/run (a script)
conflicted()
{
	git init -q "$1" && cd "$1" && mkdir tools &&
		printf '#!/bin/sh\nv=1\n\n\n\n\nw=1\n' >tools/run && chmod 755 tools/run &&
		git add . && git commit -qm one && git checkout -qb bot &&
		sed -i 's/^v=1/v=bot/' tools/run && git commit -qam bot && git checkout -q main &&
		sed -i 's/^v=1/v=main/' tools/run && git commit -qam main
}
host_setup "host setup" sh -c "$(declare -f conflicted); (conflicted '$S/app') && (conflicted '$C/app')"

# mergetool DIR: the person's merge of bot and a mergetool whose tool takes main's side
mergetool()
{
	(cd "$1" && git merge -q bot >/dev/null 2>&1
	git -c mergetool.t.cmd='cp "$LOCAL" "$MERGED"' -c mergetool.t.trustExitCode=true \
		mergetool --tool=t -y >/dev/null 2>&1)
}

# ---- control: on the host, a link at NAME.orig takes the backup out of the tree ----
ln -s "$OUT" "$C/app/tools/run.orig"
mergetool "$C/app"
if [ -n "$(ls -A "$OUT")" ]; then
	ok "control: git mergetool moved the backup through tools/run.orig into $OUT ($(ls "$OUT"))"
	rm -f "$OUT"/*
else
	skip "control: git mergetool moved nothing through the link (the attacks below prove less)"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"
A="$M/app/tools"

# ---- plants ---------------------------------------------------------------------------
refused_by "symlink tools/run.orig to a folder outside" X8 try symlink "$OUT" "$A/run.orig"
refused_by "symlink tools/run_BACKUP_4242" X8 try symlink "$OUT" "$A/run_BACKUP_4242"
refused_by "symlink tools/run_BASE_17.sh" X8 try symlink "$OUT/x" "$A/run_BASE_17.sh"
refused_by "symlink tools/run_LOCAL_9" X8 try symlink "$OUT/x" "$A/run_LOCAL_9"
refused_by "symlink tools/run_REMOTE_31337" X8 try symlink "$OUT/x" "$A/run_REMOTE_31337"
refused_by "symlink tools/run.rej (git apply --reject)" X8 try symlink "$OUT/x" "$A/run.rej"
refused_by "symlink inside the root at such a name too" X8 try symlink ../README "$A/run.orig"
allow "a symlink out of the root under another name" try symlink "$OUT" "$A/outlink"
refused_by "rename it to tools/run.orig (one folder)" X8 try rename "$A/outlink" "$A/run.orig"
refused_by "rename it to app/x_BACKUP_1 (another folder)" X8 try rename "$A/outlink" "$M/app/x_BACKUP_1"
refused_by "hard link it as tools/run.orig" X8 try link "$A/outlink" "$A/run.orig"
allow "a file tools/run.orig" try create "$A/run.orig"
refused_by "exchange the link with tools/run.orig" X8 try rename-exchange "$A/outlink" "$A/run.orig"
allow "remove the file tools/run.orig" try unlink "$A/run.orig"
# git format-patch writes NNNN-SUBJECT.patch in the folder it runs in, through a link there
refused_by "symlink app/0001-Fix-the-build.patch (git format-patch)" X8 \
	try symlink "$OUT/bashrc" "$M/app/0001-Fix-the-build.patch"
refused_by "symlink app/0000-cover-letter.patch" X8 try symlink "$OUT/x" "$M/app/0000-cover-letter.patch"
refused_by "symlink app/v2-0001-x.patch (format-patch -v2)" X8 try symlink "$OUT/x" "$M/app/v2-0001-x.patch"
refused_by "symlink app/v2.1-0001-x.patch (format-patch -v2.1)" X8 try symlink "$OUT/x" "$M/app/v2.1-0001-x.patch"
refused_by "symlink app/vrc1-0001-x.patch (format-patch -vrc1)" X8 try symlink "$OUT/x" "$M/app/vrc1-0001-x.patch"
allow "a symlink named app/vendor-1.patch" try symlink "$OUT/x" "$M/app/vendor-1.patch"
rm -f "$M/app/vendor-1.patch"
allow "a symlink named app/fix.patch" try symlink "$OUT/x" "$M/app/fix.patch"
allow "a symlink named app/2024-01-01.log" try symlink "$OUT/x" "$M/app/2024-01-01.log"
rm -f "$M/app/fix.patch" "$M/app/2024-01-01.log"
allow "a symlink named tools/origin" try symlink "$OUT" "$A/origin"
allow "a symlink named tools/BASE_x" try symlink "$OUT" "$A/BASE_x"
check "nothing of the plants is in tools" sh -c "! ls '$A' | grep -E '\\.(orig|rej)$|_(BACKUP|BASE|LOCAL|REMOTE)_[0-9]'"
rm -f "$A/outlink" "$A/origin" "$A/BASE_x"

fs_umount "$M" || not_ok "umount $M"

# ---- the person's merge and mergetool on the host -----------------------------------
mergetool "$S/app"
is "$(ls -A "$OUT")" "" "host: git mergetool moved nothing out of the tree"
check "host: the backup is tools/run.orig, a file in the tree" test -f "$S/app/tools/run.orig" -a ! -L "$S/app/tools/run.orig"
check "host: the merge is resolved (main's side)" grep -qx 'v=main' "$S/app/tools/run"
check "host: git format-patch -1 --cover-letter" sh -c "cd '$S/app' && git format-patch -q -1 --cover-letter >/dev/null"
is "$(ls -A "$OUT")" "" "host: ... wrote nothing out of the tree"

done_testing
