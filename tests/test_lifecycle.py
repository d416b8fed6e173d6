"""The target's life: deep recursion, exec, fork; what fnprof sees and says."""
import os
import subprocess

from harness import FNPROF, check, final_report, func, run_fnprof, target, truth


def test_recursion_deeper_than_kernel_limit():
    # 201 activations per call, the kernel reports the returns of the outer 64 only.
    p = run_fnprof(["-f", "recurse", "--json", "--", target("work"), "recurse", "200", "50"])
    check(p.returncode == 0, p.stderr)
    rep = final_report(p.stderr)
    f = func(rep, "recurse")
    check(f["calls"] == 64 * 50, f"timed calls {f['calls']} != 64 x 50")
    check(rep["dropped"]["returns_lost"] == (201 - 64) * 50, f"returns lost {rep['dropped']}")
    check(rep["dropped"]["orphan_returns"] == 0 and rep["dropped"]["abandoned_frames"] == 0, str(rep["dropped"]))
    text = run_fnprof(["-f", "recurse", "--", target("work"), "recurse", "200", "5"]).stderr
    check("returns lost" in text, "the table must say that returns were lost")
    out = subprocess.run([target("work"), "recurse", "200", "50"], capture_output=True, text=True).stdout
    check(out == p.stdout, "target output changed")


def test_exec_of_another_program_ends_the_run():
    p = subprocess.run([FNPROF, "-f", "spin_us", "--json", "--", target("work"), "exec", "300", "/bin/sh", "-c",
                        "sleep 0.6; exit 3"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 3, f"exit {p.returncode}: the exec'd program's status must pass through")
    rep = final_report(p.stderr)
    check(rep["note"] == "target exec'd another program", rep.get("note"))
    t = truth(p.stderr, "spin_us")
    check(func(rep, "spin_us")["calls"] == t["calls"], "calls before the exec")


def test_fork_child_not_traced():
    p = run_fnprof(["-f", "spin_us", "--json", "--", target("work"), "fork", "300"])
    check(p.returncode == 0, p.stderr)
    truths = [l for l in p.stderr.splitlines() if l.startswith("truth spin_us")]
    check(len(truths) == 2, f"parent and child truth lines: {truths}")
    calls = func(final_report(p.stderr), "spin_us")["calls"]
    counts = [int(l.split("calls=")[1].split()[0]) for l in truths]
    check(calls in counts, f"traced {calls}, parent/child made {counts}: the child leaked in")
    check(sorted(p.stdout.split()) == sorted("parent spun child spun".split()), p.stdout)


def test_many_threads_no_lost_calls():
    # 4x the cores in threads, all calling the traced function: every call counted, nothing
    # dropped, fnprof's memory bounded (its own peak RSS, from wait4).
    threads = 4 * (os.cpu_count() or 2)
    proc = subprocess.Popen([FNPROF, "-f", "spin_us", "--json", "-i", "0.5", "--", target("work"), "threads",
                             str(threads), "10000"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    check(proc.returncode == 0, err[-2000:])
    rep, t = final_report(err), truth(err, "spin_us")
    check(func(rep, "spin_us")["calls"] == t["calls"] == threads * 10000,
          f"{func(rep, 'spin_us')['calls']} calls counted, {t['calls']} made")
    check(not any(rep["dropped"].values()), f"dropped: {rep['dropped']}")
    check(ru.ru_maxrss < 64 * 1024, f"fnprof peaked at {ru.ru_maxrss // 1024} MiB")
