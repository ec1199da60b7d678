#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-changes: what a bot changed through its mounts, merged per path
# (created, modified, deleted, renamed; a temporary file leaves nothing),
# kept across a daemon killed with SIGKILL, listed since a mark, and shown
# only to the operator, the bot and the bots that made it.
. "$top_srcdir/tests/daemon-lib.sh"

# changes BOT [ARGS...]: the text list; a failure shows in it (so an empty
# list is never an error that printed nothing)
changes()
{
	afs changes "$@" 2>&1 || echo "agentfs changes $*: exit status $?"
}

mkdir -p "$T/w/dir" "$T/w/old" "$T/o"
echo keep >"$T/w/mod"
echo keep >"$T/w/del"
echo keep >"$T/w/ren"
echo keep >"$T/w/dir/inner"
echo keep >"$T/w/untouched"

daemon_start || bail_out "agentfsd did not start"
expect_ok "create W" "$(afs --json create --user 65534 W "$T/w")"
expect_ok "create O" "$(afs --json create --user 65534 O "$T/o")"
M="$D_MNT/W/0"

is "$(changes W)" "" "a new bot changed nothing"

# through the bot's mount, as its commands would
echo new >"$M/made"
echo more >>"$M/mod"
rm "$M/del"
mv "$M/ren" "$M/renamed"
echo tmp >"$M/scratch" && rm "$M/scratch"
mkdir "$M/newdir" && echo x >"$M/newdir/f" && rm -r "$M/newdir"
echo y >"$M/made2" && echo z >>"$M/made2"
mv "$M/dir" "$M/dir2"
: >"$M/tr" && mv "$M/tr" "$M/tr2"
truncate -s 0 "$M/untouched2" 2>/dev/null
want="created  $T/w/made
created  $T/w/made2
deleted  $T/w/del
modified $T/w/mod
renamed  $T/w/dir/ -> $T/w/dir2/
renamed  $T/w/ren -> $T/w/renamed
created  $T/w/tr2
created  $T/w/untouched2"
got=$(changes W)
is "$(printf '%s\n' "$got" | sort)" "$(printf '%s\n' "$want" | sort)" \
	"created, modified, deleted and renamed, merged per path"
if printf '%s\n' "$got" | grep -q scratch; then
	not_ok "a file made and removed again is not listed"
else
	ok "a file made and removed again is not listed"
fi
if printf '%s\n' "$got" | grep -q newdir; then
	not_ok "a folder made, filled and removed again is not listed"
else
	ok "a folder made, filled and removed again is not listed"
fi
if printf '%s\n' "$got" | grep -q untouched$; then
	not_ok "a file only read is not listed"
else
	ok "a file only read is not listed"
fi
r=$(afs --json changes W)
is "$(printf '%s' "$r" | "$DCLIENT" get 'changes.*.type' | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }')" \
	"created=4 deleted=1 modified=1 renamed=2 " "--json: the same, with a type each"

# --- a mark ---------------------------------------------------------------------------
mark=$(afs --json changes W --mark | jget mark)
is "$mark" 1 "--mark answers the mark's number"
echo after >"$M/aftermark"
echo again >>"$M/made"
is "$(changes W --since "$mark" | sort)" "$(printf '%s\n' "created  $T/w/aftermark" "modified $T/w/made" | sort)" \
	"--since MARK lists only what changed after it"
like_all=$(changes W)
case "$like_all" in
*"created  $T/w/made"*"created  $T/w/aftermark"* | *"created  $T/w/aftermark"*"created  $T/w/made"*)
	ok "without --since, everything since the bot was made" ;;
*)
	not_ok "without --since, everything since the bot was made"
	diag "$like_all" ;;
esac
expect_error "an older mark is refused" bad_value "$(raw '{"op":"changes","name":"W","since":7}')"

