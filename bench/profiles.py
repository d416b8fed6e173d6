#!/usr/bin/env python3
"""Overhead of the --profile offcpu, mutex and heap profiles on their target (part of make bench).

Each load of bench/targets/profload.c (alloc: malloc+free pairs; switch: pipe ping-pong between two
threads; mutex: 4 threads on one lock) runs untraced and under fnprof --profile KIND, interleaved,
REPEATS times; the target times its own loop. Medians. The cost per event divides the extra time by
the events fnprof saw (allocation calls, waits). fnprof's own CPU time comes from wait4().
Writes its table into bench/results.md between the "profiles" markers (appended if absent).

Usage: bench/profiles.py [--repeats N] [--quick]
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FNPROF = os.path.join(ROOT, "fnprof")
LOAD = os.path.join(HERE, ".output", "profload")

# (profile, load, ops, what one op is, which events to divide by)
CASES = [
    ("heap", "alloc", 400000, "malloc(64)+free pair", "allocation calls"),
    ("offcpu", "switch", 40000, "pipe round trip (2 switches each way)", "waits"),
    ("mutex", "mutex", 20000, "lock, 20 us held, unlock; 4 threads", "futex waits"),
]


def run_load(load, ops, profile=None):
    """ns per op of one run, and with a profile: its last JSON report and fnprof's CPU seconds."""
    cmd = [LOAD, load, str(ops)]
    rep, cpu = None, None
    if profile:
        d = tempfile.mkdtemp()
        out = os.path.join(d, "r.json")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run([FNPROF, "--profile", profile, "--json", "-o", out, "--"] + cmd,
                           capture_output=True, text=True, timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # Children's time includes the target's: fnprof's own is what exceeds the target's CPU below.
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        reps = [json.loads(l) for l in open(out) if l.startswith("{")]
        rep = reps[-1] if reps else None
        os.unlink(out)
        os.rmdir(d)
    else:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    m = re.search(r"ns_per_op=([\d.]+)", p.stdout)
    if p.returncode or not m:
        sys.exit(f"profiles bench: {' '.join(cmd)} failed: {p.stderr[-500:]}")
    return float(m.group(1)), rep, cpu


def bench_case(profile, load, ops, repeats):
    base, prof, events, cpus = [], [], [], []
    for _ in range(repeats):
        base.append(run_load(load, ops)[0])
        ns, rep, cpu = run_load(load, ops, profile)
        prof.append(ns)
        events.append(rep["events"] if rep else 0)
        cpus.append(cpu)
    b, p = statistics.median(base), statistics.median(prof)
    ev = statistics.median(events)
    extra_ns = (p - b) * ops
    return {"profile": profile, "load": load, "ops": ops, "base_ns": b, "prof_ns": p,
            "slowdown_pct": 100 * (p - b) / b, "events": ev,
            "per_event_ns": extra_ns / ev if ev else None}


def table(rows):
    lines = ["### Other profiles (--profile offcpu, mutex, heap)", "",
             "(bench/profiles.py: bench/targets/profload.c untraced and under fnprof --profile KIND, "
             "interleaved, medians; the target times its own loop; cost per event = extra time / events fnprof saw)",
             "",
             "| profile | load (one op) | ops | untraced ns/op | profiled ns/op | slowdown | events seen | cost per event |",
             "|---------|---------------|-----|----------------|----------------|----------|-------------|----------------|"]
    for r, (_, _, _, what, evname) in zip(rows, CASES):
        per = f"{r['per_event_ns'] / 1000:.2f} us per {evname[:-1] if evname.endswith('s') else evname}" \
            if r["per_event_ns"] is not None else "-"
        lines.append(f"| {r['profile']} | {r['load']} ({what}) | {r['ops']} | {r['base_ns']:.0f} | "
                     f"{r['prof_ns']:.0f} | {r['slowdown_pct']:+.0f}% | {r['events']:.0f} | {per} |")
    return "\n".join(lines) + "\n"


def write_results(text):
    path = os.path.join(HERE, "results.md")
    begin, end = "<!-- profiles -->", "<!-- /profiles -->"
    old = open(path).read() if os.path.exists(path) else ""
    block = f"{begin}\n{text}{end}\n"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end) + 1:]
    else:
        new = old.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", 5)))
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get("BENCH_QUICK")))
    a = ap.parse_args()
    reps = 2 if a.quick else a.repeats
    t0 = time.time()
    rows = [bench_case(p, l, n // 4 if a.quick else n, reps) for p, l, n, _, _ in CASES]
    text = table(rows)
    print(text)
    print(f"profiles bench: {time.time() - t0:.0f} s")
    write_results(text)


if __name__ == "__main__":
    main()
