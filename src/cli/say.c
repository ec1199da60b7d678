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
 * controls (those cli_escape knows) and U+2028/U+2029; each becomes its
 * \uXXXX escape, which a JSON reader decodes to the same string. A stray
 * byte 0x80-0x9f, not UTF-8 (and so not JSON), is a C1 control to an 8-bit
 * terminal: it goes out as \u0080-\u009f, the closest JSON has. These
 * bytes occur only inside JSON strings. Lives as cli_escape's result does;
 * NULL gives "".
 */
/* Bytes in the UTF-8 sequence at P, or 0 if it is none (a stray or cut byte) */
static size_t utf8_len(const unsigned char *p)
{
	size_t n, i;

	if (p[0] < 0x80)
		return 1;
	n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
	    : p[0] >= 0xe0 && p[0] <= 0xef ? 3
	    : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
					   : 0;
	for (i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* The code point of the sequence at P (N bytes) that cli_json escapes, or 0 */
static unsigned json_unsafe(const unsigned char *p, size_t n)
{
	if (n == 1)
		return p[0] == 0x7f ? 0x7f : 0;
	if (n == 2 && p[0] == 0xc2 && p[1] <= 0x9f)
		return p[1];
	if (n == 2 && p[0] == 0xd8 && p[1] == 0x9c)
		return 0x61c;
	if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 &&
	    ((p[2] >= 0x8e && p[2] <= 0x8f) || (p[2] >= 0xa8 && p[2] <= 0xae)))
		return 0x2000 | (p[2] - 0x80);
	if (n == 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
		return 0x2040 | (p[2] - 0x80);
	return 0;
}

const char *cli_json(const char *t)
{
	static char *ring[2];
	static unsigned next;
	const unsigned char *p = (const unsigned char *)t;
	unsigned cp;
	char **slot, *o;
	size_t n;

	if (t == NULL)
		return "";
	slot = &ring[next++ % 2];
	free(*slot);
	*slot = malloc(6 * strlen(t) + 1); /* DEL: 6 bytes out for 1 in */
	if (*slot == NULL) {
		fputs("agentfs: out of memory\n", stderr);
		exit(EXIT_AGENTFS);
	}
	for (o = *slot; *p; p += n) {
		n = utf8_len(p);
		/* a stray byte: one of 0x80-0x9f is a C1 control to an 8-bit terminal */
		cp = n == 0 ? (*p <= 0x9f && *p >= 0x80 ? *p : 0) : json_unsafe(p, n);
		if (n == 0)
			n = 1;
		if (cp != 0) {
			o += sprintf(o, "\\u%04x", cp);
			continue;
		}
		memcpy(o, p, n);
		o += n;
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
