/* SPDX-License-Identifier: MIT */
/* Minimal TAP output for the gitguard unit tests. */
#ifndef GUARD_TAP_H
#define GUARD_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static void tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
