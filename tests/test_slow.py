"""--slow: each slow call's on-CPU/run-queue/blocked split, its caller's stack and where it blocked longest.

Target: tests/targets/slowcall.c, built -O2 -fomit-frame-pointer (the stacks need DWARF): serve_loop calls
handle 3000 times; each call spins 10 us, every 100th also sleeps 5 ms in wait_for_disk. The target counts
its own slow calls (1 ms or longer, as handle measured them) and those near 1 ms, which probes may tip.
"""
import os
import re

from harness import check, fnprof_test, run_fnprof, target, traced, truth

KERNEL_SLEEP = ("do_nanosleep", "hrtimer_nanosleep")


def slow_run(*args):
    rep, p = traced(["-f", "handle", "--slow", "1ms"] + list(args), target("slowcall"))
    return rep, truth(p.stdout, "slow")


def sleepers(rep):
    return [c for c in rep["slow_calls"] if c["function"] == "handle" and c["blocked_ns"] >= 4.5e6]


def check_sleepers(rep, s):
    """All 30 sleeps kept as such, but those whose switch back in sched_switch did not report: now and
    then (a run in 15 on a loaded machine) such a sleep reads as on-CPU time, which fnprof cannot see,
    but it counts the switch it missed. No sleep may be misread without being counted."""
    unseen = rep["dropped"]["switches_in_unseen"]
    check(len(s) <= 30 and len(s) + unseen >= 30 and unseen <= 2,
          f"{len(s)} sleeping calls of handle kept, {unseen} switches in unseen")
    return unseen


def test_slow_keeps_each_sleeping_call_with_both_stacks():
    rep, t = slow_run()
    calls = rep["slow_calls"]
    check(rep["slow_calls_dropped"] == 0 and rep["slow_calls_seen"] == len(calls),
          f"dropped {rep['slow_calls_dropped']}, seen {rep['slow_calls_seen']}, kept {len(calls)}")
    s = sleepers(rep)
    check(t["sleeps"] == 30, f"target slept {t['sleeps']} times")
    check_sleepers(rep, s)
    for c in s:
        check(c["wall_ns"] >= 5e6, f"wall {c['wall_ns']} < 5 ms: {c}")
        check(c["wall_ns"] >= c["blocked_ns"] and c["longest_block_ns"] >= 4.5e6, f"{c}")
        check(c["stack"][:1] == ["handle"] and "serve_loop" in c["stack"] and "main" in c["stack"],
              f"caller stack: {c['stack']}")
        b = c["blocked_stack"] or []
        check("wait_for_disk" in b and any(k in b for k in KERNEL_SLEEP), f"blocked stack: {b}")
        # Kernel frames first, then the user frames the sleep was called from.
        check(b.index("wait_for_disk") > max(b.index(k) for k in KERNEL_SLEEP if k in b), f"order: {b}")
    # Other slow calls are the ones a loaded machine preempted: the target saw them too (its count,
    # give or take the calls near 1 ms that the probes' cost may tip either way, and a preemption
    # inside a probe).
    slack = t["near"] + max(3, 0.1 * t["over"])
    check(abs(len(calls) - t["over"]) <= slack, f"{len(calls)} slow calls kept, target counted {t['over']}")
    check(all(c["wall_ns"] >= 1e6 for c in calls), "a call under the threshold was kept")


def test_slow_last_view_waits_for_a_record_read_slowly():
    # Under emulation (the kernel matrix's TCG) the first record of a process takes seconds: its
    # objects' CFI and symbols are read. The run's last view waited while records were read, but
    # took a first record still being read after 2 s for a stalled reader, and 48-129 slow calls
    # seen were not read (6.12, 3 matrix runs of 6). fnprof-test's hook makes the first take 2.5 s.
    env = dict(os.environ, FNPROF_TEST_SLOW_FIRST_RECORD_MS="2500")
    rep, p = traced(["-f", "handle", "--slow", "1ms"], target("slowcall"), env=env, exe=fnprof_test())
    t = truth(p.stdout, "slow")
    check(rep["slow_calls_seen"] == len(rep["slow_calls"]) and rep["slow_calls_dropped"] == 0,
          f"seen {rep['slow_calls_seen']}, kept {len(rep['slow_calls'])}, dropped {rep['slow_calls_dropped']}")
    check_sleepers(rep, sleepers(rep))
    check(t["sleeps"] == 30, f"target slept {t['sleeps']} times")


def test_slow_text_section_shows_the_last_20_and_counts_the_rest():
    p = run_fnprof(["-f", "handle", "--slow", "1ms", "--", target("slowcall")], timeout=180)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
    m = re.search(r"^slow calls \(1\.00ms or longer\): (\d+), the last 20; (\d+) earlier ones in --json", p.stderr,
                  re.M)
    check(m, f"no slow-call section header:\n{p.stderr[-3000:]}")
    seen, earlier = int(m.group(1)), int(m.group(2))
    check(seen >= 30 and earlier == seen - 20, f"header: {m.group(0)}")
    section = p.stderr[m.end():]
    blocks = re.findall(r"^handle  pid \d+ tid \d+  wall .*$", section, re.M)
    check(len(blocks) == 20, f"{len(blocks)} blocks shown")
    check(len(re.findall(r"^    called:  handle < serve_loop < main", section, re.M)) == 20, section[:2000])
    check(len(re.findall(r"^    blocked: .*do_nanosleep.* < wait_for_disk < handle", section, re.M)) >= 4,
          section[:3000])


