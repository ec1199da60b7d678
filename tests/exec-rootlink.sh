#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-rootlink: a bot that may write the folder above another bot's root
# (a lead over its task's folder) swaps that folder for a symbolic link.
# bwrap binds a root where its path leads, following links, so the task's
# root could land on the sandbox's /dev, where bwrap then binds
# agentfs-enter and runs it as root by its path: the bot's own program in
# its place, with CAP_SETUID. agentfs exec refuses a root whose path holds a
# link; one swapped in after that look lands under bwrap's own /dev and
# /proc, made after the roots, and agentfs-enter and the bot's socket are
# bound from descriptors, so one landed over their folders in bwrap's view
# of the host (/oldroot) is not what is bound.
. "$top_srcdir/tests/exec-lib.sh"

ex_start_w1
mkdir -p "$W/sub"
own "$W/sub"
out=$(ex w1 -- "$AGENTFS" --json create c1 "$W/sub" </dev/null 2>/dev/null)
expect_ok "inside, w1 creates c1 over $W/sub" "$out"
is "$(ex c1 -- sh -c 'test -c /dev/null && echo ok' </dev/null 2>&1)" ok "c1 starts while its folder is in place"

# $W/sub, seen from $W, as a link to /dev: as many ".." as $W has names
up=$(printf '%s' "$W" | sed 's|/[^/]*|../|g')
# what w1 leaves in c1's folder, which would be the sandbox's /dev: a marker
# and, where agentfs-enter would be bound, a link to its own program
plant="mv $W/sub $W/sub2 && ln -s ${up}dev $W/sub && touch $W/sub2/bot-marker &&
printf '#!/bin/sh\ntouch $W/sub2/pwned\n' >$W/sub2/pwn && chmod 755 $W/sub2/pwn && ln -s pwn $W/sub2/.agentfs-exec"
out=$(ex w1 -- sh -c "$plant" </dev/null 2>&1)
is "$out" "" "w1 swaps c1's folder for a link to /dev and plants its program"
is "$(readlink "$W/sub")" "${up}dev" "on the host, $W/sub is the link"

# --- the link is there when agentfs exec looks ------------------------------------
out=$(ex c1 -- true </dev/null 2>&1)
st=$?
is "$st" 125 "agentfs exec c1 fails (125)"
like "$out" "the root $W/sub is no longer a folder at that path \\(a symbolic link is on the way" \
	"and says the root's path holds a link"
check "the bot's program did not run" test ! -e "$W/sub2/pwned"

# --- the link comes after the look (bwrap's stand-in swaps it in) ----------------
# Put the folder back, let agentfs exec look, and swap it for the link just
# before the real bwrap binds. The root is bound from a descriptor, and bwrap
# checks that what it mounted at the root's path is that folder: the link
# there is seen, and nothing runs.
restore() { rm -f "$W/sub" && mv "$W/sub2" "$W/sub"; }
restore || bail_out "cannot put $W/sub back"
mkdir -p "$T/fakebin"
cat >"$T/fakebin/bwrap" <<EOF
#!/bin/bash
if [ -e "$T/swap" ]; then
	rm -f "$T/swap"
	mv "$W/sub" "$W/sub2" && ln -s "${up}dev" "$W/sub"
fi
if [ -e "$T/swap-mid" ]; then
	rm -f "$T/swap-mid"
	mv "$W/mid" "$W/mid2" && ln -s "$up" "$W/mid"
fi
exec "$BWRAP" "\$@"
EOF
chmod 755 "$T/fakebin/bwrap"
ex_daemon_again --config "$(ex_bwrap_config "$T/fakebin/bwrap")"
restored_state w1 >/dev/null
touch "$T/swap"
out=$(ex c1 -- sh -c 'echo command ran' </dev/null 2>&1)
check "the stand-in swapped the folder in the window" test -L "$W/sub"
like "$out" "Nothing was run" "agentfs exec stops, nothing run ($(echo $out | cut -c1-70))"
unlike "$out" "command ran" "... not the command"
check "the bot's program did not run" test ! -e "$W/sub2/pwned"
restore

