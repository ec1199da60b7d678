#!/bin/bash
# SPDX-License-Identifier: MIT
# cli-escape: nothing a bot chose reaches the operator's terminal raw. A
# sub-bot's folder, a file's name and a refused path holding a newline (a
# forged line), terminal escapes (OSC title, clear screen), a C1 control
# (CSI), bytes that are not UTF-8 and Unicode's bidirectional controls
# (U+202E would show a name reversed) are printed escaped by show, ls,
# changes, log and the client's error messages; --json keeps them exact (C1,
# DEL and bidi controls as \u escapes, the same JSON). A
# log line escapes each field in a part of its own, and the daemon's log
# line keeps a path's end: a long path of control bytes cannot push a
# refusal's target, rule and command out of either.
. "$top_srcdir/tests/daemon-lib.sh"
command -v python3 >/dev/null || skip_all "python3 is missing"

# clean DESC TEXT...: TEXT holds no control character but newlines between
# lines, no DEL, no C1 control and only valid UTF-8, and no line of it begins
# with "forged"
cat >"$T/clean.py" <<'PY'
import sys
data = sys.stdin.buffer.read()
bad = []
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    bad.append("not UTF-8 at byte %d" % e.start)
    text = data.decode("utf-8", "replace")
for i, ch in enumerate(text):
    o = ord(ch)
    if (o < 0x20 and ch != "\n") or o == 0x7f or 0x80 <= o <= 0x9f or \
            o in (0x61c, 0x200e, 0x200f) or 0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069:
        bad.append("U+%04X at %d" % (o, i))
for line in text.split("\n"):
    if line.startswith("forged"):
        bad.append("a forged line: " + line[:40])
print("; ".join(bad[:5]))
PY
clean()
{
	local desc="$1" out
	shift
	out=$(printf '%s' "$*" | python3 "$T/clean.py")
	is "$out" "" "$desc"
}

EVIL=$'e\nforged line\e]0;pwned\a\e[2J\xc2\x9b31m\xff\xfe'
mkdir -p "$T/w/$EVIL" "$T/w/.git/hooks"
chown -R 65534 "$T/w"
daemon_start || bail_out "agentfsd did not start"
expect_ok "create lead" "$(afs --json create --user 65534 lead "$T/w")"
expect_ok "lead makes kid over a folder whose name it chose" "$(as lead create kid "$T/w/$EVIL")"

out=$(afs show kid 2>&1)
clean "show: the folder and mounts escaped" "$out"
like "$out" 'folder +.*/w/e\\nforged line\\x1b\]0;pwned\\x07\\x1b\[2J\\xc2\\x9b31m\\xff\\xfe$' \
	"... as \\n, \\xHH"
clean "ls: the folder escaped" "$(afs ls 2>&1)"
is "$(afs --json show kid | jget bot.folder)" "$T/w/$EVIL" "show --json keeps the folder exact"
clean "show of two bots escaped" "$(afs show lead kid 2>&1)"

