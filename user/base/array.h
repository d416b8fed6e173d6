/* SPDX-License-Identifier: GPL-2.0 */
/* Growable arrays: the one place that doubles a buffer with realloc. */
#ifndef FNPROF_ARRAY_H
#define FNPROF_ARRAY_H

#include <stddef.h>

/*
 * Makes *arr (elements of elem_size bytes, capacity *cap) hold at least need
 * elements, doubling. 0, or -ENOMEM with *arr and *cap untouched.
 */
int array_reserve(void **arr, size_t *cap, size_t need, size_t elem_size);

/* ARRAY_RESERVE(v, n, cap): room for n elements in the array v. */
#define ARRAY_RESERVE(v, n, cap) array_reserve((void **)&(v), &(cap), (n), sizeof(*(v)))

/*
 * Of n elements of elem_size bytes at arr, each opening with two unsigned
 * 64-bit fields start and end, sorted by start and apart: the index of the
 * one whose [start, end) holds addr, by halves; n where none does.
 */
size_t ranges_find(const void *arr, size_t n, size_t elem_size, unsigned long long addr);

/* RANGES_FIND(v, n, addr): the element of v holding addr, or NULL. */
#define RANGES_FIND(v, n, addr) ({ \
	_Static_assert(offsetof(__typeof__(*(v)), start) == 0 && \
		       offsetof(__typeof__(*(v)), end) == sizeof(unsigned long long), "start, end first"); \
	size_t n_ = (n), i_ = ranges_find((v), n_, sizeof(*(v)), (addr)); \
	i_ < n_ ? &(v)[i_] : NULL; \
})

#endif /* FNPROF_ARRAY_H */
