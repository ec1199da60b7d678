#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-systemd: agentfsd under systemd's protocol, with tests/restart-client
# standing in for systemd (its notify socket and fd store): Type=notify
# (READY=1 once it serves, STOPPING=1), the fd store (FDSTORE=1 with
# FDNAME, given back as LISTEN_FDS and LISTEN_FDNAMES at the next start),
# a restart and a SIGKILL with its automatic restart invisible to a held
# file and the same mount, SIGHUP (RELOADING=1 then READY=1, the
# configuration read again), WATCHDOG=1 when WATCHDOG_USEC is set, and a
# stop (systemctl stop: the store is emptied) that ends the mounts, after
# which the next start mounts afresh.
. "$top_srcdir/tests/daemon-lib.sh"

RC="$top_builddir/tests/restart-client"
[ -x "$RC" ] || bail_out "tests/restart-client is not built"
SD="$T/systemd"
mkdir -p "$SD" "$T/w"
echo hello >"$T/w/f"
chown -R 65534 "$T/w"
printf '{"group": "", "restart_grace": 5, "cgroup": "%s"}\n' "$D_CGROUP" >"$T/cfg.json"

notify_log()
{
	cat "$SD/notify.log" 2>/dev/null
}

# sd_start: the stand-in runs agentfsd -f (systemd runs it in the foreground)
sd_start()
{
	: >"$SD/notify.log"
	WATCHDOG_USEC=200000 "$RC" systemd "$SD" -- "$AGENTFSD" -f --config "$T/cfg.json" \
		--socket "$D_SOCK" --state "$D_STATE" >"$T/sd.out" 2>&1 &
	SD_PID=$!
	track_pid "$SD_PID"
	wait_until 10 eval 'notify_log | grep -qx READY=1'
}

# the agentfsd the stand-in runs (not the stand-in, whose command line names it too)
sd_daemon()
{
	local p
	for p in $(daemon_pids "$D_SOCK"); do
		[ "$p" != "$SD_PID" ] && echo "$p"
	done | head -n 1
}

if sd_start; then ok "Type=notify: READY=1 once it serves"; else not_ok "Type=notify: READY=1 once it serves"; fi
is "$(afs --json status | jget restart)" systemd "status: systemd's fd store keeps the mounts across a restart"
expect_ok "create a bot" "$(afs --json create --user 65534 s1 "$T/w")"
M="$D_MNT/s1/0"
mid=$("$RC" mntid "$M")
like "$(notify_log)" "FDSTORE ctl" "the control socket is in the fd store"
like "$(notify_log)" "FDSTORE bot.s1" "so is the bot's"
like "$(notify_log)" "FDSTORE m[0-9a-f]*.fuse" "and the mount's /dev/fuse descriptor"
if wait_until 3 eval 'notify_log | grep -qx WATCHDOG=1'; then
	ok "WATCHDOG=1 while WATCHDOG_USEC is set"
else
	not_ok "WATCHDOG=1 while WATCHDOG_USEC is set"
fi

# a file held open across a restart and a crash
"$RC" hold "$M/held" -- sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' sh "$T/go" >"$T/hold.out" 2>&1 &
hold=$!
track_pid "$hold"
wait_until 5 eval '[ -s "$T/w/held" ]'

# --- systemctl restart: the store is kept, the next one gets it back ------------------
: >"$SD/restart"
old=$(sd_daemon)
: >"$SD/notify.log"
kill -TERM "$old"
if wait_until 15 eval 'notify_log | grep -qx READY=1 && [ "$(sd_daemon)" != "$old" ]'; then
	ok "restart: the next agentfsd says READY=1"
else
	not_ok "restart: the next agentfsd says READY=1"
	diag "$(notify_log)" "$(tail -5 "$T/sd.out")"
fi
like "$(notify_log)" "STOPPING=1" "the old one said STOPPING=1"
is "$(grep -c '^EXIT 0$' "$SD/notify.log")" 1 "and exited 0"
is "$("$RC" mntid "$M")" "$mid" "the same mount, taken over from the fd store"
is "$(timeout 5 cat "$M/f" 2>&1)" hello "it answers"
is "$(afs --json status | jget restarts)" 1 "status counts the restart"
is "$(as s1 status 2>/dev/null | jget bot)" s1 "the bot's socket answers as the bot"

# --- a crash: systemd restarts it, the store kept -----------------------------------------
: >"$SD/restart"
old=$(sd_daemon)
: >"$SD/notify.log"
kill -KILL "$old"
if wait_until 15 eval 'notify_log | grep -qx READY=1 && [ "$(sd_daemon)" != "$old" ]'; then
	ok "SIGKILL: the restarted agentfsd says READY=1"
else
	not_ok "SIGKILL: the restarted agentfsd says READY=1"
fi
is "$("$RC" mntid "$M")" "$mid" "still the same mount"
touch "$T/go"
wait "$hold"
is "$?" 0 "the file held open across both works"
is "$(cat "$T/hold.out")" "held 1 errors 0" "written and read back through it"

# --- systemctl reload ------------------------------------------------------------------------
printf '{"group": "", "restart_grace": 5, "max_bots": 7, "cgroup": "%s"}\n' "$D_CGROUP" >"$T/cfg.json"
: >"$SD/notify.log"
kill -HUP "$(sd_daemon)"
if wait_until 5 eval 'notify_log | grep -qx READY=1'; then
	ok "SIGHUP: RELOADING=1 then READY=1"
	is "$(notify_log | grep -xE 'RELOADING=1|READY=1' | head -2 | tr '\n' ' ')" "RELOADING=1 READY=1 " \
		"in that order"
else
	not_ok "SIGHUP: RELOADING=1 then READY=1"
fi
for i in 1 2 3 4 5 6 7; do
	mkdir -p "$T/many/$i"
	chown 65534 "$T/many/$i"
	afs create --user 65534 "x$i" "$T/many/$i" >/dev/null 2>&1
done
expect_error "the configuration read again applies (max_bots 7)" limit \
	"$(afs --json create --user 65534 x8 "$T/many/1")"
is "$("$RC" mntid "$M")" "$mid" "a reload keeps the mount"

# --- systemctl stop: the store is emptied, the mounts end --------------------------------------
old=$(sd_daemon)
kill -TERM "$old"
wait_until 10 eval '! kill -0 '"$SD_PID"' 2>/dev/null'
wait "$SD_PID" 2>/dev/null
if timeout 5 stat "$M" >/dev/null 2>&1; then
	not_ok "stop: with the fd store emptied the mount's connection ends"
else
	ok "stop: with the fd store emptied the mount's connection ends"
fi
sd_start || not_ok "the next start says READY=1"
wait_until 10 eval '[ "$(afs --json show s1 | jget "bot.mounts.0.state")" = mounted ]'
is "$(afs --json show s1 | jget bot.mounts.0.restarts)" 0 "after a stop the next start mounts afresh"
[ "$("$RC" mntid "$M")" != "$mid" ] && ok "a new mount" || not_ok "a new mount"
is "$(timeout 5 cat "$M/f" 2>&1)" hello "it answers"
is "$(mounts_in "$D_MNT/s1" | wc -l)" 1 "the dead one was detached"

expect_ok "shutdown" "$(afs --json shutdown)"
wait_until 10 eval '! kill -0 '"$SD_PID"' 2>/dev/null'
is "$(mounts_in "$T" | wc -l)" 0 "nothing is left mounted"

done_testing
