/* SPDX-License-Identifier: MIT */
/* The doubling array of gitguard's tables (ggutil.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gitguard/ggutil.h"

int gg_grow(void *array, size_t *alloc, size_t need, size_t size, size_t min)
{
	size_t na = *alloc ? *alloc : (min ? min : 1);
	void *v;

	if (need <= *alloc)
		return 0;
	while (na < need) {
		if (na > SIZE_MAX / 2)
			return -ENOMEM;
		na *= 2;
	}
	if (na > SIZE_MAX / size)
		return -ENOMEM;
	/* the caller's pointer is of another type: read and write it as bytes */
	memcpy(&v, array, sizeof(v));
	v = realloc(v, na * size);
	if (!v)
		return -ENOMEM;
	memcpy(array, &v, sizeof(v));
	*alloc = na;
	return 0;
}
