#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-failclosed: the checks that decide access fail closed (issue 12,
# item 5), shown with tests/fault-inject.so preloaded into agentfsd.
#  - A failed setgroups while the daemon takes an operator's identity to
#    check its right to a folder refuses the root (forbidden, saying why);
#    the same request without the fault is made (the control).
#  - One allocation of agentfsd's own failing at a time, at each point a
#    configure that removes a root reaches: the request is answered (or the
#    connection ends), and `show` and the mount table agree after each: no
#    removed root is left mounted and forgotten, none listed that is gone;
#    a refused configure leaves the root listed and mounted.
#  - The same for rm of a bot that made another: both go, or neither.
#  - The same for the exec plan: whole (every root bound, the state folder
#    and the bots' sockets hidden) or refused, never a part.
. "$top_srcdir/tests/daemon-lib.sh"

FAULT_SO="$top_builddir/tests/fault-inject.so"
[ -f "$FAULT_SO" ] || bail_out "$FAULT_SO is not built (make check builds it)"
for c in groupadd groupdel useradd userdel setpriv; do
	command -v "$c" >/dev/null || skip_all "$c is missing"
done
# A sanitizer's runtime must come first: the library cannot be preloaded.
ldd "$AGENTFSD" 2>/dev/null | grep -Eq 'lib[at]san' && skip_all "agentfsd is built with a sanitizer"

grp="afsfc$$"
usr="afsfu$$"
made=
fc_cleanup()
{
	local rc=$?
	case $made in *u*) host_del userdel "$usr" ;; esac
	case $made in *g*) host_del groupdel "$grp" ;; esac
	(exit "$rc")
	daemon_cleanup
}
trap fc_cleanup EXIT
groupadd "$grp" || skip_all "cannot add a group"
made=g
useradd -M -N -s /usr/sbin/nologin -G "$grp" "$usr" || skip_all "cannot add a user"
made=gu
gid=$(getent group "$grp" | cut -d: -f3)
AGENTFS_BIN="$top_builddir/src/agentfs"

as()
{
	local who=$1
	shift
	setpriv --reuid="$who" --regid="$(id -g "$who")" --init-groups \
		"$AGENTFS_BIN" --socket "$D_SOCK" "$@"
}

mkdir -p "$T/mine" "$T/b" "$T/bw"
chown "$usr" "$T/mine"
printf '{"group": "%s"}\n' "$grp" >"$T/conf"

# The control: without the fault the member's bot is made.
daemon_from_copies # exec_plan of a confined bot names agentfs-enter
daemon_start --config "$T/conf" || bail_out "agentfsd does not start"
expect_ok "without a fault the member makes a bot over its folder" \
	"$(as "$usr" --json create ubot "$T/mine")"
as "$usr" rm ubot >/dev/null
afs shutdown >/dev/null
daemon_wait_gone 10 || bail_out "agentfsd does not stop"

# The same daemon, with every setgroups that would give $grp failing, and
# the allocation fault ready to be armed (in agentfsd's own code).
export FAULT_LOG="$T/faults" FAULT_ALLOC_ARM="$T/arm"
LD_PRELOAD="$FAULT_SO" FAULT_SETGROUPS_GID="$gid" FAULT_ALLOC=1 \
	daemon_start --config "$T/conf" || bail_out "agentfsd does not start with the fault library"

r=$(as "$usr" --json create ubot "$T/mine")
expect_error "a failed setgroups in the access check refuses the root" forbidden "$r"
case "$(printf '%s' "$r" | jget error.message)" in
*"cannot check uid"*"Operation not permitted"*) ok "the error says the check could not be made" ;;
*) not_ok "the error says the check could not be made"; diag "$r" ;;
esac
grep -q setgroups "$T/faults" 2>/dev/null && ok "the setgroups fault was hit" ||
	not_ok "the setgroups fault was hit"
is "$(as "$usr" --json ls | jget 'bots.#')" 0 "no bot was made"
is "$(mounts_in "$D_MNT" | wc -l)" 0 "nothing was mounted"
expect_ok "root's requests take no identity and still work" \
	"$(afs --json create --user 65534 B "$T/b" --writable "$T/bw")"

