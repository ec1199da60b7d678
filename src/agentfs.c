/* agentfs: mount a folder through agentfs, or talk to agentfsd. */
#include "src/agentfs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: agentfs [--version] [--help] COMMAND [ARGS...]\n"
	"\n"
	"Commands:\n"
	"  mount [-f] [--ro] [--ro-path SUB]... [--allow-new-repos] [-o OPTS] SOURCE MOUNTPOINT\n"
	"                 mount SOURCE at MOUNTPOINT through agentfs\n"
	"  umount [-z] MOUNTPOINT\n"
	"                 unmount an agentfs mount\n"
	"\n"
	"agentfs COMMAND --help shows a command's options; see agentfs(1).\n";

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("agentfs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void die_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "agentfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see agentfs %s --help)\n", cmd);
	exit(2);
}

void usage_error(const char *cmd, const char *arg, int opt)
{
	if (opt != 0)
		die_usage(cmd, "unknown option -%c", opt);
	die_usage(cmd, "unknown option %s", arg != NULL ? arg : "?");
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
} commands[] = {
	{"mount", cmd_mount},
	{"umount", cmd_umount},
};

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("agentfs %s\n", PACKAGE_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "agentfs: unknown command '%s' (see agentfs --help)\n", argv[1]);
	return 2;
}
