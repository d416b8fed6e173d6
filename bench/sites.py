#!/usr/bin/env python3
"""Entry probe sites (issue 22): the cost and the truth of tracing real optimized code by pid.

Debian's own libz (deflate on 256 bytes, tests/targets/zloop.c) and a Go 1.19 loop
(bench/targets/goloop.go: strconv.ParseFloat) run untraced, then under each tool in turn, attached
by pid, each for WINDOW seconds: the calls per second are the target's own ("rate N" each second).
Tools: bpftrace's empty uprobe+uretprobe (entry only for Go: a uretprobe kills the Go runtime),
libbpf-tools funclatency (libz only, same reason), fnprof, and fnprof at an older build when
FNPROF_OLD names one. Per-call cost = 1/rate(tool) - 1/rate(untraced). Then deflate timed by its
caller against the same call in an untraced copy of libz, under each fnprof, 5 launches.

Usage (as root, after make test-build): FNPROF_OLD=/path/to/old/fnprof python3 bench/sites.py
(SITES_DEFLATE_ONLY=1: only the deflate launches)
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FNPROF = os.path.join(ROOT, "fnprof")
OLD = os.environ.get("FNPROF_OLD")
OUT = os.path.join(ROOT, "bench", ".output")
ZLOOP = os.path.join(ROOT, "tests", "bin", "zloop")
GOLOOP = os.path.join(OUT, "goloop")
LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"
WINDOW = float(os.environ.get("SITES_WINDOW", "3"))
REPEATS = int(os.environ.get("SITES_REPEATS", "3"))
DEFLATE_ONLY = os.environ.get("SITES_DEFLATE_ONLY", "") not in ("", "0")   # only the 5 deflate launches


def build_goloop():
    if os.path.exists(GOLOOP):
        return
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, GOCACHE=os.path.join(OUT, ".gocache"), GO111MODULE="off", HOME=OUT)
    subprocess.run(["go", "build", "-o", GOLOOP, os.path.join(ROOT, "bench", "targets", "goloop.go")],
                   check=True, env=env)


class Loop:
    """A target printing 'rate N' each second; rates() gives those printed in a time window."""

    def __init__(self, cmd):
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert "ready" in self.p.stdout.readline()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            if line.startswith("rate "):
                self.lines.append((time.monotonic(), float(line.split()[1])))

    def rate(self, t0, t1):
        r = [v for t, v in self.lines if t0 < t <= t1]
        return statistics.median(r) if r else float("nan")

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=10)


def tools(kind, pid):
    bt = f"uprobe:{LIBZ}:deflate {{}} uretprobe:{LIBZ}:deflate {{}}" if kind == "libz" else \
        f"uprobe:{GOLOOP}:strconv.ParseFloat {{}}"
    fn = "libz:deflate" if kind == "libz" else "strconv.ParseFloat"
    out = [("bpftrace" + (" (entry only)" if kind == "go" else ""), ["bpftrace", "-e", bt])]
    if kind == "libz":
        out.append(("funclatency", ["funclatency", "-p", str(pid), "z:deflate"]))
    if OLD:
        out.append(("fnprof (before)", [OLD, "-p", str(pid), "-f", fn]))
    out.append(("fnprof", [FNPROF, "-p", str(pid), "-f", fn]))
    return out


def measure(kind, cmd):
    """{tool: [rate per repeat]}, the tools interleaved in each repeat, an untraced window before each."""
    loop, res = Loop(cmd), {}
    time.sleep(1.5)
    for _ in range(REPEATS):
        for name, argv in [("untraced", None)] + tools(kind, loop.p.pid):
            tool = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if argv else None
            time.sleep(2.0 if tool else 0.5)      # attach (and fnprof's calibration)
            t0 = time.monotonic()
            time.sleep(WINDOW + 0.05)
            res.setdefault(name, []).append(loop.rate(t0, time.monotonic()))
            if tool:
                tool.send_signal(signal.SIGINT)
                tool.wait(timeout=20)
                time.sleep(1.0)
    loop.stop()
    return res


def truth_line(stderr, name):
    """The target's "truth NAME k=v ..." line as a dict of floats."""
    t = next(line for line in stderr.splitlines() if line.startswith(f"truth {name} "))
    return {k: float(v) for k, v in (w.split("=") for w in t.split()[2:])}


def deflate_truth(fnprof):
    """5 launches of deflate timed by its caller: fnprof's p50/avg vs the untraced copy's; and the
    probes' hidden cost (issue 36): what the caller sees added to the traced call's median (against
    the untraced copy's) beyond what fnprof's calibration prices the probes at (cost_ns of the site)."""
    rows = []
    for _ in range(5):
        p = subprocess.run([fnprof, "-f", "libz:deflate", "--json", "--", ZLOOP, "deflate", "20000"],
                           capture_output=True, text=True)
        # The report is on fnprof's stdout, the target's truth lines on its stderr.
        rep = [json.loads(line) for line in (p.stdout + p.stderr).splitlines() if line.startswith("{")][-1]
        f = next(f for f in rep["functions"] if f["name"] == "deflate")
        t, seen = truth_line(p.stderr, "deflate_untraced"), truth_line(p.stderr, "deflate")
        cost = (rep.get("calibration", {}).get(f["site"]) or {}).get("cost_ns")
        rows.append((f["wall_ns"]["p50"], t["p50_ns"], f["wall_ns"]["avg"], t["wall_avg_ns"], f["site"],
                     seen["p50_ns"] - t["p50_ns"], cost))
    return rows


def print_deflate(label, exe):
    print(f"\ndeflate on 256 bytes, timed by its caller, {label}: p50 fnprof/untraced, avg fnprof/untraced; "
          f"added: the traced call's p50 less the untraced copy's, as the caller sees them; probes: the "
          f"calibration's cost per call for the site; hidden: added - probes")
    for p50, t50, avg, tavg, site, added, cost in deflate_truth(exe):
        hidden = f"{added - cost:+5.0f}" if cost is not None else "    ?"
        print(f"  {site:16s} p50 {p50:6.0f} / {t50:6.0f} ns ({p50 - t50:+5.0f})   "
              f"avg {avg:6.0f} / {tavg:6.0f} ns ({avg - tavg:+5.0f})   added {added:+5.0f}  probes "
              f"{cost if cost is not None else float('nan'):5.0f}  hidden {hidden} ns")


def main():
    kinds = [] if DEFLATE_ONLY else [("libz", [ZLOOP, "loop"]), ("go", [GOLOOP])]
    if kinds:
        build_goloop()
        print(f"# entry probe sites, by pid, {REPEATS} repeats of {WINDOW:.0f} s windows, medians")
    for kind, cmd in kinds:
        res = measure(kind, cmd)
        base = statistics.median(res["untraced"])
        print(f"\n{kind}: {'tool':24s} {'calls/s':>10s} {'ratio':>6s} {'cost/call':>10s}")
        for name, rates in res.items():
            r = statistics.median(rates)
            cost = (1 / r - 1 / base) * 1e9 if r == r and r > 0 else float("nan")
            print(f"{kind}: {name:24s} {r:10.0f} {r / base:6.2f} {cost:8.0f}ns")
    for label, exe in (("fnprof (before)", OLD), ("fnprof", FNPROF)):
        if not exe:
            continue
        print_deflate(label, exe)


if __name__ == "__main__":
    sys.exit(main())