# consistent: B's mounts in show (state mounted) are the fuse.agentfs mounts
# under its mount folder, no more, no fewer.
consistent()
{
	local n i st mp listed=
	n=$(afs --json show B | jget 'bot.mounts.#')
	for i in $(seq 0 $((n - 1))); do
		st=$(afs --json show B | jget "bot.mounts.$i.state")
		mp=$(afs --json show B | jget "bot.mounts.$i.mountpoint")
		[ "$st" = mounted ] && listed="$listed$mp"$'\n'
	done
	[ "$(printf '%s' "$listed" | sort)" = \
		"$(mounts_in "$D_MNT/B" | awk '$3 == "fuse.agentfs" { print $2 }' | sort)" ]
}

# bw_state: "mounted" if $T/bw is listed and mounted, "gone" if not listed
bw_state()
{
	local n i
	n=$(afs --json show B | jget 'bot.mounts.#')
	for i in $(seq 0 $((n - 1))); do
		if [ "$(afs --json show B | jget "bot.mounts.$i.path")" = "$T/bw" ]; then
			afs --json show B | jget "bot.mounts.$i.state"
			return
		fi
	done
	echo gone
}

# faulty N CMD...: run CMD with agentfsd's Nth allocation from now failing;
# its output in r; false if it made fewer than N (no fault was made)
faulty()
{
	local n=$1 before after
	shift
	before=$(grep -c alloc "$T/faults" 2>/dev/null)
	echo "$n" >"$T/arm"
	kill -USR2 "$D_PID"
	r=$("$@" 2>&1)
	echo 0 >"$T/arm"
	kill -USR2 "$D_PID"
	after=$(grep -c alloc "$T/faults" 2>/dev/null)
	[ "$after" != "$before" ]
}

consistent && ok "before any fault, show and the mount table agree" ||
	not_ok "before any fault, show and the mount table agree"
bad=0 refused=0 points=0
for nth in $(seq 1 80); do
	faulty "$nth" afs --json configure B --no-writable
	missed=$?
	answers "$D_SOCK" || { bad=1; diag "fault $nth: the daemon died"; break; }
	if [ "$missed" != 0 ]; then
		# fewer allocations than nth: every point was tried
		expect_ok "with no fault left to make, configure works" "$r"
		break
	fi
	points=$((points + 1))
	if ! consistent; then
		bad=1
		diag "fault $nth: show and the mount table disagree" "reply: $r" \
			"$(afs --json show B)" "$(mounts_in "$D_MNT/B")"
	fi
	okv=$(printf '%s' "$r" | jget ok 2>/dev/null)
	st=$(bw_state)
	if [ "$okv" = false ]; then
		refused=$((refused + 1))
		if [ "$st" != mounted ] || [ -z "$(printf '%s' "$r" | jget error.message)" ]; then
			bad=1
			diag "fault $nth: a refused configure changed the bot ($T/bw: $st)" "reply: $r"
		fi
	elif [ "$okv" = true ] && [ "$st" != gone ]; then
		bad=1
		diag "fault $nth: configure answered ok but $T/bw is $st"
	fi
	if [ "$st" = gone ]; then
		r=$(afs --json configure B --writable "$T/bw")
		[ "$(printf '%s' "$r" | jget ok)" = true ] || { bad=1; diag "fault $nth: cannot put $T/bw back: $r"; }
	fi
done
[ "$points" -gt 3 ] && ok "allocations failed one at a time at $points points ($refused refused)" ||
	not_ok "allocations failed one at a time at $points points"
[ "$bad" = 0 ] && ok "after each, show and the mount table agree; a refusal changes nothing" ||
	not_ok "after each, show and the mount table agree; a refusal changes nothing"
consistent && ok "at the end, show and the mount table agree" ||
	not_ok "at the end, show and the mount table agree"

