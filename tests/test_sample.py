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


def sampled(args, *cmd, timeout=60, fnprof=None):
    """The last sampling report of a run. The reports go to a file (-o): a launched command
    shares fnprof's stderr, and its lines could land inside a long JSON line there."""
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "report.json")
        argv = list(args) + ["--json", "-o", out, "--"] + [str(c) for c in cmd]
        if fnprof:
            p = subprocess.run([fnprof] + argv, capture_output=True, text=True, timeout=timeout)
        else:
            p = run_fnprof(argv, timeout=timeout)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        reps = [r for r in json_reports(open(out).read()) if r.get("mode") == "sample"]
    finally:
        shutil.rmtree(d)
    check(reps, f"no sampling report:\n{p.stderr[-2000:]}")
    p.reports = reps
    return reps[-1], p


def fn(rep, name):
    for f in rep["functions"]:
        if f["name"] == name:
            return f
    raise AssertionError(f"{name} not sampled: {[f['name'] for f in rep['functions'][:10]]}")


# burn alternates 3 ms in burn_a and 1 ms in burn_b (250 cycles a second). A sampling rate near
# a multiple of that (499 Hz ~ 2 x 250) samples the same phases for seconds and skews the ratio
# (aliasing); 347 Hz walks through all phases.
RATIO_HZ = 347


def check_share(a, b, ratio, rep, least):
    """burn_a's share of the samples in burn_a and burn_b against the truth's CPU-time ratio, within
    least points or 4 standard deviations of a share drawn from that many samples (a busy machine
    gives the target half a core: 241 samples in 2 s once, where 5 points are under 2 deviations)."""
    want = 100 * ratio / (1 + ratio)
    share = 100 * a["self_pct"] / (a["self_pct"] + b["self_pct"])
    n = rep["samples"] * (a["self_pct"] + b["self_pct"]) / 100
    tol = max(least, 4 * 100 * (want / 100 * (1 - want / 100) / max(n, 1)) ** 0.5)
    check(abs(share - want) <= tol, f"burn_a {share:.1f}% of burn_a+burn_b in {n:.0f} samples vs truth "
          f"{want:.1f}% (allowed {tol:.1f} points)")


def test_ratio_and_common_caller():
    rep, p = sampled(["-F", str(RATIO_HZ)], target("burn"), 3)
    t = truth(p.stderr, "burn")
    a, b = fn(rep, "burn_a"), fn(rep, "burn_b")
    check_share(a, b, t["ratio"], rep, 4)
    check(a["self_pct"] + b["self_pct"] >= 90, f"burn_a {a['self_pct']:.1f}% + burn_b {b['self_pct']:.1f}%")
    both = fn(rep, "burn_both")
    check(abs(both["total_pct"] - (a["self_pct"] + b["self_pct"])) <= 3,
          f"burn_both total {both['total_pct']:.1f}% vs {a['self_pct'] + b['self_pct']:.1f}%")
    check(fn(rep, "main")["total_pct"] > 95, "main is on every stack")
    # What the target ran, by its own clock (on a busy machine it gets less than a core): the
    # samples that CPU time makes, and the cores burn_a kept busy over the run.
    cpu_s = (t["a_ns"] + t["b_ns"]) / 1e9
    check(rep["samples"] > 0.8 * RATIO_HZ * cpu_s and rep["lost"] == 0,
          f"{rep['samples']} samples for {cpu_s:.2f} s of CPU, {rep['lost']} lost")
    want_cores = t["a_ns"] / 1e9 / rep["interval_s"]
    check(0.8 < a["cpu_cores"] / want_cores < 1.2, f"burn_a {a['cpu_cores']} cores of {want_cores:.2f}")


