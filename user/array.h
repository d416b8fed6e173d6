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

#endif /* FNPROF_ARRAY_H */
