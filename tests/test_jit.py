"""JIT frames named from the runtime's perf map (/tmp/perf-PID.map).

Targets: tests/targets/jit.c copies a spin loop into anonymous executable memory and names it
in its perf map, a stale name first and then "jitfn_spin [compiled]" for the same range (the
later line must win); it spends all its time there. tests/targets/busy.js (Node, with
--perf-basic-prof) calls a recursive fib in a loop: nearly all its CPU is in fib's JIT code.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import FNPROF, ROOT, Skip, check, json_reports, target

BUSY_JS = os.path.join(ROOT, "tests", "targets", "busy.js")


def sample_launched(args, cmd, d, timeout=90):
    """Launch mode, the JSON report to a file in d (the target shares fnprof's stderr), run in d
    (Node leaves a V8 log, isolate-*-v8.log, where it runs): the last sampling report, and
    fnprof's result."""
    out = os.path.join(d, "report.json")
    p = subprocess.run([FNPROF] + list(args) + ["--json", "-o", out, "--"] + [str(c) for c in cmd],
                       capture_output=True, text=True, timeout=timeout, cwd=d)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
    reps = [r for r in json_reports(open(out).read()) if r.get("mode") == "sample"]
    check(reps, f"no sampling report:\n{p.stderr[-2000:]}")
    return reps[-1], p


def remove_map(text):
    """Removes the perf map a target wrote (its pid is in its 'ready pid=N' line, or fnprof's report)."""
    for m in re.finditer(r"(?:ready pid=|\"pid\": ?)(\d+)", text):
        try:
            os.unlink(f"/tmp/perf-{m.group(1)}.map")
        except OSError:
            pass


def check_jit_named(call_graph, mode="write", object_="[jit]"):
    d = tempfile.mkdtemp()
    try:
        folded = os.path.join(d, "cpu.folded")
        rep, p = sample_launched(["-F", "199", "--call-graph", call_graph, "--folded", folded],
                                 [target("jit"), 2, mode], d)
        remove_map(json.dumps(rep))
        n = rep["samples"]
        named = [f for f in rep["functions"] if f["name"] == "jitfn_spin [compiled]"]
        check(named, f"JIT code not named: {[(f['name'], f['object']) for f in rep['functions'][:5]]}")
        # The target spins in its JIT code but for its start (a few ms): at least 80% with margin.
        check(named[0]["self_samples"] >= 0.8 * n, f"jitfn_spin {named[0]['self_samples']} of {n} samples")
        check(named[0]["object"].startswith(object_), f"object {named[0]['object']}")
        check(not any(f["name"] == "stale_name" for f in rep["functions"]), "a superseded line named code")
        text = open(folded).read()
        check(";jitfn_spin [compiled] " in text, f"folded stacks lack the JIT frame:\n{text[:500]}")
    finally:
        shutil.rmtree(d)


def test_jit_frames_named_dwarf():
    """Default call graph (DWARF): the leaf in JIT code, named from the perf map, object [jit]."""
    check_jit_named("dwarf")


def test_jit_frames_named_fp():
    """--call-graph fp (stacks walked in the kernel): the same names."""
    check_jit_named("fp")


def test_jit_code_unmapped_before_exit_keeps_its_names():
    """A runtime unmaps its code before it exits (V8 tears its code space down ~5 ms before its
    maps vanish; under load fnprof's last look at the maps fell there, and all 761 samples of a
    Node run read [unknown], 0 fib): the samples are named at the report, from the code ranges
    seen while they were taken. The target lingers 0.6 s after its munmap, past fnprof's refresh."""
    for cg in ("dwarf", "fp"):
        check_jit_named(cg, "unmap")


def test_jit_frames_in_memfd_named():
    """JIT code in a memfd mapped executable (no ELF there): named from the perf map, with the
    memfd as its object."""
    check_jit_named("dwarf", "memfd", "/memfd:jit")


def fib_shares(pprof_path, d):
    """From go tool pprof -traces: (samples whose leaf is fib, samples with fib anywhere, all)."""
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"))
    t = subprocess.run(["go", "tool", "pprof", "-traces", "-sample_index=samples", pprof_path],
                       capture_output=True, text=True, timeout=120, env=env)
    check(t.returncode == 0, t.stderr)
    total = re.search(r"Total samples = (\d+)", t.stdout)
    check(total, f"no total in:\n{t.stdout[:500]}")
    leaf = anywhere = 0
    for block in t.stdout.split("-----------+")[1:]:
        lines = [l for l in block.splitlines()[1:] if l.strip()]
        m = lines and re.match(r"\s+(\d+)\s+(.*)", lines[0])
        if not m:
            continue
        count, frames = int(m.group(1)), [m.group(2)] + [l.strip() for l in lines[1:]]
        leaf += count if "fib" in frames[0] else 0
        anywhere += count if any("fib" in f for f in frames) else 0
    return leaf, anywhere, int(total.group(1))


def check_node_fib(call_graph):
    node = shutil.which("node")
    if not node:
        raise Skip("node is not installed (make test-deps installs Debian's nodejs)")
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "cpu.pb.gz")
        rep, p = sample_launched(["-F", "499", "--call-graph", call_graph, "--pprof", path],
                                 [node, "--perf-basic-prof", BUSY_JS, 3], d)
        remove_map(json.dumps(rep))
        check("truth busy" in p.stdout + p.stderr, f"busy.js did not finish:\n{p.stderr[-1000:]}")
        leaf, anywhere, total = fib_shares(path, d)
        # Node's start (~0.2 s of CPU) against 3 s in fib: about 90% is fib's; 60% is the goal.
        check(total >= 200, f"only {total} samples")
        check(leaf >= 0.6 * total, f"fib is the leaf of {leaf} of {total} samples ({anywhere} with fib anywhere)")
    finally:
        shutil.rmtree(d)


