/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tp_btf programs, loaded against the raw tracepoint ids that this boot's
 * first run kept (kbtf.h). libbpf 1.1 reads and parses the kernel's whole
 * BTF (~5 MB through sysfs, ~2900 page faults: 10 ms of CPU here) for any
 * object with a tp_btf program in it, only to find the id of the
 * tracepoint's btf_trace_<name>. fnprof takes the section over: its
 * programs open as raw tracepoints (no kernel BTF wanted), and become
 * tp_btf programs, the kept id given, just before the kernel loads them.
 * A tracepoint not kept is looked up in the BTF read then.
 */
#ifndef FNPROF_TPBTF_H
#define FNPROF_TPBTF_H

/* Takes over SEC("tp_btf/...") for every object opened from now on. 0, or -errno. */
int tpbtf_register(void);

struct bpf_program;
struct bpf_link;

/*
 * Attaches prog (loaded) into *link: a tp_btf program as one (libbpf 1.2
 * and later forget a program's section handler when its type changes, so
 * that bpf_program__attach() and a skeleton's attach no longer know it),
 * any other as bpf_program__attach() does. 0, or -errno.
 */
int tpbtf_attach(const struct bpf_program *prog, struct bpf_link **link);

#endif /* FNPROF_TPBTF_H */
