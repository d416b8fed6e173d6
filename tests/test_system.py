"""-a: whole-machine sampling. Every process on every CPU, rows per process (PID, COMM), each
process's CPU share against its own CPU time from /proc; --listen serves every process's samples
labelled pid and comm, read back with go tool pprof; and what -a refuses.

The targets are tests/bin/procs children: pbusyK spin in procs_spin(), pidleK sleep. The machine is
shared and has 2 cores, so the busy children get what the scheduler gives them: the truth is what
their own /proc/PID/stat says they got over the same seconds.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from harness import FNPROF, Skip, check, final_report, run_fnprof, target, wait_for, within
from test_fleet import Fnprof, http_get

FREQ = 99


class Procs:
    """tests/bin/procs BUSY LIGHT IDLE SECONDS in the background: its children {pid: (comm, kind)}."""

    def __init__(self, busy, light, idle, seconds=60):
        self.proc = subprocess.Popen([target("procs"), str(busy), str(light), str(idle), str(seconds)],
                                     stdout=subprocess.PIPE, text=True)
        self.children = {}
        for line in self.proc.stdout:
            if line.startswith("ready"):
                break
            m = re.match(r"child pid=(\d+) comm=(\S+) kind=(\S+)", line)
            check(m, f"procs printed {line!r}")
            self.children[int(m.group(1))] = (m.group(2), m.group(3))
        check(len(self.children) == busy + light + idle, f"procs started {self.children}")

    def of_kind(self, kind):
        return sorted(p for p, (_, k) in self.children.items() if k == kind)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


def cpu_s(pid):
    """utime + stime of pid in seconds (clock ticks: 10 ms)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sampled_with_truth(pids, args):
    """Runs fnprof -a with args; (its final JSON report, {pid: (CPU seconds from /proc over the run,
    the run's wall seconds)}, its pid)."""
    c0 = {p: cpu_s(p) for p in pids}
    t0 = time.monotonic()
    p = subprocess.Popen([FNPROF, "-a", "-F", str(FREQ), "--json"] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=120)
    t1 = time.monotonic()
    c1 = {p: cpu_s(p) for p in pids}
    check(p.returncode == 0, f"fnprof -a exit {p.returncode}:\n{err[-3000:]}")
    return final_report(out), {q: (c1[q] - c0[q], t1 - t0) for q in pids}, p.pid


def window_cores(cpu, wall, window):
    """The cores a single-threaded process kept busy in fnprof's window (window seconds within the
    wall seconds the truth covers, over which it used cpu seconds): (lowest, highest). Its start-up
    and end are in the truth's seconds, not in the window: 0.3 s here, a second or more under load."""
    outside = max(wall - window, 0)
    return max(cpu - outside, 0) / window, min(cpu, window) / window


def cores_by_pid(rep):
    """Self samples summed per process, as cores."""
    per = {}
    for f in rep["functions"]:
        per[f["pid"]] = per.get(f["pid"], 0) + f["self_samples"]
    return {p: n / (rep["freq_hz"] * rep["interval_s"]) for p, n in per.items()}


