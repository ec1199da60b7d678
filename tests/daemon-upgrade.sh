#!/bin/bash
# SPDX-License-Identifier: MIT
# daemon-upgrade: an upgrade across a change of the mount table's layout
# (fusefs/noderec.c: version 1's 512-byte node records, version 2's 128-byte
# ones) takes the mounts over, and a downgrade across it ends them. Needs the
# agentfsd of the previous layout, named by AGENTFSD_PREV (a build of
# agentfsd before version 2, e.g. of 3492512); skips without it, as in make
# check. A bot at work (daemon-handover.sh's) and files of short and long
# names, one of them held open: the new agentfsd converts the table (its log
# says so) and serves the same mount, the work goes on, the held file and
# every name are found again; after a SIGKILL the next one takes the
# converted table over from the fd store; the previous agentfsd, started
# again, refuses it and mounts the root afresh.
. "$top_srcdir/tests/exec-lib.sh"

[ -n "${AGENTFSD_PREV:-}" ] || skip_all "AGENTFSD_PREV (an agentfsd of table version 1) is not given"
[ -x "$AGENTFSD_PREV" ] && [ -x "$(dirname "$AGENTFSD_PREV")/agentfs-enter" ] ||
	skip_all "AGENTFSD_PREV $AGENTFSD_PREV, or the agentfs-enter beside it, is not executable"
# each with the agentfs-enter beside it, in folders that are root's alone
mkdir -p "$T/prev" "$T/new"
cp "$AGENTFSD_PREV" "$(dirname "$AGENTFSD_PREV")/agentfs-enter" "$T/prev/" &&
	cp "$AGENTFSD" "$top_builddir/src/agentfs-enter" "$T/new/" ||
	bail_out "cannot copy the two agentfsd"
AGENTFSD=$T/prev/agentfsd
. "$top_srcdir/tests/handover-lib.sh"

handover_bot
long=$(printf 'n%.0s' $(seq 200))
mkdir -p "$W/d/D$long"
for n in a bb "$long" "${long:0:40}" "${long:0:60}"; do
	echo "file $n" >"$W/d/$n"
	echo "deep $n" >"$W/d/D$long/$n"
done
own "$W"
# every name looked up through the mount: a node each, in the old table
for n in a bb "$long" "${long:0:40}" "${long:0:60}"; do
	cat "$M/d/$n" "$M/d/D$long/$n" >/dev/null
done
exec 7<"$M/d/D$long/$long"
work_start

AGENTFSD=$T/new/agentfsd
restart_step "an upgrade to table version 2" term_now
like "$(grep 'converted from version 1' "$D_LOG")" "its table converted from version 1" \
	"the new agentfsd says it converted the table"
is "$(cat <&7)" "deep $long" "a file held open across the upgrade reads"
bad=0
for n in a bb "$long" "${long:0:40}" "${long:0:60}"; do
	[ "$(cat "$M/d/$n")" = "file $n" ] && [ "$(cat "$M/d/D$long/$n")" = "deep $n" ] || {
		bad=$((bad + 1))
		diag "${#n}-byte name: $(cat "$M/d/$n" "$M/d/D$long/$n" 2>&1 | tr '\n' ' ')"
	}
done
is "$bad" 0 "every name, short and long, read through the mount after it"
exec 7<&-
exec 7<"$M/d/D$long/${long:0:60}"

restart_step "SIGKILL after the upgrade: the converted table from the fd store" kill9
is "$(grep -c 'converted from version 1' "$D_LOG")" 1 "converted once only"
is "$(cat <&7)" "deep ${long:0:60}" "a file held open across the SIGKILL reads"
exec 7<&-

work_end
is "$WORK_RC" 0 "agentfs exec ends with its command's status 0"
like "$WORK" "errors 0$" "the work saw no error across both ($WORK)"
like "$GIT" "errors 0$" "git committed with no error ($GIT)"
check "git fsck finds nothing wrong" hgit -C "$W/repo" fsck --no-progress

AGENTFSD=$T/prev/agentfsd
if restart_with term_wait; then ok "a downgrade: the previous agentfsd starts"; else not_ok "a downgrade: the previous agentfsd starts"; fi
like "$(grep 'another layout' "$D_LOG")" "another layout than this agentfsd reads" \
	"it refuses the table of version 2, saying why"
if [ "$(mntid "$M")" != "$mid" ]; then ok "and mounts the root afresh"; else not_ok "and mounts the root afresh"; fi
is "$(cat "$M/d/D$long/$long")" "deep $long" "a long name reads in the fresh mount"
done_testing
