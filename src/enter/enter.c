/* SPDX-License-Identifier: MIT */
/*
 * agentfs-enter: the first program inside an `agentfs exec` sandbox.  bwrap
 * runs it as `agentfs-enter IDS [OPTIONS] -- CMD` (exec-as.c says what each
 * is and what it does with them); agentfsd names it in the exec plan and
 * checked it (src/daemon/plan.c).
 *
 * Why a program of its own and not `agentfs exec --as`: it runs with
 * CAP_SETUID and CAP_SETGID inside the bot's namespaces, so it should load
 * as little as it can.  agentfs linked libgit2 then and, through it, a TLS
 * stack, SSH and Kerberos: twenty libraries that this step never calls,
 * loaded into a process that is still allowed to become any user, and at
 * every sandbox start (about a third of `agentfs exec -- true`'s time over
 * bwrap's own, measured in bench/).  agentfs now leaves those to
 * agentfs-local, but still links cJSON and the whole client; this one links
 * the C library alone.
 */
#include "src/common/agentfs.h"
#include "src/cli/exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Its messages reach the caller's terminal through the command's standard
 * error: fixed texts and the command's own name, which the caller chose.
 */
void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("agentfs exec: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(EXIT_AGENTFS);
}

int main(int argc, char **argv)
{
	return exec_as(argc - 1, argv + 1);
}