def test_node_fib_named_dwarf():
    """Node --perf-basic prof: >= 60% of the samples have fib's JIT code as their leaf, read back
    with go tool pprof (default call graph)."""
    check_node_fib("dwarf")


def test_node_fib_named_fp():
    """The same with --call-graph fp."""
    check_node_fib("fp")


def folded_counts(path):
    """[(frames root first, count)] of a folded stacks file."""
    out = []
    for line in open(path):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        out.append((stack.split(";"), int(n)))
    return out


def user_frames(frames):
    """The user part of a folded stack (kernel frames end in _[k])."""
    return [f for f in frames if not f.endswith("_[k]")]


def test_dwarf_through_jit_frames_to_main():
    """Mixed unwinding (issue 35): under --call-graph dwarf, code without CFI is stepped over by its
    epilogue or its frame pointer, then CFI again. jit_nofp (C without frame pointers, as CPython
    -O2) calls JIT code that keeps a frame pointer (jitfn_frame), which calls a trampoline made as
    Python 3.12's -X perf makes them (jitfn_tramp: no frame pointer, no CFI), which calls c_spin.
    Before: libdwfl followed rbp from the trampoline, and the stack read main;jitfn_tramp;c_spin
    (jitfn_frame lost) in all 514 samples of c_spin. At least 80% of the samples in each function
    must have the whole chain up to main, and the unwinding counts each way of finding frames."""
    d = tempfile.mkdtemp()
    try:
        folded = os.path.join(d, "cpu.folded")
        rep, p = sample_launched(["-F", "499", "--call-graph", "dwarf", "--folded", folded],
                                 [target("jit_nofp"), 2, "frames"], d)
        remove_map(json.dumps(rep))
        chain = ["main", "jitfn_frame [compiled]", "jitfn_tramp [compiled]", "c_spin"]
        stacks = [(user_frames(f), n) for f, n in folded_counts(folded)]
        for depth in (2, 4):  # samples in jitfn_frame's own loop, then in c_spin under both
            leaf = chain[depth - 1]
            mine = [(f, n) for f, n in stacks if f[-1] == leaf]
            total = sum(n for _, n in mine)
            whole = sum(n for f, n in mine if f[-depth:] == chain[:depth])
            check(total >= 20, f"only {total} samples in {leaf}: {stacks[:5]}")
            check(whole >= 0.8 * total, f"{whole} of {total} samples in {leaf} have {';'.join(chain[:depth])}: "
                  f"{sorted(mine, key=lambda x: -x[1])[:3]}")
        u = rep["unwind"]
        check(u["frames_cfi"] > 0 and u["frames_fp"] > 0 and u["frames_epilogue"] > 0, f"unwind: {u}")
    finally:
        shutil.rmtree(d)


def python_with_perf_trampolines():
    """A Python 3.12 or later that runs -X perf: on PATH, or installed by pyenv (whose shims
    fail for a version not selected), or None."""
    found = [shutil.which(f"python3.{v}") for v in (12, 13)]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]")))
    for py in filter(None, found):
        if subprocess.run([py, "-X", "perf", "-c", "pass"], capture_output=True).returncode == 0:
            return py
    return None


def test_python312_perf_trampolines_reach_main():
    """Python 3.12 -X perf (issue 35): its trampolines have neither CFI nor a frame pointer
    (sub $8,%rsp; call *%rcx; add $8,%rsp; ret), and an interpreter built -O2 keeps none either.
    Before: every stack through py::crunch ended at it (0 of 349 samples reached Py_RunMain). At
    least 80% of the samples in py::crunch must have py::<module> and Py_RunMain above them
    (python's main tail-calls Py_BytesMain: main itself is on no stack, with or without JIT)."""
    py = python_with_perf_trampolines()
    if not py:
        raise Skip("no Python 3.12 or later with -X perf here (on PATH or under ~/.pyenv/versions)")
    d = tempfile.mkdtemp()
    try:
        script = os.path.join(d, "pyhot.py")
        with open(script, "w") as f:
            f.write("import sys, time\n"
                    "def crunch(n):\n    s = 0\n    for i in range(n):\n        s += i * i % 7\n    return s\n"
                    "end = time.time() + float(sys.argv[1])\n"
                    "while time.time() < end:\n    crunch(100000)\n")
        folded = os.path.join(d, "cpu.folded")
        rep, p = sample_launched(["-F", "199", "--call-graph", "dwarf", "--folded", folded],
                                 [py, "-X", "perf", script, 2], d)
        remove_map(json.dumps(rep))
        mine = [(f, n) for f, n in folded_counts(folded) if any(x.startswith("py::crunch:") for x in f)]
        total = sum(n for _, n in mine)
        whole = sum(n for f, n in mine if "Py_RunMain" in f and any(x.startswith("py::<module>:") for x in f))
        check(total >= 100, f"only {total} samples in py::crunch")
        check(whole >= 0.8 * total, f"{whole} of {total} samples in py::crunch reach Py_RunMain: "
              f"{sorted(mine, key=lambda x: -x[1])[:2]}")
        check(rep["unwind"]["frames_epilogue"] > 0, f"unwind: {rep['unwind']}")
    finally:
        shutil.rmtree(d)
