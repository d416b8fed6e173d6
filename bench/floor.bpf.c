// SPDX-License-Identifier: GPL-2.0
/* The floor: an empty uprobe + uretprobe pair, the least any tracer can cost. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("uprobe")
int BPF_KPROBE(empty_entry)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(empty_exit)
{
	return 0;
}
