#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-midx: rule D7's multi-pack-index (red team rounds 13 and 15).  git 2.39 opens
# each pack objects/pack/multi-pack-index names as objects/pack/NAME without
# checking NAME: "../../../../victim/objects/pack/pack-X.idx" borrows objects
# from any path, as alternates do, and the person's `git maintenance run
# --task=incremental-repack` (what `git maintenance start` schedules; `git
# multi-pack-index expire`) deletes that pack, outside the root.  Through the
# mount the file is made only by renaming onto it one whose pack names are
# files of objects/pack, every other way refused by rule; the bot's own git
# writes, verifies and expires its multi-pack-index.  A control plants on the
# host; then the person's maintenance leaves the pack outside the root alone.
# Round 15: git >= 2.47 reads, when there is no plain file, the incremental
# chain objects/pack/multi-pack-index.d/ (multi-pack-index-chain lists the
# layers multi-pack-index-HASH.midx, whose pack names are opened the same
# way); its layers are checked as the plain file is, and audit lists one
# planted on the host.  The host's git 2.39 reads no chain, so no control.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/guard-lib.sh"
guard_needs python3

S="$T/src"
M="$T/m"
B="$T/bot"
C="$T/control"
GUARD_LOG="$T/mount.log"
mkdir -p "$S" "$M" "$B" "$C"

# packed DIR: a repository with one commit, packed
packed()
{
	git init -q "$1"
	echo a >"$1/a"
	git -C "$1" add a
	git -C "$1" commit -qm a
	git -C "$1" repack -qad
}