def test_sleeping_process_has_almost_no_samples():
    proc = subprocess.Popen([target("burn"), "sleep", "5"])
    try:
        p = run_fnprof(["-p", str(proc.pid), "-d", "1.5", "--json"])
        check(p.returncode == 0, p.stderr)
        rep = [r for r in json_reports(p.stdout) if r["mode"] == "sample"][-1]
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
        sampled(["-F", str(RATIO_HZ), "--pprof", path], target("burn"), 2)
        with open(path, "rb") as f:
            check(f.read(2) == b"\x1f\x8b", "pprof file is not gzip-compressed")
        env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"))
        top = subprocess.run(["go", "tool", "pprof", "-top", path], capture_output=True, text=True,
                             timeout=120, env=env)
        check(top.returncode == 0, top.stderr)
        rows = [l for l in top.stdout.splitlines() if re.match(r"\s*[\d.]+m?s\s", l)]
        # work() is inlined into burn_a (burn is built -O2 -g): a line of burn_a's locations that
        # pprof marks itself ("work (inline)"), the hottest; burn_a is its caller.
        check(rows and rows[0].split()[-2:] == ["work", "(inline)"] and "burn_a" in top.stdout,
              f"hot function not first:\n{top.stdout}")
        check("Type: cpu" in top.stdout, top.stdout)
        check("File: burn" in top.stdout, f"the program's mapping must come first:\n{top.stdout}")
    finally:
        shutil.rmtree(d)


def test_folded_format():
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "cpu.folded")
        rep, _ = sampled(["-F", str(RATIO_HZ), "--folded", path], target("burn"), 1)
        lines = open(path).read().splitlines()
        check(lines, "empty folded file")
        total = 0
        for line in lines:
            m = re.match(r"^(\S.*) (\d+)$", line)
            check(m, f"not 'frames count': {line!r}")
            frames = m.group(1).split(";")
            check(frames[0] == "burn", f"first frame must be the command: {frames[:2]}")
            total += int(m.group(2))
        check(any(re.search(r"main;burn_both;burn_a(;work \(inlined\))? \d+$", l) for l in lines), "root-first order")
        check(abs(total - rep["samples"]) <= 0.02 * rep["samples"], f"{total} vs {rep['samples']} samples")
    finally:
        shutil.rmtree(d)


def test_output_files_refuse_symlinks_never_follow():
    # Planted symlinks are existing files: refused before sampling, neither followed nor replaced.
    d = tempfile.mkdtemp()
    try:
        victim = os.path.join(d, "victim")
        open(victim, "w").write("keep me\n")
        for name in ("cpu.folded", "cpu.pb.gz"):
            os.symlink(victim, os.path.join(d, name))
        p = run_fnprof(["--folded", os.path.join(d, "cpu.folded"), "--pprof", os.path.join(d, "cpu.pb.gz"),
                        "--", target("burn"), "0.5"])
        check(p.returncode == 1 and "exists already" in p.stderr, f"exit {p.returncode}: {p.stderr[-500:]}")
        check(open(victim).read() == "keep me\n", "a planted symlink was followed")
        for name in ("cpu.folded", "cpu.pb.gz"):
            check(os.path.islink(os.path.join(d, name)), f"{name}, the symlink, was replaced")
            os.unlink(os.path.join(d, name))
        sampled(["--folded", os.path.join(d, "cpu.folded"), "--pprof", os.path.join(d, "cpu.pb.gz")],
                target("burn"), 0.5)
        check(sorted(os.listdir(d)) == ["cpu.folded", "cpu.pb.gz", "victim"], f"leftovers: {os.listdir(d)}")
    finally:
        shutil.rmtree(d)


def test_per_thread_table():
    p = run_fnprof(["--per-thread", "-F", "499", "--", target("work"), "threads", "2", "20000"])
    check(p.returncode == 0, p.stderr)
    check(p.stderr.count("thread ") >= 2, f"no per-thread sections:\n{p.stderr[-2000:]}")
    # The threads have exited by the final report: their names were read while they ran.
    check(re.search(r"thread \d+ \(work\)", p.stderr), f"thread names:\n{p.stderr[-2000:]}")


def test_trace_and_sample_together():
    p = run_fnprof(["-f", "burn_b", "--sample", "--json", "--", target("burn"), "1"])
    check(p.returncode == 0, p.stderr)
    modes = [r["mode"] for r in json_reports(p.stdout)]
    check("trace" in modes and "sample" in modes, f"modes {modes}")


def test_sampling_table():
    p = run_fnprof(["-F", "199", "-n", "3", "--", target("burn"), "1"])
    check(p.returncode == 0, p.stderr)
    for col in ("FUNCTION", "OBJECT", "SELF%", "TOTAL%", "SAMPLES", "CORES"):
        check(col in p.stderr, f"{col} missing")
    check("burn_a" in p.stderr, p.stderr[-1500:])


