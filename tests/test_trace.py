"""Function tracing against targets that measure themselves (tests/targets/work.c, uselib.c).

Tolerances: the probes add a few microseconds per call on this machine (one uprobe
trap at entry, one at return), so wall and on-CPU figures may exceed the target's own
measurement by PROBE_SLACK_NS, and percentages get a few points for noise.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from harness import (FNPROF, Skip, Target, check, check_no_drops, final_report, func, json_reports, run_fnprof,
                     target, truth, wait_for, within)
from harness import FNPROF_TEST, fnprof_test, traced

PROBE_SLACK_NS = 30000


def check_wall(f, t, what):
    """fnprof's average wall time: the target's own, less 1 us at most, plus the probe slack at most."""
    wall, want = f["wall_ns"]["avg"], t["wall_avg_ns"]
    check(want - 1000 <= wall <= want + PROBE_SLACK_NS, f"{what}: wall avg {wall:.0f} ns vs truth {want:.0f} ns")


def test_launch_counts_every_call():
    rep, p = traced(["-f", "tiny"], target("work"), "count", 20000)
    check(func(rep, "tiny")["calls"] == 20000, f"calls {func(rep, 'tiny')['calls']} != 20000")
    check(rep["total"] is True, "single report must be the total")


def test_output_unchanged_by_tracing():
    plain = subprocess.run([target("work"), "count", "5000"], capture_output=True, text=True)
    p = run_fnprof(["-f", "tiny", "--", target("work"), "count", "5000"])
    check(p.returncode == 0, p.stderr)
    check(p.stdout == plain.stdout, f"stdout differs:\n{plain.stdout!r}\n{p.stdout!r}")


def test_exit_status_passed_through():
    p = run_fnprof(["-f", "tiny", "--", target("work"), "bogus-mode"])
    check(p.returncode == 2, f"want the command's exit 2, got {p.returncode}")
    p = run_fnprof(["-f", "tiny", "--", "/no/such/program"])
    check(p.returncode != 0 and "/no/such/program" in p.stderr, p.stderr)


def test_spin_wall_and_oncpu():
    rep, p = traced(["-f", "spin_us"], target("work"), "spin", 50, 2000)
    t, f = truth(p.stderr, "spin_us"), func(rep, "spin_us")
    check(f["calls"] == t["calls"] == 2000, f"calls {f['calls']}")
    check_wall(f, t, "spin")
    # On-CPU: the target's own CPU clock, plus probe time, minus nothing.
    check(within(f["oncpu_ns"]["avg"], t["cpu_avg_ns"], rel=0.1, abs_=PROBE_SLACK_NS),
          f"oncpu avg {f['oncpu_ns']['avg']:.0f} vs truth cpu {t['cpu_avg_ns']:.0f}")
    check(f["wall_ns"]["min"] <= f["wall_ns"]["p50"] <= f["wall_ns"]["p99"] <= f["wall_ns"]["max"],
          f"percentiles out of order: {f['wall_ns']}")
    # The median against the target's median: its average holds the ms a busy machine preempts a
    # few calls for (a 50 us spin averaged 102 us under load, its median 51).
    check(within(f["wall_ns"]["p50"], t["p50_ns"], rel=0.05, abs_=PROBE_SLACK_NS),
          f"p50 {f['wall_ns']['p50']} vs truth p50 {t['p50_ns']:.0f}")
    # wall = on-CPU + run queue + blocked, exactly.
    parts = f["oncpu_ns"]["total"] + f["runq_ns"]["total"] + f["blocked_ns"]["total"]
    check(abs(parts - f["wall_ns"]["total"]) <= f["calls"], f"{parts} != {f['wall_ns']['total']}")


def test_sleep_is_off_cpu():
    rep, p = traced(["-f", "sleep_us"], target("work"), "sleep", 1000, 300)
    t, f = truth(p.stderr, "sleep_us"), func(rep, "sleep_us")
    check(f["calls"] == 300, f"calls {f['calls']}")
    check_wall(f, t, "sleep")
    check(f["oncpu_ns"]["avg"] < 0.1 * f["wall_ns"]["avg"],
          f"on-CPU {f['oncpu_ns']['avg']:.0f} ns of {f['wall_ns']['avg']:.0f} ns for a sleep")
    check(f["blocked_ns"]["total"] > 0.85 * f["wall_ns"]["total"], "sleep not counted as blocked")
    check(f["cpu_pct"] < 10, f"cpu% {f['cpu_pct']} for a sleeping function")


def test_recursion_counts_and_cpu():
    # Raw figures: the structure (counts, self < wall) without the probe-bias estimate.
    rep, _ = traced(["--raw", "-f", "recurse"], target("work"), "recurse", 10, 2000)
    f = func(rep, "recurse")
    check(f["calls"] == 11 * 2000, f"calls {f['calls']} != 22000")
    # Outermost activations only: CPU% cannot exceed one core for a single thread.
    check(f["cpu_pct"] <= 105, f"cpu% {f['cpu_pct']} double-counts recursion")
    # Self times of the activations add up to the outermost wall time.
    check(f["self_ns"]["total"] < f["wall_ns"]["total"], "self time must exclude callees")
    check(rep["dropped"]["orphan_returns"] == 0 and rep["dropped"]["abandoned_frames"] == 0,
          f"dropped: {rep['dropped']}")


def test_nested_functions_self_time():
    rep, p = traced(["-f", "outer", "-f", "inner"], target("work"), "nest", 300)
    to, ti = truth(p.stderr, "outer"), truth(p.stderr, "inner")
    fo, fi = func(rep, "outer"), func(rep, "inner")
    check(fo["calls"] == fi["calls"] == 300, "calls")
    check(within(fi["wall_ns"]["avg"], ti["wall_avg_ns"], abs_=PROBE_SLACK_NS), "inner wall")
    check(within(fo["wall_ns"]["avg"], to["wall_avg_ns"], abs_=2 * PROBE_SLACK_NS), "outer wall")
    self_truth = to["wall_avg_ns"] - ti["wall_avg_ns"]
    check(within(fo["self_ns"]["avg"], self_truth, abs_=PROBE_SLACK_NS),
          f"outer self {fo['self_ns']['avg']:.0f} vs {self_truth:.0f}")
    check(abs(fi["self_ns"]["total"] - fi["wall_ns"]["total"]) <= fi["calls"], "inner has no traced callee")


def test_threads_all_counted():
    rep, p = traced(["-f", "spin_us"], target("work"), "threads", 4, 1000)
    t, f = truth(p.stderr, "spin_us"), func(rep, "spin_us")
    check(f["calls"] == 4000, f"calls {f['calls']} != 4000")
    check_wall(f, t, "threads")
    # CPU% adds up all threads' CPU time in the function (above 100 when they run on both cores at
    # once): the four threads' own CPU time over the run, within 10%. How much of the 2 cores they
    # get depends on what else runs, so no fixed figure: 81% is right on a busy machine.
    want = 100 * t["cpu_avg_ns"] * t["calls"] / (rep["interval_s"] * 1e9)
    check(within(f["cpu_pct"], want, rel=0.1),
          f"cpu% {f['cpu_pct']:.1f} for 4 spinning threads, their own CPU time says {want:.1f}")


def test_switches_in_unseen_recovered():
    # sched_switch may leave a switch back in unreported (a kernel that hides some tasks' switches
    # away: a sandbox agent's here), so a thread runs again with its time off the CPU still open.
    # FNPROF_TEST_HIDE_SWITCH_IN=4 has every 4th switch back in inside a call go so; the thread's
    # own sched_info (when it came back) closes it: no time lost, none read as on-CPU. Without
    # that, 121 of 483 preemptions lost, on-CPU 89 us for a 20 us spin.
    if not os.path.exists("/proc/self/schedstat"):
        raise Skip("no CONFIG_SCHED_INFO: switches back in not seen are not recovered")
    env = dict(os.environ, FNPROF_TEST_HIDE_SWITCH_IN="4")
    rep, p = traced(["-f", "spin_us"], target("work"), "threads", 8, 3000, env=env, exe=fnprof_test())
    t, f = truth(p.stderr, "spin_us"), func(rep, "spin_us")
    ivcsw, unseen = f["context_switches"]["involuntary"], rep["dropped"]["switches_in_unseen"]
    check(ivcsw >= 40, f"{ivcsw} preemptions: too few for every 4th to go unreported")
    check_no_drops(rep["dropped"], f["calls"], ivcsw)
    check(within(f["oncpu_ns"]["avg"], t["cpu_avg_ns"], rel=0.1, abs_=PROBE_SLACK_NS),
          f"oncpu avg {f['oncpu_ns']['avg']:.0f} vs truth cpu {t['cpu_avg_ns']:.0f}; {unseen} unseen")
    check_wall(f, t, "threads")


def test_hooks_only_in_the_test_build():
    # The hooks that tests set (FNPROF_TEST_*) are compiled into the test build fnprof-test alone:
    # fnprof reads no such variable and its trace object has no hook. fnprof-test has both, or the
    # tests that set one would test nothing.
    for exe, built_in in ((FNPROF, False), (fnprof_test(), True)):
        with open(exe, "rb") as f:
            data = f.read()
        for word in (b"FNPROF_TEST", b"hide_switch_in"):
            check((word in data) == built_in, f"{exe}: {word.decode()} {'missing' if built_in else 'built in'}")
    check(FNPROF != FNPROF_TEST, "the tests run the test build as fnprof")


def test_thread_states_reused_after_exit():
    # 4 waves of 3 threads with room for 3: each wave's threads give their state back when
    # they exit, so every call of all 12 threads is timed.
    rep, p = traced(["-f", "spin_us", "--max-threads", "3"], target("work"), "waves", 4, 3, 200)
    f = func(rep, "spin_us")
    check(f["calls"] == 2400, f"calls {f['calls']} != 2400")
    check_no_drops(rep["dropped"], f["calls"])


def test_threads_beyond_max_threads_counted():
    # 4 threads of ~100 ms at once with room for 2: the calls of the threads without a state
    # are counted as not timed, not lost, and their returns are not orphans.
    rep, p = traced(["-f", "spin_us", "--max-threads", "2"], target("work"), "threads", 4, 5000)
    f, d = func(rep, "spin_us"), rep["dropped"]
    check(f["calls"] + d["no_thread_state"] == 20000, f"calls {f['calls']} + {d['no_thread_state']} != 20000")
    check(d["no_thread_state"] > 0, f"no_thread_state {d['no_thread_state']}: two threads had no state")
    check(d["orphan_returns"] == 0, f"orphan_returns {d['orphan_returns']}")
    p = run_fnprof(["-f", "spin_us", "--max-threads", "1", "--", target("work"), "threads", "2", "5000"])
    check("no free thread state" in p.stderr, f"the table names the drop:\n{p.stderr}")


def test_shared_library_function():
    rep, p = traced(["-f", "libtarget:lib_spin", "-f", "libc:getppid"], target("uselib"), 500)
    f, t = func(rep, "lib_spin"), truth(p.stderr, "lib_spin")
    check(f["calls"] == 500, f"calls {f['calls']}")
    check(f["object"].endswith("libtarget.so"), f["object"])
    # Against the caller's own clock, not 20 us: on a busy machine a spin is preempted.
    check(f["wall_ns"]["avg"] >= 20000, f"wall {f['wall_ns']['avg']} under the 20 us spun")
    check_wall(f, t, "lib_spin")
    check(func(rep, "getppid")["calls"] >= 500, "libc getppid calls")


def test_attach_running_process():
    with Target("work", "loop") as t:
        p = run_fnprof(["-p", str(t.pid), "-f", "spin_us", "-f", "sleep_us", "-d", "1.5", "--json"])
        check(p.returncode == 0, p.stderr[-2000:])
        check(t.proc.poll() is None, "target died")
        out, err = t.stop()
    rep = final_report(p.stdout)
    fs, fsl = func(rep, "spin_us"), func(rep, "sleep_us")
    ts, tsl = truth(err, "spin_us"), truth(err, "sleep_us")
    check(fs["calls"] > 100 and abs(fs["calls"] - fsl["calls"]) <= 1, f"calls {fs['calls']} {fsl['calls']}")
    # The truth is of every call of the run, fnprof's of those in its 1.5 s: on a busy machine the
    # preempted calls (at most a few ms each) weigh differently in the two averages (54.2 us against
    # 57.1 once), so the medians are compared.
    for what, f, t in (("spin", fs, ts), ("sleep", fsl, tsl)):
        p50, want = f["wall_ns"]["p50"], t["p50_ns"]
        check(abs(p50 - want) <= 0.05 * want + 1000, f"attached {what}: wall p50 {p50:.0f} ns vs truth {want:.0f} ns")
    check(fsl["oncpu_ns"]["avg"] < 0.1 * fsl["wall_ns"]["avg"], "sleep on-CPU")
    check(rep["proc_cpu_ns"] > 0 and fs["proc_pct"] is not None, "process CPU share missing")
    check("stopped" in out, "target did not finish normally")


def test_attach_shared_library_in_process():
    with Target("uselib", 100, "loop") as t:
        p = run_fnprof(["-p", str(t.pid), "-f", "libtarget:lib_spin", "-d", "1", "--json"])
        check(p.returncode == 0, p.stderr[-2000:])
    f = func(final_report(p.stdout), "lib_spin")
    check(f["calls"] > 1000, f"calls {f['calls']}")


def test_threads_started_after_attach():
    # The command waits for the probes; its threads start after attach.
    rep, _ = traced(["-f", "spin_us"], target("work"), "threads", 3, 500)
    check(func(rep, "spin_us")["calls"] == 1500, "threads after attach missed")


def test_interval_reports_and_total():
    with Target("work", "loop") as t:
        p = run_fnprof(["-p", str(t.pid), "-f", "spin_us", "-i", "0.5", "-d", "2.1", "--json"])
    check(p.returncode == 0, p.stderr)
    reps = json_reports(p.stdout)
    intervals = [r for r in reps if not r["total"]]
    totals = [r for r in reps if r["total"]]
    check(len(intervals) >= 4 and len(totals) == 1, f"{len(intervals)} intervals, {len(totals)} totals")
    check(all(0.3 < r["interval_s"] < 0.7 for r in intervals[:-1]), "interval lengths")
    s = sum(func(r, "spin_us")["calls"] for r in intervals)
    check(s == func(totals[0], "spin_us")["calls"], f"intervals sum {s} != total")


def test_calls_running_at_a_report_are_not_losses():
    # Issue 37: at each -i boundary a call of spin_us(100) is under way (the target spins back
    # to back). It returns in the next interval: where that leaves a report with fewer returns
    # than entries, it says so in its own words, not as a return lost, and gives no advice
    # about longjmp and the kernel's uretprobe limit.
    p = run_fnprof(["-f", "spin_us", "-i", "0.2", "--", target("work"), "spin", "100", "15000"], timeout=120)
    check(p.returncode == 0, p.stderr[-2000:])
    notes = [l for l in p.stderr.splitlines() if l.startswith("* spin_us:")]
    check(len(notes) >= 1, "no call under way at any boundary: the test proves nothing")
    for l in notes:
        check("still running" in l and "longjmp" not in l and "not seen" not in l, l)
    lost = [l for l in p.stderr.splitlines() if l.startswith("dropped:")]
    check(not lost, f"counted as lost: {lost}")


def test_calls_running_at_attach_are_not_losses():
    # Issue 37: with ret probes (which see the return of a call entered before they went in),
    # the call under way as fnprof attaches and the one under way as it detaches are counted,
    # each in its own words: neither is a loss. sleep_us(100000) back to back: the gap between
    # two calls (a return probe, an entry probe: tens of us where they single-step) is a few in
    # 10^4 of the time, so the probes go in, and the report is taken, inside a call. (With
    # 2 ms calls, a CI host whose single step costs ~15 us once took one of them in the gap.)
    w = subprocess.Popen([target("work"), "sleep", "100000", "1000"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        p = run_fnprof(["-p", str(w.pid), "-f", "sleep_us", "--exit=ret", "-d", "1"], timeout=60)
    finally:
        w.kill()
        w.wait()
    check(p.returncode == 0, p.stderr[-2000:])
    lost = [l for l in p.stderr.splitlines() if l.startswith("dropped:")]
    check(not lost, f"counted as lost: {lost}")
    check(re.search(r"^not timed: 1 calls already running when the probes went in", p.stderr, re.M),
          f"the call under way at attach not said: {p.stderr[-1500:]!r}")
    notes = [l for l in p.stderr.splitlines() if l.startswith("* sleep_us:")]
    check(len(notes) == 1 and "1 still running" in notes[0] and "longjmp" not in notes[0], f"{notes}")
    # About 1 s of 100 ms calls: entered = returned + 1, the returned ones timed.
    m = re.search(r"(\d+) calls entered, (\d+) returned", notes[0])
    check(m and int(m[1]) == int(m[2]) + 1 and 5 <= int(m[2]) <= 11, f"{notes}")


def test_signals_print_report_and_detach():
    # Ctrl-C, SIGTERM and SIGHUP: final report, exit 0, target running on without breakpoints.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with Target("work", "loop") as t:
            fp = subprocess.Popen([FNPROF, "-p", str(t.pid), "-f", "spin_us", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            fp.send_signal(sig)
            out, err = fp.communicate(timeout=20)
            check(fp.returncode == 0, f"{sig.name}: exit {fp.returncode}: {err[-2000:]}")
            check(func(final_report(out), "spin_us")["calls"] > 0, f"{sig.name}: no calls")
            check(t.proc.poll() is None, f"{sig.name}: target died")
            check_no_breakpoints(t.pid, ["spin_us"])


def check_no_breakpoints(pid, names):
    """The bytes at each function's entry in the live process equal those in the file (no int3)."""
    listing = run_fnprof(["--list", "-p", str(pid)] + sum((["-f", n] for n in names), []))
    check(listing.returncode == 0, listing.stderr)
    maps = [m.split() for m in open(f"/proc/{pid}/maps").read().splitlines()]
    for line in listing.stdout.splitlines()[1:]:
        obj, off = line.split()[0], int(line.split()[2], 16)
        for m in maps:
            start, end = (int(x, 16) for x in m[0].split("-"))
            pgoff = int(m[2], 16)
            if len(m) >= 6 and m[5] == obj and pgoff <= off < pgoff + end - start:
                break
        else:
            raise AssertionError(f"{obj} offset {off:#x} not mapped")
        with open(f"/proc/{pid}/root{obj}", "rb") as fobj, open(f"/proc/{pid}/mem", "rb") as mem:
            fobj.seek(off)
            mem.seek(start + off - pgoff)
            want, got = fobj.read(16), mem.read(16)
        check(got == want, f"breakpoint left in {line.split()[-1]}: {got.hex()} != {want.hex()}")


