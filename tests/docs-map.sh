#!/bin/bash
# SPDX-License-Identifier: MIT
# docs-map: the repository explains itself.  Every rule code the code can
# refuse by (gitguard's rule table in gitguard/rules.c, and the codes fusefs
# refuses by itself) has its entry in agentfs(1)'s WHAT IS PROTECTED and in
# doc/DESIGN.md's table, and every entry there is a code the code uses; every
# source file of gitguard/, fusefs/ and src/ is named in its folder's map
# (gitguard/README's Files, fusefs/fs-int.h's "Which file owns what", the
# Files of the README in each of src/'s folders, and src/ holds none
# outside them); and no file points at design
# notes that do not ship with it.  Needs neither root nor a build.
top_srcdir=${top_srcdir:-.}
MAN1="$top_srcdir/man/agentfs.1"
. "$top_srcdir/tests/docs-lib.sh"
# src/'s folders, one per program and one for what two share (src/README)
SRC_DIRS="src/common src/cli src/local src/enter src/daemon"
for f in "$MAN1" "$top_srcdir/gitguard/rules.c" "$top_srcdir/gitguard/README" \
	"$top_srcdir/fusefs/fs-int.h" "$top_srcdir/src/README" "$top_srcdir/doc/DESIGN.md" \
	$(for d in $SRC_DIRS; do echo "$top_srcdir/$d/README"; done); do
	[ -r "$f" ] || { echo "Bail out! $f cannot be read"; exit 99; }
done