# --- who may read it ---------------------------------------------------------------------
expect_ok "W reads its own changes" "$(as W changes W)"
expect_error "O cannot read W's changes" not_found "$(as O changes W)"
expect_error "O cannot set a mark on W" not_found "$(as O changes W --mark)"
expect_ok "W makes a child C" "$(as W create C "$T/w/dir2")"
echo c >"$D_MNT/C/0/fromchild"
is "$(as W changes C | jget changes.0.path)" "$T/w/dir2/fromchild" "a bot reads its child's changes"
expect_error "the child cannot read its maker's" not_found "$(as C changes W)"

# --- kept across kill -9 -------------------------------------------------------------------
# the saver thread writes the list within a fraction of a second
wait_until 5 grep -qF "aftermark" "$D_STATE/changes/W.json" ||
	diag "after 5 s W's saved changes do not hold its last change"
before=$(changes W)
p=$(daemon_pids)
kill -KILL $p
daemon_wait_gone 5 || bail_out "agentfsd did not die"
daemon_start || bail_out "agentfsd did not start again"
is "$(restored_state W)" mounted "W is mounted again after the restart"
is "$(afs --json log W | jget events.0.message)" \
	"restored at agentfsd's start: 1 of 1 roots mounted (taken over from the last agentfsd)" \
	"its log starts with its restore"
is "$(changes W)" "$before" "the list survives kill -9 and a restart"
is "$(changes W --since 1 | sort)" "$(printf '%s\n' "created  $T/w/aftermark" "modified $T/w/made" | sort)" \
	"so does the mark"
echo post >"$M/postrestart"
like_post=$(changes W)
case "$like_post" in
*"created  $T/w/postrestart"*) ok "changes after the restart are added" ;;
*) not_ok "changes after the restart are added" ;;
esac

# --- a deleted bot's changes go with it ------------------------------------------------------
expect_ok "delete W" "$(afs --json rm W)"
if wait_until 5 eval '[ ! -e "$D_STATE/changes/W.json" ]'; then
	ok "its saved changes are removed (by the saver thread, within a second)"
else
	not_ok "its saved changes are removed (by the saver thread, within a second)"
fi
expect_ok "create W again" "$(afs --json create --user 65534 W "$T/w")"
is "$(changes W)" "" "a new bot of the same name starts with nothing"

# --- bounded: past max_changes, only counted ----------------------------------------------
afs shutdown >/dev/null
daemon_wait_gone 10 || bail_out "agentfsd did not stop"
printf '{"max_changes": 20, "group": ""}\n' >"$T/cfg.json"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start with max_changes"
mkdir -p "$T/many"
expect_ok "create M (max_changes 20)" "$(afs --json create --user 65534 M "$T/many")"
for i in $(seq 30); do : >"$D_MNT/M/0/f$i"; done
r=$(afs --json changes M)
is "$(printf '%s' "$r" | jget 'changes.#')" 20 "20 paths are kept"
is "$(printf '%s' "$r" | jget too_many)" true "too_many says there were more"
is "$(printf '%s' "$r" | jget not_kept)" 10 "not_kept counts the 10 others"
like_many=$(afs changes M | tail -n 1)
is "$like_many" "too many changes: 10 more were counted but not kept" "the client says so"
rm "$D_MNT/M/0/f1"
is "$(afs --json changes M | jget 'changes.#')" 19 "a kept path made and removed again leaves the list"

# --- a file made executable is a change --------------------------------------------
echo '#!/bin/sh' >"$T/w/tool.sh"
chmod 644 "$T/w/tool.sh"
chmod 755 "$M/tool.sh"
check "chmod +x of a file the bot did not otherwise touch is listed as modified" \
	grep -qFx "modified $T/w/tool.sh" <<<"$(changes W)"