def test_slow_rate_limit_counts_every_call_not_kept():
    # Every call is slow: 3000 in well under a second or two, at most 100 sent a second.
    rep, t = slow_run_all()
    calls, seen, dropped = rep["slow_calls"], rep["slow_calls_seen"], rep["slow_calls_dropped"]
    f = [x for x in rep["functions"] if x["name"] == "handle"][0]
    check(seen == f["calls"] == t["calls"], f"seen {seen}, calls {f['calls']}, target {t['calls']}")
    check(0 < len(calls) <= 100 * (rep["interval_s"] + 2), f"{len(calls)} kept in {rep['interval_s']} s")
    check(dropped == seen - len(calls), f"dropped {dropped} + kept {len(calls)} != seen {seen}")
    # The reasons: the kernel's rate limit (and a full ring buffer) for all but the kept ones,
    # nothing beyond the 256 kept since fewer were sent.
    rate, full = rep["slow_calls_over_rate"], rep["slow_calls_ringbuf_full"]
    check(rate > 0 and rate + full == dropped, f"over the rate {rate}, ring buffer full {full}, dropped {dropped}")


def slow_run_all():
    rep, p = traced(["-f", "handle", "--slow", "1ns"], target("slowcall"))
    return rep, truth(p.stdout, "slow")


def test_slow_nested_traced_caller_unwinds_past_its_uretprobe():
    # serve_loop is traced too: its return address on the stack is the uretprobe's trampoline.
    rep, p = traced(["-f", "handle", "-f", "serve_loop", "--slow", "1ms"], target("slowcall"))
    s = sleepers(rep)
    unseen = check_sleepers(rep, s)
    for c in s:
        check(c["stack"][:2] == ["handle", "serve_loop"] and "main" in c["stack"], f"stack: {c['stack']}")
        check("serve_loop" in c["blocked_stack"] and "main" in c["blocked_stack"], f"{c['blocked_stack']}")
    outer = [c for c in rep["slow_calls"] if c["function"] == "serve_loop"]
    check(len(outer) == 1, f"{len(outer)} slow serve_loop calls")
    o = outer[0]
    check(o["blocked_ns"] >= (30 - unseen) * 4.5e6 and o["longest_block_ns"] >= 4.5e6, f"{o}")
    check(o["stack"][:2] == ["serve_loop", "main"], f"{o['stack']}")
    check("wait_for_disk" in (o["blocked_stack"] or []), f"outer blocked stack: {o['blocked_stack']}")


def test_slow_stack_cut_at_the_frame_limit_says_truncated():
    """handle called under 400 frames of nest: every kept stack stops at the frame limit, and a stack
    cut there is not the whole stack (before: stack_truncated false on all of them)."""
    rep, p = traced(["-f", "handle", "--slow", "1ms"], target("slowcall"), 3000, 400)
    check(truth(p.stdout, "nest")["depth"] == 400, "target ran without its nest")
    calls = rep["slow_calls"]
    deep = [c for c in calls if c["stack"][:3] == ["handle", "serve_loop", "nest"]]
    check(len(deep) >= len(calls) / 2 and deep, f"{len(deep)} of {len(calls)} stacks unwound into nest")
    for c in deep:
        check("main" not in c["stack"], f"a stack 400 frames deep reached main: {len(c['stack'])} frames")
        check(c["stack_truncated"], f"stack of {len(c['stack'])} frames, cut short, says not truncated")
    # Shallow stacks (the test above: 7 frames, to _start) stay whole.
    rep, _ = slow_run()
    whole = [c for c in sleepers(rep) if c["stack"][-1] == "_start"]
    check(whole and not any(c["stack_truncated"] for c in whole), "a whole stack says truncated")


def test_slow_bad_durations_and_combinations_are_usage_errors():
    cases = [
        (["--slow", "abc", "-f", "handle"], "invalid --slow"),
        (["--slow", "0", "-f", "handle"], "invalid --slow"),
        (["--slow", "0ms", "-f", "handle"], "invalid --slow"),
        (["--slow", "2", "-f", "handle"], "needs a unit (ns, us, ms, s or m)"),  # was 2 ns: every call
        (["--slow", "5parsecs", "-f", "handle"], "invalid --slow"),
        (["--slow", "-1ms", "-f", "handle"], "invalid --slow"),
        (["--slow", "1ms"], "add -f FUNC"),
        (["--slow", "1ms", "-f", "handle", "--entry-only"], "--entry-only"),
    ]
    for args, msg in cases:
        p = run_fnprof(args + ["--", target("slowcall"), "10"], timeout=30)
        check(p.returncode == 2 and msg in p.stderr, f"{args}: exit {p.returncode}: {p.stderr[-500:]}")
