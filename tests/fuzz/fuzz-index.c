/* SPDX-License-Identifier: MIT */
/*
 * Fuzzer for gitguard's X2 and X4 content checks (gitguard/index.c,
 * gitguard/index-split.c, gitguard/seq.c): guard_index_check with SHA-1 and SHA-256 sizes, the
 * strategy files and sequencer/opts.  Properties, not just "no crash": an
 * accepted index has git's header and room for its trailer; an accepted
 * strategy file holds no '/', no control character and at most one line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gitguard/gitguard.h"
#include "tests/fuzz/fuzz.h"

/* What a split index takes from its shared one: each path one git would check out */
static int seen_entry(void *arg, const char *path, uint32_t mode, const unsigned char *oid,
		      const char **why)
{
	(void)arg;
	(void)oid;
	(void)why;
	FUZZ_CHECK(guard_index_path_ok(path, mode));
	return 0;
}

static void fuzz_index(const uint8_t *data, size_t size, size_t hashsz)
{
	const char *why = NULL;
	char hex[2 * 32 + 1];
	uint32_t v;

	if (guard_index_check_hash((const char *)data, size, hashsz, &why) < 0) {
		FUZZ_CHECK(why != NULL);
		return;
	}
	FUZZ_CHECK(size >= 12 + hashsz && !memcmp(data, "DIRC", 4));
	v = (uint32_t)data[4] << 24 | (uint32_t)data[5] << 16 | (uint32_t)data[6] << 8 | data[7];
	FUZZ_CHECK(v >= 2 && v <= 4);
	/* a split index (index-split.c), with itself as its shared index and without one */
	if (guard_index_base((const char *)data, size, hashsz, hex, &why) == 1)
		FUZZ_CHECK(strlen(hex) == 2 * hashsz);
	why = NULL;
	if (guard_index_replaced((const char *)data, size, (const char *)data, size, hashsz, NULL,
				 NULL, &why) < 0)
		FUZZ_CHECK(why != NULL);
	why = NULL;
	if (guard_index_replaced((const char *)data, size, NULL, 0, hashsz, NULL, NULL, &why) < 0)
		FUZZ_CHECK(why != NULL);
	why = NULL;
	if (guard_index_from_shared((const char *)data, size, (const char *)data, size, hashsz,
				    seen_entry, NULL, &why) < 0)
		FUZZ_CHECK(why != NULL);
	why = NULL;
	if (guard_index_split_tree((const char *)data, size, (const char *)data, size, hashsz,
				   &why) < 0)
		FUZZ_CHECK(why != NULL);
}

static void fuzz_strategy(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	size_t i, n = size;

	if (guard_seq_file_check("strategy", (const char *)data, size, &why) == 0) {
		if (n && data[n - 1] == '\n')
			n--;
		if (n && data[n - 1] == '\r')
			n--;
		for (i = 0; i < n; i++)
			FUZZ_CHECK(data[i] != '/' && data[i] >= 0x20 && data[i] != 0x7f);
	} else {
		FUZZ_CHECK(why != NULL);
	}
	why = NULL;
	if (guard_seq_file_check("strategy_opts", (const char *)data, size, &why) == 0)
		FUZZ_CHECK(!memchr(data, '\0', size));
	why = NULL;
	if (guard_seq_file_check("opts", (const char *)data, size, &why) != 0)
		FUZZ_CHECK(why != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	size_t n;

	fuzz_index(data, size, 20);
	fuzz_index(data, size, 32);
	fuzz_strategy(data, size);
	/* the path rule alone, on a short prefix as a C string */
	n = size < sizeof(path) - 1 ? size : sizeof(path) - 1;
	memcpy(path, data, n);
	path[n] = '\0';
	if (guard_index_path_ok(path, 0100644))
		FUZZ_CHECK(path[0] != '/' && strcmp(path, "..") && strncasecmp(path, ".git/", 5));
	return 0;
}
