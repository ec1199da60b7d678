/* SPDX-License-Identifier: MIT */
/*
 * agentfs-local: `agentfs mount`, `umount` and `audit`, the commands that
 * work on a folder here without agentfsd. agentfs runs this program for
 * them (src/cli/agentfs.c, local_run) with its own argv[0] and the command
 * line from the command's name on: `agentfs-local mount [OPTIONS] ...`.
 *
 * Why a program of its own: these are the commands that serve a FUSE
 * mount and read repositories, linked with libfuse3 and libgit2 (and
 * through libgit2 a TLS stack, SSH, Kerberos and pcre2). agentfs without
 * them loads the C library and cJSON alone, which every `agentfs exec` and
 * every request to agentfsd starts faster for (bench/README.md).
 */
#include "src/common/agentfs.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} commands[] = {
		{"mount", cmd_mount},
		{"umount", cmd_umount},
		{"audit", cmd_audit},
	};
	size_t i;

	for (i = 0; argc > 1 && i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fputs("agentfs-local: agentfs runs this program for its mount, umount and audit "
	      "commands; run those (see agentfs --help)\n",
	      stderr);
	return EXIT_AGENTFS;
}
