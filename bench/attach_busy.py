#!/usr/bin/env python3
"""Attach time with the target's CPU busy (issue 15): fnprof against libbpf-tools funclatency (part of make bench).

bench/.output/bt_fp work spins in target_spin on one CPU; in turn, fnprof (-p PID -f target_spin -d 0.5) and
funclatency (-p PID :target_spin) start, and the time from the tool's start to the int3 at target_spin (polled in
/proc/PID/mem every 0.5 ms) is its attach time; each tool's probe is gone before the next starts. With the
target busy, both wait for the first uprobe registration's RCU grace period. Writes its table into
bench/results.md between the "attach-busy" markers (appended if absent).

With --baseline FNPROF2, another build (an older commit's) takes its turn in each round too.

Usage: bench/attach_busy.py [--rounds N] [--baseline PATH]
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

from results_section import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
FNPROF = os.path.join(os.path.dirname(HERE), "fnprof")
BT = os.path.join(HERE, ".output", "bt_fp")


def first_byte(pid, addr):
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as m:
        m.seek(addr)
        return m.read(1)


def attach_ms(tool, pid, addr, orig, exe=None):
    """ms from the tool's start to the int3 at addr, or None (5 s); waits for the probe to go.
    exe: the fnprof build (default: this tree's)."""
    cmd = ([exe or FNPROF, "-p", str(pid), "-f", "target_spin", "-d", "0.5"] if tool != "funclatency"
           else [shutil.which("funclatency"), "-p", str(pid), ":target_spin"])
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ms = None
    while time.monotonic() - t0 < 5:
        if first_byte(pid, addr) != orig:
            ms = (time.monotonic() - t0) * 1e3
            break
        time.sleep(0.0005)
    if tool == "funclatency":
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
    p.wait(timeout=30)
    for _ in range(500):
        if first_byte(pid, addr) == orig:
            break
        time.sleep(0.01)
    return ms


def table(res, rounds):
    lines = ["### Attach with the target's CPU busy (bench/attach_busy.py)", "",
             f"(bt_fp work spinning in target_spin; {rounds} rounds, the tools in turn; load average "
             f"{os.getloadavg()[0]:.1f} at the end; tool start to "
             "the int3 at the function; median, in brackets the fastest and the slowest)", "",
             "| tool | attach, target busy |", "|------|---------------------|"]
    for tool, v in res.items():
        v = [x for x in v if x is not None]
        lines.append(f"| {tool} | " + (f"{statistics.median(v):.1f} ms ({min(v):.1f}..{max(v):.1f})" if v else "-")
                     + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--baseline", help="another fnprof build, in turn with this one and funclatency")
    a = ap.parse_args()
    if not shutil.which("funclatency"):
        sys.exit("attach_busy: funclatency not found (make bench-deps)")
    t = subprocess.Popen([BT, "work", "600", "1000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        addr = int(t.stdout.readline().split()[1], 16)
        t.stdin.write("x\n")
        t.stdin.flush()
        time.sleep(0.3)
        orig = first_byte(t.pid, addr)
        res = {"fnprof": [], "funclatency": []}
        if a.baseline:
            res = {"fnprof (baseline)": [], **res}
        for _ in range(a.rounds):
            for tool in res:
                res[tool].append(attach_ms(tool, t.pid, addr, orig, a.baseline if "baseline" in tool else None))
                time.sleep(0.3)
    finally:
        t.kill()
        t.wait()
    text = table(res, a.rounds)
    print(text)
    write_section("attach-busy", text)


if __name__ == "__main__":
    main()