# ---- rule codes: the code's and the manual's ------------------------------------
# gitguard's: the names of its table ([GUARD_RULE_X2] = {"X2", ...}), and the
# enum (GUARD_RULE_X2) wherever the code names one (every rule is gitguard's:
# fusefs decides none); GUARD_RULE_RO_MOUNT and _RO_PATH are the mount's
# settings, no rule of the table, named by their words ("read-only mount");
# a rule name in quotes passed to a refusal outside gitguard would be a rule
# decided there, and is counted too
code_rules=$(
	{
		sed -n 's/^.*\[GUARD_RULE_[A-Z0-9]*\] = {"\([A-Z][A-Z0-9]*\)".*/\1/p' \
			"$top_srcdir/gitguard/rules.c"
		cat "$top_srcdir"/gitguard/*.[ch] "$top_srcdir"/fusefs/*.[ch] "$top_srcdir"/src/*/*.c |
			grep -oE 'GUARD_RULE_[A-Z][A-Z0-9_]*' | sed 's/^GUARD_RULE_//'
		cat "$top_srcdir"/fusefs/*.c | tr '\n' ' ' |
			grep -oE 'refuse\([^;]*"[A-Z][A-Z0-9]?[0-9]?"' | grep -oE '"[A-Z][A-Z0-9]*"$' |
			tr -d '"'
	} | grep -vxE 'NONE|MAX|RO_MOUNT|RO_PATH' | sort -u
)
[ -n "$code_rules" ] || { echo "Bail out! no rule code found in the code"; exit 99; }
# the tags of WHAT IS PROTECTED's rule list: ".It G1", ".It \&D1"
man_rules=$(awk '/^\.Sh /{in_ = ($0 == ".Sh WHAT IS PROTECTED")} in_' "$MAN1" |
	sed -n 's/^\.It \(\\&\)\{0,1\}\([A-Z][A-Z0-9]\{0,2\}\)$/\2/p' | sort -u)
[ -n "$man_rules" ] || { echo "Bail out! agentfs(1) has no WHAT IS PROTECTED rule list"; exit 99; }
missing "every rule code the code uses has its entry in agentfs(1) WHAT IS PROTECTED" \
	$(comm -23 <(echo "$code_rules") <(echo "$man_rules"))
missing "every rule agentfs(1) WHAT IS PROTECTED lists is a code the code uses" \
	$(comm -13 <(echo "$code_rules") <(echo "$man_rules"))
# doc/DESIGN.md's table: | CODE | what it keeps from the bot |
doc_rules=$(sed -n 's/^| \([A-Z][A-Z0-9]\{0,2\}\) | .*/\1/p' "$top_srcdir/doc/DESIGN.md" | sort -u)
missing "doc/DESIGN.md's rule table has every rule code the code uses, and no other" \
	$(comm -3 <(echo "$code_rules") <(echo "$doc_rules"))

# ---- each folder's map names each of its files --------------------------------
# map_names FILE FIRST LAST: the file names (or globs: ops*.c) in FILE's
# lines from the one matching FIRST to the one matching LAST
map_names()
{
	sed -n "/$2/,/$3/p" "$1" | grep -oE '[A-Za-z0-9_*.-]+\.(c|h)\b' | sort -u
}
# unmapped DIR NAMES...: the .c and .h files of DIR that no NAME matches
unmapped()
{
	local dir="$1" f b pat hit
	shift
	for f in "$top_srcdir/$dir"/*.[ch]; do
		[ -e "$f" ] || continue
		b=${f##*/}
		hit=
		for pat in "$@"; do
			# shellcheck disable=SC2053 # a glob on purpose (ops*.c)
			[[ $b == $pat ]] && hit=1 && break
		done
		[ -n "$hit" ] || printf '%s ' "$dir/$b"
	done
}
missing "gitguard/README's Files names every file of gitguard/" \
	$(unmapped gitguard $(map_names "$top_srcdir/gitguard/README" '^Files$' '^Errors$'))
for d in $SRC_DIRS; do
	# a folder's README: its Files to the end
	missing "$d/README's Files names every file of $d/" \
		$(unmapped "$d" $(map_names "$top_srcdir/$d/README" '^Files$' '^\.$'))
done
missing "src/ holds its C files in its folders, none beside them" $(unmapped src)
missing "src/README names each folder of src/ that holds C files" \
	$(for d in "$top_srcdir"/src/*/; do
		d=${d%/}
		d=src/${d##*/}
		ls "$top_srcdir/$d"/*.[ch] >/dev/null 2>&1 || continue
		case " $SRC_DIRS " in *" $d "*) ;; *) printf '%s ' "$d" ;; esac
	done)
missing "fusefs/fs-int.h's map names every file of fusefs/" \
	$(unmapped fusefs fs-int.h \
		$(map_names "$top_srcdir/fusefs/fs-int.h" 'Which file owns what' '^ \*\/'))

# ---- one decision ---------------------------------------------------------------
# Every allow and refuse of a write-ish operation is gitguard's guard_check():
# fusefs's decision (policy.c) and its handlers (ops*.c) gather facts and
# name no rule code, neither as the enum nor as a quoted code they refuse by
rule_re='GUARD_RULE_[A-Z][A-Z0-9_]*|"[GDWXHR][0-9]{1,2}"|"LK"|"HL"'
picked=$(cd "$top_srcdir" && grep -noE "$rule_re" fusefs/policy.c fusefs/ops*.c | tr '\n' ' ')
missing "fusefs/policy.c and ops*.c pick no rule: guard_check does" $picked

# ---- the repository stands on its own --------------------------------------------
# design notes kept beside the repository, never in it: nothing may point
# there (doc/DESIGN.md is the repository's own)
refs=$(cd "$top_srcdir" && git ls-files 2>/dev/null | grep -v '^tests/docs-map\.sh$' |
	xargs -r grep -lE '(^|[^/])(DESIGN|STYLE|GIT-VECTORS)\.md' 2>/dev/null)
if [ -d "$top_srcdir/.git" ] || [ -f "$top_srcdir/.git" ]; then
	missing "no file points at design notes that do not ship" $refs
else
	echo "ok $((n += 1)) - # SKIP not a git checkout: the files to read are not known"
fi

echo "1..$n"
