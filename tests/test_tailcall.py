"""--exit=ret and tail calls: a function that leaves by `jmp callee` is timed until the callee returns.

The target (tests/targets/tailcall.c) times each call of the traced function itself, callee included.
Its traced functions spin 10 us, then tail-call a callee that spins US; without following the tail
call, ret mode reads ~10 us where the truth is ~US + 10. The truth also holds the probes' whole
cost (a ret probe single-steps, ~10 us here) where fnprof subtracts their bias: the tolerance is
relative and absolute, wide enough for a loaded 2-core machine, far narrower than the error it catches.
"""
import subprocess

from harness import check, check_no_drops, func, run_fnprof, target, traced, truth

US = 200


def near_truth(f, t, what):
    """The calls' time against the target's own. On CPU where the target measured its thread's CPU
    time: a loaded machine's waits for a CPU land outside the traced window too (between the
    target's clock and the probe), which a wall average of a few hundred calls cannot absorb."""
    key, truth_key = ("oncpu_ns", "cpu_avg_ns") if "cpu_avg_ns" in t else ("wall_ns", "wall_avg_ns")
    got, want = f[key]["avg"], t[truth_key]
    check(abs(got - want) <= 0.15 * want + 40000, f"{what}: {key} avg {got:.0f} ns vs truth {want:.0f}")