# --- a new file renamed over one that was there replaced it: modified ---------------------
echo keep >"$T/w/over"
echo new >"$M/over.tmp" && mv "$M/over.tmp" "$M/over"
echo new >"$M/fresh.tmp" && mv "$M/fresh.tmp" "$M/fresh"
got=$(changes W)
check "a file renamed over one the bot found is listed as modified" grep -qFx "modified $T/w/over" <<<"$got"
check "... and one renamed to a free name as created" grep -qFx "created  $T/w/fresh" <<<"$got"
if command -v git >/dev/null; then
	mkdir -p "$T/g"
	git init -q -b main "$T/g" && git -C "$T/g" -c user.name=t -c user.email=t@e commit -q --allow-empty -m one
	chown -R 65534 "$T/g"
	expect_ok "create G over a repository" "$(afs --json create --user 65534 G "$T/g")"
	MG="$D_MNT/G/0"
	echo a >"$MG/a"
	git -c safe.directory='*' -C "$MG" add a &&
		git -c safe.directory='*' -C "$MG" -c user.name=t -c user.email=t@e commit -qm two
	got=$(changes G)
	check "git commit: .git/index (a lock renamed over it) is modified" \
		grep -qFx "modified $T/g/.git/index" <<<"$got"
	check "... and so is refs/heads/main" grep -qFx "modified $T/g/.git/refs/heads/main" <<<"$got"
	if printf '%s\n' "$got" | grep -q "^created .*/\.git/\(index\|refs/heads/main\)$"; then
		not_ok "... neither is listed as created"
		diag "$got"
	else
		ok "... neither is listed as created"
	fi
else
	skip "git is missing"; skip "git is missing"; skip "git is missing"; skip "git is missing"
fi

# --- names chosen by the bot reach a person's terminal escaped ------------------------
echo x >"$M/n1"$'\n''deleted  evil.c'
echo x >"$M/zz"$'\e[1A\e[2K'
got=$(changes W)
check "a newline in a name is printed escaped" \
	grep -qFx "created  $T/w/n1\\ndeleted  evil.c" <<<"$got"
check "... and forges no line of its own" sh -c '! grep -q "^deleted  evil.c" "$1"' _ <(printf '%s\n' "$got")
check "an escape sequence in a name is printed escaped" \
	grep -qFx "created  $T/w/zz\\x1b[1A\\x1b[2K" <<<"$got"
check "no escape character reaches the terminal" sh -c '! grep -q "$(printf "\033")" "$1"' _ <(printf '%s\n' "$got")
r=$(afs --json changes W)
is "$(printf '%s' "$r" | "$DCLIENT" get 'changes.*.path' | grep -c evil)" 1 \
	"--json keeps the name as it is (JSON escapes it)"

# --- marks are each asker's own: a bot cannot move its operator's -------------------
rm -f "$M"/n1* "$M"/zz* "$M/tool.sh"
op_mark=$(afs --json changes W --mark | jget mark)
echo a >"$M/after-op-mark"
is "$(as W changes W --mark | jget mark)" 1 "the bot sets a mark of its own (its first)"
echo b >"$M/after-bot-mark"
is "$(as W changes W --mark | jget mark)" 2 "and moves it again"
is "$(changes W --since "$op_mark" | sort)" \
	"$(printf '%s\n' "created  $T/w/after-bot-mark" "created  $T/w/after-op-mark")" \
	"the operator's mark is where the operator set it, though the bot moved its own"
is "$(as W changes W --since 2 | jget 'changes.#')" 0 "the bot's lists what followed its own"
r=$(as W changes W --since "$op_mark")
expect_error "the bot cannot list since a mark it did not set" bad_value "$r"
like "$(printf '%s' "$r" | jget error.message)" "only your latest, 2, is kept" "the error says whose mark it is"

# --- bounded: memory and the saved file, whatever the bot does ----------------------
# A chain of 1,062 folders with 255-byte names (each path whole would cost
# ~256*D^2 bytes: a gigabyte, and a file the daemon no longer reads back);
# 3,000 files listed in pages of about 256 KiB; a family that uses up its
# share of changes_memory (a quarter of 16 MiB) stops being recorded, while
# other families' changes still are.
afs shutdown >/dev/null
daemon_wait_gone 10 || bail_out "agentfsd did not stop"
printf '{"changes_memory": 16, "group": ""}\n' >"$T/cfg.json"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start with changes_memory"
mkdir -p "$T/deep" "$T/pages" "$T/hog/kid" "$T/other"
for b in deep pages hog other; do
	expect_ok "create $b" "$(afs --json create --user 65534 "$b" "$T/$b")"
