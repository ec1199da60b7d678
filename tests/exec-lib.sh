# SPDX-License-Identifier: MIT
# tests/exec-lib.sh: helpers for the `agentfs exec` tests (tests/exec-*.sh).
#
# Sourced as `. "$top_srcdir/tests/exec-lib.sh"`.  It sources
# tests/daemon-lib.sh (TAP helpers, $T, a private agentfsd on $D_SOCK and
# $D_STATE, afs, jget, expect_ok/expect_error, like/unlike, and a trap that
# stops the daemon by pid, unmounts and removes $T) and adds:
#   ex ARGS...            `agentfs --socket $D_SOCK exec ARGS...`
#   ex_start_w1 [ARGS...] start agentfsd (with ARGS) and make the bot w1
#                         (workspace-write, no network) over W=$T/ws, owned by EX_USER
#   ex_daemon_again [ARGS...]  stop our agentfsd and start it again with ARGS
#                         (its bots come back); bwrap is agentfsd's choice, so
#                         a test that runs its own gives it as the config's
#                         "bwrap" (ex_bwrap_config FILE writes one)
#   fuse_lines            how many fuse.agentfs mounts the host has under $T
#                         (others' tests may mount elsewhere meanwhile)
#   pty_run SECS CMD...   run CMD on a new pseudo-terminal (python3), print
#                         what it wrote (CRs removed), exit with its status;
#                         $PTY_INPUT, if set, is typed PTY_DELAY s (0.5) (after
#                         the output shows $PTY_AFTER, if set) in
#   PY                    the real python3 executable (not a pyenv shim) that
#                         any user may run (/usr/bin's before one under /root), or empty
#   BWRAP                 bwrap's path
#   EX_USER, EX_UID, EX_GID  a user made for the test (removed at exit), a
#                         member of the extra group EX_GROUP (gid EX_XGID):
#                         a bot never runs as root, so the tests' bots run
#                         as this user
#   own PATH...           chown -R PATH... to EX_USER (the bot's folders)
#   hgit ARGS...          git on the host, as root, over the user's repositories
#
# $T is made outside /tmp (in /var/tmp unless TMPDIR is elsewhere): inside a
# sandbox /tmp is a private tmpfs, so a $T under /tmp would hide the host
# folders around the bot's folder, which these tests need to see read-only.

