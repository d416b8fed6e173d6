#!/usr/bin/env python3
"""The offcpu, mutex and heap profiles' user stacks: frame pointers (--call-graph fp) against DWARF
(--call-graph dwarf, the default). Part of make bench; needs make test-build (tests/bin/waits, heap).

1. What the stacks show, on the issue's cases (as tests/test_profile_stacks.py checks them): the
   share of the delay or bytes whose stacks reach the program's own function, with go tool pprof.
2. What a kept event costs: bench/targets/profload.c's loads (as bench/profiles.py runs them) run
   untraced, with fp and with dwarf, interleaved, REPEATS times; medians. The load times its own
   loop; cost per kept event = the time it added over the untraced run / the events fnprof kept.
   fnprof's JSON gives the events kept and its unwinding thread's CPU time; the BPF programs' run
   time comes from kernel.bpf_stats_enabled (programs that run for every process, sched_switch and
   system calls, included: their filtering costs every process, not only the target).
Writes its tables into bench/results.md between the "profile-stacks" markers.

Usage: bench/profile_stacks.py [--repeats N] [--quick]
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from profiles import bpf_prog_times
from bpfstats import bpf_stats, repeats_arg
from results_section import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FNPROF = os.path.join(ROOT, "fnprof")
sys.path.insert(0, os.path.join(ROOT, "tests"))
import test_profile_stacks as ts  # noqa: E402  (the tests' pprof reading and cases)

LOAD = os.path.join(HERE, ".output", "profload")

# (profile, load, ops, what one kept event is, fnprof's other arguments)
LOADS = [
    ("offcpu", "switch", 40000, "wait (pipe ping-pong on one CPU)", []),
    # profload's mutex load has too few futex waits here (100-900 in 20000 ops) for its time to tell
    # anything: tests/bin/waits runs 1.5 s of contention instead (not timed per op: no time added).
    ("mutex", None, 0, "futex wait (tests/bin/waits mutex: 4 threads, one lock held 100 us)", []),
    ("heap", "alloc", 400000, "sampled allocation (malloc(64)+free, --heap-rate 1K)", ["--heap-rate", "1K"]),
]


def run(profile, load, ops, cg, args):
    """One run: (the load's ns per op, the last JSON report or None, BPF run time ns)."""
    cmd = [LOAD, load, str(ops)] if load else [os.path.join(ROOT, "tests", "bin", "waits"), "mutex", "1.5"]
    if cg is None:
        if not load:
            return 0, None, 0
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        return ns_per_op(p.stdout), None, 0
    d = tempfile.mkdtemp()
    out = os.path.join(d, "r.json")
    p = subprocess.Popen([FNPROF, "--profile", profile, "--call-graph", cg] + args + ["--json", "-o", out, "--"] + cmd,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    times, names = {}, {}
    while p.poll() is None:  # the programs' run time, read while fnprof holds them
        times.update(bpf_prog_times(p.pid))
        names.update(prog_names(times))
        time.sleep(0.05)
    stdout, stderr = p.communicate()
    reps = [json.loads(l) for l in open(out) if l.startswith("{")]
    os.unlink(out)
    os.rmdir(d)
    if p.returncode or not reps:
        sys.exit(f"profile_stacks bench: fnprof failed on {' '.join(cmd)}: {stderr[-2000:]}")
    rep = reps[-1]
    rep["filters"] = [times[i] for i, n in names.items() if n in FILTERS]
    return ns_per_op(stdout) if load else 0, rep, sum(t for t, _ in times.values())


# offcpu's system-call programs with dwarf: they run for every system call of every process.
FILTERS = ("on_sys_enter", "on_sys_exit")


def prog_names(ids):
    """{prog id: name} of the given program ids."""
    try:
        progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                                          timeout=10).stdout or "[]")
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}
    return {p["id"]: p.get("name", "") for p in progs if p["id"] in ids}


def ns_per_op(stdout):
    m = re.search(r"ns_per_op=([\d.]+)", stdout)
    if not m:
        sys.exit(f"profile_stacks bench: no ns_per_op in the load's output: {stdout[-500:]}")
    return float(m.group(1))


