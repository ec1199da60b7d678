/* SPDX-License-Identifier: MIT */
/* guard-idx FILE...: run gitguard's X2 index check on each file; exit 1 if any is refused. */
#include <stdio.h>
#include <stdlib.h>

#include "gitguard/gitguard.h"

int main(int argc, char **argv)
{
	int i, bad = 0;

	for (i = 1; i < argc; i++) {
		const char *why = NULL;
		size_t len = 0, n;
		char *buf = malloc(GUARD_INDEX_MAX + 1);
		FILE *f = fopen(argv[i], "rb");

		if (!buf || !f) {
			fprintf(stderr, "guard-idx: cannot read %s\n", argv[i]);
			return 2;
		}
		while ((n = fread(buf + len, 1, GUARD_INDEX_MAX + 1 - len, f)) > 0)
			len += n;
		fclose(f);
		if (guard_index_check(buf, len, &why) < 0) {
			printf("%s: refused: %s\n", argv[i], why);
			bad = 1;
		} else {
			printf("%s: ok\n", argv[i]);
		}
		free(buf);
	}
	return bad;
}
