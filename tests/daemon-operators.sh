#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-operators: people other than root use agentfsd when they are in its
# group (the config's "group"): the control socket is 0660 to that group;
# each member is the operator of its own bots only (it sees, changes and
# deletes no other's), may make a bot only over folders it may write (checked
# with its own uid and groups), and its bots run as itself, never as another
# user; it cannot shut the daemon down. A user outside the group is refused,
# by the socket's mode and by the daemon. A temporary group and users are
# made for the test and removed by its trap.
. "$top_srcdir/tests/daemon-lib.sh"

for c in groupadd groupdel useradd userdel setpriv; do
	command -v "$c" >/dev/null || skip_all "$c is missing"
done
grp="afsop$$"
usr="afsu$$"
other="afsv$$"
made=
ops_cleanup()
{
	local rc=$?
	case $made in *u*) host_del userdel "$usr" ;; esac
	case $made in *v*) host_del userdel "$other" ;; esac
	case $made in *g*) host_del groupdel "$grp" ;; esac
	(exit "$rc")
	daemon_cleanup
}
trap ops_cleanup EXIT
groupadd "$grp" || skip_all "cannot add a group"
made=g
useradd -M -N -s /usr/sbin/nologin -G "$grp" "$usr" || skip_all "cannot add a user"
made=gu
useradd -M -N -s /usr/sbin/nologin "$other" || skip_all "cannot add a user"
made=guv
uid=$(id -u "$usr")
ouid=$(id -u "$other")

# as_user USER ARGS...: the client as USER with its own groups
as_user()
{
	local who=$1
	shift
	setpriv --reuid="$who" --regid="$(id -g "$who")" --init-groups \
		"$AGENTFS" --socket "$D_SOCK" "$@"
}

mkdir -p "$T/mine" "$T/roots" "$T/shared"
chown "$uid" "$T/mine"
chmod 0755 "$T/roots"
chgrp "$grp" "$T/shared"
chmod 0775 "$T/shared"
printf '{"group": "%s"}\n' "$grp" >"$T/conf"

daemon_start --config "$T/conf" || bail_out "agentfsd does not start"
is "$(stat -c '%a %U %G' "$D_SOCK")" "660 root $grp" "the control socket is 0660, owned by the group"

expect_ok "root makes a bot over its folder" "$(afs --json create rootbot "$T/roots" --user 65534)"
is "$(as_user "$usr" --json status | jget ok)" true "a member of the group reaches the daemon"
is "$(as_user "$usr" --json status | jget bots)" 0 "its status counts only its own bots"

r=$(as_user "$usr" --json create ubot "$T/mine")
expect_ok "the member makes a bot over a folder it owns" "$r"
is "$(printf '%s' "$r" | jget bot.uid)" "$uid" "its bot runs as the member by default"
expect_ok "the member makes a bot over a folder its group may write" \
	"$(as_user "$usr" --json create ubot2 "$T/shared")"
expect_error "the member cannot make a bot over root's folder" forbidden \
	"$(as_user "$usr" --json create ubot3 "$T/roots")"
expect_error "nor give its bot root's folder as a writable root" forbidden \
	"$(as_user "$usr" --json create ubot4 "$T/mine" --writable "$T/roots")"
expect_ok "but as a readable one, since it may read it (mode 0755)" \
	"$(as_user "$usr" --json create ubot4 "$T/mine" --readable "$T/roots")"
# a folder anyone may write, inside one only root may enter: not the member's
mkdir -p "$T/locked/open"
chmod 0700 "$T/locked"
chmod 0777 "$T/locked/open"
r=$(as_user "$usr" --json create ubot7 "$T/locked/open")
expect_error "the member cannot make a bot over a 0777 folder inside root's 0700 one" forbidden "$r"
case "$r" in
*"may not reach or write it"*) ok "the error says the member may not reach it" ;;
*) not_ok "the error says the member may not reach it"; diag "$r" ;;
esac
expect_error "the member cannot name another user" forbidden \
	"$(as_user "$usr" --json create ubot5 "$T/mine" --user 65534)"
expect_error "nor root" forbidden "$(as_user "$usr" --json create ubot6 "$T/mine" --user root)"

is "$(as_user "$usr" --json ls | jget 'bots.#')" 3 "the member lists only its own bots"
as_user "$usr" ls | grep -q rootbot && not_ok "root's bot is not listed to it" || ok "root's bot is not listed to it"
expect_error "the member cannot see root's bot" not_found "$(as_user "$usr" --json show rootbot)"
expect_error "nor delete it" not_found "$(as_user "$usr" --json rm rootbot)"
expect_error "nor configure it" not_found "$(as_user "$usr" --json configure rootbot --network)"
expect_error "nor fork it" not_found "$(as_user "$usr" --json fork rootbot mine2)"
expect_error "nor shut the daemon down" forbidden "$(as_user "$usr" --json shutdown)"
is "$(afs --json ls | jget 'bots.#')" 4 "root sees every bot"
is "$(afs --json show ubot | jget bot.uid)" "$uid" "root sees the member's bot, as the member"

