// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the perf map reader (user/stacks/perfmap.c) on arbitrary text.
 * /tmp/perf-PID.map is written by the target (its JIT runtime, or anything
 * running as its user): no content may crash fnprof.
 *
 * Input: the file's bytes, added in two appends (split at the first byte's
 * share of the input), then looked up at addresses the input gives.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "base/budget.h"
#include "stacks/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct budget budget;
	static struct perfmaps *files;
	struct perfmap *pm;
	size_t split = size ? data[0] * size / 256 : 0, used, i;
	__u64 addr;

	if (!files) {
		budget_init(&budget, BUDGET_DEFAULT);
		files = perfmaps_new(&budget);
	}
	pm = files ? perfmap_new(getpid(), files) : NULL;
	if (!pm)
		return 0;
	/* What a runtime appends while fnprof reads: the part after the last newline comes again. */
	used = perfmap_add_text(pm, (const char *)data, split);
	perfmap_add_text(pm, (const char *)data + used, size - used);
	for (i = 0; i + sizeof(addr) <= size && i < 16 * sizeof(addr); i += sizeof(addr)) {
		memcpy(&addr, data + i, sizeof(addr));
		perfmap_lookup(pm, addr);
		perfmap_lookup(pm, addr & 0xffffffff);
	}
	perfmap_nr(pm);
	perfmap_free(pm);
	return 0;
}
