# SPDX-License-Identifier: MIT
# tests/complete-lib.sh: runs the bash completion without bash-completion
# installed, for tests/cli-docs.sh (the source tree's script) and
# tests/install.sh (the installed one). Needs $AGENTFS.
#
# complete_line SCRIPT WORD...: what the bash completion SCRIPT offers for the
# last WORD of the command line WORD..., one a line (in a subshell, with
# bash-completion's helpers reduced to what the script calls; the command
# after exec's -- shows as command-at-N).
complete_line()
{
	(
		cl_script=$1
		shift
		_init_completion()
		{
			cur=${COMP_WORDS[COMP_CWORD]}
			prev=${COMP_WORDS[COMP_CWORD - 1]}
			words=("${COMP_WORDS[@]}")
			cword=$COMP_CWORD
		}
		_filedir() { :; }
		_command_offset() { COMPREPLY=(command-at-$1); }
		compopt() { :; }
		complete() { :; }
		. "$cl_script"
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		COMPREPLY=()
		_agentfs "$AGENTFS" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}"
	)
}
