/* SPDX-License-Identifier: MIT */
/*
 * Fuzzer for gitguard's pure parsers (gitguard/parse.c): the config scanner,
 * the .git file, commondir and booleans.  Every input goes through all four;
 * the checks are the properties gitguard relies on, not just "no crash".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/gitguard.h"
#include "tests/fuzz/fuzz.h"

struct seen {
	unsigned calls;
	unsigned stop_at; /* return non-zero on this call (0: never) */
};

static int collect(void *arg, enum guard_cfg_key key, const char *value)
{
	struct seen *s = arg;
	size_t n;

	FUZZ_CHECK(key == GUARD_CFG_INCLUDE || key == GUARD_CFG_HOOKSPATH ||
		   key == GUARD_CFG_WORKTREE);
	FUZZ_CHECK(value != NULL);
	/* the scanner's value buffer is 4096 bytes, NUL included */
	n = strlen(value);
	FUZZ_CHECK(n < 4096);
	s->calls++;
	if (s->stop_at && s->calls == s->stop_at)
		return 7;
	return 0;
}

static void fuzz_config(const uint8_t *data, size_t size, unsigned stop_at)
{
	struct seen s = {.stop_at = stop_at};
	struct guard_cfg cfg = {.fn = collect, .arg = &s};
	struct guard_cfg cfg2 = {.fn = NULL, .arg = NULL};
	int rc, rc2;

	rc = guard_config_scan((const char *)data, size, &cfg);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == 7);
	if (rc == 7)
		FUZZ_CHECK(stop_at && s.calls == stop_at);
	if (rc == -EINVAL)
		FUZZ_CHECK(cfg.line >= 1);
	if (rc == 0) {
		FUZZ_CHECK(cfg.line == 0);
		FUZZ_CHECK(!stop_at || s.calls < stop_at);
		FUZZ_CHECK(cfg.format >= -1 || cfg.bad_format);
	}
	/* without a callback the verdict is the same (unless the callback stopped it) */
	rc2 = guard_config_scan((const char *)data, size, &cfg2);
	if (rc != 7) {
		FUZZ_CHECK(rc2 == rc);
		FUZZ_CHECK(cfg2.format == cfg.format && cfg2.bad_format == cfg.bad_format &&
			   cfg2.worktree_config == cfg.worktree_config &&
			   cfg2.unknown_ext == cfg.unknown_ext && cfg2.line == cfg.line);
	}
}

typedef int (*path_parser)(const char *buf, size_t len, char *out, size_t outsz);

static void fuzz_path(path_parser fn, const uint8_t *data, size_t size, size_t outsz, bool gitfile)
{
	char *out = malloc(outsz);
	const char *p = (const char *)data;
	size_t n;
	int rc;

	FUZZ_CHECK(out != NULL);
	rc = fn(p, size, out, outsz);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENAMETOOLONG);
	if (rc == 0) {
		n = strlen(out);
		FUZZ_CHECK(n > 0 && n < outsz);
		if (gitfile) {
			FUZZ_CHECK(size >= 8 && memcmp(p, "gitdir: ", 8) == 0);
			p += 8;
			size -= 8;
		}
		FUZZ_CHECK(n <= size && memcmp(out, p, n) == 0);
	}
	free(out);
}

static void fuzz_bool(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	int rc;

	FUZZ_CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	rc = guard_parse_bool(s);
	FUZZ_CHECK(rc == -EINVAL || rc == 0 || rc == 1);
	if (s[0] == '\0')
		FUZZ_CHECK(rc == 0);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t outsz = 4096;

	/* the last byte, when there is one, picks a small output buffer at times */
	if (size > 0 && data[size - 1] < 16)
		outsz = (size_t)data[size - 1] + 1;
	fuzz_config(data, size, 0);
	if (size > 0)
		fuzz_config(data, size, (unsigned)(data[0] & 3));
	fuzz_path(guard_parse_gitfile, data, size, outsz, true);
	fuzz_path(guard_parse_commondir, data, size, outsz, false);
	fuzz_bool(data, size);
	if (guard_parse_bool(NULL) != 1)
		FUZZ_FAIL("guard_parse_bool(NULL) is not true");
	return 0;
}