# A delete takes a bot with the bots it made, or nothing: the same, one
# failed allocation at a time, on rm of P, which made K.
mkdir -p "$T/p/k"
family()
{
	[ "$(afs --json create --user 65534 P "$T/p" | jget ok)" = true ] &&
		[ "$(AGENT_SOCKET="$D_SOCK.d/P.sock" "$AGENTFS_BIN" --json create K "$T/p/k" |
			jget ok)" = true ]
}
# held: how many of P and K exist, and whether their mounts match ("2 2", "0 0")
held()
{
	local n=0
	[ "$(afs --json show P | jget ok)" = true ] && n=$((n + 1))
	[ "$(afs --json show K | jget ok)" = true ] && n=$((n + 1))
	echo "$n $(mounts_in "$D_MNT" | awk '$2 ~ "/mnt/[PK]/" { n++ } END { print n + 0 }')"
}
family || bail_out "cannot make P and K"
bad=0 points=0
for nth in $(seq 1 80); do
	faulty "$nth" afs --json rm P
	missed=$?
	answers "$D_SOCK" || { bad=1; diag "fault $nth: the daemon died"; break; }
	h=$(held)
	[ "$missed" != 0 ] && { is "$h" "0 0" "with no fault left to make, rm P takes K too"; break; }
	points=$((points + 1))
	case "$h" in
	"0 0") family || { bad=1; diag "fault $nth: cannot make P and K again"; break; } ;;
	"2 2") [ "$(printf '%s' "$r" | jget ok 2>/dev/null)" = true ] &&
		{ bad=1; diag "fault $nth: rm answered ok but P and K are there"; } ;;
	*) bad=1; diag "fault $nth: after rm P, held: $h (bots, mounts)" "reply: $r" ;;
	esac
done
[ "$points" -gt 3 ] && ok "rm failed one allocation at a time at $points points" ||
	not_ok "rm failed one allocation at a time at $points points"
[ "$bad" = 0 ] && ok "after each, P and K were both there or both gone, with their mounts" ||
	not_ok "after each, P and K were both there or both gone, with their mounts"

# Again, counting cJSON's allocations too: the plan is made of them.
afs shutdown >/dev/null
daemon_wait_gone 10 || bail_out "agentfsd does not stop"
LD_PRELOAD="$FAULT_SO" FAULT_ALLOC=1 FAULT_ALLOC_LIBS=libcjson \
	daemon_start --config "$T/conf" || bail_out "agentfsd does not start with the fault library"
is "$(restored_state B)" mounted "B is restored"
bad=0 points=0 refused=0
nb=$(afs --json show B | jget 'bot.mounts.#')
for nth in $(seq 1 80); do
	faulty "$nth" raw '{"op":"exec_plan","name":"B"}'
	missed=$?
	answers "$D_SOCK" || { bad=1; diag "fault $nth: the daemon died"; break; }
	okv=$(printf '%s' "$r" | jget ok 2>/dev/null)
	if [ "$okv" = true ]; then
		if [ "$(printf '%s' "$r" | jget 'binds.#')" != "$nb" ] ||
			[ "$(printf '%s' "$r" | jget 'hide.#')" != 2 ] ||
			[ "$(printf '%s' "$r" | jget hide.0)" != "$D_STATE" ] ||
			[ "$(printf '%s' "$r" | jget hide.1)" != "$D_SOCK.d" ]; then
			bad=1
			diag "fault $nth: a plan that is not whole was given" "$r"
		fi
	elif [ "$okv" = false ]; then
		refused=$((refused + 1))
	fi
	[ "$missed" != 0 ] && { is "$okv" true "with no fault left to make, the plan is given"; break; }
	points=$((points + 1))
done
[ "$points" -gt 3 ] && ok "exec_plan failed one allocation at a time at $points points ($refused refused)" ||
	not_ok "exec_plan failed one allocation at a time at $points points"
[ "$bad" = 0 ] && ok "every plan given was whole: all roots bound, the state and sockets hidden" ||
	not_ok "every plan given was whole: all roots bound, the state and sockets hidden"

afs shutdown >/dev/null
daemon_wait_gone 10 && ok "the daemon shuts down" || not_ok "the daemon shuts down"
is "$(mounts_in "$D_MNT" | wc -l)" 0 "nothing is left mounted"

done_testing
