#!/usr/bin/env python3
"""Soak bench for --listen: memory flat and no lost counts over a long run with processes coming and going.

fnprof runs system-wide on a copy of tests/bin/fleet with --listen, --by pid (default --max-series, so
the series stop growing once 100 pids were seen) and -i reports alongside. Meanwhile PROCS copies of the
program run at once, each making a random number of calls, a new one starting as one exits; /metrics is
scraped every second (each counter checked never to go backwards) and fnprof's resident memory read
every RSS_EVERY seconds. At the end the scraped total and the final report must equal the calls the
processes counted themselves, exactly.

Usage (root; after make test-build):  python3 bench/soak.py [--seconds 600] [--csv FILE]
Prints the RSS curve (time, RSS, processes done, calls) and a summary; exit 1 if a check fails.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FNPROF = os.path.join(ROOT, "fnprof")
FLEET = os.path.join(ROOT, "tests", "bin", "fleet")
PROCS = 4
RSS_EVERY = 5


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    """User + system CPU seconds of process pid so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(addr):
    with urllib.request.urlopen(f"http://{addr}/metrics", timeout=5) as r:
        text = r.read().decode()
    counters = {m.group(1): float(m.group(2))
                for m in re.finditer(r"^(fnprof_\w+_total(?:\{[^}]*\})?) (\S+)$", text, re.M)}
    calls = sum(v for k, v in counters.items() if k.startswith("fnprof_calls_total"))
    # With uprobe sessions a process's first calls, made while fnprof chooses its exit, are counted apart.
    calls += sum(v for k, v in counters.items()
                 if k.startswith("fnprof_dropped_total") and "calls_before_exit_chosen" in k)
    return counters, calls, len(text)


def start_fnprof(svc, reports):
    p = subprocess.Popen([FNPROF, "-f", f"{svc}:fleet_call", "--listen", "127.0.0.1:0", "--by", "pid",
                          "-i", "10", "--json", "-o", reports],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"serving http://(\S+)/metrics", line)
        if m:
            return p, m.group(1)
    sys.exit("fnprof did not start")


def reap(running, made):
    """Collects the processes that ended: their own call counts."""
    for p in [p for p in running if p.poll() is not None]:
        err = p.stderr.read()
        m = re.search(r"truth fleet_call calls=(\d+)", err)
        if not m:
            sys.exit(f"a fleet process failed: {err}")
        made.append(int(m.group(1)))
        running.remove(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--csv", default=None)
    args = ap.parse_args()
    d = tempfile.mkdtemp()
    svc = os.path.join(d, "svc")
    shutil.copy(FLEET, svc)
    reports = os.path.join(d, "reports.jsonl")
    fp, addr = start_fnprof(svc, reports)
    running, made, curve, last, backwards = [], [], [], {}, 0
    t0 = time.time()
    next_rss = t0
    try:
        while time.time() - t0 < args.seconds:
            reap(running, made)
            while len(running) < PROCS:
                running.append(subprocess.Popen([svc, str(random.randint(50, 2000)), "200"],
                                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
            counters, calls, size = scrape(addr)
            backwards += sum(1 for k, v in counters.items() if v < last.get(k, 0))
            last.update(counters)
            if time.time() >= next_rss:
                curve.append((time.time() - t0, rss_kib(fp.pid), len(made), int(calls), size))
                print(f"{curve[-1][0]:7.0f} s  RSS {curve[-1][1]:6d} KiB  processes {len(made):5d}  "
                      f"calls {int(calls):9d}  /metrics {size} B", flush=True)
                next_rss += RSS_EVERY
            time.sleep(1)
        for p in running:
            p.wait()
        reap(running, made)
        time.sleep(1.5)
        _, scraped, _ = scrape(addr)
        cpu = cpu_s(fp.pid)
    finally:
        fp.send_signal(signal.SIGINT)
        fp.wait()
    with open(reports) as f:
        reps = [json.loads(line) for line in f if line.startswith("{")]
    total = [r for r in reps if r.get("total")][-1]
    reported = sum(fn["calls"] for fn in total["functions"]) + total["dropped"].get("calls_before_exit_chosen", 0)
    shutil.rmtree(d, ignore_errors=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("seconds,rss_kib,processes_done,calls_scraped,metrics_bytes\n")
            for row in curve:
                f.write(",".join(str(round(x, 1)) for x in row) + "\n")
    # The series grow with the first --max-series pids (about 25 s here): the slope is taken after 60 s.
    late = [r for r in curve if r[0] >= max(60, args.seconds / 2)]
    slope = (f"{(late[-1][1] - late[0][1]) / ((late[-1][0] - late[0][0]) / 60):+.1f} KiB/min"
             if len(late) > 1 else "unknown (run shorter than 2 minutes)")
    elapsed = time.time() - t0
    print(f"\n{args.seconds:.0f} s, {len(made)} processes, {sum(made)} calls made; scraped {int(scraped)}, "
          f"reported {reported}; counters gone backwards: {backwards}; {len(reps)} -i reports")
    print(f"RSS: first {curve[0][1]} KiB, max {max(r[1] for r in curve)} KiB, last {curve[-1][1]} KiB; "
          f"slope over the second half (after 60 s at least): {slope}")
    print(f"fnprof CPU: {cpu:.1f} s ({100 * cpu / elapsed:.1f}% of one core, scrapes every second included)")
    ok = scraped == sum(made) and reported == sum(made) and not backwards
    print("checks:", "pass" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