# victim DIR FROM: an object folder outside the root holding a copy of FROM's
# pack, older than it; prints the pack's .idx name
victim()
{
	mkdir -p "$1/objects/pack"
	cp "$2"/.git/objects/pack/pack-*.pack "$2"/.git/objects/pack/pack-*.idx "$1/objects/pack/"
	touch -d 2020-01-01 "$1"/objects/pack/*
}

# forge OUT NAME...: a multi-pack-index of no object that names the packs NAME...
# (sorted as git sorts them; "-" for a name without its NUL)
forge()
{
	python3 - "$@" <<'PY'
import sys, struct, hashlib
out, names = sys.argv[1], sys.argv[2:]
pnam = b''.join(n.encode() + (b'' if n.endswith('-') else b'\0') for n in names)
while len(pnam) % 4:
    pnam += b'\0' if not names[-1].endswith('-') else b'x'
chunks = [(0x504e414d, pnam), (0x4f494446, b'\0' * 1024), (0x4f49444c, b''), (0x4f4f4646, b'')]
hdr = b'MIDX' + bytes([1, 1, len(chunks), 0]) + struct.pack('>I', len(names))
off = len(hdr) + 12 * (len(chunks) + 1)
toc = b''
for cid, data in chunks:
    toc += struct.pack('>IQ', cid, off)
    off += len(data)
toc += struct.pack('>IQ', 0, off)
body = hdr + toc + b''.join(d for _, d in chunks)
open(out, 'wb').write(body + hashlib.sha1(body).digest())
PY
}

setup()
{
	packed "$S/app"
	packed "$C/app"
	victim "$T/victim" "$S/app"
	victim "$T/cvictim" "$C/app"
}
host_setup "host setup" setup
V=$(basename "$T"/victim/objects/pack/*.idx)
CV=$(basename "$T"/cvictim/objects/pack/*.idx)

# ---- control: on the host, maintenance deletes the pack a planted index names ---
forge "$C/app/.git/objects/pack/multi-pack-index" "../../../../../cvictim/objects/pack/$CV"
(cd "$C/app" && git maintenance run --task=incremental-repack) >"$T/control.log" 2>&1
if [ ! -e "$T/cvictim/objects/pack/${CV%.idx}.pack" ]; then
	ok "control: a planted multi-pack-index has the person's maintenance delete a pack outside"
else
	skip "control: this git keeps the pack a planted multi-pack-index names (the attacks below prove less)"
	diag "$(cat "$T/control.log")"
fi

mount_or_stop "writable mount" fs_mount --log "$GUARD_LOG" "$S" "$M"
P="$M/app/.git/objects/pack"

# ---- the bot's own git ------------------------------------------------------------
check "the bot's git multi-pack-index write" git -C "$M/app" multi-pack-index write
check "the bot's git multi-pack-index verify" git -C "$M/app" multi-pack-index verify
check "the bot's git repack --write-midx" git -C "$M/app" repack -qad --write-midx
check "the bot's git maintenance run --task=incremental-repack" \
	git -C "$M/app" maintenance run --task=incremental-repack
check "the bot's multi-pack-index names its pack" \
	sh -c "grep -qa 'pack-.*idx' '$P/multi-pack-index'"
rm -f "$S/app/.git/objects/pack/multi-pack-index"

# ---- plants -----------------------------------------------------------------------
forge "$B/outside" "../../../../../victim/objects/pack/$V"
forge "$B/two" "../../../../../victim/objects/pack/$V" "pack-0000.idx"
forge "$B/dotdot" ".."
forge "$B/unended" "pack-0000.idx-"
forge "$B/plain" "pack-0000.idx"
printf 'MIDX\002' >"$B/version"
printf '%s\n' 0123456789abcdef0123456789abcdef01234567 >"$B/chain"

allowed "multi-pack-index: pack names of objects/pack, renamed in" \
	python3 "$FORGE" plant-rename "$P/multi-pack-index.lock" "$P/multi-pack-index" "$B/plain"
refused_by "multi-pack-index: written in place" D7 \
	python3 "$FORGE" plant-new "$P/multi-pack-index" "$B/outside"
refused_by "multi-pack-index: made in place" D7 \
	sh -c "rm -f '$P/multi-pack-index' && '$TRYOP' create '$P/multi-pack-index'"
refused_by "multi-pack-index: a FIFO" D7 "$TRYOP" mkfifo "$P/multi-pack-index"
refused_by "multi-pack-index: a pack name '..'" D7 \
	python3 "$FORGE" plant-rename "$P/multi-pack-index.lock" "$P/multi-pack-index" "$B/dotdot"
refused_by "multi-pack-index: a pack name without its NUL" D7 \
	python3 "$FORGE" plant-rename "$P/multi-pack-index.lock" "$P/multi-pack-index" "$B/unended"
refused_by "multi-pack-index: a version git 2.39 does not read" D7 \
	python3 "$FORGE" plant-rename "$P/multi-pack-index.lock" "$P/multi-pack-index" "$B/version"
refused_by "multi-pack-index: a pack outside among its own" D7 \
	python3 "$FORGE" plant-rename "$P/multi-pack-index.lock" "$P/multi-pack-index" "$B/two"
# the last attempt: what the person's maintenance below would obey
refused_by "multi-pack-index: a pack outside the root" D7 \
	python3 "$FORGE" plant-rename "$P/multi-pack-index.lock" "$P/multi-pack-index" "$B/outside"
rm -f "$P/multi-pack-index.lock"

# ---- git >= 2.47's incremental chain: the layers of multi-pack-index.d ---------------
rm -f "$S/app/.git/objects/pack/multi-pack-index"
D="$P/multi-pack-index.d"
H=0123456789abcdef0123456789abcdef01234567
cp "$B/plain" "$B/plain2"
printf '\002' | dd of="$B/plain2" bs=1 seek=4 conv=notrunc status=none
check "multi-pack-index.d: the folder is made" mkdir "$D"
allowed "layer: pack names of objects/pack, renamed in" \
	python3 "$FORGE" plant-rename "$D/midx.tmp" "$D/multi-pack-index-$H.midx" "$B/plain"
allowed "layer: version 2 (git multi-pack-index compact), renamed in" \
	python3 "$FORGE" plant-rename "$D/midx.tmp" "$D/multi-pack-index-$H.midx" "$B/plain2"
allowed "layer: the chain of hashes, written" \
	python3 "$FORGE" plant-new "$D/multi-pack-index-chain" "$B/chain"
refused_by "layer: written in place" D7 \
	python3 "$FORGE" plant-write "$D/multi-pack-index-$H.midx" "$B/outside"
refused_by "layer: made in place" D7 "$TRYOP" create "$D/multi-pack-index-1$H.midx"
refused_by "layer: a hard link onto a layer's name" D7 \
	python3 "$FORGE" plant-link "$D/multi-pack-index-chain" "$D/multi-pack-index-2$H.midx"
refused_by "layer: a pack outside among its own" D7 \
	python3 "$FORGE" plant-rename "$D/midx.tmp" "$D/multi-pack-index-3$H.midx" "$B/two"
refused_by "layer: a name in capitals (a case-folding file system)" D7 \
	python3 "$FORGE" plant-rename "$D/midx.tmp" "$D/MULTI-PACK-INDEX-$H.MIDX" "$B/outside"
refused_by "layer: a pack outside the root" D7 \
	python3 "$FORGE" plant-rename "$D/midx.tmp" "$D/multi-pack-index-$H.midx" "$B/outside"
rm -f "$D/midx.tmp"
check "layer: the checked one is still in place" \
	sh -c "grep -qa 'pack-0000.idx' '$D/multi-pack-index-$H.midx'"
rm -rf "$S/app/.git/objects/pack/multi-pack-index.d"
check "a folder for the chain, made in the work tree" mkdir "$M/app/chain"
allowed "a layer naming a pack outside, in the work tree" \
	python3 "$FORGE" plant-new "$M/app/chain/multi-pack-index-$H.midx" "$B/outside"
refused_by "the work tree's folder moved in as multi-pack-index.d" D7 \
	"$TRYOP" rename "$M/app/chain" "$D"
rm -rf "$S/app/chain"

fs_umount "$M" || not_ok "umount $M"

# ---- agentfs audit, then the person's plain git on the host --------------------------
forge "$C/app/.git/objects/pack/multi-pack-index" "../../../../../cvictim/objects/pack/$CV"
"$AGENTFS" audit "$C/app" >"$T/audit.out" 2>&1
check "audit lists a multi-pack-index planted on the host" \
	grep -q 'objects/pack/multi-pack-index: name: multi-pack-index: a pack name that is no file' \
	"$T/audit.out"
rm -f "$C/app/.git/objects/pack/multi-pack-index"
mkdir "$C/app/.git/objects/pack/multi-pack-index.d"
forge "$C/app/.git/objects/pack/multi-pack-index.d/multi-pack-index-$H.midx" \
	"../../../../../cvictim/objects/pack/$CV"
"$AGENTFS" audit "$C/app" >"$T/audit2.out" 2>&1
check "audit lists a layer of multi-pack-index.d planted on the host" \
	grep -q "multi-pack-index.d/multi-pack-index-$H.midx: name: multi-pack-index: a pack name that is no file" \
	"$T/audit2.out"
rm -rf "$C/app/.git/objects/pack/multi-pack-index.d"
check "host: git maintenance run --task=incremental-repack" \
	git -C "$S/app" maintenance run --task=incremental-repack
check "host: git fsck" git -C "$S/app" fsck --no-progress
check "host: the pack outside the root is still there" \
	test -f "$T/victim/objects/pack/${V%.idx}.pack" -a -f "$T/victim/objects/pack/$V"

done_testing