# A folder above the root swapped instead (the root c3 is $W/mid/dev, and
# $W/mid becomes a link to /): bwrap finds the folder at the path it
# mounted, so the root lands on the sandbox's /dev. /dev is made after the
# roots: bwrap's own, agentfs-enter in it.
mkdir -p "$W/mid/dev"
own "$W/mid"
out=$(ex w1 -- "$AGENTFS" --json create c3 "$W/mid/dev" </dev/null 2>/dev/null)
expect_ok "inside, w1 creates c3 over $W/mid/dev" "$out"
out=$(ex w1 -- sh -c "touch $W/mid/dev/bot-marker" </dev/null 2>&1)
touch "$T/swap-mid"
out=$(ex c3 -- sh -c 'test -c /dev/null && echo null; test -e /dev/bot-marker && echo marker;
	grep ^CapEff /proc/self/status' </dev/null 2>&1)
check "the stand-in swapped the folder above in the window" test -L "$W/mid"
like "$out" "^null" "the sandbox's /dev is bwrap's own ($(echo $out))"
unlike "$out" "marker" "not the bot's folder bound there"
like "$out" "CapEff:[[:space:]]+0+$" "the command runs without capabilities"
rm -f "$W/mid" && mv "$W/mid2" "$W/mid"

# --- links that lead out of the new root in bwrap's setup ------------------------
# A folder above a root swapped for a link that climbs above "/" (a no-op on
# the host) or names /oldroot lands the root in bwrap's view of the host,
# over what bwrap reads next (its device nodes): X1 refuses such links
# through the lead's mount.
deep=$(printf '%s' "$W" | sed 's|/[^/]*|../|g')
for t in "/oldroot/dev" "//oldroot" "/newroot" "${deep}../oldroot" "${deep}../../usr"; do
	out=$(ex w1 -- ln -s "$t" "$W/lnk" </dev/null 2>&1)
	like "$out" "Read-only file system" "X1 refuses the lead's link to $t"
	rm -f "$W/lnk"
done
out=$(ex w1 -- sh -c "ln -s ${deep}usr $W/lnk && echo made" </dev/null 2>&1)
is "$out" made "a link that climbs to / and back down is made"
rm -f "$W/lnk"
like "$(afs log w1)" "symlink climbing above /" "the log says why"

# --- a root swapped for a link into bwrap's view of the host (/oldroot) -----------
# bwrap reads a bind's source by path in its own mount namespace, where the
# host is /oldroot: a root landed over agentfs-enter's folder there would
# make the bot's file the one bound and run as root. agentfs-enter (and the
# socket) are bound from descriptors opened before bwrap starts.
ENTER_DIR=$(dirname "$(realpath "$T/bin/agentfs-enter")")
mkdir -p "$W/b"
own "$W/b"
out=$(ex w1 -- "$AGENTFS" --json create c2 "$W/sub" --writable "$W/b" </dev/null 2>/dev/null)
expect_ok "inside, w1 creates c2 over $W/sub and $W/b" "$out"
printf '#!/bin/sh\necho PWNED; touch %s/pwned-root\n' "$W/sub" >"$W/b/agentfs-enter"
chmod 755 "$W/b/agentfs-enter"
own "$W/b"
cat >"$T/fakebin/bwrap" <<EOF
#!/bin/bash
if [ -e "$T/swap" ]; then
	rm -f "$T/swap"
	mv "$W/b" "$W/b2" && ln -s "/oldroot$ENTER_DIR" "$W/b"
fi
exec "$BWRAP" "\$@"
EOF
touch "$T/swap"
out=$(ex c2 -- sh -c 'echo command ran; grep ^CapEff /proc/self/status' </dev/null 2>&1)
check "the stand-in swapped $W/b for a link to /oldroot$ENTER_DIR" test -L "$W/b"
unlike "$out" "PWNED" "the bot's program was not run in agentfs-enter's place"
check "... and made nothing as root" test ! -e "$W/sub/pwned-root"
# bwrap binds a descriptor's file and checks it is the one mounted: covered, it stops
like "$out" "Nothing was run" "agentfs exec stops, nothing run ($(echo $out | cut -c1-80))"
unlike "$out" "command ran" "... not even the command"
rm -f "$W/b" && mv "$W/b2" "$W/b"

done_testing
