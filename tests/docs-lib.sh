# SPDX-License-Identifier: MIT
# tests/docs-lib.sh: the TAP helpers of the tests that read the tree and the
# manual rather than a mount (tests/cli-docs.sh, tests/docs-map.sh): they need
# neither root nor a temporary folder, so not tests/lib.sh. The test prints
# its plan, "1..$n", at its end.
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; }
diag() { printf '# %s\n' "$@"; }
# missing DESC WORDS...: ok when no WORD is left, else the ones that are
missing()
{
	local desc="$1"
	shift
	if [ $# -eq 0 ]; then ok "$desc"; else not_ok "$desc"; diag "missing: $*"; fi
}
