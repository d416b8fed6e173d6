#!/usr/bin/env python3
"""The single-stepped leaf beside funclatency (issue 36, item 3), in one run.

Usage (root, after `make -C bench`): python3 bench/leaf.py [REPEATS]   (default 5)
    LEAF_VARIANTS="single=--stepped=single;old=/path/to/old/fnprof"   more fnprof rows: extra
                                                                       arguments, or another binary

The bench's workload case wl_o2: `target_tiny` of bt_o2 (`movq $0x1,-0x18(%rsp)` first, then two
more stores, three loads and ret: no instruction any kernel emulates, so its entry is single-stepped)
called through a function pointer in a tight loop. Traced by nothing, by the two floors (empty
uprobe + uretprobe: perf-event links, uprobe_multi links), funclatency and each fnprof variant,
interleaved within each repeat, each run as bench.py's run_one runs it (the target's own ns per
call; the tool's report checked to count every call). Per run: the cost per call (traced ns/call -
untraced ns/call of the same repeat) and the average the tool read (the truth: the untraced loop's
~2 ns a call). Prints each run and the medians, and writes them to results.md (section "leaf").
"""
import datetime
import os
import shlex
import sys

import bench
from results_section import write_section

CASE = next(c for c in bench.CASES if c[0] == "wl_o2")
REFERENCE = ["floor", "floor_multi", "funclatency"]


def variants():
    out = [("fnprof", "")]
    for part in filter(None, os.environ.get("LEAF_VARIANTS", "").split(";")):
        label, _, spec = part.partition("=")
        out.append((label.strip(), spec.strip()))
    return out


def run_variant(label, spec):
    """One fnprof run: spec is extra arguments, or the path of another fnprof binary."""
    orig = bench.tool_argv

    def argv(tool, pid, binpath, fn):
        a = orig("fnprof", pid, binpath, fn)
        if os.path.isfile(spec):
            return [spec] + a[1:]
        return a + shlex.split(spec)

    bench.tool_argv = argv
    try:
        r = bench.run_one(CASE, "fnprof")
    finally:
        bench.tool_argv = orig
    r["tool"] = label
    return r


def one_repeat(rep, vs):
    row = {t: bench.run_one(CASE, t) for t in ["none"] + REFERENCE}
    for label, spec in vs:
        row[label] = run_variant(label, spec)
    base = row["none"].get("ns_per_call")
    for tool, r in row.items():
        if tool == "none":
            continue
        if "error" in r or base is None:
            print(f"rep {rep + 1} {tool:12s} failed: {r.get('error') or row['none'].get('error')}", flush=True)
            continue
        r["cost"] = r["ns_per_call"] - base
        avg = r.get("tool_avg")
        print(f"rep {rep + 1} {tool:12s} cost {r['cost']:8.0f} ns/call  read "
              f"{'-' if avg is None else f'{avg:.0f} ns'}  site {r.get('tool_site') or '-'}", flush=True)
    return row


def summary(runs, tools):
    lines = ["| tool | site | cost per call: median (range) | average read: median (every run) |",
             "|---|---|---|---|"]
    for tool in tools:
        rs = [row[tool] for row in runs if "cost" in row[tool]]
        if not rs:
            continue
        c = sorted(r["cost"] for r in rs)
        a = [r["tool_avg"] for r in rs if r.get("tool_avg") is not None]
        site = rs[0].get("tool_site") or "-"
        read = (f"{bench.fmt_ns(bench.med(a))} ({', '.join(bench.fmt_ns(x) for x in a)})" if a else "-")
        cost = f"{bench.fmt_ns(bench.med(c))} ({bench.fmt_ns(c[0])}..{bench.fmt_ns(c[-1])})"
        lines.append(f"| {tool} | {site} | {cost} | {read} |")
    return "\n".join(lines)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    if os.geteuid() != 0:
        print("leaf: needs root (uprobes, BPF)", file=sys.stderr)
        return 1
    vs = variants()
    named = ", ".join(f"{label} ({spec or 'default'})" for label, spec in vs)
    load0 = os.getloadavg()[0]
    runs = [one_repeat(rep, vs) for rep in range(reps)]
    table = summary(runs, REFERENCE + [v[0] for v in vs])
    print("\n" + table)
    head = (f"## Single-stepped leaf beside funclatency (bench/leaf.py, issue 36 item 3)\n\n"
            f"Machine: {bench.machine()}, load average {load0:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end (shared with other sessions' builds and tests)  \n"
            f"Date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; repeats: {reps}; "
            f"fnprof variants: {named}\n\n"
            f"(wl_o2: `target_tiny` at -O2 through a function pointer, single-stepped entry; cost: traced - "
            f"untraced ns per call of the same repeat; read: the average each tool reported, truth ~2 ns; "
            f"funclatency's from its log2 histogram)\n\n")
    write_section("leaf", head + table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
