#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-state: nothing a bot does can stop agentfsd from starting again.
#  - a root no mount serves (one inside another root) is checked as every
#    root is: 64 + 64 paths of control bytes that do not exist are refused;
#  - the state file is bounded when it is written, by what start reads:
#    each bot's entry is charged to its family (a quarter of 64 MiB), so a
#    lead whose bots each name 64 + 64 real folders 3,800 control bytes deep
#    (2.9 MB an entry, JSON escaping each byte in six) is refused past its
#    share, the file stays under it, and the daemon starts again with every
#    bot;
#  - an entry that does not load (a number out of range, no name, a second
#    bot of one name) is set aside, named in the log, the file as it was
#    kept beside it, and the other bots load.
. "$top_srcdir/tests/daemon-lib.sh"

command -v python3 >/dev/null || skip_all "python3 is not installed"

mkdir -p "$T/lead" "$T/op"
printf '{"group": "", "cgroup": "%s"}\n' "$D_CGROUP" >"$T/cfg.json"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start"
expect_ok "create the lead" "$(afs --json create --user 65534 lead "$T/lead")"
expect_ok "create another bot" "$(afs --json create --user 65534 other "$T/op")"

# create_line NAME N EXISTS: a create for NAME over $T/lead/NAME with N
# writable and N readable roots of control bytes, as raw bytes on the line
# (the daemon escapes each in six in its state file); lead_create NAME N
# EXISTS sends it on the lead's socket (through standard input: a line of
# 480 KB is no argument)
lead_create()
{
	create_line "$@" >"$T/line"
	printf '\n' >>"$T/line"
	"$DCLIENT" pipe "$D_SOCK.d/lead.sock" 1 <"$T/line"
}

create_line()
{
	python3 - "$T/lead" "$1" "$2" "$3" <<'PY'
import json, os, sys
top, name, n, exists = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
ctl = "".join(chr(c) for c in range(1, 32) if c != 10) * 8  # 240: no newline, which ends a line
chain = os.path.join(top, name, *([ctl] * 14))  # about 3,500 bytes
paths = [os.path.join(chain, "%03d" % i + ctl) for i in range(2 * n)]
if exists:
    for p in paths:
        os.makedirs(p.encode("latin-1"), exist_ok=True)
else:
    os.makedirs(os.path.join(top, name), exist_ok=True)
# by hand: json.dumps would escape each control byte, and the line outgrow 1 MiB
q = lambda s: '"' + s + '"'
# read-only: a readable root inside a writable one is refused before any is checked
sys.stdout.write('{"op":"create","name":%s,"folder":%s,"sandbox":"read-only","writable":[%s],"readable":[%s]}' % (
    q(name), q(os.path.join(top, name)), ",".join(map(q, paths[:n])),
    ",".join(map(q, paths[n:]))))
PY
}

# --- roots no mount serves are checked too ------------------------------------------
r=$(lead_create ghost 64 0)
expect_error "64 + 64 roots of control bytes that do not exist are refused" bad_path "$r"
like "$(printf '%s' "$r" | jget error.message)" "no such folder" "the error says why"
is "$(afs --json ls | jget 'bots.#')" 2 "no bot was made"

# --- the state file's share -------------------------------------------------------------
made=0
refused=
for i in $(seq 30); do
	r=$(lead_create "k$i" 64 1)
	if [ "$(printf '%s' "$r" | jget ok)" = true ]; then
		made=$((made + 1))
	else
		refused=$r
		break
	fi
done
check "the lead's bots with 2.9 MB entries are made up to its family's share ($made)" \
	test "$made" -ge 4 -a "$made" -le 6
expect_error "the next is refused" limit "$refused"
like "$(printf '%s' "$refused" | jget error.message)" "its entry in the state file .* of the state file" \
	"the error says it is the state file's share"
size=$(stat -c %s "$D_STATE/bots.json")
check "the state file stays under the family's share, 16 MiB ($size bytes)" test "$size" -lt 16777216
expect_ok "the operator still makes bots" "$(mkdir -p "$T/op2"; afs --json create --user 65534 op2 "$T/op2")"
n_before=$(afs --json ls | jget 'bots.#')
daemon_kill9 || bail_out "agentfsd did not die"
daemon_start --config "$T/cfg.json" || bail_out "agentfsd did not start again after the lead's bots"
ok "agentfsd starts again"
is "$(afs --json ls | jget 'bots.#')" "$n_before" "with every bot"
is "$(restored_state k1)" mounted "the lead's bots are mounted again"

# --- an entry that does not load is set aside, the others load -------------------------
afs shutdown >/dev/null
daemon_wait_gone 10 || bail_out "agentfsd did not stop"
python3 - "$D_STATE/bots.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1], encoding="latin-1"))
bots = doc["bots"]
for b in bots:
    if b["name"] == "other":
        b["ttl"] = 1e300          # no whole number of seconds
    if b["name"] == "op2":
        dup = dict(b)             # a second bot of one name
bots.append(dup)
bots.append({"folder": "/nowhere"})  # no name
json.dump(doc, open(sys.argv[1], "w", encoding="latin-1"), ensure_ascii=False)
PY
cp "$D_STATE/bots.json" "$T/bad.json"
"$AGENTFSD" -f --config "$T/cfg.json" --socket "$D_SOCK" --state "$D_STATE" 2>"$T/d.log" &
track_pid $!
wait_until 20 answers "$D_SOCK" || bail_out "agentfsd did not start with a bad entry: $(cat "$T/d.log")"
ok "agentfsd starts with three entries it cannot read"
D_PID=$(daemon_pids "$D_SOCK" | head -n 1)
is "$(afs --json status | jget bots)" "$((made + 2))" "the others are loaded: the lead, its $made bots, op2"
is "$(afs --json show k1 | jget bot.name) $(afs --json show op2 | jget bot.name)" "k1 op2" \
	"k1 and the first op2 among them"
expect_error "the bot with a number out of range is not" not_found "$(afs --json show other)"
check "the log names the entry set aside and why" \
	grep -q "entry [0-9]* (bot other) set aside: a number out of range" "$T/d.log"
check "... the second bot of one name" grep -q "(bot op2) set aside: a bot of that name is already loaded" "$T/d.log"
check "... and the one with no name" grep -q "(bot with no valid name) set aside" "$T/d.log"
aside=$(ls "$D_STATE"/bots.json.aside-* 2>/dev/null | head -n 1)
check "the file as it was is kept beside it" cmp -s "$aside" "$T/bad.json"
check "the log says where" grep -qF "the file as it was is $aside" "$T/d.log"

done_testing
