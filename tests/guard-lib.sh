# SPDX-License-Identifier: MIT
# tests/guard-lib.sh: what the gitguard tests (tests/guard-*.sh) share, on
# top of tests/lib.sh.  Each of them starts with
#
#   . "$top_srcdir/tests/lib.sh"
#   . "$top_srcdir/tests/guard-lib.sh"
#
# which skips (exit 77) without agentfs (AGENTFS_TEST_BINDFS=1) or git, and
# runs git_test_env: host git sees none of the caller's configuration.  Then:
#   guard_needs TOOL...          skip unless each TOOL is installed
#   host_setup NAME CMD...       build a layout on the host: CMD in a subshell
#                                that stops at its first failing command, its
#                                output in $T/NAME.log; bail out if it fails
#   make_upstream DIR            a repository with one commit (a submodule's upstream)
#   mount_or_stop DESC CMD...    CMD mounts the root (fs_mount ...): ok DESC,
#                                or not ok and stop the test
# the attacker's side, through a mount:
#   try ARGS..., gtry ARGS...    tests/fs-tryop, tests/guard-tryop (print OK or EROFS ...)
#   refuse DESC CMD...           CMD must print EROFS
#   allow DESC CMD...            CMD must print OK
#   forge_is DESC WANT ARGS...   tests/guard-forge.py ARGS must print just WANT
#   shell_result CMD...          run CMD: print OK, EROFS ("Read-only file
#                                system" on stderr) or what it said
#   write_text FILE TEXT         the shell writes TEXT (and a newline) to FILE,
#   append_text FILE TEXT        or appends it, as a bot's `echo >>` would
#   refused_by DESC RULE CMD...  CMD (try, gtry, python3 "$FORGE", shell_result)
#                                must answer EROFS, and a line the mount's --log
#                                FILE ($GUARD_LOG: one line per refusal, never
#                                rate-limited) added meanwhile must name RULE
#                                ("rule RULE (") and, when CMD has absolute path
#                                arguments, one of them as the refused path
#   refused_at DESC RULE PATH CMD...  the same, the refusal naming PATH (a name
#                                CMD reaches through a symbolic link is logged
#                                by the real one), or any path if PATH is -
#                                (a file with several names is logged by one)
#   log_lines                    how many lines $GUARD_LOG has now
#   refusal_is DESC RULE GOT FROM [PATH...]  for an answer GOT that came from
#                                elsewhere (a process in the background): it
#                                must be EROFS, and a line after the first FROM
#                                lines must name RULE (and one of PATH...)
#   allowed DESC CMD...          CMD must answer OK (or ok) and log no refusal
#   git_refused DESC RULE DIR CMD...  CMD (git) run in DIR must fail, and the
#                                mount's log must name RULE for it
# payloads and markers:
#   $MARKS                       where a payload that ran leaves PWNED-LABEL ($T
#                                unless the test sets it)
#   mark_name LABEL              LABEL made a file name
#   hook LABEL                   a script that leaves $MARKS/PWNED-LABEL
#   payload FILE LABEL [STATUS]  hook LABEL saved as the executable FILE,
#                                exiting STATUS if given
#   fsmonitor_cfg PROGRAM        config text making PROGRAM core.fsmonitor
# and afterwards, with plain git on the host:
#   host_git LABEL DIR           status, diff, log, commit, submodule status must succeed
#   host_commit LABEL DIR        an empty commit must succeed (hooks would run)
#   no_marker DESC [PREFIX]      ok if no $MARKS/PWNED-PREFIX* exists: nothing planted ran

need_agentfs "gitguard rules"
command -v git >/dev/null || skip_all "git is missing"

GTRY="$top_builddir/tests/guard-tryop"
FORGE="$top_srcdir/tests/guard-forge.py"
[ -x "$TRYOP" ] || bail_out "$TRYOP is not built"
[ -x "$GTRY" ] || bail_out "$GTRY is not built"
MARKS="$T"

git_test_env

guard_needs()
{
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || skip_all "$t is missing"
	done
}

# bash ignores set -e inside anything whose status is tested (if, !, ||),
# subshells included: the status is read on the next line instead.
host_setup()
{
	local name="$1" rc
	shift
	(
		set -e
		"$@"
	) >"$T/$name.log" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ]; then
		diag "$(cat "$T/$name.log")"
		bail_out "$name failed (status $rc)"
	fi
}

make_upstream()
{
	git init -q "$1" &&
		echo up >"$1/u" &&
		git -C "$1" add u &&
		git -C "$1" commit -qm upstream
}

mount_or_stop()
{
	local desc="$1"
	shift
	if ! "$@"; then
		not_ok "$desc"
		done_testing
		exit 1
	fi
	ok "$desc"
}

try() { "$TRYOP" "$@"; }
gtry() { "$GTRY" "$@"; }

refuse()
{
	local desc="$1" got
	shift
	got=$("$@" 2>&1)
	is "$got" EROFS "$desc: EROFS"
}

allow()
{
	local desc="$1" got
	shift
	got=$("$@" 2>&1)
	is "$got" OK "$desc: allowed"
}

forge_is()
{
	local desc="$1" want="$2" got
	shift 2
	got=$(python3 "$FORGE" "$@" 2>&1)
	is "$got" "$want" "$desc"
}