M="$D_MNT/lead/0"
echo x >"$M/$EVIL.txt"
echo y >"$M/.git/hooks/$EVIL" 2>/dev/null
# --json: cJSON escapes only what is below 0x20; the C1 controls in UTF-8
# (U+009B CSI, U+009D OSC ... U+009C: the clipboard), DEL and the bidi
# controls go out as \u escapes, the same JSON
JNAME=$'j\xc2\x9b31m\xc2\x9d52;c;eA==\xc2\x9c\x7fz\xe2\x80\xaez'
echo x >"$M/$JNAME.txt"
cat >"$T/jsoncheck.py" <<'PY'
import json, sys
data = sys.stdin.buffer.read()
want = sys.argv[1].encode("utf-8", "surrogateescape").decode("utf-8")
raw = [b for b in (b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x9c", b"\x7f", b"\xe2\x80\xae") if b in data]
found = any(want in line for line in json.dumps(json.loads(data.decode("utf-8", "surrogateescape")),
                                                  ensure_ascii=False).split('"'))
print("raw %r" % raw if raw else ("exact" if found else "name not found"))
PY
is "$(afs --json changes lead | python3 "$T/jsoncheck.py" "$JNAME.txt")" exact \
	"changes --json: C1, DEL and bidi controls as \\u escapes, the name exact"
# a stray byte 0x9d or 0x9b, not UTF-8: an OSC or CSI to an 8-bit terminal
RAWC1=$'k\x9d52;c;eA==\x9c\x9b2J'
echo x >"$M/$RAWC1.txt"
out=$(afs --json changes lead)
case "$out" in
*$'\x9d'* | *$'\x9b'*) not_ok "changes --json: stray C1 bytes go out as \\u escapes" ;;
*'k\u009d52;c;eA==\u009c\u009b2J.txt'*) ok "changes --json: stray C1 bytes go out as \\u escapes" ;;
*) not_ok "changes --json: stray C1 bytes go out as \\u escapes"; diag "$out" ;;
esac
echo y >"$M/.git/hooks/$JNAME" 2>/dev/null
out=$(afs --json log lead)
case "$out" in
*$'\xc2\x9b'* | *$'\xc2\x9d'* | *$'\x7f'* | *$'\xe2\x80\xae'*) not_ok "log --json: the refused name's controls as \\u escapes" ;;
*'j\u009b31m\u009d52;c;eA==\u009c\u007fz\u202ez'*) ok "log --json: the refused name's controls as \\u escapes" ;;
*) not_ok "log --json: the refused name's controls as \\u escapes"; diag "$out" ;;
esac
clean "changes: a file's name escaped" "$(afs changes lead 2>&1)"
like "$(afs changes lead)" 'created +/.*/w/e\\nforged line' "... and listed"
clean "log: a refused name escaped" "$(afs log lead 2>&1)"
like "$(afs log lead)" 'refused create of .*hooks/e\\nforged line' "... and listed"
# U+202E shows what follows reversed: hooks/evil<RLO>gpj.sh would read as evilhs.jpg
RLO=$(printf '\xe2\x80\xae')
echo y >"$M/.git/hooks/evil${RLO}gpj.sh" 2>/dev/null
clean "log: a refused name with a bidirectional control escaped" "$(afs log lead 2>&1)"
like "$(afs log lead)" 'refused create of .*hooks/evil\\u202egpj\.sh' "... as \\u202e"
# A refused rename from 15 folders of 250 control bytes each: escaped (four
# bytes each), the path once filled the whole line and pushed out the target,
# the rule and the command, so the log hid what the bot tried.
C=$(printf '\001%.0s' $(seq 250))
deep="$M"
for i in $(seq 15); do deep="$deep/$C"; done
mkdir -p "$deep" && echo x >"$deep/x"
mv "$deep/x" "$M/.git/hooks/pre-commit" 2>/dev/null
line=$(afs log lead | grep 'refused rename' | tail -n 1)
clean "log: a refused rename from a long path of control bytes escaped" "$line"
like "$line" ' to .*/w/\.git/hooks/pre-commit: .*\(pid [0-9]+ [^)]+\)$' \
	"... still naming the target, the rule and the command"
like "$line" 'refused rename of \.\.\.\\x01' "... the path's start left out, behind ..."
is "$(afs --json log lead | grep -c 'hooks/pre-commit')" 1 "--json keeps the whole event"
line=$(grep 'refused rename' "$D_LOG" | tail -n 1)
clean "the daemon's log: that refusal escaped" "$line"
like "$line" 'refused rename of \.\.\..* to /\.git/hooks/pre-commit: ' \
	"... naming its target and why, the path's start left out behind ..."
clean "the error of a bot name with escapes is escaped" "$(afs show "kid$EVIL" 2>&1)"
clean "the client's own error is escaped" "$("$AGENTFS" mount "$T/no$EVIL" "$T/m" 2>&1)"
clean "exec's refusal is escaped" "$(afs exec "x$EVIL" -- true 2>&1)"
clean "a usage error naming what was given is escaped" "$(afs show "--x$EVIL" 2>&1)"
expect_ok "rm lead" "$(afs --json rm lead)"

done_testing
