"""Sampling: top functions by CPU, with stacks; pprof and folded files.

Targets: tests/targets/burn.c burns CPU in burn_a and burn_b in a 3:1 ratio (measured by
its own CPU clock) from a common caller, burn_both; built with frame pointers.
"""
import os
import re
import shutil
import subprocess
import tempfile

from harness import FNPROF, Skip, check, json_reports, run_fnprof, target, truth


def sampled(args, *cmd, timeout=60):
    p = run_fnprof(list(args) + ["--json", "--"] + [str(c) for c in cmd], timeout=timeout)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
    reps = [r for r in json_reports(p.stderr) if r.get("mode") == "sample"]
    check(reps, f"no sampling report:\n{p.stderr[-2000:]}")
    return reps[-1], p


def fn(rep, name):
    for f in rep["functions"]:
        if f["name"] == name:
            return f
    raise AssertionError(f"{name} not sampled: {[f['name'] for f in rep['functions'][:10]]}")


def test_ratio_and_common_caller():
    rep, p = sampled(["-F", "499"], target("burn"), 3)
    t = truth(p.stderr, "burn")
    a, b = fn(rep, "burn_a"), fn(rep, "burn_b")
    want_a = 100 * t["ratio"] / (1 + t["ratio"])
    check(abs(a["self_pct"] - want_a) <= 4, f"burn_a self {a['self_pct']:.1f}% vs truth {want_a:.1f}%")
    check(abs(b["self_pct"] - (100 - want_a)) <= 4, f"burn_b self {b['self_pct']:.1f}%")
    both = fn(rep, "burn_both")
    check(abs(both["total_pct"] - (a["self_pct"] + b["self_pct"])) <= 3,
          f"burn_both total {both['total_pct']:.1f}% vs {a['self_pct'] + b['self_pct']:.1f}%")
    check(fn(rep, "main")["total_pct"] > 95, "main is on every stack")
    check(rep["samples"] > 0.8 * 499 * 3 and rep["lost"] == 0, f"{rep['samples']} samples, {rep['lost']} lost")
    check(0.8 < a["cpu_cores"] / 0.75 < 1.2, f"burn_a {a['cpu_cores']} cores of 0.75")


def test_sleeping_process_has_almost_no_samples():
    proc = subprocess.Popen([target("burn"), "sleep", "5"])
    try:
        p = run_fnprof(["-p", str(proc.pid), "-d", "1.5", "--json"])
        check(p.returncode == 0, p.stderr)
        rep = [r for r in json_reports(p.stderr) if r["mode"] == "sample"][-1]
        check(rep["samples"] <= 2, f"{rep['samples']} samples of a sleeping process")
    finally:
        proc.kill()
        proc.wait()


def test_pprof_opens_in_go_tool():
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "cpu.pb.gz")
        sampled(["-F", "499", "--pprof", path], target("burn"), 2)
        with open(path, "rb") as f:
            check(f.read(2) == b"\x1f\x8b", "pprof file is not gzip-compressed")
        env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"))
        top = subprocess.run(["go", "tool", "pprof", "-top", path], capture_output=True, text=True,
                             timeout=120, env=env)
        check(top.returncode == 0, top.stderr)
        rows = [l for l in top.stdout.splitlines() if re.match(r"\s*[\d.]+m?s\s", l)]
        check(rows and rows[0].split()[-1] == "burn_a", f"hot function not first:\n{top.stdout}")
        check("Type: cpu" in top.stdout, top.stdout)
    finally:
        shutil.rmtree(d)


def test_folded_format():
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "cpu.folded")
        rep, _ = sampled(["-F", "499", "--folded", path], target("burn"), 1)
        lines = open(path).read().splitlines()
        check(lines, "empty folded file")
        total = 0
        for line in lines:
            m = re.match(r"^(\S.*) (\d+)$", line)
            check(m, f"not 'frames count': {line!r}")
            frames = m.group(1).split(";")
            check(frames[0] == "burn", f"first frame must be the command: {frames[:2]}")
            total += int(m.group(2))
        check(any(l.split(" ")[0].endswith("main;burn_both;burn_a") for l in lines), "root-first order")
        check(abs(total - rep["samples"]) <= 0.02 * rep["samples"], f"{total} vs {rep['samples']} samples")
    finally:
        shutil.rmtree(d)


def test_output_files_replace_symlinks_not_follow():
    d = tempfile.mkdtemp()
    try:
        victim = os.path.join(d, "victim")
        open(victim, "w").write("keep me\n")
        for name in ("cpu.folded", "cpu.pb.gz"):
            os.symlink(victim, os.path.join(d, name))
        sampled(["--folded", os.path.join(d, "cpu.folded"), "--pprof", os.path.join(d, "cpu.pb.gz")],
                target("burn"), 0.5)
        check(open(victim).read() == "keep me\n", "a planted symlink was followed")
        for name in ("cpu.folded", "cpu.pb.gz"):
            check(not os.path.islink(os.path.join(d, name)), f"{name} is still the symlink")
        check(sorted(os.listdir(d)) == ["cpu.folded", "cpu.pb.gz", "victim"], f"leftovers: {os.listdir(d)}")
    finally:
        shutil.rmtree(d)


def test_per_thread_table():
    p = run_fnprof(["--per-thread", "-F", "499", "--", target("work"), "threads", "2", "20000"])
    check(p.returncode == 0, p.stderr)
    check(p.stderr.count("thread ") >= 2, f"no per-thread sections:\n{p.stderr[-2000:]}")


def test_trace_and_sample_together():
    p = run_fnprof(["-f", "burn_b", "--sample", "--json", "--", target("burn"), "1"])
    check(p.returncode == 0, p.stderr)
    modes = [r["mode"] for r in json_reports(p.stderr)]
    check("trace" in modes and "sample" in modes, f"modes {modes}")


def test_sampling_table():
    p = run_fnprof(["-F", "199", "-n", "3", "--", target("burn"), "1"])
    check(p.returncode == 0, p.stderr)
    for col in ("FUNCTION", "OBJECT", "SELF%", "TOTAL%", "SAMPLES", "CORES"):
        check(col in p.stderr, f"{col} missing")
    check("burn_a" in p.stderr, p.stderr[-1500:])