def tail_jmp(fn, prog="tailcall"):
    """The last instruction of fn in the target, as objdump shows it."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", target(prog)],
                         capture_output=True, text=True, check=True).stdout
    body = out.split(f"<{fn}>:\n", 1)[1].split("\n\n", 1)[0]
    ins = [l.split("\t", 1)[-1].strip() for l in body.splitlines() if l.strip()]
    # Less the padding to the next function's alignment.
    return [i for i in ins if not i.startswith(("nop", "data16", "cs nop", "xchg   %ax,%ax", "int3"))][-1]


def test_compiler_tail_call_timed_in_ret_mode():
    # `spin_for(10); callee(us);` at -O2: the compiler's own tail call, as in real code.
    last = tail_jmp("c_tail")
    check(last.startswith("jmp") and "<callee>" in last, f"c_tail does not end with jmp callee: {last}")
    rep, p = traced(["--exit", "ret", "-f", "c_tail"], target("tailcall"), "c", US, 300)
    f, t = func(rep, "c_tail"), truth(p.stderr, "c_tail")
    check(f["exit"] == "ret" and f["calls"] == 300, f"{f['exit']} {f['calls']}")
    near_truth(f, t, "c_tail")
    check(f["wall_ns"]["p50"] >= US * 1000, f"p50 {f['wall_ns']['p50']} ns: the callee's {US} us is missing")
    check(f["tail_exits_untimed"] == 0, f"{f['tail_exits_untimed']} untimed")
    check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])


def test_assembly_tail_call_and_chain():
    # tail_direct: jmp callee; tail_chain: jmp hop, which jmps to callee (followed two deep).
    for mode, name in (("direct", "tail_direct"), ("chain", "tail_chain")):
        rep, p = traced(["--exit", "ret", "-f", name], target("tailcall"), mode, US, 300)
        f, t = func(rep, name), truth(p.stderr, name)
        check(f["calls"] == 300 and f["entered"] == 300, f"{name}: {f['calls']} calls")
        near_truth(f, t, name)
        check(f["wall_ns"]["p50"] >= US * 1000, f"{name}: p50 {f['wall_ns']['p50']} ns")
        check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])


def test_callee_called_elsewhere_and_inside():
    # tail_both calls callee(20) normally, then jmp callee; the driver calls callee(20) between.
    # The probe on callee's ret fires 3 times a call: only the tail-called one ends it.
    rep, p = traced(["--exit", "ret", "-f", "tail_both"], target("tailcall"), "both", US, 300)
    f, t = func(rep, "tail_both"), truth(p.stderr, "tail_both")
    check(f["calls"] == 300 and f["entered"] == 300, f"{f['calls']} calls, {f['entered']} entered")
    near_truth(f, t, "tail_both")
    check(f["wall_ns"]["min"] >= (US + 20) * 1000 * 0.95, f"min {f['wall_ns']['min']}: ended early")
    check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])
    # Two hits a call that are not its end (inside and from the driver): their cost is counted.
    if rep.get("calibration", {}).get("entry-only", {}).get("cost_ns"):
        check(f["tail_probe_ns"] > 0, f"tail_probe_ns {f['tail_probe_ns']}")


def test_traced_tail_callee_in_ret_mode():
    # Both traced: the caller's frame lives through the jmp, each is closed once at callee's ret.
    rep, p = traced(["--exit", "ret", "-f", "tail_both", "-f", "callee"], target("tailcall"), "both", US, 300)
    f, t = func(rep, "tail_both"), truth(p.stderr, "tail_both")
    check(f["calls"] == 300, f"tail_both: {f['calls']} calls")
    check(func(rep, "callee")["calls"] == 900, f"callee: {func(rep, 'callee')['calls']} of 900 calls")
    near_truth(f, t, "tail_both")
    check_no_drops(rep["dropped"], 1200)


def test_indirect_tail_call_reported_untimed():
    rep, p = traced(["--exit", "ret", "-f", "tail_indirect"], target("tailcall"), "indirect", US, 300)
    f = func(rep, "tail_indirect")
    check(f["calls"] == 300 and f["tail_exits_untimed"] == 300, f"{f['calls']} calls, {f['tail_exits_untimed']} untimed")
    check(f["oncpu_ns"]["avg"] < US * 1000 / 2, f"on-CPU avg {f['oncpu_ns']['avg']}: ends at the jmp")
    check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])
    text = run_fnprof(["--exit", "ret", "-f", "tail_indirect", "--", target("tailcall"), "indirect", "50", "20"]).stderr
    check("tail_indirect: 20 of 20 calls left by a tail call to an unknown function" in text, text[-2000:])


def test_uretprobe_mode_unchanged():
    rep, p = traced(["--exit", "uretprobe", "-f", "tail_direct"], target("tailcall"), "direct", US, 300)
    f, t = func(rep, "tail_direct"), truth(p.stderr, "tail_direct")
    check(f["calls"] == 300 and "tail_exits_untimed" not in f, str(f.get("tail_exits_untimed")))
    near_truth(f, t, "tail_direct")


def abandoned_check(rep, f, t, n, what):
    """The completed calls only, timed as the target timed them; the others counted abandoned."""
    check(f["calls"] == t["calls"] and f["entered"] == n, f"{what}: {f['calls']} calls of {t['calls']:.0f} "
          f"completed, {f['entered']} entered")
    d = dict(rep["dropped"])
    check(d.pop("abandoned_frames") == t["abandoned"], f"{what}: dropped {rep['dropped']}, "
          f"{t['abandoned']:.0f} abandoned")
    check_no_drops(d, f["calls"])
    near_truth(f, t, what)


def abandoned_with_and_without_callee(fn, callee, mode, callee_abandons):
    """fn alone, then fn with callee traced too: each call of fn that leaves by longjmp counted
    abandoned, not closed by a later return of callee (called from the driver at the same stack
    pointer); with callee_abandons, the longjmp abandons callee's frame of each such call too."""
    n = 200
    rep, p = traced(["--exit", "ret", "-f", fn], target("tailcall"), mode, US, n)
    abandoned_check(rep, func(rep, fn), truth(p.stderr, fn), n, fn)
    rep, p = traced(["--exit", "ret", "-f", fn, "-f", callee], target("tailcall"), mode, US, n)
    t = truth(p.stderr, fn)
    expect = dict(t, abandoned=2 * t["abandoned"]) if callee_abandons else t
    abandoned_check(rep, func(rep, fn), expect, n, f"{fn} with {callee}")
    check(func(rep, callee)["calls"] == n + t["calls"], f"{callee}: {func(rep, callee)['calls']} calls")


def test_frame_abandoned_before_its_jmp_not_closed_by_the_callee():
    # Every other call of tail_abandon leaves by longjmp before its jmp; the driver then spins
    # 500 us and calls callee from the same call site, at the same stack pointer: only the probe
    # on the jmp tells this return of callee from a tail call's. Before it, each abandoned frame
    # was closed there, 500 us late, and counted as a call. The callee traced too: its entry at
    # the abandoned frame's stack pointer does not keep it.
    abandoned_with_and_without_callee("tail_abandon", "callee", "abandon", False)


