#!/usr/bin/env python3
"""--max-overhead, measured against the target's own ground truth.

For each call rate (US microseconds of untraced work between two calls of a 2 ns function) and
each repeat, runs interleaved: the target untraced, traced in full, and with --max-overhead PCT
for every budget. The target (tests/bin/work rate) knows its exact call count and measures its
own slowdown in the same run: its CPU time in blocks with calls against as much work without
calls (see run_rate in tests/targets/work.c). WALL is its elapsed time against the mean of two
untraced runs around it (noisier: other load on the machine counts in it). Prints medians.

Usage (root, after make test-build): bench/burst.py [--budgets 2,5,10,20] [--us 5,20,100]
       [--seconds 4] [--repeats 3] [--func tiny|push] [--fnprof-args '...']
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "tests", "bin", "work")
FNPROF = os.environ.get("FNPROF", os.path.join(ROOT, "fnprof"))


def truth(stderr):
    for line in stderr.splitlines():
        p = line.split()
        if len(p) > 2 and p[0] == "truth" and p[1] == "rate":
            return {k: float(v) for k, v in (x.split("=", 1) for x in p[2:])}
    raise RuntimeError("no truth line:\n" + stderr[-2000:])


def report(stderr):
    reps = [json.loads(l) for l in stderr.splitlines() if l.startswith("{")]
    if not reps:
        raise RuntimeError("no report:\n" + stderr[-2000:])
    return reps[-1]


def run(cmd, fnprof_args, fn):
    if fnprof_args is None:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        return truth(p.stderr), None
    p = subprocess.run([FNPROF, "-f", fn, "--json"] + fnprof_args + ["--"] + cmd,
                       capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise RuntimeError(f"fnprof exit {p.returncode}: {p.stderr[-2000:]}")
    return truth(p.stderr), report(p.stderr)


def one(cmd, fn, budget, extra, n):
    args = (["--max-overhead", str(budget)] if budget else []) + extra
    t, rep = run(cmd, args, fn)
    f = next(x for x in rep["functions"] if x["name"] == fn)
    cal = rep.get("calibration", {})
    site = f["site"]
    return {
        "slowdown": (t["calls_cpu_ns"] + t["ref_cpu_ns"]) / (2 * t["ref_cpu_ns"]) - 1,
        "elapsed_ns": t["elapsed_ns"],
        "err": f["calls"] / n - 1,
        "fraction": rep["attached_fraction"],
        "measured": f["calls_measured"],
        "cost_cal": cal.get(site, {}).get("cost_ns", 0),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budgets", default="2,5,10,20")
    ap.add_argument("--us", default="5,20,100")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--func", default="tiny", choices=["tiny", "push"])
    ap.add_argument("--fnprof-args", default="")
    ap.add_argument("--no-full", action="store_true")
    a = ap.parse_args()
    budgets = [float(b) for b in a.budgets.split(",")]
    fn = "tiny_push" if a.func == "push" else "tiny"
    extra = a.fnprof_args.split()
    res = {}
    for rep in range(a.repeats):
        for us in [int(u) for u in a.us.split(",")]:
            n = int(a.seconds * 1e6 / us / 2)
            cmd = [WORK, "rate", str(n), str(us)] + (["push"] if a.func == "push" else [])
            natives = [run(cmd, None, fn)[0]["elapsed_ns"]]
            rows = []
            for b in ([0] if not a.no_full else []) + budgets:
                rows.append((b, one(cmd, fn, b, extra, n)))
            natives.append(run(cmd, None, fn)[0]["elapsed_ns"])
            native = statistics.mean(natives)
            for b, r in rows:
                r["wall"] = r["elapsed_ns"] / native - 1
                res.setdefault((us, b), []).append(r)
                print(f"rep {rep} us {us:4} budget {b:5} slowdown {100 * r['slowdown']:6.2f}% wall {100 * r['wall']:6.2f}% "
                      f"err {100 * r['err']:+6.2f}% fraction {r['fraction']:.4f} measured {r['measured']} "
                      f"cost_cal {r['cost_cal']:.0f} (native {native / 1e9:.3f} s, "
                      f"spread {100 * (max(natives) / min(natives) - 1):.1f}%)", flush=True)
    print(f"\n{'US':>4} {'BUDGET':>6} {'SLOWDOWN':>9} {'(max)':>7} {'WALL':>7} {'ERR':>7} {'(max|err|)':>10} "
          f"{'FRACTION':>9}")
    for (us, b), rs in sorted(res.items()):
        sd = [r["slowdown"] for r in rs]
        er = [r["err"] for r in rs]
        wl = [r["wall"] for r in rs]
        print(f"{us:4} {('full' if not b else f'{b:g}%'):>6} {100 * statistics.median(sd):8.2f}% "
              f"{100 * max(sd):6.2f}% {100 * statistics.median(wl):6.2f}% {100 * statistics.median(er):+6.2f}% {100 * max(map(abs, er)):9.2f}% "
              f"{statistics.median(r['fraction'] for r in rs):9.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
