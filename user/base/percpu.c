// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/percpu.h"

int percpu_sum(int fd, __u32 key, __u64 *sum)
{
	int c, cpus = libbpf_num_possible_cpus(), err = 0;
	__u64 *v;

	*sum = 0;
	if (cpus <= 0)
		return cpus ? cpus : -EINVAL;
	v = calloc(cpus, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, v))
		err = -errno;
	for (c = 0; !err && c < cpus; c++)
		*sum += v[c];
	free(v);
	return err;
}

int percpu_sums(int fd, __u32 n, __u64 *sums)
{
	int err = 0, e;
	__u32 k;

	for (k = 0; k < n; k++) {
		e = percpu_sum(fd, k, &sums[k]);
		err = err ? err : e;
	}
	return err;
}
