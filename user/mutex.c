// SPDX-License-Identifier: GPL-2.0
/* --profile mutex: placeholder until mutex.bpf.c exists. */
#include <errno.h>

#include "log.h"
#include "prof_src.h"

int mutex_start(const struct prof_conf *c, pid_t pid, struct prof_src *out)
{
	log_err("--profile mutex is not available yet");
	return -EOPNOTSUPP;
}