def test_reports_every_interval_without_duplicates_under_asan():
    """Several interval reports: frames symbolized before and after a refresh of the mappings are
    the same function (one row each), and the cached frames stay valid (ASan build)."""
    asan = os.path.join(os.path.dirname(FNPROF), "fnprof-asan")
    if not os.path.exists(asan):
        raise Skip("fnprof-asan not built (make test-build)")
    # RATIO_HZ, not 499 Hz: at 499 Hz the sampling phase drifts by 1 ms of burn's 4 ms cycle in
    # half a second, so one interval could see mostly burn_b (seen once in CI: aliasing).
    _, p = sampled(["-F", str(RATIO_HZ), "-i", "0.5"], target("burn"), 2, fnprof=asan)
    check("ERROR: AddressSanitizer" not in p.stderr, p.stderr[-3000:])
    reps = p.reports
    check(len(reps) >= 3, f"{len(reps)} interval reports")
    for r in reps:
        keys = [(f["name"], f["object"]) for f in r["functions"]]
        check(len(keys) == len(set(keys)), f"a function shows twice: {sorted(keys)}")
    # An interval that burn ran through: on a busy machine the ASan build's reports come late, and
    # one may cover only the moments after burn exited (0.06-0.09 s seen, 0 samples: right).
    full = [r for r in reps if r["interval_s"] > 0.4 and r["samples"] >= 40]
    check(full, f"no interval with burn running: {[(r['interval_s'], r['samples']) for r in reps]}")
    # burn_a has 75% of the CPU; in 40 samples or more its share stays above 50% (3.6 standard
    # deviations) unless the samples were misattributed.
    shares = [round(fn(r, "burn_a")["self_pct"], 1) for r in full]
    check(all(s > 50 for s in shares), f"burn_a is hot in every full interval: {shares}")


def test_leaf_right_without_frame_pointers():
    """-O2 without frame pointers: stacks may be cut short, but the sampled function (the leaf)
    comes from the instruction pointer and must be right."""
    if not shutil.which("cc"):
        raise Skip("no C compiler to build the target without frame pointers")
    d = tempfile.mkdtemp()
    try:
        exe = os.path.join(d, "burn_nofp")
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets", "burn.c")
        subprocess.run(["cc", "-O2", "-fomit-frame-pointer", src, "-o", exe], check=True)
        rep, p = sampled(["-F", str(RATIO_HZ)], exe, 2)
        t = truth(p.stderr, "burn")
        a, b = fn(rep, "burn_a"), fn(rep, "burn_b")
        check_share(a, b, t["ratio"], rep, 5)
        check(a["self_pct"] + b["self_pct"] >= 90, f"burn_a {a['self_pct']:.1f}% + burn_b {b['self_pct']:.1f}%")
        check(a["object"] == exe, f"object {a['object']}")
    finally:
        shutil.rmtree(d)


def test_unknown_frames_keep_the_object():
    """A stripped executable without debug file: its functions are named object+0xADDR from the
    unwind tables (burn_a and burn_b two rows, not one [unknown]), in the table, JSON and folded
    stacks; none dropped."""
    if not shutil.which("strip"):
        raise Skip("no strip (binutils)")
    d = tempfile.mkdtemp()
    try:
        exe = os.path.join(d, "burn_stripped")
        shutil.copy(target("burn"), exe)
        subprocess.run(["strip", exe], check=True)
        syms = subprocess.run(["nm", target("burn")], capture_output=True, text=True).stdout.split("\n")
        addr = {l.split()[2]: int(l.split()[0], 16) for l in syms if len(l.split()) == 3}
        folded = os.path.join(d, "cpu.folded")
        rep, _ = sampled(["-F", "347", "--folded", folded], exe, 1)
        names = {f["name"]: f for f in rep["functions"] if f["object"] == exe}
        a, b = (names.get(f"burn_stripped+{addr[n]:#x}") for n in ("burn_a", "burn_b"))
        check(a and b, f"stripped frames: {rep['functions'][:4]}")
        check(a["self_pct"] > 60 and b["self_pct"] > 15, f"burn_a {a['self_pct']:.1f}%, burn_b {b['self_pct']:.1f}%")
        lines = open(folded).read().splitlines()
        total = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
        check(total == rep["samples"], f"folded {total} vs {rep['samples']} samples")
        check(any(f"burn_stripped+{addr['burn_a']:#x}" in l for l in lines), f"no burn_a frame: {lines[:3]}")
    finally:
        shutil.rmtree(d)