def test_frame_abandoned_after_its_jmp_not_closed_by_the_callee():
    # tail_late jmps to late_callee, which leaves by longjmp every other call: the frame has
    # taken its jmp. The driver then calls late_callee from another call site at the same stack
    # pointer: the return address there is not the frame's. The longjmp abandons the late_callee
    # frame of each abandoned call too.
    abandoned_with_and_without_callee("tail_late", "late_callee", "late", True)


def hit_cost(rep):
    cal = rep["calibration"]
    return cal["ret-exit"]["cost_ns"] - cal["entry-only"]["cost_ns"]


def near_untraced_cpu(f, t, what):
    """On-CPU time against the target's CPU clock less what the callee's probe took of it: CPU
    time, since a loaded machine's waits for a CPU land in the probes' 10 us too, and fnprof
    leaves those in (as run-queue time). The hits' cost is measured per hit during the
    calibrations: 20% of it, and the tolerance of the other tests."""
    got, want, beyond = f["oncpu_ns"]["avg"], t["untraced_cpu_avg_ns"], t["beyond_cpu_avg_ns"]
    check(abs(got - want) <= 0.2 * beyond + 0.15 * want + 40000,
          f"{what}: on-CPU avg {got:.0f} ns vs truth {want:.0f} (the probe hits inside took {beyond:.0f})")


def test_callee_hits_inside_a_traced_caller_taken_out():
    # hits_caller calls callee (probed: tail_direct tail-calls it) 100 times a call: each call
    # hits the probe on callee's ret, ~10 us, inside hits_caller. Before, hits_caller read ~1 ms
    # a call too long.
    m, n = 100, 100
    rep, p = traced(["--exit", "ret", "-f", "tail_direct", "-f", "hits_caller"], target("tailcall"), "caller", m, n)
    f, t = func(rep, "hits_caller"), truth(p.stderr, "hits_caller")
    check(f["calls"] == n and f.get("tail_hits_inside") == m * n, f"{f['calls']} calls, "
          f"{f.get('tail_hits_inside')} hits inside")
    check(func(rep, "tail_direct")["tail_hits_inside"] == 0, "tail_direct: hits inside")
    check(t["beyond_cpu_avg_ns"] > 0.5 * m * hit_cost(rep), f"the hits took {t['beyond_cpu_avg_ns']:.0f} ns a call")
    near_untraced_cpu(f, t, "hits_caller")
    # The percentiles move by the hits too, and self time (no traced callee: all of them).
    check(f["wall_ns"]["p50"] <= f["raw_wall_ns"]["p50"] - 0.5 * m * hit_cost(rep),
          f"p50 {f['wall_ns']['p50']} raw {f['raw_wall_ns']['p50']}")
    check(abs(f["self_ns"]["avg"] - f["wall_ns"]["avg"]) <= 0.02 * f["wall_ns"]["avg"] + 1000,
          f"self {f['self_ns']['avg']:.0f} wall {f['wall_ns']['avg']:.0f}")
    check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])


def test_callee_hits_inside_the_tail_caller_taken_out():
    # c_both calls callee 20 times, then tail-calls it: the 20 hits are inside its calls.
    n = 200
    rep, p = traced(["--exit", "ret", "-f", "c_both"], target("tailcall"), "cboth", US, n)
    f, t = func(rep, "c_both"), truth(p.stderr, "c_both")
    check(f["calls"] == n and f.get("tail_hits_inside") == 20 * n, f"{f['calls']} calls, "
          f"{f.get('tail_hits_inside')} hits inside")
    near_untraced_cpu(f, t, "c_both")
    check(f["wall_ns"]["min"] >= US * 1000 * 0.95, f"min {f['wall_ns']['min']}: ended early")
    check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])


