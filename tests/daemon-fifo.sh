#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-fifo: no FUSE handler waits on a file's other end.  Two bots' mounts
# of one folder through one agentfsd: A opens a name with O_CREAT but without
# O_EXCL while its kernel remembers the name missing, so it sends CREATE, and
# the name has become a FIFO meanwhile (made on the host after A's look-up,
# or by B's mount in the same instant).  The server's open of that FIFO would
# wait for a reader while it holds the folder's decision hold and ns_lock,
# and every other mount's creates there, index renames (git add) and renames
# would wait with it.  Instead A's open fails at once (ENXIO, as a
# non-blocking open of a FIFO without a reader does), and B's mount keeps
# answering.
. "$top_srcdir/tests/daemon-lib.sh"

command -v python3 >/dev/null || skip_all "python3 is missing"
command -v git >/dev/null || skip_all "git is missing"
git_test_env

S="$T/shared"
mkdir -p "$S"
chmod 0755 "$S"
git init -q "$S/repo" && git -C "$S/repo" commit -q --allow-empty -m one ||
	bail_out "cannot make the repository"

daemon_start || bail_out "agentfsd did not start"
expect_ok "operator creates A over the folder" "$(afs --json create --user 65534 A "$S")"
expect_ok "operator creates B over the same folder" "$(afs --json create --user 65534 B "$S")"
MA=$(mounts_in "$D_MNT/A" | awk 'NR == 1 { print $2 }')
MB=$(mounts_in "$D_MNT/B" | awk 'NR == 1 { print $2 }')
[ -d "$MA/repo" ] && [ -d "$MB/repo" ] || bail_out "the bots' roots are not mounted"

# late NAME: A looks NAME up (its kernel remembers the name missing for the
# cache timeout), the host makes it a FIFO, A opens it O_WRONLY|O_CREAT in the
# background: A's kernel sends CREATE, and the server finds a FIFO it did not
# expect.  $T/late.out gets A's result: "opened" or an errno name.
late()
{
	python3 - "$MA" "$S" "$1" >"$T/late.out" <<'PY' &
import errno, os, sys
ma, host, name = sys.argv[1:4]
try:
    os.stat(os.path.join(ma, name))
except FileNotFoundError:
    pass
os.mkfifo(os.path.join(host, name))
try:
    os.close(os.open(os.path.join(ma, name), os.O_WRONLY | os.O_CREAT, 0o644))
    print("opened", flush=True)
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)), flush=True)
PY
	LATE_PID=$!
	track_pid "$LATE_PID"
}

# race ROUNDS: A's open(O_WRONLY|O_CREAT) and B's mkfifo of one name, fired
# together; when B's MKNOD reaches the server first, A's CREATE finds B's
# FIFO.  An A left waiting is released by a reader on the host after 0.5 s,
# and B's unlink of the name must answer meanwhile.  Prints "ENXIO-ROUNDS
# ROUNDS-WHERE-B-WAITED ROUNDS-WHERE-A-WAITED".
race()
{
	python3 - "$MA" "$MB" "$S" "$1" <<'PY'
import errno, os, sys, threading
ma, mb, host, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
enxio = bstall = await_ = 0
for i in range(rounds):
    name = "r%d" % i
    go = threading.Barrier(2)
    res = {}
    def a():
        go.wait()
        try:
            os.close(os.open(os.path.join(ma, name), os.O_WRONLY | os.O_CREAT, 0o644))
            res["a"] = "opened"
        except OSError as e:
            res["a"] = errno.errorcode.get(e.errno, str(e.errno))
    def b():
        go.wait()
        try:
            os.mkfifo(os.path.join(mb, name))
        except OSError:
            pass
    ta = threading.Thread(target=a, daemon=True)
    tb = threading.Thread(target=b, daemon=True)
    ta.start(); tb.start(); tb.join(5); ta.join(0.5)
    if ta.is_alive():
        await_ += 1
        done = threading.Event()
        def unlink():
            try:
                os.unlink(os.path.join(mb, name))
            except OSError:
                pass
            done.set()
        threading.Thread(target=unlink, daemon=True).start()
        if not done.wait(2):
            bstall += 1
        try:  # a reader releases the writer, wherever it waits
            os.close(os.open(os.path.join(host, name), os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass
        ta.join(5)
    if res.get("a") == "ENXIO":
        enxio += 1
    try:
        os.unlink(os.path.join(mb, name))
    except OSError:
        pass
print(enxio, bstall, await_, flush=True)
os._exit(0)
PY
}

late h1
# A blocked create never returns without a reader, so a long wait is no
# weaker a check: it only spares a loaded machine a false failure.
wait_until 15 test -s "$T/late.out"
is "$(cat "$T/late.out" 2>/dev/null || echo blocked)" ENXIO \
	"A's create that found a FIFO made after its look-up failed at once (ENXIO), not blocked"

# release: a reader on the host for every FIFO left, which lets a writer's open
# go on wherever it waits (before the fix: in the server, holding its locks)
release()
{
	local f
	for f in "$S"/h1 "$S"/r*; do
		[ -p "$f" ] && timeout 2 cat "$f" >/dev/null 2>&1
	done
}

# answers DESC SECS CMD...: CMD ends (successfully) within SECS.  A request the
# server has taken cannot be killed, so a CMD still waiting then is let go by
# release() rather than by a signal, and fails the check.
n_answers=0
answers()
{
	local desc="$1" secs="$2" rc
	shift 2
	n_answers=$((n_answers + 1))
	rm -f "$T/answer.$n_answers"
	( "$@" >/dev/null 2>&1; echo $? >"$T/answer.$n_answers" ) &
	if wait_until "$secs" test -s "$T/answer.$n_answers"; then
		rc=$(cat "$T/answer.$n_answers")
		is "$rc" 0 "$desc: answered"
	else
		not_ok "$desc: answered within $secs s"
		release
		wait_until 10 test -s "$T/answer.$n_answers"
	fi
}

answers "B: a create in the same folder" 5 touch "$MB/other"
answers "B: a rename in the same folder" 5 mv "$MB/other" "$MB/other2"
answers "B: git add (an index rename, ns_lock exclusive)" 10 sh -c \
	"cd '$MB/repo' && echo x >x && git add x"
answers "A: its mount answers too" 5 ls "$MA/repo"
check "the FIFO is a FIFO on the host" test -p "$S/h1"
[ -s "$T/late.out" ] || release

read -r enxio bstall await_ <<<"$(race 30)"
diag "two mounts, 30 rounds: A's create found B's FIFO (ENXIO) in ${enxio:-?}, A waited in its kernel in ${await_:-?}"
is "${bstall:-?}" 0 "two mounts racing: B's mount never waited on A's open"
if [ "${enxio:-0}" -gt 0 ]; then
	ok "two mounts racing: A's create met B's FIFO in the server and failed at once"
else
	skip "two mounts racing: B's FIFO never reached the server before A's create in 30 rounds"
fi

release
wait "$LATE_PID" 2>/dev/null
afs shutdown >/dev/null
daemon_wait_gone 10 && ok "shutdown" || not_ok "shutdown"
done_testing