def check_busy_seen(call_graph):
    with Procs(2, 0, 1) as procs:
        busy, idle = procs.of_kind("busy"), procs.of_kind("idle")
        time.sleep(0.3)   # both spinning before the window opens
        rep, truth, self_pid = sampled_with_truth(busy, ["-d", "3", "--call-graph", call_graph])
        cores = cores_by_pid(rep)
        for pid in busy:
            comm = procs.children[pid][0]
            rows = [f for f in rep["functions"] if f["pid"] == pid]
            check(rows, f"busy child {pid} ({comm}) not in the report: pids {sorted(cores)}")
            check(all(f["comm"] == comm for f in rows), f"{pid}: comm {[f['comm'] for f in rows]}, not {comm}")
            check(any(f["name"] == "procs_spin" for f in rows),
                  f"{call_graph}: {comm}'s rows miss procs_spin: {[f['name'] for f in rows][:10]}")
            # The samples' share against the CPU time the process itself was charged over the same
            # seconds (fnprof's window is a little shorter: its start-up is in the truth's).
            # Samples lost on the way (counted: the ring buffer full while the unwinding thread fell
            # behind on a loaded machine) may be this process's: they may make up a shortfall.
            # With a build and the suite beside it, 0.34 cores against 0.25 over the whole run once.
            lost = rep["lost"] + rep.get("unwind", {}).get("lost", 0)
            lost_cores = lost / (rep["freq_hz"] * rep["interval_s"])
            lo, hi = window_cores(*truth[pid], rep["interval_s"])
            got = cores[pid]
            check(lo - max(0.35 * lo, 0.06) <= got + lost_cores and got <= hi + max(0.35 * hi, 0.06),
                  f"{call_graph}: {comm} sampled at {got:.2f} cores, /proc says {lo:.2f} to {hi:.2f} in fnprof's "
                  f"window ({truth[pid][0]:.2f} s of CPU in {truth[pid][1]:.2f} s; {lost} samples lost: "
                  f"{rep['lost']}, unwind {rep.get('unwind')})")
        check(idle[0] not in cores, f"the sleeping child {idle[0]} has samples: {cores.get(idle[0])}")
        check(self_pid not in cores, f"fnprof sampled itself: {cores.get(self_pid)} cores")
        check(rep["processes"]["seen"] >= 2, rep["processes"])
        if call_graph == "dwarf":
            # Of the samples the report counts: the reader ran on while the report was made, and the
            # unwinding statistics once held 943 samples against the report's 589.
            check(rep["unwind"]["samples"] <= rep["samples"], f"unwind {rep['unwind']}, {rep['samples']} samples")


def test_all_sees_busy_processes_fp():
    """-a --call-graph fp: both busy children, with their pids, comms, function and CPU shares."""
    check_busy_seen("fp")


def test_all_sees_busy_processes_dwarf():
    """The same with stacks unwound in user space, an unwinder per process."""
    check_busy_seen("dwarf")


def test_all_table_has_pid_and_comm():
    """The table: PID and COMM columns, the busy child's row under its own pid and name; fnprof not in it."""
    with Procs(1, 0, 0) as procs:
        pid = procs.of_kind("busy")[0]
        p = run_fnprof(["-a", "-d", "2", "--call-graph", "fp"], timeout=60)
        check(p.returncode == 0, p.stderr[-3000:])
        check(re.search(r"^\s+PID COMM\s+FUNCTION\s+OBJECT", p.stderr, re.M), p.stderr[-3000:])
        check(re.search(rf"^\s*{pid} pbusy0\s+procs_spin\s", p.stderr, re.M), p.stderr[-3000:])
        check("sampled: all processes" in p.stderr, p.stderr[-3000:])
        check(re.search(r"^processes: \d+ seen", p.stderr, re.M), p.stderr[-3000:])


def test_all_per_thread_groups_threads():
    """--per-thread with -a: a thread section per busy child, its rows still under its pid."""
    with Procs(1, 0, 0) as procs:
        pid = procs.of_kind("busy")[0]
        p = run_fnprof(["-a", "-d", "2", "--per-thread", "--call-graph", "fp"], timeout=60)
        check(p.returncode == 0, p.stderr[-3000:])
        check(re.search(rf"^thread {pid} \(pbusy0\):", p.stderr, re.M), p.stderr[-3000:])


def test_all_folded_starts_with_comm():
    """--folded with -a: each stack starts with its process's name."""
    d = tempfile.mkdtemp()
    try:
        with Procs(1, 0, 0):
            path = os.path.join(d, "all.folded")
            p = run_fnprof(["-a", "-d", "2", "--call-graph", "fp", "--folded", path], timeout=60)
            check(p.returncode == 0, p.stderr[-3000:])
            with open(path) as f:
                lines = f.read().splitlines()
            check(any(l.startswith("pbusy0;") and "procs_spin" in l for l in lines), lines[:20])
    finally:
        shutil.rmtree(d)


def go_pprof(args, d):
    env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"), PPROF_TMPDIR=d)
    return subprocess.run(["go", "tool", "pprof"] + args, capture_output=True, text=True, timeout=120, env=env)