def test_short_tail_caller_jmp_probe_taken_out():
    # tail_short: a 64-iteration loop, jmp short_callee, the same loop: ~40 ns in all. The probe on
    # its jmp (an emulated jmp, ~0.5 us here) lands inside every call; main's fnprof left it in:
    # 520-710 ns a call; priced as the entry-only case (~0.75 us), it read 0 in 10 of 10 runs.
    # The goal of test_bias's 2 ns function (0.3 us) plus its 200 ns for a noisy moment; the truth
    # is an untraced copy's, timed in batches between the traced calls.
    n = 20000
    rep, p = traced(["--exit", "ret", "-f", "tail_short"], target("tailcall"), "short", 0, n)
    f, t = func(rep, "tail_short"), truth(p.stderr, "tail_short")
    check(f["calls"] == n, f"{f['calls']} calls")
    check(f["raw_wall_ns"]["avg"] > 300, "the probes must cost something, or this test proves nothing")
    # Three traps inside each call (the entry's return, the jmp, the ret's entry) whose cost moves
    # from run to run on this VM under load: raw 1145-1802 ns in 20 runs (one 3512), one trap more
    # than test_bias's 2 ns function, so 500 ns for a noisy moment here. With the jmp priced by the
    # tail-jmp case it read 56-138 ns in a quiet moment, up to 709 in a loaded one (truth 38-45),
    # where the calibration's price held still: the probes' time moved, not the price.
    # On the CPU: with a build beside it the wall read 690-925 ns in 3 runs of 6, the excess its
    # run-queue time (602-851 ns a call: preemptions falling due in the traps, ~10 a run), which
    # the truth's untraced batches do not meet. The bias taken out is the same in both figures.
    got, want = f["oncpu_ns"]["avg"], t["wall_avg_ns"]
    check(abs(got - want) < 300 + 500, f"tail_short reads {got:.0f} ns on the CPU against {want:.0f} "
          f"(wall {f['wall_ns']['avg']:.0f}, raw {f['raw_wall_ns']['avg']:.0f}, bias {f['bias_ns']:.0f})")
    # The jmp's hit runs a shorter program than an entry's (tail_jump(), a frame mark), behind the
    # same emulated trap: its own case prices it at about the entry-only case's cost or below
    # (~450 ns against 730-870 in 20 runs on one host; 654-748 against 657-754 on another, where
    # the trap is most of either). Not the price of another kind of hit (a step: several us).
    cal = rep["calibration"]
    jmp = cal["tail-jmp"]["mean_ns"] - cal["ret-exit"]["mean_ns"]
    check(0 < jmp < 1.3 * cal["entry-only"]["cost_ns"], f"jmp hit priced {jmp:.0f} ns, the entry-only case "
          f"costs {cal['entry-only']['cost_ns']:.0f}")
    check(f.get("tail_jmp_calls") == n and f.get("tail_jmps_inside") == n,
          f"{f.get('tail_jmp_calls')} calls jumped, {f.get('tail_jmps_inside')} jmp hits inside")
    wall = f["wall_ns"]["avg"]
    check(abs(f["self_ns"]["avg"] - wall) <= 1, f"self {f['self_ns']['avg']:.0f} wall {wall:.0f}")
    check_no_drops(rep["dropped"], f["calls"], f["context_switches"]["involuntary"])


def test_shared_ret_trap_paid_once():
    # work's outer() calls inner(); both leave by `jmp record`, so record's ret carries a probe of
    # each. Traced alone, outer pays one hit a call (inner's record returning inside it); traced
    # together, that trap is inner's exit, priced with inner's calls: no hit, and outer's reading
    # keeps its own clock's time less the probes inside it (~11 us here; 29-33 us when the trap
    # was paid twice).
    for fn in ("outer", "inner"):
        last = tail_jmp(fn, "work")
        check(last.startswith("jmp") and "<record>" in last, f"{fn} does not end with jmp record: {last}")
    n = 300
    rep, p = traced(["--exit", "ret", "-f", "outer"], target("work"), "nest", n)
    check(func(rep, "outer")["tail_hits_inside"] == n, f"outer alone: {func(rep, 'outer')['tail_hits_inside']} hits")
    rep, p = traced(["--exit", "ret", "-f", "outer", "-f", "inner"], target("work"), "nest", n)
    f, t = func(rep, "outer"), truth(p.stderr, "outer")
    check(f["tail_hits_inside"] == 0 and func(rep, "inner")["calls"] == n, f"outer with inner: "
          f"{f['tail_hits_inside']} hits, inner {func(rep, 'inner')['calls']} calls")
    # p50: preemptions under load move averages; the probes inside are at most ~25 us here.
    p50, want = f["wall_ns"]["p50"], t["p50_ns"]
    check(want - 25000 <= p50 <= want + 2000, f"outer p50 {p50} ns vs its own clock's {want:.0f}")
