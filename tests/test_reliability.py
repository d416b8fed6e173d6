"""Return probes on hostile code: longjmp out of deep recursion, recursion deeper than 64, tail
calls, unusual exits, threads ending mid-call in burst mode, the statistics' memory budget."""
import os

from harness import check, final_report, func, run_fnprof, target, truth
from harness import traced


def near(value, want, rel, abs_ns):
    return abs(value - want) <= rel * want + abs_ns


def test_longjmp_out_of_deep_recursion_auto_mode():
    # 50 longjmps out of rec() 100 deep: with uretprobes the kernel never reports this thread's
    # returns again (its 64-slot limit is checked before it drops the abandoned ones). The program
    # imports longjmp, so auto mode puts probes on the ret instructions instead.
    rep, p = traced(["-f", "rec", "-f", "after"], target("reliab"), "longjmp", 50, 100, 1000)
    f, t = func(rep, "after"), truth(p.stderr, "after")
    check(f["exit"] == "ret", f"auto mode chose {f['exit']} for a program that imports longjmp")
    check(f["calls"] == 1000 and f["entered"] == 1000, f"after: {f['calls']} calls, {f['entered']} entered")
    # At least the time after() measures inside itself, at most the time its caller measures
    # around it: a preemption in its first or last instructions is in the call but not in its own
    # figure (71 us against 64 once under load), and a frame matched wrongly reads far outside.
    w = f["wall_ns"]["avg"]
    check(0.95 * t["wall_avg_ns"] - 1000 <= w <= t["outer_avg_ns"] + 1000,
          f"after: {w:.0f} ns vs truth {t['wall_avg_ns']:.0f} inside, {t['outer_avg_ns']:.0f} around the call")
    check(func(rep, "rec")["entered"] == 5000, f"rec entered {func(rep, 'rec')['entered']} times, not 5000")


def test_longjmp_uretprobe_report_shows_entered_calls():
    # Forced uretprobes: the kernel limit bites; the report must not read 0 calls without a word.
    opts, cmd = ["--exit=uretprobe", "-f", "after", "-f", "rec"], [target("reliab"), "longjmp", 50, 100, 1000]
    rep, _ = traced(opts, *cmd)
    f = func(rep, "after")
    check(f["calls"] == 0 and f["entered"] == 1000, f"after: {f['calls']} returned, {f['entered']} entered")
    text = run_fnprof(opts + ["--"] + [str(c) for c in cmd], timeout=120).stderr
    row = [l for l in text.splitlines() if l.startswith("after ")][0]
    check(row.split()[1] == "0*", f"no marker on the CALLS figure: {row}")
    note = [l for l in text.splitlines() if l.startswith("* after:")]
    check(note and "1000 calls entered, 0 returned" in note[0] and "64" in note[0] and "--exit=ret" in note[0],
          f"no word on the missing returns and the kernel limit: {note}")


def test_recursion_deeper_than_64_ret_mode_exact_frames():
    # deep_rec 100 deep, 10 times, 50 us per level after its callee returns. With ret probes every
    # return is seen; the 36 beyond the 64 frames kept must not close the outer frames (each would
    # miss 36 x 50 us). The truth, measured inside, includes the callees' probes: compared with
    # the raw wall time (10%: preemption on a loaded machine moves both).
    rep, p = traced(["--exit=ret", "-f", "deep_rec"], target("reliab"), "deep", 10, 100, 50)
    f, t = func(rep, "deep_rec"), truth(p.stderr, "deep_rec")
    check(f["calls"] == t["calls"] == 64 * 10, f"{f['calls']} calls timed, {t['calls']:.0f} are the outer 64s")
    check(near(f["raw_wall_ns"]["avg"], t["wall_avg_ns"], 0.10, 0),
          f"wall avg {f['raw_wall_ns']['avg']:.0f} ns vs truth {t['wall_avg_ns']:.0f}")
    check(rep["dropped"]["returns_lost"] == 36 * 10, str(rep["dropped"]))
    check(rep["dropped"]["orphan_returns"] == 0, str(rep["dropped"]))
    check(f["entered"] == 100 * 10, f"entered {f['entered']}")