def test_dlclosed_library_keeps_its_names():
    """A library dlclose'd before the report (a plug-in unloaded) keeps the names of the samples taken
    in it: samples are named at the report, from the mappings seen while they were taken. Before,
    every sample in it read [unknown] (37% of them). Under DWARF, its share of the samples follows the
    target's CPU time in it, within 8 points or 4 standard deviations of a share drawn from that many
    samples (with frame pointers, a sample in the vDSO's clock_gettime, which keeps no frame, skips
    lib_spin: there, no more than 3% of the samples may be [unknown])."""
    lib = os.path.join(os.path.dirname(target("dlclose")), "libtarget.so")
    for cg in ("dwarf", "fp"):
        rep, p = sampled(["-F", str(RATIO_HZ), "--call-graph", cg], target("dlclose"), lib, "1", "0.8")
        t = truth(p.stdout, "dlclose")
        check(t["unmapped"] == 1, f"the library is still mapped after dlclose: {t}")
        f = fn(rep, "lib_spin")
        top = [(x["name"], x["object"], x["self_pct"], x["total_pct"]) for x in rep["functions"][:6]]
        check(f["object"].endswith("libtarget.so"), f"lib_spin in {f['object']}")
        unknown = sum(x["self_pct"] for x in rep["functions"] if x["name"] == "[unknown]")
        check(unknown <= 3, f"{cg}: {unknown:.1f}% of the samples [unknown]: {top}")
        if cg == "fp":
            continue
        want = 100 * t["lib_ns"] / (t["lib_ns"] + t["own_ns"])
        n = rep["samples"]
        tol = max(8, 4 * 100 * (want / 100 * (1 - want / 100) / max(n, 1)) ** 0.5)
        check(abs(f["total_pct"] - want) <= tol,
              f"{cg}: lib_spin on {f['total_pct']:.1f}% of {n} samples vs {want:.1f}% of the CPU time "
              f"(allowed {tol:.1f} points): {top}")


def burners(*ratios, seconds=20):
    """burn processes, one per (a, b) ratio of units, burning for seconds."""
    return [subprocess.Popen([target("burn"), str(seconds), str(a), str(b)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for a, b in ratios]


def test_pid_list_samples_each_process():
    """-p A,B without -f: each process sampled and reported on its own (before: "sampling takes one
    PID"). A burns 3:1 in burn_a, B 1:3 in burn_b: each report's hottest function is its own."""
    procs = burners((3, 1), (1, 3))
    try:
        pids = [p.pid for p in procs]
        arg = f"{pids[0]},{pids[1]}"
        p = run_fnprof(["-p", arg, "-d", "2", "--json", "-F", str(RATIO_HZ)])
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        reps = {r["pid"]: r for r in json_reports(p.stdout) if r.get("mode") == "sample"}
        check(sorted(reps) == sorted(pids), f"reports of {sorted(reps)}, want {pids}")
        for pid, hot in zip(pids, ("burn_a", "burn_b")):
            top = max(reps[pid]["functions"], key=lambda f: f["self_samples"])
            check(top["name"] == hot and top["self_pct"] > 55, f"pid {pid}: hottest {top['name']} "
                  f"{top['self_pct']:.1f}%, want {hot}")
            check(all(f.get("pid", pid) == pid for f in reps[pid]["functions"]), f"pid {pid}: rows of others")
        p = run_fnprof(["-p", arg, "-d", "1"])
        check(p.returncode == 0, p.stderr[-2000:])
        heads = re.findall(r"^sampled: pid (\d+)", p.stderr, re.M)
        check(heads == [str(x) for x in pids], f"table reports {heads}:\n{p.stderr[-2000:]}")
    finally:
        for x in procs:
            x.kill()
            x.communicate()