out=$(as_user "$other" status 2>&1)
case "$out" in
*"permission denied"*"root only"*) ok "a user outside the group is refused by the socket's mode" ;;
*) not_ok "a user outside the group is refused by the socket's mode"; diag "$out" ;;
esac
chmod 0666 "$D_SOCK"
out=$(as_user "$other" --json status 2>&1)
chmod 0660 "$D_SOCK"
expect_error "and by the daemon, behind a mode opened by mistake" forbidden "$out"
case "$out" in
*"members of group $grp"*) ok "which names the group" ;;
*) not_ok "which names the group"; diag "$out" ;;
esac

r=$(as_user "$usr" --json rm ubot)
is "$(printf '%s' "$r" | jget deleted.0)" ubot "the member deletes its own bot"
is "$(afs --json show rootbot | jget ok)" true "root's bot is still there"
afs shutdown >/dev/null
daemon_wait_gone 10

# A group the configuration names must exist; "" is root only.
printf '{"group": "afs-no-such-group", "cgroup": ""}\n' >"$T/conf2"
out=$("$AGENTFSD" --config "$T/conf2" --socket "$D_SOCK" --state "$D_STATE" 2>&1)
case "$out" in
*'no group named afs-no-such-group'*) ok "a configured group that does not exist stops the start" ;;
*) not_ok "a configured group that does not exist stops the start"; diag "$out" ;;
esac
printf '{"group": ""}\n' >"$T/conf3"
daemon_start --config "$T/conf3" || bail_out "agentfsd does not start"
is "$(stat -c '%a %U %G' "$D_SOCK")" "600 root root" 'with "group": "" the control socket is root only'
out=$(as_user "$usr" status 2>&1)
case "$out" in
*"permission denied"*) ok "and the member is refused" ;;
*) not_ok "and the member is refused"; diag "$out" ;;
esac
afs shutdown >/dev/null
daemon_wait_gone 10

# --- a member's share of max_bots: a quarter (at least 4), its bots' bots included -----
rm -rf "$D_STATE" # no bot from before: the count starts at 0
printf '{"group": "%s", "max_bots": 8}\n' "$grp" >"$T/conf4"
daemon_start --config "$T/conf4" || bail_out "agentfsd does not start with max_bots 8"
for n in 1 2 3; do
	mkdir -p "$T/mine/m$n"
	chown "$uid" "$T/mine/m$n"
	expect_ok "the member makes m$n" "$(as_user "$usr" --json create "m$n" "$T/mine/m$n")"
done
mkdir -p "$T/mine/m1/k"
chown "$uid" "$T/mine/m1/k"
expect_ok "its bot m1 makes a bot: its fourth" \
	"$(AGENT_SOCKET="$D_SOCK.d/m1.sock" "$AGENTFS" --json create k "$T/mine/m1/k")"
mkdir -p "$T/mine/m5"
chown "$uid" "$T/mine/m5"
r=$(as_user "$usr" --json create m5 "$T/mine/m5")
expect_error "its fifth is refused: 4 is its share of max_bots 8" limit "$r"
like "$(printf '%s' "$r" | jget error.message)" "uid $uid and its bots number 4, its share of max_bots \\(8\\)" \
	"the error says whose share"
expect_ok "root still makes bots" "$(afs --json create --user 65534 r1 "$T/roots")"

# --- a restart grants nothing new ------------------------------------------------------
# A root mounted again at start is checked again with its operator's right,
# as at create: one the operator may no longer write is shown lost, with why,
# and is not served; the others are mounted as before.
afs shutdown >/dev/null
daemon_wait_gone 10 || bail_out "agentfsd did not stop"
chown root "$T/mine/m2"
chmod 0755 "$T/mine/m2"
daemon_start --config "$T/conf4" || bail_out "agentfsd does not start again"
is "$(restored_state m2)" lost "a root its operator may no longer write: lost after the start"
like "$(afs --json show m2 | jget bot.mounts.0.error)" "uid $uid may not reach or write it" \
	"... and show says why"
is "$(restored_state m3)" mounted "its other bots' roots are mounted again"
is "$(mounts_in "$D_MNT/m2" | wc -l)" 0 "nothing is mounted for the lost root"

done_testing
