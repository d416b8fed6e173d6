// SPDX-License-Identifier: GPL-2.0
/* --profile heap: placeholder until heap.bpf.c exists. */
#include <errno.h>

#include "log.h"
#include "prof_src.h"

int heap_start(const struct prof_conf *c, pid_t pid, struct prof_src *out)
{
	log_err("--profile heap is not available yet");
	return -EOPNOTSUPP;
}
