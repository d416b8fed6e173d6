"""JIT frames named from the runtime's perf map (/tmp/perf-PID.map).

Targets: tests/targets/jit.c copies a spin loop into anonymous executable memory and names it
in its perf map, a stale name first and then "jitfn_spin [compiled]" for the same range (the
later line must win); it spends all its time there. tests/targets/busy.js (Node, with
--perf-basic-prof) calls a recursive fib in a loop: nearly all its CPU is in fib's JIT code.
"""
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
