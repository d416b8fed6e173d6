"""Targets that break return probes: C++ exceptions, longjmp; the target's output never changes."""
import subprocess

from harness import check, check_no_drops, final_report, func, run_fnprof, target, truth
from harness import plain_output, traced


def test_cxx_exception_through_traced_function():
    want = plain_output(target("cxx_throw"), 3000)
    rep, p = traced(["-f", "app::middle"], target("cxx_throw"), 3000)
    check(p.stdout == want, f"output changed: {p.stdout!r} vs {want!r}")
    f = func(rep, "app::middle(int)")
    check(f["exit"] == "ret", f"auto mode chose {f['exit']} for a C++ program")
    check(f["calls"] == 2000, f"{f['calls']} timed calls; 2000 returned normally")
    check(rep["dropped"]["abandoned_frames"] >= 999, f"{rep['dropped']}: 1000 frames were unwound")


def test_cxx_exception_with_glob_and_mangled_name():
    want = plain_output(target("cxx_throw"), 300)
    rep, p = traced(["-f", "app::*", "-f", "_ZN3app6middleEi"], target("cxx_throw"), 300)
    check(p.stdout == want, "output changed")
    names = {f["name"] for f in rep["functions"]}
    check(names == {"app::middle(int)", "app::thrower(int)"}, f"matched {names}")
    check(func(rep, "app::thrower(int)")["calls"] == 200, "thrower returns 200 times")


def test_longjmp_past_traced_frames():
    want = plain_output(target("jump"), 1000)
    for mode in ("uretprobe", "ret"):
        rep, p = traced(["--exit", mode, "-f", "top", "-f", "mid", "-f", "leaf"], target("jump"), 1000)
        check(p.stdout == want, f"--exit={mode}: output changed: {p.stdout!r} vs {want!r}")
        for name in ("top", "mid", "leaf"):
            check(func(rep, name)["calls"] == 500, f"--exit={mode}: {name} returned 500 times")
        check(rep["dropped"]["abandoned_frames"] >= 3 * 500 - 3, f"--exit={mode}: {rep['dropped']}")


def test_ret_mode_latency_matches_truth():
    rep, p = traced(["--exit", "ret", "-f", "spin_us"], target("work"), "spin", 50, 1000)
    t, f = truth(p.stderr, "spin_us"), func(rep, "spin_us")
    check(f["exit"] == "ret" and f["calls"] == 1000, f"{f['exit']} {f['calls']}")
    check(abs(f["wall_ns"]["avg"] - t["wall_avg_ns"]) <= 0.03 * t["wall_avg_ns"] + 1000,
          f"ret mode: {f['wall_ns']['avg']:.0f} ns vs truth {t['wall_avg_ns']:.0f}")


def test_entry_only_counts_calls():
    rep, p = traced(["--entry-only", "-f", "tiny"], target("work"), "count", 10000)
    f = func(rep, "tiny")
    check(f["calls"] == 10000 and f["exit"] == "none", f"{f['calls']} {f['exit']}")
    check(f["wall_ns"] is None, "entry-only must not show a latency")
    text = run_fnprof(["--entry-only", "-f", "tiny", "--", target("work"), "count", "100"]).stderr
    row = [l for l in text.splitlines() if l.startswith("tiny")][0]
    check(" - " in row and "100" in row, row)


def test_c_program_keeps_uretprobe():
    rep, _ = traced(["-f", "spin_us"], target("work"), "spin", 10, 10)
    check(func(rep, "spin_us")["exit"] == "uretprobe", "a plain C program needs no ret probes")


def test_coroutines_switching_stacks():
    # Two coroutines (swapcontext), each suspended inside step() while the other runs: frames live
    # on two stacks at once. A uretprobe kills this program (SIGILL from the kernel, seen on 6.18);
    # auto mode sees the swapcontext import, probes the ret instructions and matches each return
    # to its own frame by stack pointer.
    rep, p = traced(["-f", "step"], target("coro"), 2000)
    f, t = func(rep, "step"), truth(p.stderr, "step")
    check(f["exit"] == "ret", f"exit mode {f['exit']}")
    check(f["calls"] == t["calls"] == 4000, f"{f['calls']} calls timed, {t['calls']:.0f} made")
    check_no_drops(rep["dropped"], f["calls"])
    want = t["wall_avg_ns"]
    check(abs(f["wall_ns"]["avg"] - want) <= 0.1 * want + 2000, f"wall avg {f['wall_ns']['avg']:.0f} vs truth {want:.0f}")
    check(p.stdout == plain_output(target("coro"), 2000), "target output changed")


def make_root(root, prog):
    """A container-style root holding prog and the libraries it loads (from ldd)."""
    import os
    import shutil
    libs = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    paths = [prog] + [w for w in libs.split() if w.startswith("/")]
    for path in paths:
        dest = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.realpath(path), dest)
    return "/" + prog.lstrip("/")


def test_container_root_with_planted_symlink():
    # The target runs chrooted; then its binary's path inside the root is replaced by a
    # symlink that points, absolutely, at a host file. fnprof must trace the mapped file
    # itself, never follow the planted link out of the root.
    import os
    import shutil
    import tempfile
    from harness import Target
    root = tempfile.mkdtemp(prefix="fnprof-root-")
    try:
        inside = make_root(root, target("work"))
        proc = subprocess.Popen(["chroot", root, inside, "loop"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            check("ready" in proc.stdout.readline(), "chrooted target did not start")
            os.rename(root + inside, root + inside + ".moved")
            os.symlink("/etc/passwd", root + inside)
            p = run_fnprof(["-p", str(proc.pid), "-f", "spin_us", "-d", "1", "--json"])
            check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
            f = func(final_report(p.stdout), "spin_us")
            # /proc/PID/maps names files as fnprof sees them: the moved original, on the host side.
            check(f["calls"] > 10 and f["object"].endswith(inside + ".moved"), f"{f['calls']} calls in {f['object']}")
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
    finally:
        shutil.rmtree(root)


def test_go_program_survives():
    # Go moves stacks and checks return addresses: a uretprobe makes it abort; auto mode must not.
    import os
    from harness import BIN, Skip
    if not os.path.exists(os.path.join(BIN, "gotarget")):
        raise Skip("go is not installed (Debian golang-go): no Go target")
    want = plain_output(target("gotarget"), 2000)
    rep, p = traced(["-f", "main.hot"], target("gotarget"), 2000)
    check(p.stdout == want and "unexpected return pc" not in p.stderr, f"output changed: {p.stdout!r}")
    f = func(rep, "main.hot")
    check(f["exit"] == "ret", f"auto mode chose {f['exit']} for a Go program")
    check(f["calls"] >= 0.95 * 8000, f"{f['calls']} of 8000 calls timed")


def test_entry_point_gets_no_return_probe():
    # _start is jumped to with argc at [sp]: a uretprobe there overwrote argc with its trampoline.
    want = plain_output(target("jump"), 1000)
    for args in (["--exit", "uretprobe", "-f", "_start"], ["-f", "*"]):
        rep, p = traced(args, target("jump"), 1000)
        check(p.stdout == want, f"{args}: output changed: {p.stdout!r} vs {want!r}")
        f = func(rep, "_start")
        check(f["exit"] == "none" and f["calls"] == 1, f"{args}: _start traced as {f}")
        check("entry point" in p.stderr, f"{args}: no word on the entry point: {p.stderr[-1500:]}")
