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
    got, want = f["wall_ns"]["avg"], t["wall_avg_ns"]
    check(abs(got - want) <= 0.15 * want + 40000, f"{what}: wall avg {got:.0f} ns vs truth {want:.0f}")


def tail_jmp(fn):
    """The last instruction of fn in the target, as objdump shows it."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", target("tailcall")],
                         capture_output=True, text=True, check=True).stdout
    body = out.split(f"<{fn}>:\n", 1)[1].split("\n\n", 1)[0]
    return [l.split("\t", 1)[-1].strip() for l in body.splitlines() if l.strip()][-1]


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
    check_no_drops(rep["dropped"], f["calls"])


def test_assembly_tail_call_and_chain():
    # tail_direct: jmp callee; tail_chain: jmp hop, which jmps to callee (followed two deep).
    for mode, name in (("direct", "tail_direct"), ("chain", "tail_chain")):
        rep, p = traced(["--exit", "ret", "-f", name], target("tailcall"), mode, US, 300)
        f, t = func(rep, name), truth(p.stderr, name)
        check(f["calls"] == 300 and f["entered"] == 300, f"{name}: {f['calls']} calls")
        near_truth(f, t, name)
        check(f["wall_ns"]["p50"] >= US * 1000, f"{name}: p50 {f['wall_ns']['p50']} ns")
        check_no_drops(rep["dropped"], f["calls"])


def test_callee_called_elsewhere_and_inside():
    # tail_both calls callee(20) normally, then jmp callee; the driver calls callee(20) between.
    # The probe on callee's ret fires 3 times a call: only the tail-called one ends it.
    rep, p = traced(["--exit", "ret", "-f", "tail_both"], target("tailcall"), "both", US, 300)
    f, t = func(rep, "tail_both"), truth(p.stderr, "tail_both")
    check(f["calls"] == 300 and f["entered"] == 300, f"{f['calls']} calls, {f['entered']} entered")
    near_truth(f, t, "tail_both")
    check(f["wall_ns"]["min"] >= (US + 20) * 1000 * 0.95, f"min {f['wall_ns']['min']}: ended early")
    check_no_drops(rep["dropped"], f["calls"])
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
    check(f["wall_ns"]["avg"] < US * 1000 / 2, f"avg {f['wall_ns']['avg']}: ends at the jmp")
    check_no_drops(rep["dropped"], f["calls"])
    text = run_fnprof(["--exit", "ret", "-f", "tail_indirect", "--", target("tailcall"), "indirect", "50", "20"]).stderr
    check("tail_indirect: 20 of 20 calls left by a tail call to an unknown function" in text, text[-2000:])


def test_uretprobe_mode_unchanged():
    rep, p = traced(["--exit", "uretprobe", "-f", "tail_direct"], target("tailcall"), "direct", US, 300)
    f, t = func(rep, "tail_direct"), truth(p.stderr, "tail_direct")
    check(f["calls"] == 300 and "tail_exits_untimed" not in f, str(f.get("tail_exits_untimed")))
    near_truth(f, t, "tail_direct")
