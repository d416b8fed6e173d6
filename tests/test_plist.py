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

from harness import Skip, check, json_reports, run_fnprof, target

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
