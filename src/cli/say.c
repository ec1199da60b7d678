/* SPDX-License-Identifier: MIT */
/*
 * What agentfs and agentfs-local say: die(), the usage errors, and
 * cli_escape for what a bot chose that reaches a terminal.
 */
#include "src/common/agentfs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/ggutil.h"

/*
 * S made safe to print for a person (gg_escape: control characters, C1
 * controls, backslashes and bytes that are not UTF-8 as \n, \t, \\ or \xHH),
 * whole: a path, name, command or message a bot chose cannot forge a line or
 * drive the operator's terminal. Every string the CLI prints in text goes
 * through it; --json output stays exact. The result lives in one of eight
 * buffers used in turn, so one printf may take up to eight; the CLI has one
 * thread. NULL gives "".
 */
const char *cli_escape(const char *s)
{
	static char *ring[8];
	static unsigned next;
	size_t need;
	char **slot;

	if (s == NULL)
		return "";
	need = 4 * strlen(s) + 1; /* \xHH, the longest escape, for each byte */
	slot = &ring[next++ % 8];
	free(*slot);
	*slot = malloc(need);
	if (*slot == NULL) {
		fputs("agentfs: out of memory\n", stderr);
		exit(EXIT_AGENTFS);
	}
	gg_escape(s, *slot, need);
	return *slot;
}

static void vsay(const char *prefix, const char *suffix, const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	fprintf(stderr, "%s%s%s\n", prefix, msg != NULL ? cli_escape(msg) : "out of memory",
		suffix);
	free(msg);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("agentfs: ", "", fmt, ap);
	va_end(ap);
	exit(EXIT_AGENTFS);
}

void die_usage(const char *cmd, const char *fmt, ...)
{
	char prefix[64], suffix[64];
	va_list ap;

	snprintf(prefix, sizeof prefix, "agentfs %s: ", cmd);
	snprintf(suffix, sizeof suffix, " (see agentfs %s --help)", cmd);
	va_start(ap, fmt);
	vsay(prefix, suffix, fmt, ap);
	va_end(ap);
	exit(EXIT_AGENTFS);
}

void usage_error(const char *cmd, const char *arg, int opt)
{
	if (opt != 0)
		die_usage(cmd, "unknown option -%c", opt);
	die_usage(cmd, "unknown option %s", arg != NULL ? arg : "?");
}
