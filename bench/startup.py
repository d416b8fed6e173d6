#!/usr/bin/env python3
"""fnprof's own start-up and CPU for a 1 s trace of one function (issue 36; part of make bench).

bench/.output/bt_fp work spins in target_spin; `fnprof -v -p PID -f target_spin -d 1` runs N times: its
CPU time (user + system, from the kernel's accounting of the finished child: rusage) and its `-v` steps
line, each step's wall and CPU time. With --baseline FNPROF2 another build (an older commit's) runs in
turn with it, round by round, so that both meet the same load. Writes its table into bench/results.md
between the "startup" markers.

Usage: bench/startup.py [--rounds N] [--baseline PATH]
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import time

from results_section import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
FNPROF = os.path.join(os.path.dirname(HERE), "fnprof")
BT = os.path.join(HERE, ".output", "bt_fp")
STEP = re.compile(r"([a-z+()/ -]+?) ([\d.]+) ms \(cpu ([\d.]+)\)")


def one_run(exe, pid):
    """(CPU ms, {step: (wall ms, cpu ms)}) of one traced second, or None if the run failed."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([exe, "-v", "-p", str(pid), "-f", "target_spin", "-d", "1"], capture_output=True, text=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next((l for l in p.stderr.splitlines() if l.startswith("fnprof: steps:")), None)
    if p.returncode or not line:
        return None
    cpu = (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3
    return cpu, {n.strip(" ,"): (float(w), float(c)) for n, w, c in STEP.findall(line.split("steps:", 1)[1])}


def spread(v):
    return f"{statistics.median(v):.1f} ({min(v):.1f}..{max(v):.1f})" if v else "-"


def table(res, rounds):
    names = list(res)
    steps = [s for s in next(iter(res.values()))["steps"]]
    lines = ["### fnprof's start-up and CPU, 1 s trace of one function (bench/startup.py)", "",
             f"(bt_fp work spinning in target_spin; `fnprof -v -p PID -f target_spin -d 1`, {rounds} rounds"
             + (", the builds in turn" if len(names) > 1 else "") + f"; load average {os.getloadavg()[0]:.1f} "
             "at the end; median, in brackets the fastest and the slowest; ms)", "",
             "| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|",
             "| fnprof's CPU (rusage) | " + " | ".join(spread(res[n]["cpu"]) for n in names) + " |"]
    for s in steps:
        cells = []
        for n in names:
            v = res[n]["steps"].get(s, [])
            cells.append(f"{spread([w for w, _ in v])} / cpu {spread([c for _, c in v])}")
        lines.append(f"| {s} (wall / cpu) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--baseline", help="another fnprof build, run in turn with this one")
    a = ap.parse_args()
    exes = {"fnprof": FNPROF}
    if a.baseline:
        exes = {"baseline": a.baseline, "fnprof": FNPROF}
    t = subprocess.Popen([BT, "work", "600", "1000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    res = {n: {"cpu": [], "steps": {}} for n in exes}
    try:
        t.stdout.readline()
        t.stdin.write("x\n")
        t.stdin.flush()
        time.sleep(0.3)
        for _ in range(a.rounds):
            for n, exe in exes.items():
                r = one_run(exe, t.pid)
                if r:
                    res[n]["cpu"].append(r[0])
                    for s, v in r[1].items():
                        res[n]["steps"].setdefault(s, []).append(v)
                time.sleep(0.3)
    finally:
        t.kill()
        t.wait()
    text = table(res, a.rounds)
    print(text)
    write_section("startup", text)


if __name__ == "__main__":
    main()