def test_all_listen_pprof_has_pid_labels():
    """fnprof -a --listen: /debug/pprof/profile?seconds=2 has samples labelled pid and comm of both
    busy children, read with go tool pprof -raw (the samples with their labels) and -tags."""
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    d = tempfile.mkdtemp()
    try:
        with Procs(2, 0, 0) as procs, Fnprof(["-a", "--call-graph", "fp"]) as fp:
            busy = procs.of_kind("busy")
            status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=2", timeout=60)
            check(status == 200, f"profile answered {status}: {body[:200]}")
            path = os.path.join(d, "all.pb.gz")
            with open(path, "wb") as f:
                f.write(body)
            raw = go_pprof(["-raw", path], d)
            check(raw.returncode == 0, raw.stderr)
            pids = {int(m) for m in re.findall(r"pid:\[(\d+)\]", raw.stdout)}
            for pid in busy:
                check(pid in pids, f"no sample labelled pid {pid}: {sorted(pids)[:30]}")
            check(re.search(r"comm:\[pbusy0\]", raw.stdout), raw.stdout[:2000])
            tags = go_pprof(["-tags", path], d)
            check(tags.returncode == 0 and "pbusy1" in tags.stdout, tags.stdout[:2000] + tags.stderr)
            out, err = fp.stop()
            check(fp.proc.returncode == 0, err[-2000:])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def expect_usage_error(args, words):
    p = subprocess.run([FNPROF] + args, capture_output=True, text=True, timeout=30)
    check(p.returncode == 2, f"{args}: exit {p.returncode}: {p.stderr}")
    check(all(w in p.stderr for w in words), f"{args}: {p.stderr}")


def test_all_refuses_what_it_cannot_mean():
    """-a with a target, -f, another profile, --svg or --by: a usage error that says why."""
    expect_usage_error(["-a", "-p", str(os.getpid())], ["-a", "no -p"])
    expect_usage_error(["-a", "--", "true"], ["-a", "command"])
    expect_usage_error(["-a", "-f", "libc:malloc"], ["-a", "leave -a out"])
    expect_usage_error(["-a", "--profile", "heap"], ["-a", "heap", "every malloc"])
    expect_usage_error(["-a", "--svg", "/tmp/never.svg"], ["--svg", "-a"])
    expect_usage_error(["-a", "--listen", "127.0.0.1:0", "--by", "pid"], ["-a", "--by"])


def test_all_not_root():
    """Without root: the same error as every other mode, exit 1."""
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        FNPROF, "-a", "-d", "1"], capture_output=True, text=True, timeout=30)
    check(p.returncode == 1, f"exit {p.returncode}: {p.stderr}")
    check("CAP_BPF" in p.stderr and "sudo" in p.stderr, p.stderr)


def test_all_under_asan_with_exiting_processes():
    """fnprof-asan -a with interval reports while processes exit (their symbolizers dropped, their
    stacks kept) and --folded/--pprof written at the end: no memory error, no leak, both call graphs."""
    from test_asan import ASAN
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    d = tempfile.mkdtemp()
    try:
        for cg in ("fp", "dwarf"):
            folded, pprof = os.path.join(d, f"{cg}.folded"), os.path.join(d, f"{cg}.pb.gz")
            err = open(os.path.join(d, f"{cg}.err"), "w+")
            p = subprocess.Popen([ASAN, "-a", "-i", "0.5", "--call-graph", cg, "--folded", folded,
                                  "--pprof", pprof], stderr=err, env=env)
            try:
                # Sampling already (its first report), then the children: they live 1.5 s of the run,
                # and the reports after they exited still have their stacks.
                check(wait_for(lambda: "sampling: all processes" in open(err.name).read(), timeout=60),
                      open(err.name).read()[-2000:])
                with Procs(1, 4, 1, seconds=1.5) as procs:
                    procs.proc.wait(timeout=30)
                time.sleep(1.2)
            finally:
                p.send_signal(signal.SIGINT)
                p.wait(timeout=60)
            err.seek(0)
            text = err.read()
            for word in ("AddressSanitizer", "LeakSanitizer", "runtime error"):
                check(word not in text, f"{word} in fnprof-asan -a:\n{text[-4000:]}")
            check(p.returncode == 0, text[-3000:])
            with open(folded) as f:
                stacks = f.read()
            check(re.search(r"^pbusy0;.*procs_spin \d+$", stacks, re.M), f"{cg}: {stacks[:2000]}")
            check(re.search(r"processes: \d+ seen, [1-9]\d* exited", text), text[-2000:])
    finally:
        shutil.rmtree(d)


