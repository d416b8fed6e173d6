/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pprof profiles: gzip-compressed profile.proto (github.com/google/pprof),
 * encoded by hand. Sample types samples/count and cpu/nanoseconds.
 */
#ifndef FNPROF_PPROF_H
#define FNPROF_PPROF_H

#include <stddef.h>
#include <linux/types.h>

struct pprof;

struct pprof *pprof_new(__u64 period_ns, __u64 duration_ns);
void pprof_free(struct pprof *p);

/* The id of the location of address ip in function func of object (mapping bounds may be 0). */
__u64 pprof_location(struct pprof *p, __u64 ip, const char *func, const char *object, __u64 map_start,
		     __u64 map_limit, __u64 map_pgoff);

/*
 * The same for an address in inlined code: funcs[0..nr) are the inlined
 * functions, innermost first, and last the function they were compiled into
 * (pprof's Location.line order).
 */
__u64 pprof_location_inlined(struct pprof *p, __u64 ip, const char *const *funcs, int nr, const char *object,
			     __u64 map_start, __u64 map_limit, __u64 map_pgoff);

/* Registers a mapping ahead of the locations: pprof readers take the first one as the program. */
void pprof_mapping(struct pprof *p, const char *object, __u64 start, __u64 limit, __u64 pgoff);

/* One stack (location ids, leaf first) seen count times. */
int pprof_sample(struct pprof *p, const __u64 *locs, int nr, __u64 count);

/* The encoded, gzip-compressed profile, malloc'd into *out. 0 or -errno. */
int pprof_encode(struct pprof *p, unsigned char **out, size_t *len);

#endif /* FNPROF_PPROF_H */
