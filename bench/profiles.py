#!/usr/bin/env python3
"""Overhead of the --profile offcpu, mutex and heap profiles on their target (part of make bench).

Each load of bench/targets/profload.c (alloc: malloc+free pairs; switch: pipe ping-pong between two
threads; mutex: 4 threads on one lock) runs untraced and under fnprof --profile KIND, interleaved,
REPEATS times; the target times its own loop. Medians. The cost per event divides the extra time by
the events fnprof saw (allocation calls, waits). fnprof's own CPU time comes from wait4().
Writes its table into bench/results.md between the "profiles" markers (appended if absent).

Usage: bench/profiles.py [--repeats N] [--quick]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from bpfstats import bpf_stats, repeats_arg
from results_section import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FNPROF = os.path.join(ROOT, "fnprof")
LOAD = os.path.join(HERE, ".output", "profload")

# (profile, load, ops, what one op is, which events to divide by, fnprof's other arguments)
CASES = [
    ("heap", "alloc", 400000, "malloc(64)+free pair", "allocation calls", []),
    ("offcpu", "switch", 40000, "pipe round trip on one CPU: 2 switches", "waits", []),
    ("mutex", "mutex", 20000, "lock, 20 us held, unlock; 4 threads", "futex waits", []),
    # --max-overhead 5: every probe in would cost ~100% (free's alone ~35%: it goes in bursts too) ...
    ("heap", "alloc2", 1000000, "malloc+free, 2 us of work", "allocation calls", ["--max-overhead", "5"]),
    # ... and ~4% (free's alone ~1.5%: it stays in; the allocations' probes come in bursts)
    ("heap", "alloc50", 40000, "malloc+free, 50 us of work", "allocation calls", ["--max-overhead", "5"]),
]


def prog_ids(pid):
    """Ids of the BPF programs process pid holds a file descriptor of (from /proc/PID/fdinfo)."""
    ids = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return ids
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            m = re.search(r"prog_id:\s*(\d+)", open(f"/proc/{pid}/fdinfo/{fd}").read())
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def bpf_prog_times(pid):
    """{prog id: (run_time_ns, run_cnt)} of the BPF programs process pid holds (kernel.bpf_stats_enabled)."""
    ids = prog_ids(pid)
    try:
        progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                                          text=True, timeout=10).stdout or "[]") if ids else []
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0)) for p in progs if p["id"] in ids}


def run_load(load, ops, profile=None, args=()):
    """ns per op of one run, and with a profile: its last JSON report and its BPF programs' time (ns)."""
    cmd = [LOAD, load, str(ops)]
    rep, bpf_ns = None, None
    if profile:
        d = tempfile.mkdtemp()
        out = os.path.join(d, "r.json")
        p = subprocess.Popen([FNPROF, "--profile", profile] + list(args) + ["--json", "-o", out, "--"] + cmd,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The programs' own run time, read while fnprof holds them (they go with it).
        times = {}
        while p.poll() is None:
            times.update(bpf_prog_times(p.pid))
            time.sleep(0.05)
        p.stdout_text, _ = p.communicate()
        bpf_ns = sum(t for t, _ in times.values())
        reps = [json.loads(l) for l in open(out) if l.startswith("{")]
        rep = reps[-1] if reps else None
        os.unlink(out)
        os.rmdir(d)
        stdout = p.stdout_text
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        stdout = p.stdout
    m = re.search(r"ns_per_op=([\d.]+)", stdout)
    if p.returncode or not m:
        sys.exit(f"profiles bench: {' '.join(cmd)} failed")
    return float(m.group(1)), rep, bpf_ns


def bench_case(profile, load, ops, repeats, args):
    base, prof, events, bpf_per_event = [], [], [], []
    for _ in range(repeats):
        base.append(run_load(load, ops)[0])
        ns, rep, bpf_ns = run_load(load, ops, profile, args)
        prof.append(ns)
        events.append(rep["events"] if rep else 0)
        if rep and rep["events"] and bpf_ns:
            bpf_per_event.append(bpf_ns / rep["events"])
    b, p = statistics.median(base), statistics.median(prof)
    ev = statistics.median(events)
    extra_ns = (p - b) * ops
    return {"profile": " ".join([profile] + list(args)), "load": load, "ops": ops, "base_ns": b, "prof_ns": p,
            "slowdowns": [100 * (x - b) / b for x in prof],
            "slowdown_pct": 100 * (p - b) / b, "events": ev,
            "per_event_ns": extra_ns / ev if ev else None,
            "bpf_per_event_ns": statistics.median(bpf_per_event) if bpf_per_event else None}


def table(rows):
    lines = ["### Other profiles (--profile offcpu, mutex, heap)", "",
             "(bench/profiles.py: bench/targets/profload.c untraced and under fnprof --profile KIND, "
             "interleaved, medians; the target times its own loop; cost per event = extra time / events fnprof "
             "saw; BPF per event = the run time of fnprof's BPF programs (kernel.bpf_stats_enabled) / events, "
             "without the probes' traps; with --max-overhead the probes are in for part of the run only, so the "
             "cost per event is not the probes' but the slowdown's, and the slowdown column gives each run's too)",
             "",
             "| profile | load (one op) | ops | untraced ns/op | profiled ns/op | slowdown | events seen | cost per event | BPF per event |",
             "|---------|---------------|-----|----------------|----------------|----------|-------------|----------------|---------------|"]
    for r, (_, _, _, what, evname, args) in zip(rows, CASES):
        per = f"{r['per_event_ns'] / 1000:.2f} us per {evname[:-1] if evname.endswith('s') else evname}" \
            if r["per_event_ns"] is not None else "-"
        bpf = f"{r['bpf_per_event_ns']:.0f} ns" if r["bpf_per_event_ns"] else "-"
        lines.append(f"| {r['profile']} | {r['load']} ({what}) | {r['ops']} | {r['base_ns']:.0f} | "
                     f"{r['prof_ns']:.0f} | {r['slowdown_pct']:+.1f}%"
                     + (f" ({', '.join(f'{x:+.1f}' for x in r['slowdowns'])})" if args else "")
                     + f" | {r['events']:.0f} | {per} | {bpf} |")
    return "\n".join(lines) + "\n"


def main():
    reps, quick = repeats_arg()
    t0 = time.time()
    with bpf_stats():
        rows = [bench_case(p, l, n // 4 if quick else n, reps, args) for p, l, n, _, _, args in CASES]
    text = table(rows)
    print(text)
    print(f"profiles bench: {time.time() - t0:.0f} s")
    write_section("profiles", text)


if __name__ == "__main__":
    main()
