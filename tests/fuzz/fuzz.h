/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fuzz targets and their replay program: a failed property
 * aborts, so libFuzzer saves the input and the replay test reports it.
 */
#ifndef AGENTFS_FUZZ_H
#define AGENTFS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_FAIL(...)                                                                \
	do {                                                                          \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                      \
		fprintf(stderr, __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                  \
		abort();                                                              \
	} while (0)

#define FUZZ_CHECK(cond)                                                              \
	do {                                                                          \
		if (!(cond))                                                          \
			FUZZ_FAIL("property failed: %s", #cond);                     \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#endif