def cost_case(profile, load, ops, args, repeats):
    r = {cg: {"ns": [], "kept": [], "bpf": [], "unwind": [], "calls": [], "per_call": []}
         for cg in ("none", "fp", "dwarf")}
    for _ in range(repeats):
        for cg in ("none", "fp", "dwarf"):
            ns, rep, bpf = run(profile, load, ops, None if cg == "none" else cg, args)
            r[cg]["ns"].append(ns)
            if rep:
                r[cg]["kept"].append(rep["kept"])
                r[cg]["bpf"].append(bpf / max(rep["kept"], 1))
                r[cg]["unwind"].append(rep.get("unwind", {}).get("cpu_ns", 0) / max(rep["kept"], 1))
                enter = [(t, n) for t, n in rep["filters"]]
                if enter:  # system calls seen (by sys_enter's), and the two programs' time per call
                    calls = min(n for _, n in enter)
                    r[cg]["calls"].append(calls / max(rep["kept"], 1))
                    r[cg]["per_call"].append(sum(t for t, _ in enter) / max(calls, 1))
    med = {cg: {k: statistics.median(v) if v else 0 for k, v in x.items()} for cg, x in r.items()}
    for cg in ("fp", "dwarf"):
        med[cg]["added"] = (med[cg]["ns"] - med["none"]["ns"]) * ops / max(med[cg]["kept"], 1) if load else None
    return med


def us(ns, sign=""):
    return "-" if ns is None else f"{ns / 1e3:{sign}.2f} us"


def goals():
    """The issue's three cases, fp and dwarf: the share that reaches the program's function."""
    rows = []
    for cg in ("fp", "dwarf"):
        d, path, _ = ts.profile_file("offcpu", ["--call-graph", cg], ts.target("waits"), "sleep", 2)
        off = ts.share(path, "delay", ts.named("sleep_us"), ts.in_sleep)[0]
        d2, path, _ = ts.profile_file("mutex", ["--call-graph", cg], ts.target("waits"), "mutex", 1.5)
        mu = ts.share(path, "delay", ts.named("hold_and_release"), ts.lock)[0]
        obj = tempfile.mkdtemp()
        src = os.path.join(ROOT, "tests", "targets", "compile", "unit.cpp")
        d3, path, _ = ts.profile_file("heap", ["--call-graph", cg], ts.clangxx(), "-std=c++17", "-O2", "-c", src,
                                      "-o", os.path.join(obj, "unit.o"), timeout=300)
        heap = ts.share(path, "alloc_space", ts.compiler_frame)[0]
        for x in (d, d2, d3, obj):
            subprocess.run(["rm", "-rf", x])
        rows.append((cg, off, mu, heap))
    return rows


def tables(g, costs, repeats):
    lines = ["### The profiles' stacks: frame pointers against DWARF (bench/profile_stacks.py)", "",
             "What reaches the program's own function (go tool pprof -raw on fnprof's files; the cases and "
             "goals of tests/test_profile_stacks.py):", "",
             "| --call-graph | offcpu: delay in nanosleep under sleep_us (goal >= 90%) | mutex: lock delay "
             "under hold_and_release (>= 80%) | heap, clang++ -O2 -c: alloc_space with a clang::/llvm:: frame "
             "(>= 70%) |", "|---|---|---|---|"]
    for cg, off, mu, heap in g:
        lines.append(f"| {cg} | {100 * off:.1f}% | {100 * mu:.1f}% | {100 * heap:.1f}% |")
    lines += ["", f"Cost per kept event (bench/targets/profload.c, medians of {repeats} interleaved runs). Time "
              "added: the load's own time over its untraced run's, per kept event (all of the profile's cost: "
              "the heap's probes on every call, unsampled ones included); BPF: fnprof's programs' run time per "
              "kept event, their filtering of other processes' events included; dwarf - fp: what the stack "
              "copy adds; unwinding: fnprof's thread's CPU per kept event:", "",
              "| profile | kept event | kept | time added: fp | dwarf | dwarf - fp | BPF: fp | dwarf | "
              "dwarf - fp | unwinding in fnprof |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (profile, _, _, what, _), m in zip(LOADS, costs):
        f, d = m["fp"], m["dwarf"]
        diff = None if d["added"] is None else d["added"] - f["added"]
        lines.append(f"| {profile} | {what} | {d['kept']:.0f} | {us(f['added'])} | {us(d['added'])} | {us(diff, '+')} | "
                     f"{us(f['bpf'])} | {us(d['bpf'])} | {us(d['bpf'] - f['bpf'], '+')} | {us(d['unwind'])} |")
    d = costs[0]["dwarf"]
    lines += ["", f"offcpu with dwarf runs two programs on every system call of every process (sys_enter, "
              f"sys_exit: the copy is taken at a kept wait's system call exit): {d['per_call']:.0f} ns per system "
              f"call for both (the copies included), {d['calls']:.0f} system calls on the machine per kept wait in "
              "this run."]
    return "\n".join(lines) + "\n"


def main():
    reps, quick = repeats_arg()
    t0 = time.time()
    with bpf_stats():
        costs = [cost_case(p, load, ops // 4 if quick else ops, args, reps) for p, load, ops, _, args in LOADS]
    text = tables(goals(), costs, reps)
    print(text)
    print(f"profile_stacks bench: {time.time() - t0:.0f} s")
    write_section("profile-stacks", text)


if __name__ == "__main__":
    main()
