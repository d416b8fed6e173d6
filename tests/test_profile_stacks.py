"""The offcpu, mutex and heap profiles' user stacks with --call-graph dwarf (the default): waits in
glibc keep their callers, and the goals are checked with go tool pprof on the files fnprof writes.

Targets: tests/targets/waits.c, built with -fomit-frame-pointer (a thread sleeping 1 ms per call in
sleep_us() through nanosleep; 4 threads on one mutex released in hold_and_release() through
pthread_mutex_unlock), and clang++ compiling tests/targets/compile/unit.cpp under the heap profile.
The frame-pointer walk (--call-graph fp) on the same runs is measured too: it loses the callers of
glibc, so each check is one that fp fails.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import ROOT, Skip, check, json_reports, run_fnprof, target, truth


def go_env(d):
    return dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"))


def pprof_raw(path):
    """The samples of a pprof file as go tool pprof -raw reads them: (sample type names, [(values,
    [function names of the stack, leaf first, inlined ones included], {label: value})]). Skips
    without Go."""
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    d = tempfile.mkdtemp()
    try:
        p = subprocess.run(["go", "tool", "pprof", "-raw", path], capture_output=True, text=True, timeout=120,
                           env=go_env(d))
    finally:
        shutil.rmtree(d)
    check(p.returncode == 0, f"go tool pprof -raw failed on {path}: {p.stderr}")
    lines = p.stdout.splitlines()
    i = lines.index("Samples:")
    types = [t.split("/")[0] for t in lines[i + 1].split()]
    samples, locs, last = [], {}, None
    part = "samples"
    for line in lines[i + 2:]:
        if line.startswith("Locations"):
            part = "locations"
            continue
        if line.startswith("Mappings"):
            break
        if part == "samples":
            m = re.match(r"^\s*([\d\s]+):\s*([\d\s]*)$", line)
            if m:
                samples.append(([int(v) for v in m.group(1).split()], [int(x) for x in m.group(2).split()], {}))
            for k, v in re.findall(r"(\w+):\[([^\]]*)\]", line if not m else ""):
                samples[-1][2][k] = v
            continue
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+(?: M=\d+)? (.*) \S*:\d+ s=\d+", line)
        if m:
            last = int(m.group(1))
            locs[last] = [m.group(2)]
            continue
        m = re.match(r"^\s+(.*) \S*:\d+ s=\d+", line)
        if m and last is not None:  # an inlined function of the same location
            locs[last].append(m.group(1))
    return types, [(v, [f for x in ids for f in locs.get(x, ["?"])], lb) for v, ids, lb in samples]


def share(path, value, has, among=lambda frames, labels: True):
    """Of the samples among() accepts, the share of sample type value whose stacks have a frame that
    has(name) accepts; and their total."""
    types, samples = pprof_raw(path)
    k = types.index(value)
    kept = [(v, fr) for v, fr, lb in samples if among(fr, lb)]
    total = sum(v[k] for v, _ in kept)
    hit = sum(v[k] for v, fr in kept if any(has(f) for f in fr))
    return hit / max(total, 1), total


def profile_file(kind, args, *cmd, timeout=120):
    """Runs fnprof --profile kind with args on cmd; (the pprof file's share helper input: path, stdout,
    stderr) inside a fresh directory the caller removes."""
    d = tempfile.mkdtemp()
    path = os.path.join(d, f"{kind}.pb.gz")
    p = run_fnprof(["--profile", kind, "--pprof", path] + list(args) + ["--"] + [str(c) for c in cmd],
                   timeout=timeout)
    check(p.returncode == 0, f"fnprof exit {p.returncode}: {p.stderr[-3000:]}")
    return d, path, p


def named(name):
    return lambda f: f == name or f.startswith(name + "(")


def in_sleep(frames, labels):
    return labels.get("state") == "blocked" and "clock_nanosleep" in frames


def test_offcpu_dwarf_keeps_the_caller_of_glibc_sleep():
    # The goal: >= 90% of the delay blocked in nanosleep (the main thread's wait in pthread_join
    # aside) has sleep_us on its stack (fp: the caller of glibc is lost, 0%). The delay blocked in
    # clock_nanosleep is within 15% of the time the target measured in sleep_us, wall less CPU time.
    d, path, p = profile_file("offcpu", [], target("waits"), "sleep", 2)
    try:
        t = truth(p.stdout, "sleep")
        got, total = share(path, "delay", named("sleep_us"), in_sleep)
        check(got >= 0.90, f"sleep_us on {100 * got:.1f}% of the delay in nanosleep (< 90%):\n{p.stderr[-2500:]}")
        check(abs(total - t["slept_ns"]) <= 0.15 * t["slept_ns"],
              f"delay in nanosleep {total / 1e6:.0f} ms vs the {t['slept_ns'] / 1e6:.0f} ms the target slept")
        check("unwound with DWARF CFI" in p.stderr, "no unwinding line in the report")
    finally:
        shutil.rmtree(d)
    d, path, _ = profile_file("offcpu", ["--call-graph", "fp"], target("waits"), "sleep", 1)
    try:
        fp, _ = share(path, "delay", named("sleep_us"), in_sleep)
        check(fp < 0.5, f"fp walk has sleep_us on {100 * fp:.1f}% of the delay: the target has frame pointers?")
    finally:
        shutil.rmtree(d)


def lock(frames, labels):
    return labels.get("kind") == "lock"


def test_mutex_dwarf_charges_the_releasing_function():
    # The goal: >= 80% of the lock delay (label kind=lock: the main thread's join is a wait) is
    # charged to stacks with hold_and_release, the releaser (fp: __lll_lock_wake -> start_thread,
    # 0%); the waiters' view (wait_delay) has take_lock; the lock delay is within 25% of the
    # threads' own time in pthread_mutex_lock (as test_profiles' mutex test).
    d, path, p = profile_file("mutex", [], target("waits"), "mutex", 1.5)
    try:
        t = truth(p.stdout, "mutex")
        got, total = share(path, "delay", named("hold_and_release"), lock)
        check(got >= 0.80, f"hold_and_release on {100 * got:.1f}% of the lock delay (< 80%):\n{p.stderr[-2500:]}")
        waiters, _ = share(path, "wait_delay", named("take_lock"), lock)
        check(waiters >= 0.80, f"take_lock on {100 * waiters:.1f}% of the lock wait_delay")
        check(abs(total - t["wait_ns"]) <= 0.25 * t["wait_ns"],
              f"lock delay {total / 1e6:.0f} ms vs the threads' {t['wait_ns'] / 1e6:.0f} ms in pthread_mutex_lock")
    finally:
        shutil.rmtree(d)
    d, path, _ = profile_file("mutex", ["--call-graph", "fp"], target("waits"), "mutex", 1)
    try:
        fp, _ = share(path, "delay", named("hold_and_release"), lock)
        check(fp < 0.5, f"fp walk charges hold_and_release {100 * fp:.1f}%: the target has frame pointers?")
    finally:
        shutil.rmtree(d)


def test_offcpu_dwarf_copy_too_short_is_counted_and_fp_is_said():
    # With 64 bytes of stack copied, the walk from clock_nanosleep needs more than the copy: every
    # unwound stack is cut short, and the report says so (a loss is never silent); the JSON says
    # which walk was used, dwarf or fp.
    d = tempfile.mkdtemp()
    try:
        for cg, want in (("dwarf,64", "dwarf"), ("fp", "fp")):
            out = os.path.join(d, f"{want}.json")
            p = run_fnprof(["--profile", "offcpu", "--call-graph", cg, "--json", "-o", out, "--", target("waits"),
                            "sleep", "0.5"])
            check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
            rep = [json.loads(l) for l in open(out) if l.startswith("{")][-1]
            check(rep["call_graph"] == want, f"call_graph {rep['call_graph']} with --call-graph {cg}")
            if want == "fp":
                check("unwind" not in rep, f"fp has no unwinding: {rep.get('unwind')}")
                continue
            u = rep["unwind"]
            check(u["samples"] >= 0.9 * rep["kept"] and u["truncated"] >= 0.9 * u["samples"],
                  f"64-byte copies: {u} of {rep['kept']} kept waits (all should be cut short)")
    finally:
        shutil.rmtree(d)


# The JSON `unwind` keys, a contract: what the CPU profile wrote before one writer served all, and
# what the others wrote (the heap's inuse_stacks_lost apart: it has an in-use view, they have none).
UNWIND_CPU = {"stack_bytes", "samples", "truncated", "lost", "cpu_ns", "unwinders", "unwinders_evicted",
              "fp_fallback", "sync_timeouts", "frames_cfi", "frames_fp", "frames_epilogue"}
UNWIND_PROF = {"samples", "truncated", "lost", "ids_lost", "ids_reused", "ids_held", "fp_fallback",
               "ringbuf_full", "cpu_ns"}


def test_every_profile_writes_the_same_unwind_keys():
    # The CPU profile's `unwind` object (sample.c) and the other profiles' (profiles.c) had drifted:
    # 5 keys in both, 4 only in the first, 4 only in the others (and heap's inuse_stacks_lost). One
    # writer now serves all: every key either wrote, in each profile; the copy's size is the one
    # asked for, and one process has one unwinder.
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "report.json")
        kinds = sum((["--profile", k] for k in ("cpu", "offcpu", "mutex")), [])
        p = run_fnprof(["--call-graph", "dwarf,4096", "--json", "-o", out] + kinds + ["--", target("mutex"), "0.5"],
                       timeout=90)
        check(p.returncode == 0, p.stderr[-2000:])
        reps = json_reports(open(out).read())
        p = run_fnprof(["--call-graph", "dwarf,4096", "--json", "-o", out + "2", "--profile", "heap", "--heap-rate",
                        "64K", "--", target("heap"), "32", "0.5"], timeout=90)
        check(p.returncode == 0, p.stderr[-2000:])
        reps += json_reports(open(out + "2").read())
    finally:
        shutil.rmtree(d)
    for mode in ("sample", "offcpu", "mutex", "heap"):
        got = [r for r in reps if r.get("mode") == mode]
        check(got, f"no {mode} report")
        u = got[-1]["unwind"]
        want = UNWIND_CPU | UNWIND_PROF | ({"inuse_stacks_lost"} if mode == "heap" else set())
        check(set(u) == want, f"{mode}: unwind keys missing {sorted(want - set(u))}, extra {sorted(set(u) - want)}")
        check(u["stack_bytes"] == 4096 and u["unwinders"] == 1, f"{mode}: {u}")


def clangxx():
    for c in ("clang++", "clang++-14"):
        if shutil.which(c):
            return shutil.which(c)
    raise Skip("clang++ is not installed")


def compiler_frame(f):
    return f.startswith("clang::") or f.startswith("llvm::")


def test_heap_dwarf_clangxx_allocations_reach_the_compiler():
    # The goal: >= 70% of clang++'s alloc_space has a clang:: or llvm:: frame (Debian's LLVM has no
    # frame pointers: fp stops at operator new, 13.9%). The weights are checked too: clang++ allocates
    # far more than it keeps, and the sampled total is in the hundreds of MiB, not a handful of samples.
    src = os.path.join(ROOT, "tests", "targets", "compile", "unit.cpp")
    obj = tempfile.mkdtemp()
    try:
        d, path, p = profile_file("heap", [], clangxx(), "-std=c++17", "-O2", "-c", src, "-o",
                                  os.path.join(obj, "unit.o"), timeout=180)
        try:
            got, total = share(path, "alloc_space", compiler_frame)
            check(total > 50 << 20, f"alloc_space {total >> 20} MiB: too few samples to judge")
            check(got >= 0.70, f"clang::/llvm:: frames on {100 * got:.1f}% of alloc_space (< 70%):\n"
                  f"{p.stderr[-2500:]}")
        finally:
            shutil.rmtree(d)
    finally:
        shutil.rmtree(obj)