done
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$D_PID/status"; }
before=$(hwm)
python3 - "$D_MNT/deep/0" <<'PY' || diag "the deep chain could not be made"
import os, sys
os.chdir(sys.argv[1])
for i in range(1062):
    os.mkdir("a" * 255)
    os.chdir("a" * 255)
PY
grown=$(($(hwm) - before))
mem_below "the daemon's peak memory grew by less than 32 MiB for 1,062 nested folders ($grown KiB)" \
	"$grown" 32768
r=$(afs --json changes deep)
is "$(printf '%s' "$r" | jget 'changes.#') $(printf '%s' "$r" | jget not_kept)" "15 1047" \
	"paths up to 4,095 bytes are kept (15 levels), the deeper 1,047 counted"
is "$(afs changes deep | tail -n 1)" "too many changes: 1047 more were counted but not kept" \
	"and the client says so"
wait_until 5 eval '[ -s "$D_STATE/changes/deep.json" ]'
size=$(stat -c %s "$D_STATE/changes/deep.json")
check "its saved file is small ($size bytes)" test "$size" -lt 65536

python3 - "$D_MNT/pages/0" <<'PY'
import os, sys
for i in range(3000):
    open(os.path.join(sys.argv[1], "%04d" % i + "p" * 200), "w").close()
PY
r=$(raw '{"op":"changes","name":"pages"}')
is "$(printf '%s' "$r" | jget more)" true "a long list comes in pages: the first says there is more"
check "a page is about 256 KiB (${#r} bytes)" test "${#r}" -lt 524288
next=$(printf '%s' "$r" | jget next)
r2=$(raw "{\"op\":\"changes\",\"name\":\"pages\",\"after\":\"$next\"}")
is "$(printf '%s' "$r2" | jget changes.0.path)" "$T/pages/$(printf '%04d' "$(($(printf '%s' "$r" | jget 'changes.#')))")$(printf 'p%.0s' $(seq 200))" \
	"the next page starts after the last path of the one before"
is "$(afs --json changes pages | jget 'changes.#')" 3000 "agentfs changes asks for every page: 3,000"
is "$(afs changes pages | wc -l)" 3000 "and prints them all"

as hog create kid "$T/hog/kid" >/dev/null
before=$(hwm)
python3 - "$D_MNT/hog/0" <<'PY'
import os, sys
# names of control bytes: each costs six times its length, as the saved file escapes it
for i in range(4000):
    open(os.path.join(sys.argv[1], "%05d" % i + "\x01" * 240), "w").close()
PY
grown=$(($(hwm) - before))
r=$(afs --json changes hog)
is "$(printf '%s' "$r" | jget too_many)" true "a family past its share of changes_memory is only counted"
mem_below "the daemon's peak memory grew by less than 16 MiB ($grown KiB)" "$grown" 16384
echo x >"$D_MNT/kid/0/kid$(printf '\001%.0s' $(seq 240))"
is "$(afs --json changes kid | jget 'changes.#')" 0 "a bot of the same family: counted, not kept"
is "$(afs --json changes kid | jget too_many)" true "... and says so"
echo x >"$D_MNT/other/0/other-file"
is "$(afs changes other)" "created  $T/other/other-file" "another family's changes are still kept"
wait_until 5 eval '[ -s "$D_STATE/changes/hog.json" ]'
size=$(stat -c %s "$D_STATE/changes/hog.json")
check "the hog's saved file stays under its share, 4 MiB ($size bytes)" test "$size" -lt 4194304
daemon_kill9 || bail_out "agentfsd did not die"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start again"
is "$(afs --json changes hog | jget too_many)" true "after a restart the hog's list is read back"
is "$(afs --json changes deep | jget 'changes.#')" 15 "so is the deep chain's"

done_testing