def test_target_exit_mid_run():
    t = subprocess.Popen([target("work"), "spin", "100", "3000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(0.05)
    p = run_fnprof(["-p", str(t.pid), "-f", "spin_us", "--json"], timeout=30)
    t.communicate()
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
    rep = final_report(p.stdout)
    check(rep.get("note") == "target exited", f"note {rep.get('note')}")
    check(func(rep, "spin_us")["calls"] > 0, "no calls before exit")


def test_hist_layout():
    p = run_fnprof(["-f", "spin_us", "--hist", "--", target("work"), "spin", "30", "500"])
    check(p.returncode == 0, p.stderr)
    # The unit follows the largest call: usecs for 30 us spins, msecs when one was preempted for ms.
    check(re.search(r"\b[um]secs : count", p.stderr) and " -> " in p.stderr and "|*" in p.stderr,
          p.stderr[-2000:])


def test_table_columns():
    p = run_fnprof(["-f", "spin_us", "--", target("work"), "spin", "30", "200"])
    check(p.returncode == 0, p.stderr)
    for col in ["FUNCTION", "CALLS", "CALLS/s", "AVG", "P50", "P99", "MAX", "ONCPU", "OFFCPU", "CPU%", "%PROC"]:
        check(col in p.stderr, f"column {col} missing")


def test_output_file():
    path = f"/tmp/fnprof-test-out-{os.getpid()}.json"
    try:
        p = run_fnprof(["-f", "tiny", "-o", path, "--json", "--", target("work"), "count", "100"])
        check(p.returncode == 0, p.stderr)
        check(func(final_report(open(path).read()), "tiny")["calls"] == 100, "report in -o file")
        check("{" not in p.stderr and "{" not in p.stdout, "report also went to stderr or stdout")
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_json_goes_to_stdout_for_a_pipe():
    """--json | jq: the reports on stdout, messages on stderr (before: all on stderr, jq got nothing);
    -o - and -o /dev/stdout write there too (before: a file named '-', and 'exists already')."""
    d = tempfile.mkdtemp()
    try:
        for out in ([], ["-o", "-"], ["-o", "/dev/stdout"]):
            p = subprocess.run([FNPROF, "-f", "tiny", "--json"] + out + ["--", target("work"), "count", "100"],
                               capture_output=True, text=True, timeout=60, cwd=d)
            check(p.returncode == 0, f"{out}: {p.stderr[-1000:]}")
            check(func(final_report(p.stdout), "tiny")["calls"] == 100, f"{out}: report on stdout")
            check("{" not in p.stderr, f"{out}: report on stderr too")
            check(not os.listdir(d), f"{out}: files written: {os.listdir(d)}")
        # The table stays where perf stat puts its counts: stderr.
        p = run_fnprof(["-f", "tiny", "--", target("work"), "count", "100"])
        check(p.returncode == 0 and "tiny" in p.stderr and "CALLS" not in p.stdout, p.stderr[-1000:])
        # Only the report goes to stdout: the other files are files, never a file named '-'.
        for flag in ("--pprof", "--folded", "--svg"):
            p = subprocess.run([FNPROF, "--sample", flag, "-", "--", target("work"), "count", "1"],
                               capture_output=True, text=True, timeout=60, cwd=d)
            check(p.returncode == 2 and "only -o writes to standard output" in p.stderr, f"{flag} -: {p.stderr}")
            check(not os.listdir(d), f"{flag} -: files written: {os.listdir(d)}")
    finally:
        shutil.rmtree(d)


def test_list_functions():
    p = run_fnprof(["--list", "-f", "spin_*", "-f", "libc:getpid", "--", target("work"), "count", "1"])
    check(p.returncode == 0, p.stderr)
    check("spin_us" in p.stdout and "getpid" in p.stdout and "libc" in p.stdout, p.stdout)


def test_list_warnings_grouped():
    # Issue 37: --list -f 'libc:*' printed ~95 warnings, one per function without exits (exit,
    # abort, longjmp...). Those are now one line per reason, naming a few and counting the rest;
    # --list still shows each (EXIT none).
    p = run_fnprof(["--list", "-f", "libc:*", "--", target("work"), "count", "1"])
    check(p.returncode == 0, p.stderr[-2000:])
    warns = [l for l in p.stderr.splitlines() if "warning:" in l]
    none = [l for l in p.stdout.splitlines() if l.split()[-2:-1] == ["none"]]
    check(len(none) > 10, f"only {len(none)} functions without exits: the test proves nothing")
    check(len(warns) <= 4, f"{len(warns)} warnings: {warns[:6]}")
    check(any(re.search(r"no return instruction found in \d+ functions", l) for l in warns), f"{warns}")


def test_glob_expands():
    rep, _ = traced(["-f", "*_us"], target("work"), "spin", 10, 10)
    names = {f["name"] for f in rep["functions"]}
    check({"spin_us", "sleep_us"} <= names, f"glob matched {names}")


def test_per_probe_links_without_uprobe_multi():
    # Kernels before 6.6 get one perf-event link per probe; the figures are the same.
    env = dict(os.environ, FNPROF_NO_UPROBE_MULTI="1")
    p = run_fnprof(["-f", "tiny", "-f", "spin_us", "--json", "--", target("work"), "count", "3000"], env=env)
    check(p.returncode == 0, p.stderr)
    check(func(final_report(p.stdout), "tiny")["calls"] == 3000, "calls with per-probe links")


def test_startup_steps_shown():
    # Issue 15: -v prints where the start-up went, step by step (wall and CPU time); the JSON total
    # report carries the same steps under fnprof.steps. The target's probes go in before the
    # tracepoint programs have loaded (no -e, no --follow-forks).
    p = run_fnprof(["-v", "-f", "spin_us", "--json", "--", target("work"), "spin", "20", "50"])
    check(p.returncode == 0, p.stderr[-3000:])
    line = next((l for l in p.stderr.splitlines() if l.startswith("fnprof: steps:")), "")
    for step in ("resolve", "load+verify (uprobe programs)", "attach probes", "load+verify (tracepoint programs)",
                 "attach tracepoints", "calibration", "final calibration", "detach and clean-up"):
        check(f" {step} " in line, f"step {step!r} missing: {line}")
    check(line.index("attach probes") < line.index("load+verify (tracepoint programs)"), line)
    steps = final_report(p.stdout)["fnprof"]["steps"]
    names = [s["step"] for s in steps]
    check("calibration" in names and all(s["wall_ms"] >= 0 and s["cpu_ms"] >= 0 for s in steps), str(steps))
    # With --follow-forks the tracepoints (the fork's) go first.
    p = run_fnprof(["-v", "--follow-forks", "-f", "spin_us", "--", target("work"), "spin", "20", "5"])
    line = next((l for l in p.stderr.splitlines() if l.startswith("fnprof: steps:")), "")
    check(p.returncode == 0 and line.index("attach tracepoints") < line.index("attach probes"), line)


def test_programs_load_side_by_side_or_in_one_piece():
    # The uprobe and the tracepoint programs load as two instances of the object, on shared maps;
    # when the uprobe programs need the kernel's BTF (FNPROF_ONE_PIECE=1 takes that way), as one.
    # Either way sched_switch must see the frames the uprobes push: a sleep is blocked time.
    for one_piece, said in ((False, "side by side"), (True, "in one piece")):
        env = dict(os.environ, **({"FNPROF_ONE_PIECE": "1"} if one_piece else {}))
        p = run_fnprof(["-v", "-f", "sleep_us", "-f", "spin_us", "--json", "--", target("work"), "sleep", "1000", "100"],
                       env=env)
        check(p.returncode == 0, p.stderr[-3000:])
        check(said in p.stderr, f"fnprof -v does not say it loaded the programs {said}")
        f, t = func(final_report(p.stdout), "sleep_us"), truth(p.stderr, "sleep_us")
        check(f["calls"] == t["calls"] == 100, f"{said}: calls {f['calls']}")
        check_wall(f, t, said)
        check(f["blocked_ns"]["total"] > 0.85 * f["wall_ns"]["total"], f"{said}: sleep not counted as blocked")


def held_programs(pid):
    """{name: tag} of the BPF programs that process pid holds: its fds' prog ids (fdinfo), named by bpftool."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = f.read()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s+(\d+)", info, re.M)
        if m and "prog_type:" in info:
            ids.add(m.group(1))
    progs = {}
    for i in ids:
        out = subprocess.run(["bpftool", "-j", "prog", "show", "id", i], capture_output=True, text=True)
        if out.returncode == 0:
            info = json.loads(out.stdout)
            progs[info["name"]] = info["tag"]
    return progs


def programs_of_run(pid, opts, env=None):
    """The programs a run of fnprof -v -p pid -f spin_us holds once all are in, and its stderr."""
    # -v's libbpf log would fill a pipe: a file takes it.
    with tempfile.TemporaryFile("w+") as log:
        p = subprocess.Popen([FNPROF, "-v", "-p", str(pid), "-f", "spin_us", "-d", "60"] + opts,
                             stdout=subprocess.DEVNULL, stderr=log, text=True, env=env)
        try:
            # The tracepoint programs load last (after the target's probes are in).
            wait_for(lambda: "on_exit" in held_programs(p.pid) or p.poll() is not None, timeout=30)
            held = held_programs(p.pid)
        finally:
            p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
        log.seek(0)
        err = log.read()
    check(p.returncode == 0, err[-3000:])
    # The uprobe warm-up's throwaway program is not of the run's.
    held.pop("fnprof_warm", None)
    return held, err


def test_loads_only_the_programs_it_uses():
    # Issue 36: loading and verifying the programs is most of the start-up: those the run's probes and
    # options do not use are not loaded. The uretprobe exit (fn_exit) is the calibration's too, so
    # without one (--raw) a run with no uretprobe does without it. -v lists what it loaded.
    if not shutil.which("bpftool"):
        raise Skip("bpftool not installed (make test-deps)")
    cases = (([], {"fn_entry", "fn_exit", "on_switch", "on_exit"}),
             (["--raw", "--entry-only"], {"fn_entry", "on_switch", "on_exit"}),
             (["--raw", "--exit=ret"], None))
    with Target("work", "loop") as t:
        runs = [(opts, want) + programs_of_run(t.pid, opts) for opts, want in cases]
    for opts, want, held, _ in runs:
        if want is not None:
            check(set(held) == want, f"{opts}: loaded {sorted(held)}, want {sorted(want)}")
        else:
            check("fn_exit" not in held and "fn_exit_ret" in held, f"{opts}: loaded {sorted(held)}")
    for opts, _, held, err in runs:
        line = next((l for l in err.splitlines() if "BPF programs loaded:" in l), "")
        said = set(line.split("loaded:")[-1].split())
        check(said == set(held), f"{opts}: -v says {sorted(said)}, the process holds {sorted(held)}")


def test_uprobe_programs_load_without_the_kernels_btf():
    # Issue 36: a run reads no kernel BTF (~5 MB through sysfs, then parsed: 7-21 ms of CPU here, ~2900
    # page faults) once a first run has kept this boot's kernel types and what fnprof reads of the BTF
    # (kernel-btf-facts). A typed ksym in the object (the kfunc bpf_session_is_return) made libbpf read
    # it at every load of the uprobe half, which doubled that step; system-wide, the check for uprobe
    # sessions read it once more; libbpf 1.1 read it for any tp_btf program, only to find the
    # tracepoint's id, which the kept facts now give (target/tpbtf.h).
    with Target("work", "loop") as t:
        for args in (["-p", str(t.pid)], []):
            fn = "spin_us" if args else f"{target('work')}:spin_us"
            runs = [run_fnprof(["-v"] + args + ["-f", fn, "-d", "0.1"]) for _ in range(2)]
            for p in runs:
                check(p.returncode == 0, p.stderr[-2000:])
            reads = [l for l in runs[1].stderr.splitlines() if l.startswith("libbpf: loading kernel BTF")]
            check(not reads, f"{args or 'system-wide'}: the kernel's BTF read {len(reads)} times in one run")
            check("loaded the uprobe and the tracepoint programs side by side" in runs[1].stderr,
                  f"{args or 'system-wide'}: the tracepoint programs not loaded:\n{runs[1].stderr[-2000:]}")
    check("the kernel's BTF: as this boot's first run read it" in runs[1].stderr,
          "system-wide: the facts of the kernel's BTF not taken from the kept file")


def test_tracepoint_not_kept_is_looked_up_in_the_btf():
    # Issue 36: the tp_btf programs load with the tracepoints' ids kept for the boot (target/tpbtf.h); a
    # tracepoint whose id was not kept is looked up in the kernel's BTF read then, and the programs
    # attach as ever: the thread's sleep is off the CPU, its spin on it (fnprof-test's hook takes no
    # kept id at all).
    env = dict(os.environ, FNPROF_TEST_TP_NOT_KEPT="1")
    with Target("work", "loop") as t:
        p = run_fnprof(["-v", "--json", "-p", str(t.pid), "-f", "sleep_us", "-d", "0.5"], env=env, exe=fnprof_test())
        check(p.returncode == 0, p.stderr[-2000:])
        looked = [l for l in p.stderr.splitlines() if "its BTF id not kept, reading the kernel's BTF" in l]
        check(any("sched_switch" in l for l in looked), f"sched_switch's id not looked up:\n{p.stderr[-2000:]}")
        f = func(json.loads(p.stdout), "sleep_us")
        check(f["calls"] > 0 and f["offcpu_ns"]["avg"] > 0.5 * f["wall_ns"]["avg"],
              f"sleep_us: {f['calls']} calls, off the CPU {f['offcpu_ns']['avg']} of {f['wall_ns']['avg']} ns")


def test_kernel_types_relocate_as_the_whole_btf():
    # Issue 36: the CO-RE relocations read a small BTF of the kernel's types they use (built by the boot's
    # first run, kept in /run/fnprof), not the kernel's whole BTF, searched once per type read. The
    # programs must come out the same, instruction for instruction: the kernel's tag of a program is a
    # hash of its instructions (map references left out). FNPROF_WHOLE_KERNEL_BTF=1 takes the old way.
    if not shutil.which("bpftool"):
        raise Skip("bpftool not installed (make test-deps)")
    whole = dict(os.environ, FNPROF_WHOLE_KERNEL_BTF="1")
    with Target("work", "loop") as t:
        for opts in ([], ["--follow-forks"]):
            small, err = programs_of_run(t.pid, opts)
            check(re.search(r"kernel types for CO-RE: (\d+ of the kernel's \d+ types|as this boot's first run)",
                            err), f"{opts}: -v does not say where the kernel types came from:\n{err[-2000:]}")
            full, err = programs_of_run(t.pid, opts, env=whole)
            check("CO-RE against the kernel's whole BTF" in err, f"{opts}: the whole BTF was not read")
            check("on_switch" in small and small == full, f"{opts}: small BTF {small} != whole BTF {full}")


def test_kernel_types_file_spoilt_is_built_again():
    # Issue 36: the kept kernel types are checked before libbpf reads them: a file that is not BTF (or
    # that others may write) is built again, and the run goes on as ever; an empty one means the whole BTF.
    with Target("work", "loop") as t:
        p = run_fnprof(["-v", "-p", str(t.pid), "-f", "spin_us", "-d", "0.3"])
        m = re.search(r"kernel types for CO-RE: .*\((kernel-types-[0-9a-f-]+)", p.stderr)
        check(p.returncode == 0 and m, p.stderr[-2000:])
        path = os.path.join("/run/fnprof", m.group(1))
        for spoil in ("text", "mode"):
            if spoil == "text":
                with open(path, "w") as f:
                    f.write("not BTF\n")
            else:
                os.chmod(path, 0o666)
            p = run_fnprof(["-v", "-p", str(t.pid), "-f", "spin_us", "-d", "0.3", "--json"])
            check(p.returncode == 0 and f"{m.group(1)}, built in" in p.stderr, f"{spoil}: {p.stderr[-2000:]}")
            check(func(final_report(p.stdout), "spin_us")["calls"] > 0, f"{spoil}: no calls")
            check(os.stat(path).st_mode & 0o777 == 0o600, f"{spoil}: {oct(os.stat(path).st_mode)}")
        # An empty file is the first run's word that the kernel's whole BTF is needed (a type it lacks).
        open(path, "w").close()
        try:
            p = run_fnprof(["-v", "-p", str(t.pid), "-f", "spin_us", "-d", "0.3", "--json"])
            check(p.returncode == 0 and f"{m.group(1)}: the whole BTF" in p.stderr, p.stderr[-2000:])
            check(func(final_report(p.stdout), "spin_us")["calls"] > 0, "whole BTF: no calls")
        finally:
            os.unlink(path)