shell_result()
{
	local out
	out=$( { "$@"; } 2>&1 >/dev/null)
	case "$out" in
	"") echo OK ;;
	*"Read-only file system"*) echo EROFS ;;
	*) printf '%s\n' "$out" ;;
	esac
}

# GUARD_LOG: the --log FILE of the mount refused_by reads (the test sets it)
GUARD_LOG=${GUARD_LOG:-"$T/guard.log"}

# refusal_named RULE ARGS...: whether the lines on stdin hold a refusal by
# RULE of one of ARGS that is an absolute path (of anything, if none is):
# --log writes "refused OP of PATH: rule RULE (...)", or for a rename or an
# exchange "refused OP of FROM to TO: rule RULE (...)", paths under the mount
# point's real path ($T is one: tests/lib.sh).
refusal_named()
{
	local rule="$1" a paths=()
	shift
	for a in "$@"; do
		[ "${a#/}" != "$a" ] && paths+=("$a")
	done
	awk -v rule="rule $rule (" -v paths="$(printf '%s\n' "${paths[@]}")" '
		BEGIN { n = paths == "" ? 0 : split(paths, p, "\n") }
		index($0, "refused ") && index($0, rule) {
			if (n == 0)
				found = 1
			for (i = 1; i <= n; i++)
				if (index($0, " of " p[i] ": rule ") || index($0, " of " p[i] " to ") ||
				    index($0, " to " p[i] ": rule "))
					found = 1
		}
		END { exit !found }'
}

refused_by()
{
	local desc="$1" rule="$2"
	shift 2
	refused_at "$desc" "$rule" "" "$@"
}

refused_at()
{
	local desc="$1" rule="$2" at="$3" got before
	shift 3
	before=$(log_lines)
	got=$("$@" 2>&1)
	case "$at" in
	"") refusal_is "$desc" "$rule" "$got" "$before" "$@" ;;
	-) refusal_is "$desc" "$rule" "$got" "$before" ;;
	*) refusal_is "$desc" "$rule" "$got" "$before" "$at" ;;
	esac
}

log_lines() { wc -l 2>/dev/null <"$GUARD_LOG" || echo 0; }

refusal_is()
{
	local desc="$1" rule="$2" got="$3" from="$4" new
	shift 4
	new=$(tail -n +"$((from + 1))" "$GUARD_LOG" 2>/dev/null)
	if [ "$got" = EROFS ] && printf '%s\n' "$new" | refusal_named "$rule" "$@"; then
		ok "$desc: EROFS by rule $rule"
	else
		not_ok "$desc: EROFS by rule $rule"
		diag "answer: $got" "logged: ${new:-nothing}"
	fi
}

allowed()
{
	local desc="$1" got before new
	shift
	before=$(wc -l 2>/dev/null <"$GUARD_LOG" || echo 0)
	got=$("$@" 2>&1)
	new=$(tail -n +"$((before + 1))" "$GUARD_LOG" 2>/dev/null | grep refused)
	if { [ "$got" = OK ] || [ "$got" = ok ]; } && [ -z "$new" ]; then
		ok "$desc: allowed"
	else
		not_ok "$desc: allowed"
		diag "answer: $got" "logged: ${new:-nothing}"
	fi
}

git_refused()
{
	local desc="$1" rule="$2" d="$3" before new
	shift 3
	before=$(wc -l <"$GUARD_LOG")
	if (cd "$d" && "$@") >"$T/git.out" 2>&1; then
		not_ok "$desc: refused by rule $rule"
		diag "it succeeded"
		return
	fi
	new=$(tail -n +"$((before + 1))" "$GUARD_LOG")
	if printf '%s\n' "$new" | grep -q "rule $rule ("; then
		ok "$desc: refused by rule $rule"
	else
		not_ok "$desc: refused by rule $rule"
		diag "git: $(cat "$T/git.out")" "logged: ${new:-nothing}"
	fi
}

write_text() { printf '%s\n' "$2" >"$1"; }
append_text() { printf '%s\n' "$2" >>"$1"; }

mark_name()
{
	printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '-'
}

hook()
{
	printf '#!/bin/sh\ntouch %s/PWNED-%s\n' "$MARKS" "$(mark_name "$1")"
}

payload()
{
	{
		hook "$2"
		[ -z "${3:-}" ] || printf 'exit %s\n' "$3"
	} >"$1" && chmod 755 "$1"
}

fsmonitor_cfg()
{
	printf '[core]\n\tfsmonitor = %s\n' "$1"
}

host_git()
{
	local l="$1" d="$2"
	check "host $l: git status" git -C "$d" status
	check "host $l: git diff" git -C "$d" diff
	check "host $l: git log" git -C "$d" log -1
	check "host $l: git commit --allow-empty" git -C "$d" commit -q --allow-empty -m "host after attacks"
	check "host $l: git submodule status" git -C "$d" submodule status
}

host_commit()
{
	check "host: git commit in $1" git -C "$2" commit -q --allow-empty -m "host after attacks"
}

no_marker()
{
	local found='' f
	for f in "$MARKS"/PWNED-"${2:-}"*; do
		[ -e "$f" ] && found="$found ${f##*/}"
	done
	if [ -z "$found" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "markers:$found"
	fi
}
