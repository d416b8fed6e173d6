"""-p P1,P2,...: the modes a list of processes takes beyond tracing and the tables: one --pprof,
--folded and --svg file for all the processes (samples labelled pid and comm, stacks under
their process), --slow, --listen and --max-overhead, each process on its own.

Targets run twice, each telling its own truth: tests/targets/burn.c (burn_a and burn_b in a
known ratio), work.c and slowcall.c.
"""
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import FNPROF, Skip, check, final_report, json_reports, run_fnprof, target, truth, wait_for

# As test_sample: a rate that walks through burn's 3+1 ms phases.
HZ = 347


def burners(*ratios, seconds=20):
    """burn processes, one per (a, b) ratio of units, burning for seconds."""
    return [subprocess.Popen([target("burn"), str(seconds), str(a), str(b)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for a, b in ratios]


def stop(procs):
    for p in procs:
        p.kill()
        p.communicate()


def folded_by_process(path):
    """{first frame: {leaf-most burn function: samples}} of a folded file."""
    out = {}
    for line in open(path).read().splitlines():
        m = re.match(r"^(\S.*) (\d+)$", line)
        check(m, f"not 'frames count': {line!r}")
        frames = m.group(1).split(";")
        fn = next((f for f in reversed(frames) if f in ("burn_a", "burn_b")), "other")
        per = out.setdefault(frames[0], {})
        per[fn] = per.get(fn, 0) + int(m.group(2))
    return out


def check_folded(path, pids, hot, reps):
    """Each process's stacks start with comm-PID; its hottest burn function is its own (burn's
    ratio), and its samples are those its JSON report counted."""
    got = folded_by_process(path)
    check(sorted(got) == sorted(f"burn-{p}" for p in pids), f"first frames {sorted(got)}")
    for pid, fn in zip(pids, hot):
        per = got[f"burn-{pid}"]
        other = "burn_b" if fn == "burn_a" else "burn_a"
        check(per.get(fn, 0) > 1.5 * per.get(other, 0), f"pid {pid}: {per}, want {fn} hottest")
        check(sum(per.values()) == reps[pid]["samples"], f"pid {pid}: {sum(per.values())} folded samples, "
              f"its report {reps[pid]['samples']}")


def go_pprof(args, d):
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"), PPROF_TMPDIR=d)
    return subprocess.run(["go", "tool", "pprof"] + args, capture_output=True, text=True, timeout=120, env=env)


def check_pprof(path, pids, d):
    """go tool pprof reads one file with samples labelled pid (each process's) and comm."""
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    raw = go_pprof(["-raw", path], d)
    check(raw.returncode == 0, raw.stderr)
    labelled = {int(m) for m in re.findall(r"pid:\[(\d+)\]", raw.stdout)}
    check(labelled == set(pids), f"samples labelled pid {sorted(labelled)}, want {pids}")
    check("comm:[burn]" in raw.stdout, raw.stdout[:2000])
    for pid in pids:
        top = go_pprof(["-top", f"-tagfocus=pid={pid}", path], d)
        check(top.returncode == 0 and "burn_" in top.stdout, f"pid {pid}: {top.stdout[:1000]}{top.stderr}")


def test_pid_list_writes_one_file_of_each_kind():
    """-p A,B --pprof --folded --svg (before: "write one process's: give one PID"): one file each,
    every process in it. A burns 3:1 in burn_a, B 1:3 in burn_b."""
    procs = burners((3, 1), (1, 3))
    d = tempfile.mkdtemp()
    try:
        pids = [p.pid for p in procs]
        files = {k: os.path.join(d, f"cpu.{k}") for k in ("pb.gz", "folded", "svg")}
        p = run_fnprof(["-p", f"{pids[0]},{pids[1]}", "-d", "2", "-F", str(HZ), "--json", "--call-graph", "fp",
                        "--pprof", files["pb.gz"], "--folded", files["folded"], "--svg", files["svg"]])
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        reps = {r["pid"]: r for r in json_reports(p.stdout) if r.get("mode") == "sample"}
        check(sorted(reps) == sorted(pids), f"reports of {sorted(reps)}")
        check_folded(files["folded"], pids, ("burn_a", "burn_b"), reps)
        svg = open(files["svg"]).read()
        for pid in pids:
            check(f"burn (pid {pid})" in svg, f"no frame of pid {pid} in the flame graph")
        check_pprof(files["pb.gz"], pids, d)
    finally:
        stop(procs)
        shutil.rmtree(d)


def test_pid_list_profile_pprof_labels_each_process():
    """-p W,M --profile offcpu --pprof (before: refused): one file, samples labelled pid, comm and
    state. W sleeps in sleep_us: W's samples have it, M's (4 threads contending a lock) do not."""
    w = subprocess.Popen([target("work"), "sleep", "1000", "100000"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    m = subprocess.Popen([target("mutex"), "20"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    d = tempfile.mkdtemp()
    try:
        check("ready" in m.stdout.readline(), "mutex did not start")
        path = os.path.join(d, "off.pb.gz")
        p = run_fnprof(["-p", f"{w.pid},{m.pid}", "--profile", "offcpu", "-d", "1.5", "--pprof", path], timeout=90)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        if not shutil.which("go"):
            raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
        raw = go_pprof(["-raw", path], d)
        check(raw.returncode == 0, raw.stderr)
        labelled = {int(x) for x in re.findall(r"pid:\[(\d+)\]", raw.stdout)}
        check(labelled == {w.pid, m.pid}, f"samples labelled pid {sorted(labelled)}, want {w.pid}, {m.pid}")
        check("comm:[work]" in raw.stdout and "comm:[mutex]" in raw.stdout and "state:[" in raw.stdout,
              raw.stdout[:2000])
        tops = {pid: go_pprof(["-top", "-cum", "-nodecount=200", f"-tagfocus=pid={pid}", path], d).stdout
                for pid in (w.pid, m.pid)}
        check("sleep_us" in tops[w.pid], f"W's samples without sleep_us:\n{tops[w.pid][:2000]}")
        check("sleep_us" not in tops[m.pid] and "take_lock" in tops[m.pid], f"M's:\n{tops[m.pid][:2000]}")
    finally:
        for x in (w, m):
            x.kill()
            x.wait()
        shutil.rmtree(d)


def entry_patched(pid, exe, name):
    """Whether function name of exe in process pid holds a breakpoint (its uprobe is in)."""
    nm = subprocess.run(["nm", exe], capture_output=True, text=True).stdout
    off = int(next(ln.split()[0] for ln in nm.splitlines() if ln.endswith(f" T {name}")), 16)
    base = next(int(ln.split("-")[0], 16) for ln in open(f"/proc/{pid}/maps")
                if ln.split()[-1] == exe and int(ln.split()[2], 16) == 0)
    with open(f"/proc/{pid}/mem", "rb") as m:
        m.seek(base + off)
        return m.read(1) == b"\xcc"


def gated(exe, *args, word="gate"):
    """A target started with word (gate; work's gated MODE): it waits for a line on stdin once it printed ready."""
    proc = subprocess.Popen([exe, word] + [str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    check("ready" in proc.stdout.readline(), f"{exe} gate did not start")
    return proc


def traced_list(procs, exe, func, args, one_by_one=False):
    """fnprof -p A,B,... -f func ARGS --json while the gated targets run to their end: (its final
    report, its stdout: every report, {pid: the target's stdout and stderr}). one_by_one: each target let go once the one
    before has exited and a second has passed (--slow's rate limit counts records per second)."""
    pids = [p.pid for p in procs]
    fp = subprocess.Popen([FNPROF, "-p", ",".join(map(str, pids)), "-f", func, "--json"] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check(wait_for(lambda: all(entry_patched(p, exe, func) for p in pids) or fp.poll() is not None, 30),
              "probes never in every process")
        outs = {}
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
            if one_by_one:
                outs[p.pid] = "".join(p.communicate(timeout=120))
                time.sleep(1.1)
        outs.update({p.pid: "".join(p.communicate(timeout=120)) for p in procs if p.pid not in outs})
        # Every target gone: fnprof ends by itself.
        fout, ferr = fp.communicate(timeout=60)
    finally:
        if fp.poll() is None:
            fp.kill()
            fp.communicate()
    check(fp.returncode == 0, f"fnprof exit {fp.returncode}: {ferr[-2000:]}")
    return final_report(fout), fout, outs


def check_slow_calls(calls, pid, t):
    """One process's slow calls: its own pid, its 30 sleeps of 5 ms each (its truth), each stack
    named with its own objects (ASLR puts each process's code elsewhere)."""
    check(calls and all(c["pid"] == pid for c in calls), f"pid {pid}: calls of {sorted({c['pid'] for c in calls})}")
    sleeps = [c for c in calls if c["function"] == "handle" and c["blocked_ns"] >= 4.5e6]
    check(t["sleeps"] == 30 and 28 <= len(sleeps) <= 30, f"pid {pid}: {len(sleeps)} sleeping calls kept, "
          f"it slept {t['sleeps']} times")
    for c in sleeps:
        check(c["wall_ns"] >= 5e6, f"pid {pid}: wall {c['wall_ns']} < 5 ms")
        check(c["stack"][:1] == ["handle"] and "serve_loop" in c["stack"] and "main" in c["stack"],
              f"pid {pid}: caller stack {c['stack']}")
        check("wait_for_disk" in (c["blocked_stack"] or []), f"pid {pid}: blocked stack {c['blocked_stack']}")


def test_pid_list_slow_calls_each_process():
    """-p A,B -f handle --slow 1ms (before: refused, "named with one process's objects"): each
    process's slow calls under it (A's in the report's slow_calls, B's in processes[0]), named with
    its own objects; the text report groups them by pid."""
    exe = target("slowcall")
    procs = [gated(exe, 3000), gated(exe, 3000)]
    try:
        rep, _, outs = traced_list(procs, exe, "handle", ["--slow", "1ms"], one_by_one=True)
        a, b = (p.pid for p in procs)
        check(rep["pid"] == a and [x["pid"] for x in rep["processes"]] == [b], f"processes {rep['processes']}")
        check_slow_calls(rep["slow_calls"], a, truth(outs[a], "slow"))
        check_slow_calls(rep["processes"][0]["slow_calls"], b, truth(outs[b], "slow"))
        kept = len(rep["slow_calls"]) + len(rep["processes"][0]["slow_calls"])
        check(rep["slow_calls_seen"] == kept + rep["slow_calls_dropped"], f"seen {rep['slow_calls_seen']}, "
              f"kept {kept}, dropped {rep['slow_calls_dropped']}")
    finally:
        stop(procs)
    procs = [gated(exe, 300), gated(exe, 300)]
    try:
        pids = [p.pid for p in procs]
        fp = subprocess.Popen([FNPROF, "-p", f"{pids[0]},{pids[1]}", "-f", "handle", "--slow", "1ms"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(wait_for(lambda: all(entry_patched(p, exe, "handle") for p in pids) or fp.poll() is not None, 30),
              "probes never in every process")
        for p in procs:
            p.communicate("go\n", timeout=60)
        _, err = fp.communicate(timeout=60)
        check(fp.returncode == 0, err[-2000:])
        heads = re.findall(r"^pid (\d+): (\d+) kept", err, re.M)
        check([h[0] for h in heads] == [str(x) for x in pids] and all(int(h[1]) >= 3 for h in heads),
              f"slow calls by pid {heads}:\n{err[-3000:]}")
        # Both exit ~40 ms after they start: the second's stacks too are read while it runs.
        called = re.findall(r"^ +called: +(.*)$", err, re.M)
        check(called and all("serve_loop < main" in c for c in called), f"stacks cut short:\n{err[-3000:]}")
    finally:
        stop(procs)


def series(text, metric):
    """{labels string: value} of every sample of metric in a /metrics text."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^" + metric + r"\{([^}]*)\} (\S+)$", text, re.M)}


def calls_by_pid(text, function):
    out = {}
    for labels, v in series(text, "fnprof_calls_total").items():
        if f'function="{function}"' in labels:
            pid = int(re.search(r'pid="(\d+)"', labels).group(1)) if 'pid="' in labels else None
            out[pid] = out.get(pid, 0) + v
    return out


def test_pid_list_listen_labels_each_process():
    """-p A,B,C,D -f outer --listen (before: refused, "one process's"): fnprof_calls_total of outer
    labelled pid, A's 3000 and B's 5000 calls as each counted them (C and D, work loop, call
    none and keep the run going); /debug/pprof/profile samples C and D, labelled pid and comm,
    and ?pid= picks one of the list."""
    from test_fleet import Fnprof, http_get
    exe = target("work")
    gates = [gated(exe, 3000), gated(exe, 5000)]
    loops = [subprocess.Popen([exe, "loop"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(2)]
    d = tempfile.mkdtemp()
    try:
        for p in loops:
            check("ready" in p.stdout.readline(), "work loop did not start")
        pids = [p.pid for p in gates + loops]
        # work loop is on the CPU ~5% of the time: 499 Hz gives the profiles served samples of both.
        with Fnprof(["-p", ",".join(map(str, pids)), "-f", "outer", "--call-graph", "fp", "-F", "499"]) as fp:
            check(wait_for(lambda: all(entry_patched(p.pid, exe, "outer") for p in gates), 30),
                  f"probes never in A and B:\n{fp.err()}")
            want = {}
            for p in gates:
                p.stdin.write("go\n")
                p.stdin.flush()
            for p in gates:
                want[p.pid] = truth(p.communicate(timeout=60)[1], "outer")["calls"]
            check(want == {gates[0].pid: 3000, gates[1].pid: 5000}, f"targets counted {want}")
            check(wait_for(lambda: calls_by_pid(fp.metrics(), "outer") == want, timeout=10),
                  f"outer's calls by pid {calls_by_pid(fp.metrics(), 'outer')}, truth {want}")
            status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=2", timeout=60)
            check(status == 200, f"profile answered {status}: {body[:200]}")
            path = os.path.join(d, "list.pb.gz")
            open(path, "wb").write(body)
            if shutil.which("go"):
                raw = go_pprof(["-raw", path], d)
                labelled = {int(x) for x in re.findall(r"pid:\[(\d+)\]", raw.stdout)}
                check(labelled == {p.pid for p in loops} and "comm:[work]" in raw.stdout,
                      f"samples labelled {sorted(labelled)}: {raw.stdout[:1500]}{raw.stderr}")
                status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=2&pid={loops[1].pid}",
                                        timeout=60)
                open(path, "wb").write(body)
                raw = go_pprof(["-raw", path], d)
                labelled = {int(x) for x in re.findall(r"pid:\[(\d+)\]", raw.stdout)}
                check(status == 200 and labelled == {loops[1].pid}, f"?pid={loops[1].pid}: {sorted(labelled)}")
            status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=1&pid=1")
            check(status == 404 and b"not one of" in body, f"?pid=1: {status} {body[:200]}")
            fp.stop()
    finally:
        stop(gates + loops)
        shutil.rmtree(d)


def test_pid_list_svg_heatmap_per_process():
    """-p A,B -f outer --svg (before: A's heatmap alone, B's calls nowhere in the file): a heatmap per
    process under its pid, each holding the calls its process counted (3000 and 5000)."""
    exe = target("work")
    procs = [gated(exe, 3000), gated(exe, 5000)]
    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "p.svg")
        rep, _, outs = traced_list(procs, exe, "outer", ["--svg", path])
        want = {p.pid: truth(outs[p.pid], "outer")["calls"] for p in procs}
        svg = open(path).read()
        heads = [int(x) for x in re.findall(r"Latency over time: pid (\d+)", svg)]
        calls = [int(x) for x in re.findall(r'class="heatmap" data-fn="outer" data-calls="(\d+)"', svg)]
        check(dict(zip(heads, calls)) == want and len(heads) == 2, f"heatmaps {heads} of {calls} calls, truth {want}")
    finally:
        stop(procs)
        shutil.rmtree(d)


def rate_slowdown(t):
    """The target's own slowdown (run_rate in work.c): CPU time of its blocks with calls against
    that of as much work without calls, interleaved with them in the same run."""
    return (t["calls_cpu_ns"] + t["ref_cpu_ns"]) / (2 * t["ref_cpu_ns"]) - 1


def test_pid_list_max_overhead_bounds_each_process():
    """-p A,B -f tiny --max-overhead 5 (before: refused, "one process's CPU clock"): each process's
    probes bounded by its own work. A calls tiny rarely (tracing all of it would cost it ~3%), B
    often (~30%): a budget held against A's work, or both together, would let B's slowdown run
    past 5%. Each target measures its own slowdown; each estimated count's range holds its calls."""
    from harness import func, traced
    budget, exe = 5, target("work")
    # What a call of tiny costs here, and how long busy_us(30) really takes (as test_bias does).
    pre, pp = traced(["-f", "tiny"], exe, "rate", 2000, 30)
    us_real = truth(pp.stderr, "rate")["ref_cpu_ns"] / (2000 * 30e3)
    cost_us = pre["calibration"][func(pre, "tiny")["site"]]["cost_ns"] / 1e3
    plan = [(round(cost_us / 0.03 / us_real), 8000), (max(10, round(cost_us / 0.30 / us_real)), 80000)]
    procs = [gated(exe, "rate", n, us, word="gated") for us, n in plan]
    try:
        rep, err, outs = traced_list(procs, exe, "tiny", ["--max-overhead", str(budget)])
        reps = {rep["pid"]: rep}
        reps.update({x["pid"]: x for x in rep["processes"]})
        for p, (us, n) in zip(procs, plan):
            t, r = truth(outs[p.pid], "rate"), reps[p.pid]
            f = func(r, "tiny")
            slow = rate_slowdown(t)
            check(slow < (budget + 0.5) / 100, f"pid {p.pid} ({us} us a call): slowdown {100 * slow:.2f}% with "
                  f"--max-overhead {budget}")
            rg = f["calls_range"]
            what = (f"pid {p.pid}: estimated {f['calls']:.0f} calls of {n}, range {rg['min']}..{rg['max']} "
                    f"({f['calls_measured']} measured, fraction {r['attached_fraction']})")
            check(r["estimated"] is True and 0 < f["calls_measured"] < n, what)
            # Fewer than 3 bursts long enough to rate (a loaded machine): the range is unknown, said so.
            check(rg["min"] is None or rg["min"] <= n <= rg["max"], what)
            check(r["overhead"]["budget_pct"] == budget and r["overhead"]["over_budget"] is False,
                  f"pid {p.pid}: overhead {r['overhead']}")
    finally:
        stop(procs)


def test_pid_list_max_overhead_goes_on_after_one_exits():
    """-p A,B --max-overhead -i 1: A (a call of tiny every ~28 us) exits after ~1 s of work; B goes
    on for ~10 s. Before, once A was gone no burst put B's probes back (A's path to the object,
    /proc/A/map_files, was gone: ENOENT), and B's later intervals counted nothing. Bursts come about
    once a second: at least half of B's intervals after A's exit count calls."""
    from harness import func, traced
    exe = target("work")
    pre, pp = traced(["-f", "tiny"], exe, "rate", 2000, 30)
    us_real = truth(pp.stderr, "rate")["ref_cpu_ns"] / (2000 * 30e3)
    cost_us = pre["calibration"][func(pre, "tiny")["site"]]["cost_ns"] / 1e3
    us = max(10, round(cost_us / 0.30 / us_real))
    # Each call comes after us of work and before as much again (CPU time): A ~1 s of it, B ~10 s.
    n = int(1e6 / (2 * us * us_real))
    procs = [gated(exe, "rate", n, us, word="gated"), gated(exe, "rate", 10 * n, us, word="gated")]
    try:
        _, out, outs = traced_list(procs, exe, "tiny", ["--max-overhead", "5", "-i", "1"])
        b = procs[1].pid
        later = []
        for r in json_reports(out):
            if r.get("mode") != "trace" or r["total"]:
                continue
            mine = r if r["pid"] == b else next((x for x in r["processes"] if x["pid"] == b), None)
            later.append(func(mine, "tiny")["calls_measured"])
        a_cpu = truth(outs[procs[0].pid], "rate")["elapsed_ns"] / 1e9
        check(len(later) >= 4, f"{len(later)} interval reports of B")
        # The intervals after A's exit (with a second to spare), but the last (B's end).
        after = later[int(a_cpu) + 2:-1]
        check(len(after) >= 2 and sum(c > 0 for c in after) >= len(after) / 2,
              f"B's calls measured per interval {later}; A ran {a_cpu:.1f} s")
    finally:
        stop(procs)
