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

/*
 * JSON text T (cJSON's, or the daemon's reply as it came) safe for a
 * terminal and still the same JSON: cJSON escapes only what is below 0x20,
 * so a bot's name could carry DEL, the C1 controls in UTF-8 (U+009B is a
 * CSI, U+009D an OSC: set the clipboard, rewrite a line), the bidi
 * controls (those cli_escape knows) and U+2028/U+2029; each becomes its \uXXXX escape, which a JSON
 * reader decodes to the same string. These bytes occur only inside JSON
 * strings. Lives as cli_escape's result does; NULL gives "".
 */
const char *cli_json(const char *t)
{
	static char *ring[2];
	static unsigned next;
	const unsigned char *p = (const unsigned char *)t;
	unsigned cp;
	char **slot, *o;

	if (t == NULL)
		return "";
	slot = &ring[next++ % 2];
	free(*slot);
	*slot = malloc(6 * strlen(t) + 1); /* DEL: 6 bytes out for 1 in */
	if (*slot == NULL) {
		fputs("agentfs: out of memory\n", stderr);
		exit(EXIT_AGENTFS);
	}
	for (o = *slot; *p;) {
		cp = 0;
		if (p[0] == 0x7f)
			cp = 0x7f;
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			cp = p[1];
		else if (p[0] == 0xd8 && p[1] == 0x9c)
			cp = 0x61c;
		else if (p[0] == 0xe2 && p[1] == 0x80 &&
			 ((p[2] >= 0x8e && p[2] <= 0x8f) || (p[2] >= 0xa8 && p[2] <= 0xae)))
			cp = 0x2000 | (p[2] - 0x80);
		else if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
			cp = 0x2040 | (p[2] - 0x80);
		if (cp == 0) {
			*o++ = (char)*p++;
			continue;
		}
		o += sprintf(o, "\\u%04x", cp);
		p += cp == 0x7f ? 1 : cp < 0x800 ? 2 : 3;
	}
	*o = '\0';
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