_exec_saved_tmpdir_set=${TMPDIR+set}
_exec_saved_tmpdir=${TMPDIR-}
case "${TMPDIR:-/tmp}" in
/tmp | /tmp/*) [ -d /var/tmp ] && [ -w /var/tmp ] && TMPDIR=/var/tmp ;;
esac
. "$top_srcdir/tests/daemon-lib.sh"
# The commands run inside must not inherit a TMPDIR that is read-only there.
if [ -n "$_exec_saved_tmpdir_set" ]; then
	TMPDIR=$_exec_saved_tmpdir
else
	unset TMPDIR
fi

case "$T" in
/tmp | /tmp/*) skip_all "needs a temporary folder outside /tmp (/var/tmp is not writable)" ;;
esac

# Commands inside run agentfs too: a build tree under /tmp is hidden there,
# so they use a copy in $T (seen read-only inside), with the agentfs-local
# it runs for mount and audit.
cp "$AGENTFS" "$top_builddir/src/agentfs-local" "$T/" || bail_out "cannot copy $AGENTFS"
AGENTFS=$T/agentfs
daemon_from_copies

BWRAP=$(command -v bwrap) || skip_all "bwrap is missing (apt-get install bubblewrap)"
if ! "$BWRAP" --ro-bind / / --unshare-pid --unshare-net --unshare-ipc --unshare-uts \
	--dev /dev --proc /proc true 2>/dev/null; then
	skip_all "bwrap cannot make namespaces here"
fi

PY=
if [ -x /usr/bin/python3 ]; then
	PY=/usr/bin/python3
elif command -v python3 >/dev/null 2>&1; then
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
	[ -x "$PY" ] || PY=
fi

# A user and an extra group of our own; useradd may meet another test's
# lock on /etc/passwd, so it is retried. They go last, once the daemon, its
# sandboxes and every process of the test are gone (userdel refuses a user
# whose processes run: under a sanitizer they could outlive a first try).
EX_USER=afs-u$$
EX_GROUP=afs-g$$
exec_user_del()
{
	host_del userdel "$EX_USER" && host_del groupdel "$EX_USER" &&
		host_del groupdel "$EX_GROUP" ||
		echo "# exec-lib.sh: cannot delete the test user $EX_USER or its groups" >&2
}
lib_exit_hook=exec_user_del
command -v useradd >/dev/null || skip_all "useradd is missing"
for _i in 1 2 3 4 5 6 7 8 9 10; do
	getent group "$EX_GROUP" >/dev/null || groupadd "$EX_GROUP" 2>/dev/null
	getent passwd "$EX_USER" >/dev/null ||
		useradd -M -U -G "$EX_GROUP" -d /nonexistent -s /bin/sh "$EX_USER" 2>/dev/null
	getent passwd "$EX_USER" >/dev/null && break
	sleep 0.3
done
EX_UID=$(id -u "$EX_USER" 2>/dev/null) || bail_out "cannot make the test user $EX_USER"
EX_GID=$(id -g "$EX_USER")
EX_XGID=$(getent group "$EX_GROUP" | cut -d: -f3)

own()
{
	chown -R "$EX_USER:$EX_USER" "$@"
}

hgit()
{
	git -c safe.directory='*' "$@"
}

ex()
{
	"$AGENTFS" --socket "$D_SOCK" exec "$@"
}

ex_start_w1()
{
	W="$T/ws"
	mkdir -p "$W"
	own "$W"
	daemon_start "$@" || bail_out "agentfsd did not start"
	check "create w1" afs create w1 "$W" --sandbox workspace-write --no-network
}

ex_daemon_again()
{
	afs shutdown >/dev/null 2>&1
	daemon_wait_gone 20 || bail_out "agentfsd did not stop"
	daemon_start "$@" || bail_out "agentfsd did not start again"
}

# ex_bwrap_config BWRAP: the path of a config file naming BWRAP as the bwrap to run
ex_bwrap_config()
{
	local f="$T/bwrap-config.$RANDOM.json"
	printf '{"bwrap": "%s"}\n' "$1" >"$f"
	printf '%s\n' "$f"
}

fuse_lines()
{
	awk -v p="$T" 'index($5, p "/") == 1 && / - fuse\.agentfs / { n++ } END { print n + 0 }' \
		/proc/self/mountinfo
}

# pty_run SECS CMD...: CMD's stdin, stdout and stderr are the slave of a new
# pty (its controlling terminal); nothing is typed into it but $PTY_INPUT.
# After SECS it is killed and "[pty_run: timeout]" is printed.
_exec_pty_py='
import os, pty, select, signal, sys, time
deadline = time.time() + float(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    # a terminal session: ^C must reach the command even when make was
    # started in the background, where the shell ignores SIGINT for good
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
out = b""
feed = os.environb.get(b"PTY_INPUT")
after = os.environb.get(b"PTY_AFTER")
feed_at = time.time() + float(os.environ.get("PTY_DELAY", "0.5"))
while True:
    if after is not None:
        # type only once the output shows it (then PTY_DELAY later)
        feed_at = time.time() + 3600
        if after in out:
            after = None
            feed_at = time.time() + float(os.environ.get("PTY_DELAY", "0.5"))
    if feed is not None and time.time() >= feed_at:
        os.write(fd, feed)
        feed = None
    left = deadline - time.time()
    if feed is not None:
        left = min(left, max(feed_at - time.time(), 0.01))
    if left <= 0:
        os.kill(pid, signal.SIGKILL)
        out += b"\n[pty_run: timeout]\n"
        break
    r, _, _ = select.select([fd], [], [], left)
    if not r:
        continue
    try:
        b = os.read(fd, 65536)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
os.close(fd)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
sys.exit(os.waitstatus_to_exitcode(st) & 255)
'

pty_run()
{
	"$PY" -c "$_exec_pty_py" "$@"
}
