// SPDX-License-Identifier: GPL-2.0
/* The floor: an empty uprobe + uretprobe pair. What any uprobe-based tool pays at least. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("uprobe")
int BPF_KPROBE(floor_entry)
{
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(floor_return)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
