// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

#include "base/array.h"

size_t ranges_find(const void *arr, size_t n, size_t elem_size, unsigned long long addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const unsigned long long *r = (const void *)((const char *)arr + mid * elem_size);

		if (addr < r[0])
			hi = mid;
		else if (addr >= r[1])
			lo = mid + 1;
		else
			return mid;
	}
	return n;
}

int array_reserve(void **arr, size_t *cap, size_t need, size_t elem_size)
{
	size_t ncap = *cap ? *cap : 16;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * elem_size);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}