def test_tail_call_between_traced_functions_uretprobe():
    # tail_caller ends with jmp tail_callee: both frames share a stack pointer, and the kernel
    # reports the callee's return, then the caller's, at once.
    rep, p = traced(["--exit=uretprobe", "-f", "tail_caller", "-f", "tail_callee"], target("reliab"), "tail", 300)
    for name in ("tail_caller", "tail_callee"):
        f, t = func(rep, name), truth(p.stderr, name)
        check(f["calls"] == 300, f"{name}: {f['calls']} calls of 300")
        # The target's clocks time the spins, not the jmp between them nor the return: a preemption
        # there is fnprof's only (CI beside a build: 63.8 us against 50.7 once). Above the truth,
        # the average may also read the time fnprof saw the calls switched out.
        off = f["runq_ns"]["avg"] + f["blocked_ns"]["avg"]
        check(near(f["wall_ns"]["avg"], t["wall_avg_ns"], 0.05, 2000) or
              t["wall_avg_ns"] < f["wall_ns"]["avg"] <= 1.05 * t["wall_avg_ns"] + 2000 + off,
              f"{name}: wall avg {f['wall_ns']['avg']:.0f} ns vs truth {t['wall_avg_ns']:.0f}, switched out "
              f"{off:.0f} ns a call")
    check(rep["dropped"]["abandoned_frames"] == 0 and rep["dropped"]["orphan_returns"] == 0, str(rep["dropped"]))


def test_ret_mode_exits_beyond_64_cold_part_indirect_tail_call():
    # many_rets has 101 ret instructions, cold_ret returns from its .cold part on odd arguments,
    # ind_tail leaves by jmp *%rax, jt dispatches through a jump table with jmp *%rax (not an exit).
    rep, p = traced(["--exit=ret", "-f", "many_rets", "-f", "cold_ret", "-f", "ind_tail", "-f", "jt"],
                    target("reliab"), "exits", 2000)
    for name in ("many_rets", "cold_ret", "ind_tail", "jt"):
        f = func(rep, name)
        check(f["exit"] == "ret" and f["calls"] == 2000, f"{name}: exit {f['exit']}, {f['calls']} of 2000 calls")
    check(rep["dropped"]["abandoned_frames"] == 0 and rep["dropped"]["orphan_returns"] == 0, str(rep["dropped"]))


def test_burst_mode_thread_exiting_mid_call():
    # Threads end inside stuck() (pthread_exit); the tracepoint that sees them exit must read the
    # same probe generation as the probes, burst after burst, to count their open frames.
    # Exact, by construction (issue 23): a frame of the current generation has every return seen
    # (the generation moves on before the probes are taken out), so one open at exit is stuck's,
    # abandoned; a frame from before a detach is counted apart (frames_detached), as is a call
    # whose thread found no state. Once 244 abandoned against 241 entered: frames whose return
    # the detach hid, counted abandoned at an exit during the detach.
    rep, p = traced(["--max-overhead", "5", "--exit=uretprobe", "-f", "busy", "-f", "stuck"],
                    target("reliab"), "threads", 1500, 20)
    check(rep.get("estimated"), "the probes were never detached: no bursts")
    seen = func(rep, "busy")["calls_measured"] / 20   # threads whose busy() calls were counted
    ab = rep["dropped"]["abandoned_frames"]
    check(seen >= 50, f"only {seen:.0f} threads traced")
    check(ab >= 0.9 * seen, f"{ab} frames abandoned at thread exit, {seen:.0f} threads traced")
    entered, d = func(rep, "stuck")["entered"], rep["dropped"]
    check(ab <= entered <= ab + d["frames_detached"] + d["no_thread_state"],
          f"{ab} abandoned, {entered} entered, {d['frames_detached']} detached, {d['no_thread_state']} without state")
    check(d["frames_detached"] <= 0.05 * entered, f"{d['frames_detached']} frames detached of {entered}")


def test_statistics_memory_budget():
    # Statistics take 2 buffers x functions x CPUs x ~9.5 KiB: beyond the budget, a clear error.
    env = dict(os.environ, FNPROF_STATS_BUDGET_MB="0.1")
    p = run_fnprof(["-f", "tail_*", "--", target("reliab"), "tail", "1"], env=env)
    check(p.returncode == 1, f"exit {p.returncode}: {p.stderr[-1500:]}")
    err = p.stderr
    check("statistics of" in err and "MiB" in err and "trace fewer functions" in err and "CPUs" in err,
          f"the message does not say what to reduce: {err[-800:]}")
    check("thread states" not in err, f"blames the thread states: {err[-800:]}")
