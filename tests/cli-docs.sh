#!/bin/bash
# SPDX-License-Identifier: MIT
# cli-docs: the manual agrees with the programs. Every command `agentfs
# --help` lists has a --help of its own; every command and every option in
# every --help is in agentfs(1) (agentfsd's in agentfsd(8)); the mount -o
# options of agentfs(1), `agentfs mount --help` and the parser agree; and the
# bash completion offers every command and every mount -o option. Needs
# neither root nor a daemon.
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
AGENTFS="$top_builddir/src/agentfs"
AGENTFSD="$top_builddir/src/agentfsd"
MAN1="$top_srcdir/man/agentfs.1"
MAN8="$top_srcdir/man/agentfsd.8"
COMPLETION="$top_srcdir/src/agentfs.bash-completion"
. "$top_srcdir/tests/docs-lib.sh"
[ -x "$AGENTFS" ] && [ -x "$AGENTFSD" ] || { echo "Bail out! agentfs is not built"; exit 99; }

commands=$("$AGENTFS" --help | awk '/^  [a-z]/ { print $1 }')
[ -n "$commands" ] || { echo "Bail out! agentfs --help lists no command"; exit 99; }

# options OUTPUT: the options a --help names, one a line (-x or --long)
options()
{
	grep -oE '(^|[][ ,|])(--[a-z][a-z0-9-]*|-[a-zA-Z])\b' | sed 's/^[][ ,|]*//' | sort -u
}
# in_man FILE OPTION: the option is in the page, as mdoc writes it (Fl x, Fl -long)
in_man()
{
	local o=${2#-}
	grep -qE "(^|[ ])Fl $o( |$)|Fl $o Ns|Fl $o , " "$1"
}

# --- every command has a --help -------------------------------------------------------------
left=()
for c in $commands; do
	out=$("$AGENTFS" "$c" --help 2>&1)
	rc=$?
	[ "$rc" = 0 ] && printf '%s\n' "$out" | grep -q "^usage: agentfs $c" || left+=("$c(exit $rc)")
done
missing "every command agentfs --help lists has a --help that exits 0 with its usage" "${left[@]}"

# --- every command and option is in agentfs(1) ----------------------------------------------
left=()
for c in $commands; do
	grep -qE "^\.(It )?Cm $c( |$)" "$MAN1" || left+=("$c")
done
missing "every command agentfs --help lists is in agentfs(1)" "${left[@]}"
left=()
for o in $("$AGENTFS" --help | options); do
	in_man "$MAN1" "$o" || left+=("$o")
done
missing "every option of agentfs --help is in agentfs(1)" "${left[@]}"
for c in $commands; do
	left=()
	for o in $("$AGENTFS" "$c" --help 2>&1 | options); do
		in_man "$MAN1" "$o" || left+=("$o")
	done
	missing "every option of agentfs $c --help is in agentfs(1)" "${left[@]}"
done
left=()
for o in $("$AGENTFSD" --help | options); do
	in_man "$MAN8" "$o" || left+=("$o")
done
missing "every option of agentfsd --help is in agentfsd(8)" "${left[@]}"

# --- mount -o: the manual, --help and the parser -----------------------------------------------
man_o=$(awk '/^\.It Fl o Ar opt/ { f = 1 } f && /^\.It Cm/ { print } f && /^\.El/ { exit }' "$MAN1" |
	sed 's/^\.It //; s/ Ns = Ns Ar [a-z]*/=/g; s/Cm //g; s/ , / /g' | tr ' ' '\n' | grep . | sort -u)
help_o=$("$AGENTFS" mount --help | sed -n '/^  -o /,/^  -h/p' | sed '$d' | tr '\n' ' ' |
	sed 's/.*mount options://; s/([^)]*)//g' | tr ',' '\n' | sed 's/^ *//; s/ *$//; s/=.*/=/' |
	grep . | sort -u)
[ -n "$man_o" ] && [ -n "$help_o" ] || { echo "Bail out! no -o options found"; exit 99; }
left=()
for o in $man_o; do printf '%s\n' "$help_o" | grep -qx -- "$o" || left+=("$o"); done
missing "every -o option of agentfs(1) is in agentfs mount --help" "${left[@]}"
left=()
for o in $help_o; do printf '%s\n' "$man_o" | grep -qx -- "$o" || left+=("$o"); done
missing "every -o option of agentfs mount --help is in agentfs(1)" "${left[@]}"
left=()
for o in $man_o; do
	case $o in fsname=) v=x ;; poll=) v=50 ;; timeout=) v=2 ;; *) v= ;; esac
	out=$("$AGENTFS" mount -o "$o$v" /nonexistent-src /nonexistent-mnt 2>&1)
	case $out in *"unknown mount option"* | *"bad -o"*) left+=("$o") ;; esac
done
missing "the parser takes every -o option of agentfs(1)" "${left[@]}"

# --- quoting: no quote opened inside another (mdoc's Ql and Dq run to the line's end) --------------
if command -v groff >/dev/null; then
	for page in "$MAN1" "$MAN8" "$top_srcdir/man/agentfs-protocol.7"; do
		bad=$(groff -mandoc -Tutf8 -P-cbou "$page" 2>/dev/null | tr '\n' ' ' | tr -s ' ' |
			grep -oE "“[^”]{0,200}“|‘[^’]{0,200}‘" | head -n 3)
		if [ -z "$bad" ]; then
			ok "$(basename "$page"): no quotation opened inside another"
		else
			not_ok "$(basename "$page"): no quotation opened inside another"
			diag "$bad"
		fi
	done
else
	for page in 1 8 7; do echo "ok $((n += 1)) - # SKIP groff is missing"; done
fi

# --- the completion ----------------------------------------------------------------------------
. "$top_srcdir/tests/complete-lib.sh"
offered=$(complete_line "$COMPLETION" agentfs "")
left=()
for c in $commands list; do printf '%s\n' "$offered" | grep -qx "$c" || left+=("$c"); done
missing "the completion offers every command" "${left[@]}"
offered=$(complete_line "$COMPLETION" agentfs mount -o "")
left=()
for o in $man_o; do printf '%s\n' "$offered" | grep -qx -- "$o" || left+=("$o"); done
missing "the completion offers every mount -o option" "${left[@]}"
offered=$(complete_line "$COMPLETION" agentfs mount -o ro,nod)
is_o=$(printf '%s\n' "$offered" | tr '\n' ' ')
[ "$is_o" = "ro,nodev ro,nodiratime " ] && ok "the completion completes the last of comma-separated -o options" ||
	{ not_ok "the completion completes the last of comma-separated -o options"; diag "got: $is_o"; }
offered=$(complete_line "$COMPLETION" agentfs audit --)
printf '%s\n' "$offered" | grep -qx -- --bot && ok "the completion offers audit's options" ||
	{ not_ok "the completion offers audit's options"; diag "got: $offered"; }

echo "1..$n"
