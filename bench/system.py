#!/usr/bin/env python3
"""fnprof -a with many processes running: its peak RSS and its CPU time per second of run.

tests/bin/procs starts BUSY children spinning and LIGHT ones that spin 200 us every 100 ms (so that
every one of them is sampled now and then, and so needs its name, mappings and symbols), and fnprof
-a samples the machine for SECONDS, with --call-graph fp and dwarf in turn; a baseline run with no
children is measured the same way just before, under the same load. Peak RSS is fnprof's own VmHWM
(bench/peakrss.py), its CPU time the rusage wait4 gives (all its threads).

Usage: python3 bench/system.py [--light 198] [--busy 2] [--seconds 20]   (as root, after make test-build)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peakrss  # noqa: E402

FNPROF = os.path.join(ROOT, "fnprof")
PROCS = os.path.join(ROOT, "tests", "bin", "procs")


def start_procs(busy, light):
    p = subprocess.Popen([PROCS, str(busy), str(light), "0", "3600"], stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith("ready"):
            return p
    raise SystemExit("procs did not start")


def rss_anon(pid):
    """RssAnon of pid now (KiB): the memory that is fnprof's own, not file pages it maps (libdwfl maps
    the objects it unwinds through; those pages are the page cache's, shared)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def wait_sampling(pid):
    """peakrss.wait, with the peak RssAnon too: (status, rusage, peak VmHWM KiB, peak RssAnon KiB)."""
    anon = 0
    while True:
        peakrss.sample(pid)
        anon = max(anon, rss_anon(pid))
        wpid, status, ru = os.wait4(pid, os.WNOHANG)
        if wpid == pid:
            return status, ru, peakrss.peak(pid), anon
        time.sleep(0.005)


def measure(call_graph, seconds):
    """(peak RSS KiB, peak anonymous RSS KiB, CPU s per s, the final JSON report) of one fnprof -a run."""
    # The JSON report lists every process's functions: into a file, never a pipe nobody reads yet.
    with tempfile.TemporaryFile(mode="w+") as out:
        p = subprocess.Popen([FNPROF, "-a", "-d", str(seconds), "--json", "--call-graph", call_graph],
                             stdout=subprocess.DEVNULL, stderr=out, text=True)
        t0 = time.monotonic()
        status, ru, kib, anon = wait_sampling(p.pid)
        wall = time.monotonic() - t0
        out.seek(0)
        err = out.read()
    if status:
        raise SystemExit(f"fnprof failed ({status}):\n{err[-2000:]}")
    rep = [json.loads(l) for l in err.splitlines() if l.startswith("{")][-1]
    return kib, anon, (ru.ru_utime + ru.ru_stime) / wall, rep


def row(label, call_graph, kib, anon, cpu, rep):
    pr, uw = rep["processes"], rep.get("unwind", {})
    return (f"| {label} | {call_graph} | {kib / 1024:.1f} MiB | {anon / 1024:.1f} MiB | {cpu * 100:.1f}% | {pr['seen']} | "
            f"{pr['objects']} | {pr['evicted']} / {uw.get('unwinders_evicted', '-')} | {rep['samples']} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--light", type=int, default=198)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()
    print("| processes | call graph | peak RSS | of it anonymous | CPU (of one core) | processes seen | object files | "
          "given up: symbolizers / unwinders | samples |")
    print("|-----------|------------|----------|-----------------|-------------------|----------------|--------------|"
          "-----------------------------------|---------|")
    for cg in ("fp", "dwarf"):
        print(row("baseline", cg, *measure(cg, a.seconds)), flush=True)
        procs = start_procs(a.busy, a.light)
        try:
            time.sleep(1)
            print(row(f"+{a.busy + a.light}", cg, *measure(cg, a.seconds)), flush=True)
        finally:
            procs.terminate()
            procs.communicate()


if __name__ == "__main__":
    main()
