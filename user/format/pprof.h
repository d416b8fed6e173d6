/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pprof profiles: gzip-compressed profile.proto (github.com/google/pprof),
 * encoded by hand. The CPU profile's sample types are samples/count and
 * cpu/nanoseconds; other profiles name their own, with one label per sample.
 */
#ifndef FNPROF_PPROF_H
#define FNPROF_PPROF_H

#include <stddef.h>
#include <linux/types.h>

struct pprof;

#define PPROF_MAX_TYPES 4

/* A sample type or the period's type: ("delay", "nanoseconds"). The strings must outlive the pprof. */
struct pprof_type {
	const char *type, *unit;
};

/* The CPU profile: samples/count and cpu/nanoseconds, one sample each period_ns. */
struct pprof *pprof_new(__u64 period_ns, __u64 duration_ns);
/* A profile with nr (1..PPROF_MAX_TYPES) values per sample. NULL: no memory or bad nr. */
struct pprof *pprof_new_types(const struct pprof_type *types, int nr, struct pprof_type period_type,
			      __u64 period, __u64 duration_ns);
void pprof_free(struct pprof *p);

/* The sample type readers show unless told otherwise (type must outlive p). */
void pprof_default_type(struct pprof *p, const char *type);

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

/* One stack (location ids, leaf first) seen count times (pprof_new's profiles). */
int pprof_sample(struct pprof *p, const __u64 *locs, int nr, __u64 count);

/* One stack with one value per sample type, and a string label (label_key NULL: none). 0 or -errno. */
int pprof_sample_values(struct pprof *p, const __u64 *locs, int nr, const __u64 *values, const char *label_key,
			const char *label_str);

/*
 * -a, -p P1,P2,...: pprof_sample_values' sample of process pid, labelled pid
 * (a number) and comm (its name), and label_key (NULL: none) as there. 0 or -errno.
 */
int pprof_sample_process(struct pprof *p, const __u64 *locs, int nr, const __u64 *values, __u32 pid,
			 const char *comm, const char *label_key, const char *label_str);

/* The encoded, gzip-compressed profile, malloc'd into *out. 0 or -errno. */
int pprof_encode(struct pprof *p, unsigned char **out, size_t *len);

#endif /* FNPROF_PPROF_H */
