#!/bin/bash
# SPDX-License-Identifier: MIT
# exec-keys: no key crosses into a sandbox, and none comes out. exec would
# hand the command the caller's session keyring (a login's, with the user
# keyring linked in by pam_keyinit), and the kernel keeps one user keyring
# per uid, shared by the host user and every bot of that user. So the
# command gets a session keyring of its own and the keyring calls (add_key,
# keyctl, request_key) fail with EPERM; /proc/keys shows nothing.
. "$top_srcdir/tests/exec-lib.sh"

KEYS="$T/keyring"
cp "$top_builddir/tests/keyring" "$KEYS" || bail_out "tests/keyring is not built"
[ "$("$KEYS" search @s no-such-key-$$)" = ENOKEY ] || skip_all "no kernel keyrings here"
tag="afs-key-$$"

as_user()
{
	setpriv --reuid="$EX_UID" --regid="$EX_GID" --clear-groups "$@"
}
keys_cleanup()
{
	local rc=$? id
	id=$("$KEYS" search @u "$tag-user")
	case "$id" in [0-9]*) "$KEYS" unlink "$id" @u >/dev/null ;; esac
	for d in host chan; do
		id=$(as_user "$KEYS" search @u "$tag-$d")
		case "$id" in [0-9]*) as_user "$KEYS" unlink "$id" @u >/dev/null ;; esac
	done
	(exit "$rc")
	daemon_cleanup
}
trap keys_cleanup EXIT

mkdir -p "$T/w1" "$T/w2" "$T/d1"
own "$T/w1" "$T/w2" "$T/d1"
daemon_start || bail_out "agentfsd did not start"
check "create w1 (no network)" afs create w1 "$T/w1" --no-network
check "create w2 (network): the filter is there with network too" afs create w2 "$T/w2" --network
check "create d1 (danger-full-access, as $EX_USER)" afs create d1 "$T/d1" --sandbox danger-full-access

# --- root's keys: a session keyring as pam_keyinit makes it -----------------------
# The caller runs in a session keyring of its own holding a secret, with root's
# user keyring linked in (as after a login), and root's user keyring holds one too.
cat >"$T/session.sh" <<'EOF'
K=$1 tag=$2
shift 2
s=$("$K" add "$tag-sess" sess-secret @s)
"$K" link @u @s >/dev/null
u=$("$K" add "$tag-user" user-secret @u)
x() { "$@" </dev/null 2>&1; }
echo "host-read $("$K" read "$s") $("$K" read "$u")"
for bot in w1 w2; do
	echo "$bot-read-sess $(x "$@" "$bot" -- "$K" read "$s")"
	echo "$bot-read-user $(x "$@" "$bot" -- "$K" read "$u")"
	echo "$bot-search $(x "$@" "$bot" -- "$K" search @s "$tag-user")"
	echo "$bot-add $(x "$@" "$bot" -- "$K" add "$tag-plant" planted @s)"
	echo "$bot-proc-keys $(x "$@" "$bot" -- sh -c "grep -c -- '$tag' /proc/keys")"
done
echo "planted $("$K" search @s "$tag-plant")"
echo "d1-read-sess $(x "$@" d1 -- "$K" read "$s")"
echo "d1-search $(x "$@" d1 -- "$K" search @s "$tag-sess")"
EOF
out=$("$KEYS" session -- bash "$T/session.sh" "$KEYS" "$tag" "$AGENTFS" --socket "$D_SOCK" exec 2>&1)
field()
{
	printf '%s\n' "$out" | sed -n "s/^$1 //p"
}
is "$(field host-read)" "sess-secret user-secret" "the caller reads both of its keys (the test is sound)"
for bot in w1 w2; do
	is "$(field $bot-read-sess)" EPERM "$bot: the caller's session key cannot be read inside (EPERM)"
	is "$(field $bot-read-user)" EPERM "$bot: root's user key (linked from the session) cannot be read"
	is "$(field $bot-search)" EPERM "$bot: the caller's keyrings cannot be searched"
	is "$(field $bot-add)" EPERM "$bot: no key can be planted in the caller's session keyring"
	is "$(field $bot-proc-keys)" 0 "$bot: /proc/keys inside lists none of them"
done
is "$(field planted)" ENOKEY "the caller's session keyring holds nothing a bot planted"
# Unconfined, as its user: no filter, but a session keyring of its own all the same.
is "$(field d1-read-sess)" EACCES "d1 (danger-full-access) cannot read the caller's session key"
is "$(field d1-search)" ENOKEY "d1's session keyring is its own: the caller's key is not in it"

# --- two bots of one user, and that user on the host ----------------------------
# The kernel keeps one user keyring per uid: the host user's and every bot's of
# that user. A key the user keeps there (readable by the user) stays out of
# reach, and no bot can leave one there for another.
hk=$(as_user "$KEYS" add "$tag-host" host-secret @u 0x3f030000)
case "$hk" in
[0-9]*) ok "$EX_USER keeps a key in its user keyring" ;;
*) not_ok "$EX_USER keeps a key in its user keyring ($hk)" ;;
esac
is "$(as_user "$KEYS" read "$hk")" host-secret "$EX_USER reads it on the host (the test is sound)"
is "$(ex w1 -- "$KEYS" read "$hk" </dev/null 2>&1)" EPERM "a bot of $EX_USER cannot read it"
is "$(ex w1 -- "$KEYS" search @u "$tag-host" </dev/null 2>&1)" EPERM \
	"a bot of $EX_USER cannot search its user's keyring"
is "$(ex w1 -- sh -c "grep -c -- '$tag' /proc/keys" </dev/null 2>&1)" 0 \
	"nor see the key's name in /proc/keys"
is "$(ex w1 -- "$KEYS" add "$tag-chan" hello @u 0x3f030000 </dev/null 2>&1)" EPERM \
	"w1 cannot leave a key in the user keyring"
is "$(ex w2 -- "$KEYS" search @u "$tag-chan" </dev/null 2>&1)" EPERM \
	"w2, a bot of the same user, finds nothing of w1's"
is "$(as_user "$KEYS" search @u "$tag-chan")" ENOKEY "the user's keyring holds nothing a bot left"
is "$(ex w1 -- "$KEYS" session -- true </dev/null 2>&1)" \
	"keyring: join a session keyring: Operation not permitted" \
	"a command cannot make a session keyring of its own either"

done_testing