def test_all_names_functions_of_processes_gone_before_the_report():
    """A process sampled, then gone before the only report: its name is the one it had, and its
    functions are named from its files (read when the report needs them: the same file, by device
    and inode, as it was mapped)."""
    with Fnprof(["-a", "--call-graph", "fp"]) as fp:
        with Procs(1, 0, 0, seconds=1.5) as procs:
            pid = procs.of_kind("busy")[0]
            procs.proc.wait(timeout=30)
        check(not os.path.exists(f"/proc/{pid}"), f"{pid} still there")
        time.sleep(0.5)
        out, err = fp.stop()
        check(fp.proc.returncode == 0, err[-3000:])
        check(re.search(rf"^\s*{pid} pbusy0\s+procs_spin\s", err, re.M), err[-3000:])


def profile_all(kind, proc, args=()):
    """fnprof -a --profile KIND -d 2 --json --pprof FILE while proc runs: (report, pprof path, dir)."""
    d = tempfile.mkdtemp()
    path = os.path.join(d, f"{kind}.pb.gz")
    t0 = time.monotonic()
    p = run_fnprof(["-a", "--profile", kind, "-d", "2", "--json", "--pprof", path] + list(args), timeout=90)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
    reps = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    check([r["mode"] for r in reps] == [kind], f"reports {[r['mode'] for r in reps]}: {p.stderr[-1000:]}")
    check(reps[0]["pid"] == 0 and reps[0]["all_processes"], f"report of pid {reps[0]['pid']}")
    reps[0]["wall_s"] = time.monotonic() - t0   # counting starts at the attach, before the run's clock
    return reps[0], path, d


def rows_of(rep, name, pid):
    return [f for f in rep["functions"] if f["name"] == name and f.get("pid") == pid]


def test_all_offcpu_finds_a_sleeping_thread():
    """-a --profile offcpu (before: "-a takes the cpu profile only"): work sleeps 1 ms at a time in
    sleep_us; its row carries its pid and comm, its blocked time is most of the run (a thread that
    sleeps ~95% of the time; at most fnprof's life), and the pprof samples are labelled pid and comm."""
    w = subprocess.Popen([target("work"), "sleep", "1000", "100000"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    d = None
    try:
        time.sleep(0.2)
        rep, path, d = profile_all("offcpu", w)
        rows = rows_of(rep, "sleep_us", w.pid)
        check(len(rows) == 1 and rows[0]["comm"] == "work", f"sleep_us of pid {w.pid}: {rows}")
        delay = rows[0]["total"]["delay"] / 1e9
        check(0.5 * rep["interval_s"] < delay < rep["wall_s"],
              f"sleep_us off the CPU {delay:.2f} s of {rep['interval_s']:.2f} s (fnprof ran {rep['wall_s']:.2f} s)")
        if shutil.which("go"):
            raw = go_pprof(["-raw", path], d)
            check(raw.returncode == 0, raw.stderr)
            check(f"pid:[{w.pid}]" in raw.stdout and "comm:[work]" in raw.stdout, raw.stdout[:2000])
    finally:
        w.kill()
        w.wait()
        if d:
            shutil.rmtree(d, ignore_errors=True)


def test_all_mutex_finds_the_contended_lock():
    """-a --profile mutex: the mutex target's 4 threads contend in take_lock; its rows carry its pid."""
    m = subprocess.Popen([target("mutex"), "20"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    d = None
    try:
        check("ready" in m.stdout.readline(), "mutex did not start")
        rep, path, d = profile_all("mutex", m, ["--call-graph", "fp"])
        rows = rows_of(rep, "take_lock", m.pid)
        check(len(rows) == 1 and rows[0]["comm"] == "mutex", f"take_lock of pid {m.pid}: {rows}")
        check(rows[0]["total"]["wait_delay"] > 0, f"take_lock waited: {rows[0]}")
    finally:
        m.kill()
        m.wait()
        if d:
            shutil.rmtree(d, ignore_errors=True)
