"""--listen: a real Prometheus server scrapes fnprof; go tool pprof fetches a profile over HTTP;
bad requests get their HTTP error while tracing goes on.

Every server here listens on 127.0.0.1, on a free port, and is stopped by its test.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from harness import FNPROF, ROOT, Skip, check, final_report, func, run_fnprof, target, truth, wait_for, within

CALLS = 1500
SLEEP_US = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, headers=None, timeout=10):
    """(status, body bytes) of a GET; HTTP errors are answers too."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class Fnprof:
    """fnprof with --listen on a free port, started in the background; its address read from its stderr."""

    def __init__(self, args, stdin=None, exe=FNPROF, env=None):
        self.proc = subprocess.Popen([exe, "--listen", "127.0.0.1:0"] + args, stdin=stdin, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err_lines = []
        self.addr = None
        while self.addr is None:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError("fnprof exited before serving:\n" + "".join(self.err_lines))
            self.err_lines.append(line)
            m = re.search(r"serving http://(127\.0\.0\.1:\d+)/metrics", line)
            if m:
                self.addr = m.group(1)

        # The rest of stderr is collected in the background: a test never blocks on it.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.err_lines.append(line)

    def err(self):
        return "".join(self.err_lines)

    def wait_err(self, word, timeout=20):
        check(wait_for(lambda: word in self.err(), timeout=timeout), f"no '{word}' from fnprof:\n{self.err()}")
        return self.err()

    def metrics(self, headers=None):
        status, body = http_get(f"http://{self.addr}/metrics", headers)
        check(status == 200, f"/metrics answered {status}")
        return body.decode()

    def stop(self, sig=signal.SIGINT):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=10)
        return self.proc.stdout.read(), self.err()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Prometheus:
    """A real Prometheus server scraping fnprof at addr every second, with its storage in a temp dir."""

    def __init__(self, addr):
        exe = shutil.which("prometheus")
        if not exe:
            raise Skip("prometheus is not installed (Debian package prometheus, in make test-deps)")
        self.dir = tempfile.mkdtemp()
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: fnprof\n"
                    f"    static_configs:\n      - targets: ['{addr}']\n")
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([exe, f"--config.file={cfg}", f"--storage.tsdb.path={self.dir}/data",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(self.ready, timeout=30, step=0.2):
            raise AssertionError("prometheus did not become ready:\n" + self.logtext())

    def ready(self):
        try:
            return http_get(f"http://127.0.0.1:{self.port}/-/ready", timeout=1)[0] == 200
        except OSError:
            return False

    def logtext(self):
        self.log.flush()
        with open(os.path.join(self.dir, "log")) as f:
            return f.read()[-3000:]

    def query(self, promql):
        """The value of an instant query with one result, or None."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        status, body = http_get(url)
        check(status == 200, f"query {promql} answered {status}: {body[:300]}")
        res = json.loads(body)["data"]["result"]
        return float(res[0]["value"][1]) if res else None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def read_until(stream, word, timeout=60):
    end = time.time() + timeout
    seen = []
    while time.time() < end:
        line = stream.readline()
        if not line:
            break
        seen.append(line)
        if word in line:
            return seen
    raise AssertionError(f"no '{word}' line: {seen}")


def check_prometheus_view(prom, calls, truth_p50_ns):
    """Prometheus has fnprof's exact call count, and a median within 10% of the target's own."""
    q_calls = 'sum(fnprof_calls_total{function="fleet_call"})'
    wait_for(lambda: prom.query(q_calls) == calls, timeout=20, step=0.5)
    got = prom.query(q_calls)
    check(got == calls, f"Prometheus has {got} calls, the target made {calls}:\n{prom.logtext()}")
    check(prom.query('up{job="fnprof"}') == 1, "the scrape of fnprof failed")
    p50 = prom.query('histogram_quantile(0.5, sum by (le) (fnprof_latency_seconds_bucket{function="fleet_call"}))')
    check(p50 is not None and within(p50 * 1e9, truth_p50_ns, rel=0.10),
          f"p50 {p50} s in Prometheus, the target measured {truth_p50_ns / 1e9} s")
    avg = prom.query('sum(fnprof_latency_seconds_sum{function="fleet_call"}) / '
                     'sum(fnprof_latency_seconds_count{function="fleet_call"})')
    check(avg is not None and avg > 0, f"no mean latency: {avg}")


def target_truth(fp):
    """The target's truth line, from fnprof's stderr (a launched command shares it)."""
    return truth(fp.wait_err("truth fleet_call", timeout=60), "fleet_call")


def test_prometheus_scrapes_launch_mode():
    """Launch mode: every call from the first instruction; Prometheus' sum and median match the target's."""
    with Fnprof(["-f", "fleet_call", "--", target("fleet"), str(CALLS), str(SLEEP_US), "linger"]) as fp, \
            Prometheus(fp.addr) as prom:
        t = target_truth(fp)
        check(t["calls"] == CALLS, f"target truth {t}")
        # The target lingers: its last calls reach Prometheus before it exits.
        check_prometheus_view(prom, CALLS, t["p50_ns"])
        out, err = fp.stop(signal.SIGTERM)  # goes to the command, whose exit ends fnprof
        check(fp.proc.returncode == 0, f"fnprof exit {fp.proc.returncode}:\n{err[-2000:]}")


def test_prometheus_scrapes_pid_mode():
    """-p: a process gated until its probes are in; the same exact count and median in Prometheus."""
    proc = subprocess.Popen([target("fleet"), str(CALLS), str(SLEEP_US), "linger", "gate"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check("ready" in proc.stdout.readline(), "fleet did not start")
        with Fnprof(["-p", str(proc.pid), "-f", "fleet_call"]) as fp, Prometheus(fp.addr) as prom:
            proc.stdin.write("go\n")
            proc.stdin.flush()
            read_until(proc.stdout, "done")
            t = truth(read_until(proc.stderr, "truth fleet_call")[-1], "fleet_call")
            check_prometheus_view(prom, CALLS, t["p50_ns"])
            # Counters in the text format too, for scrapers that do not ask for OpenMetrics.
            text = fp.metrics()
            check("# TYPE fnprof_calls_total counter" in text, text[:500])
            om = fp.metrics({"Accept": "application/openmetrics-text; version=1.0.0"})
            check("# TYPE fnprof_calls counter" in om and om.endswith("# EOF\n"), om[-500:])
            out, err = fp.stop()
            check(fp.proc.returncode == 0, f"fnprof exit {fp.proc.returncode}:\n{err[-2000:]}")
    finally:
        proc.kill()
        proc.wait()


def burn_a_hottest(top):
    """go tool pprof -top of the burn target: burn_a first, or work() inlined into it (burn is -O2 -g)."""
    rows = [l for l in top.splitlines() if re.match(r"\s*[\d.]+m?s\s", l)]
    cum = {m.group(2): float(m.group(1)) for m in re.finditer(r"([\d.]+)%\s+(burn_[ab])$", top, re.M)}
    return bool(rows) and (rows[0].split()[-1] == "burn_a" or
                           (rows[0].split()[-2:] == ["work", "(inline)"] and cum.get("burn_a", 0) > cum.get("burn_b", 0)))


def test_go_tool_pprof_fetches_profile_over_http():
    """go tool pprof http://ADDR/debug/pprof/profile?seconds=2 works, as against a Go service."""
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    burn = subprocess.Popen([target("burn"), "30"], stdout=subprocess.DEVNULL)
    d = tempfile.mkdtemp()
    try:
        with Fnprof(["-p", str(burn.pid), "-f", "burn_both"]) as fp:
            env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"), PPROF_TMPDIR=d)
            top = subprocess.run(["go", "tool", "pprof", "-top", f"http://{fp.addr}/debug/pprof/profile?seconds=2"],
                                 capture_output=True, text=True, timeout=120, env=env)
            check(top.returncode == 0, top.stderr)
            check(burn_a_hottest(top.stdout), f"hot function not first:\n{top.stdout}")
            check("Type: cpu" in top.stdout and "Duration: 2" in top.stdout, top.stdout)
            # Out of range: an HTTP error, not a profile.
            check(http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=0")[0] == 400, "seconds=0 accepted")
            check(http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=x")[0] == 400, "seconds=x accepted")
            out, err = fp.stop()
            check(fp.proc.returncode == 0, err[-2000:])
            check(re.search(r"burn_both\s+\d+", err), f"no trace report:\n{err[-2000:]}")
    finally:
        burn.kill()
        burn.wait()
        shutil.rmtree(d, ignore_errors=True)


def raw_request(addr, data, read=True, timeout=15):
    """Sends data on a new connection; the status of the answer (None if closed without one)."""
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may answer and close before it has read everything
        if not read:
            return None
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    m = re.match(rb"HTTP/1\.1 (\d+)", buf)
    return int(m.group(1)) if m else None


def test_bad_requests_get_errors_and_tracing_goes_on():
    """Huge, slow, malformed and wrong-path requests get their HTTP error; every call is still counted."""
    proc = subprocess.Popen([target("fleet"), str(CALLS), str(SLEEP_US), "linger", "gate"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        check("ready" in proc.stdout.readline(), "fleet did not start")
        with Fnprof(["-p", str(proc.pid), "-f", "fleet_call", "--json"]) as fp:
            proc.stdin.write("go\n")
            proc.stdin.flush()
            a = fp.addr
            check(raw_request(a, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n") == 404, "wrong path")
            check(raw_request(a, b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc") == 405, "POST")
            check(raw_request(a, b"HELLO\r\n\r\n") == 400, "malformed")
            check(raw_request(a, b"GET /" + b"a" * 2000 + b" HTTP/1.1\r\n\r\n") == 414, "long target")
            check(raw_request(a, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (1 << 20) + b"\r\n\r\n") == 431, "huge")
            # A slow client (half a request, then nothing) gets 408 after the read deadline, 5 s.
            t0 = time.time()
            check(raw_request(a, b"GET /metrics HTTP/1.1\r\n") == 408, "slow client")
            check(4 < time.time() - t0 < 9, f"408 after {time.time() - t0:.1f} s")
            # 20 idle connections: 16 are held to their deadline, the rest refused at once with 503.
            idle = [socket.create_connection(a.split(":")[0:1] + [int(a.split(":")[1])]) for _ in range(20)]
            try:
                refused = 0
                for s in idle[16:]:
                    s.settimeout(5)
                    refused += s.recv(100).startswith(b"HTTP/1.1 503")
                check(refused == 4, f"{refused} of 4 connections beyond 16 refused")
            finally:
                for s in idle:
                    s.close()
            # The server is back once they are gone, and the figures are whole.
            check(wait_for(lambda: raw_request(a, b"GET /metrics HTTP/1.1\r\n\r\n") == 200, timeout=10),
                  "/metrics not served after the abuse")
            read_until(proc.stdout, "done")
            t = truth(read_until(proc.stderr, "truth fleet_call")[-1], "fleet_call")
            text = fp.metrics()
            m = re.search(r'fnprof_http_requests_total\{outcome="timeout"\} (\d+)', text)
            check(m and int(m.group(1)) >= 1, "the slow client is not counted")
            out, err = fp.stop()
            rep = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
            calls = [f for f in rep["functions"] if f["name"] == "fleet_call"][0]["calls"]
            check(calls == t["calls"], f"fnprof counted {calls} calls, the target made {t['calls']}")
    finally:
        proc.kill()
        proc.wait()


def run_fleet(path, n, us=SLEEP_US):
    """Runs the fleet target at path to its end; its call count."""
    p = subprocess.run([path, str(n), str(us)], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, p.stderr)
    return truth(p.stderr, "fleet_call")["calls"]


def test_system_wide_counts_processes_started_later_and_follows_upgrade():
    """-f /path:FUNC alone: processes started after fnprof are counted, also after the file is replaced."""
    d = tempfile.mkdtemp()
    svc = os.path.join(d, "svc")
    shutil.copy(target("fleet"), svc)
    try:
        with Fnprof(["-f", f"{svc}:fleet_call", "--json"]) as fp, Prometheus(fp.addr) as prom:
            made = run_fleet(svc, 200) + run_fleet(svc, 100)
            # A process of the old file, still running after the upgrade, calls only then.
            old = subprocess.Popen([svc, "150", str(SLEEP_US), "gate"], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            check("ready" in old.stdout.readline(), "the old process did not start")
            # An upgrade as a package manager does it: a new file renamed over the old one.
            shutil.copy(target("fleet2"), svc + ".new")
            os.rename(svc + ".new", svc)
            fp.wait_err("was replaced", timeout=10)
            made += run_fleet(svc, 300)
            out, err = old.communicate("go\n", timeout=60)
            made += truth(err, "fleet_call")["calls"]
            # With uprobe sessions a process's first calls, made while fnprof chooses its exit, are
            # counted apart (calls_before_exit_chosen); only these processes call fleet_call.
            q = (f'sum(fnprof_calls_total{{function="fleet_call",object="{svc}"}}) + '
                 'sum(fnprof_dropped_total{reason="calls_before_exit_chosen"})')
            wait_for(lambda: prom.query(q) == made, timeout=20, step=0.5)
            check(prom.query(q) == made, f"Prometheus has {prom.query(q)} calls, the processes made {made}")
            out, err = fp.stop()
            rep = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
            counted = rep["functions"][0]["calls"] + rep["dropped"]["calls_before_exit_chosen"]
            check(rep.get("system_wide") is True and counted == made,
                  f"report: {rep['functions'][0]['calls']} calls (and {rep['dropped']}) of {made}")
            check(rep["dropped"]["orphan_returns"] == 0, rep["dropped"])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_system_wide_usage_errors():
    """Without -p or a command every -f must name its object; sampling and -e are refused."""
    for args in (["-f", "fleet_call"], ["-f", "/bin/true:main", "--sample"], ["-f", "libc:malloc", "-e", "page-faults"],
                 ["-f", "libc:malloc", "--follow-forks"]):
        p = subprocess.run([FNPROF] + args, capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "fnprof:" in p.stderr, f"{args}: exit {p.returncode}, {p.stderr}")


def series(text, metric):
    """{labels string: value} of every sample of metric in a /metrics text."""
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^" + metric + r"\{([^}]*)\} (\S+)$", text, re.M)}


def test_by_pid_and_max_series_system_wide():
    """--by pid: a series per process, kept after it exits; beyond --max-series summed into "other"."""
    d = tempfile.mkdtemp()
    svc = os.path.join(d, "svc")
    shutil.copy(target("fleet"), svc)
    try:
        with Fnprof(["-f", f"{svc}:fleet_call", "--by", "pid", "--max-series", "2"]) as fp:
            for n in (100, 150, 200):  # one after the other: the third is beyond --max-series
                run_fleet(svc, n, 200)
            # With uprobe sessions a process's first calls, made while fnprof chooses its exit, are
            # counted apart, in all (calls_before_exit_chosen), not in its series.
            def unchosen():
                return sum(v for k, v in series(fp.metrics(), "fnprof_dropped_total").items()
                           if "calls_before_exit_chosen" in k)

            check(wait_for(lambda: sum(series(fp.metrics(), "fnprof_calls_total").values()) + unchosen() == 450,
                           timeout=5), f"calls: {series(fp.metrics(), 'fnprof_calls_total')}, {unchosen()} apart")
            calls = series(fp.metrics(), "fnprof_calls_total")
            by_pid = {re.search(r'pid="([^"]*)"', k).group(1): v for k, v in calls.items()}
            # A process all of whose calls came before its exit was chosen has no series.
            pids = [k for k in by_pid if k != "other"]
            check(len(pids) <= 2 and all(k.isdigit() for k in pids), f"series by pid: {by_pid}")
            check(sum(by_pid.values()) + unchosen() == 450, f"series by pid: {by_pid}, {unchosen()} apart")
            folded = re.search(r"^fnprof_folded_calls_total (\d+)", fp.metrics(), re.M)
            check(folded and int(folded.group(1)) == by_pid.get("other", 0), f"folded: {folded}, {by_pid}")
            fp.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_by_comm_and_cgroup_labels():
    """--by comm labels with the process name, --by cgroup with its cgroup v2 path."""
    for by, want in (("comm", "fleet"), ("cgroup", None)):
        with Fnprof(["--by", by, "-f", "fleet_call", "--", target("fleet"), "50", "200", "linger"]) as fp:
            fp.wait_err("truth fleet_call")
            check(wait_for(lambda: series(fp.metrics(), "fnprof_calls_total"), timeout=5), "no series")
            labels = list(series(fp.metrics(), "fnprof_calls_total"))
            m = re.search(by + r'="([^"]*)"', labels[0])
            if want is None:
                with open(f"/proc/{fp.proc.pid}/cgroup") as f:
                    want = [l.strip()[3:] for l in f if l.startswith("0::")][0]
            check(len(labels) == 1 and m and m.group(1) == want, f"--by {by}: {labels}, want {want}")
            fp.stop(signal.SIGTERM)


def test_asan_export():
    """fnprof-asan serves both formats, a profile and errors, and exits without a leak or a sanitizer report."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    with Fnprof(["--by", "pid", "-f", "fleet_call", "--", target("fleet"), "300", "200", "linger"],
                exe=os.path.join(ROOT, "fnprof-asan"), env=env) as fp:
        fp.wait_err("truth fleet_call")
        check(wait_for(lambda: "fleet_call" in fp.metrics(), timeout=5), "no series")
        fp.metrics({"Accept": "application/openmetrics-text"})
        status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=1", timeout=30)
        check(status == 200 and body[:2] == b"\x1f\x8b", f"profile: {status}")
        raw_request(fp.addr, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n")
        raw_request(fp.addr, b"BAD\r\n\r\n")
        # One connection left open when fnprof stops, and one waiting for a profile.
        held = socket.create_connection(("127.0.0.1", int(fp.addr.split(":")[1])))
        slow = socket.create_connection(("127.0.0.1", int(fp.addr.split(":")[1])))
        slow.sendall(b"GET /debug/pprof/profile?seconds=30 HTTP/1.1\r\n\r\n")
        time.sleep(0.5)
        out, err = fp.stop(signal.SIGTERM)
        held.close()
        slow.close()
        for word in ("AddressSanitizer", "LeakSanitizer", "runtime error"):
            check(word not in err, f"{word}:\n{err[-4000:]}")
        check(fp.proc.returncode == 0, f"exit {fp.proc.returncode}:\n{err[-2000:]}")


def cgroup2_root():
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return mnt
    return None


def test_system_wide_labels_of_processes_gone_before_a_scrape():
    """System-wide --by comm / cgroup: a process that exits at once still gets its name and container."""
    root = cgroup2_root()
    if not root:
        raise Skip("no cgroup v2 hierarchy mounted")
    d = tempfile.mkdtemp()
    svc = os.path.join(d, "svc")
    shutil.copy(target("fleet"), svc)
    cg = os.path.join(root, f"fnprof-test-{os.getpid()}")
    try:
        os.mkdir(cg)
    except OSError as e:
        shutil.rmtree(d, ignore_errors=True)
        raise Skip(f"cannot create a cgroup in {root}: {e}")
    try:
        for by, want in (("comm", "svc"), ("cgroup", "/" + os.path.basename(cg))):
            with Fnprof(["-f", f"{svc}:fleet_call", "--by", by]) as fp:
                p = subprocess.run(["sh", "-c", f"echo $$ > {cg}/cgroup.procs && exec {svc} 30 100"],
                                   capture_output=True, text=True, timeout=60)
                check(p.returncode == 0, p.stderr)
                check(wait_for(lambda: series(fp.metrics(), "fnprof_calls_total"), timeout=5), "no series")
                labels = list(series(fp.metrics(), "fnprof_calls_total"))
                check(labels == [f'function="fleet_call",object="{svc}",{by}="{want}"'], f"--by {by}: {labels}")
                fp.stop()
    finally:
        os.rmdir(cg)
        shutil.rmtree(d, ignore_errors=True)


def test_listen_errors_and_binds_only_where_told():
    """Bad --listen values are usage errors, a port in use an error; the server binds the address given only."""
    for args in (["--listen", "localhost:9464"], ["--listen", "127.0.0.1"], ["--listen", "127.0.0.1:70000"],
                 ["--by", "pid"], ["--max-series", "5"], ["--by", "host", "--listen", "127.0.0.1:0"],
                 ["--listen", "127.0.0.1:0", "--max-overhead", "5"]):
        p = subprocess.run([FNPROF, "-f", "fleet_call"] + args + ["--", target("fleet"), "1", "1"],
                           capture_output=True, text=True, timeout=30)
        check(p.returncode == 2 and "fnprof:" in p.stderr, f"{args}: exit {p.returncode}, {p.stderr}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        p = subprocess.run([FNPROF, "--listen", f"127.0.0.1:{port}", "-f", "fleet_call", "--", target("fleet"),
                            "1", "1"], capture_output=True, text=True, timeout=30)
        check(p.returncode == 1 and "cannot listen" in p.stderr, f"port in use: exit {p.returncode}, {p.stderr}")
    with Fnprof(["-f", "fleet_call", "--", target("fleet"), "1", "1", "linger"]) as fp:
        port = int(fp.addr.split(":")[1])
        try:
            socket.create_connection(("127.0.0.2", port), timeout=2).close()
            reached = True
        except OSError:
            reached = False
        check(not reached, f"fnprof bound to 127.0.0.1 answers on 127.0.0.2:{port}")
        fp.stop(signal.SIGTERM)


def test_follow_forks_by_pid():
    """--follow-forks with --by pid: the target and its fork child each have their series; the sums match."""
    with Fnprof(["--by", "pid", "--follow-forks", "--json", "-f", "spin_us", "--", target("work"), "fork", "3000"]) as fp:
        last = {}

        def scrape():
            try:
                last.update(series(fp.metrics(), "fnprof_calls_total"))
            except OSError:
                pass  # fnprof exits with the target: the last scrape before stands
            return fp.proc.poll() is not None

        wait_for(scrape, timeout=30, step=0.2)
        out, err = fp.stop()
        rep = [json.loads(l) for l in out.splitlines() if l.startswith("{")][-1]
        pids = {str(rep["pid"]): rep["functions"][0]["calls"]}
        for c in rep.get("children", []):
            pids[str(c["pid"])] = c["functions"][0]["calls"]
        got = {re.search(r'pid="(\d+)"', k).group(1): v for k, v in last.items()}
        check(set(got) == set(pids) and len(got) == 2, f"series {got}, report {pids}")
        # A scrape lags the end by up to 0.5 s: never more than the report, and most of it.
        for pid, calls in pids.items():
            check(calls * 0.5 <= got[pid] <= calls, f"pid {pid}: {got[pid]} scraped, {calls} reported")


def test_system_wide_profile_of_the_processes_that_map_the_object():
    """System-wide, /debug/pprof/profile samples every process mapping a traced file, or the one pid= names."""
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): cannot check with go tool pprof")
    d = tempfile.mkdtemp()
    prog = os.path.join(d, "burner")
    shutil.copy(target("burn"), prog)
    burn = subprocess.Popen([prog, "30"], stdout=subprocess.DEVNULL)
    try:
        with Fnprof(["-f", f"{prog}:burn_both"]) as fp:
            url = f"http://{fp.addr}/debug/pprof/profile?seconds=2"
            check(http_get(f"{url}&pid={os.getpid()}")[0] == 404, "a process that does not map the object")
            env = dict(os.environ, HOME=d, GOCACHE=os.path.join(d, "cache"), PPROF_TMPDIR=d)
            for u in (url, f"{url}&pid={burn.pid}"):
                top = subprocess.run(["go", "tool", "pprof", "-top", u], capture_output=True, text=True,
                                     timeout=120, env=env)
                check(top.returncode == 0, top.stderr)
                check(burn_a_hottest(top.stdout), f"{u}: hot function not first:\n{top.stdout}")
            fp.stop()
        burn.kill()
        burn.wait()
        with Fnprof(["-f", f"{prog}:burn_both"]) as fp:
            check(http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=1")[0] == 404, "no process maps it")
            fp.stop()
    finally:
        burn.kill()
        burn.wait()
        shutil.rmtree(d, ignore_errors=True)


def kernel_has_sessions():
    p = run_fnprof(["--version", "-v"])
    return "uprobe sessions: yes" in p.stdout + p.stderr


def run_lib_callers(lib, go_args, c_calls, env=None):
    """fnprof system-wide on lib's lib_spin while a Go program (gotarget-lib go_args) and then a C one
    (uselib c_calls) call it: (final report, Go run, its pid, C run's stderr, its pid)."""
    with Fnprof(["-f", f"{lib}:lib_spin", "--json"], env=env) as fp:
        g = subprocess.Popen([target("gotarget-lib")] + go_args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        g_out, g_err = g.communicate(timeout=120)
        c = subprocess.Popen([target("uselib"), str(c_calls)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        c_err = c.communicate(timeout=120)[1]
        out, err = fp.stop()
    check(fp.proc.returncode == 0, f"fnprof exit {fp.proc.returncode}:\n{err[-3000:]}")
    return final_report(out), (g.returncode, g_out, g_err), g.pid, c_err, c.pid


def test_system_wide_exit_chosen_per_process():
    """System-wide, a C process takes the uprobe session's return (no single step) while a Go process
    mapping the same library keeps ret probes, unharmed (its output as untraced, no crash); every call is
    counted, or shown as made before its process's exit was chosen; the report names which took which."""
    if not os.path.exists(os.path.join(os.path.dirname(target("uselib")), "gotarget-lib")):
        raise Skip("gotarget-lib not built (no Go toolchain)")
    if not kernel_has_sessions():
        raise Skip("the kernel has no uprobe sessions (Linux 6.13)")
    lib, go_args = target("libtarget.so"), ["4", "1500"]
    untraced = subprocess.run([target("gotarget-lib")] + go_args, capture_output=True, text=True, timeout=120)
    rep, (g_rc, g_out, g_err), g_pid, c_err, c_pid = run_lib_callers(lib, go_args, 2000)
    check(g_rc == 0 and g_out == untraced.stdout, f"the Go program was harmed: exit {g_rc}, {g_out!r}\n{g_err}")
    made = truth(g_err, "lib_spin")["calls"] + truth(c_err, "lib_spin")["calls"]
    f = func(rep, "lib_spin")
    unchosen = rep["dropped"]["calls_before_exit_chosen"]
    check(f["exit_per_process"] is True, f)
    check(f["calls"] + unchosen == made and f["entered"] == made,
          f"{f['calls']} calls timed, {unchosen} before a choice, {f['entered']} entered, {made} made")
    # The Go process's calls, and only those, were closed by its ret probes (priced with their step).
    go_made = truth(g_err, "lib_spin")["calls"]
    check(go_made - unchosen <= f["ret_exit_calls"] <= go_made, f"{f['ret_exit_calls']} calls closed at ret probes, "
          f"the Go process made {go_made} ({unchosen} before a choice, of both processes)")
    check(rep["dropped"]["orphan_returns"] == 0, rep["dropped"])
    exits = {e["pid"]: e for e in rep.get("exits_per_process", [])}
    check(exits.get(c_pid, {}).get("exit") == "uretprobe", f"the C process {c_pid}: {exits.get(c_pid)}")
    check(exits.get(g_pid, {}).get("exit") == "ret" and exits[g_pid].get("why") == "Go",
          f"the Go process {g_pid}: {exits.get(g_pid)}")


def test_system_wide_without_sessions_keeps_ret_probes():
    """Where the kernel has no uprobe sessions (as FNPROF_NO_UPROBE_SESSION=1 says), system-wide exits are
    ret probes for every process, as before: every call counted, none left before a choice, no list."""
    if not os.path.exists(os.path.join(os.path.dirname(target("uselib")), "gotarget-lib")):
        raise Skip("gotarget-lib not built (no Go toolchain)")
    env = dict(os.environ, FNPROF_NO_UPROBE_SESSION="1")
    rep, (g_rc, g_out, g_err), g_pid, c_err, c_pid = run_lib_callers(target("libtarget.so"), ["2", "500"], 500,
                                                                     env=env)
    check(g_rc == 0, f"the Go program failed: {g_err}")
    made = truth(g_err, "lib_spin")["calls"] + truth(c_err, "lib_spin")["calls"]
    f = func(rep, "lib_spin")
    check(f["exit"] == "ret" and f["exit_per_process"] is False, f)
    check(f["calls"] == made and rep["dropped"]["calls_before_exit_chosen"] == 0, (f["calls"], made, rep["dropped"]))
    check("exits_per_process" not in rep, rep.get("exits_per_process"))


def wait_exit_chosen(fp, pid, timeout=30):
    """Reads fnprof's interval reports (--json -i) until one lists process pid's exit: that entry."""
    end = time.time() + timeout
    while time.time() < end:
        line = fp.proc.stdout.readline()
        check(line, f"fnprof ended before choosing the exit of {pid}:\n{fp.err()[-2000:]}")
        if line.startswith("{"):
            for e in json.loads(line).get("exits_per_process", []):
                if e["pid"] == pid:
                    return e
    raise AssertionError(f"no exit chosen for process {pid} in {timeout} s")


def test_system_wide_longjmp_out_of_deep_recursion_keeps_uretprobes():
    """A process that longjmps takes the session's return (no step): fnprof keeps a thread's pending
    returns below the kernel's 64, which it checks before it drops those a longjmp abandoned, so a
    longjmp out of a recursion 100 deep leaves every later call's return seen and timed."""
    if not kernel_has_sessions():
        raise Skip("the kernel has no uprobe sessions (Linux 6.13)")
    exe, calls = target("deepjump"), 500
    with Fnprof(["-f", f"{exe}:dive", "-f", f"{exe}:after", "--json", "-i", "0.2"]) as fp:
        p = subprocess.Popen([exe, "100", "3", str(calls)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            check(p.stdout.readline().strip() == "ready", "deepjump did not start")
            chosen = wait_exit_chosen(fp, p.pid)
            p_out, p_err = p.communicate("go\n", timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
        out, err = fp.stop()
    check(chosen["exit"] == "uretprobe", f"deepjump (longjmp) got {chosen}")
    check(p.returncode == 0 and "deepjump done" in p_out, f"deepjump: exit {p.returncode}\n{p_err}")
    made = truth(p_err, "after")["calls"]
    rep = final_report(out)
    after = func(rep, "after")
    # Its first call asked for the choice and may not be timed; every later one must be.
    check(after["calls"] + rep["dropped"]["calls_before_exit_chosen"] == made and after["calls"] >= calls,
          f"after: {after['calls']} timed of {made}; dropped {rep['dropped']}")
    p50 = after["wall_ns"]["p50"]
    check(within(p50, 20000, rel=0.5), f"after: median {p50} ns for 20 us spins")


def test_system_wide_exec_asks_again():
    """A process that took the uretprobe and then execs a Go program asks again (an exec is told by the
    kernel's self_exec_id): the Go program, in the same process, gets ret probes and is unharmed."""
    if not os.path.exists(os.path.join(os.path.dirname(target("uselib")), "gotarget-lib")):
        raise Skip("gotarget-lib not built (no Go toolchain)")
    if not kernel_has_sessions():
        raise Skip("the kernel has no uprobe sessions (Linux 6.13)")
    with Fnprof(["-f", f"{target('libtarget.so')}:lib_spin", "--json"]) as fp:
        p = subprocess.Popen([target("uselib"), "300", "exec", target("gotarget-lib"), "2", "300"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        p_out, p_err = p.communicate(timeout=120)
        out, err = fp.stop()
    check(p.returncode == 0 and "golib done: 2 goroutines x 300 calls, 0 bad results" in p_out,
          f"exit {p.returncode}: {p_out}\n{p_err}")
    c_made, go_made = (int(n) for n in re.findall(r"truth lib_spin calls=(\d+)", p_err))
    rep = final_report(out)
    f, unchosen = func(rep, "lib_spin"), rep["dropped"]["calls_before_exit_chosen"]
    exits = {e["pid"]: e for e in rep.get("exits_per_process", [])}
    check(exits.get(p.pid, {}).get("exit") == "ret" and exits[p.pid].get("why") == "Go",
          f"process {p.pid} after its exec: {exits.get(p.pid)}")
    check(f["entered"] == c_made + go_made, f"{f['entered']} entered, {c_made} + {go_made} made")
    check(go_made - unchosen <= f["ret_exit_calls"] <= go_made,
          f"{f['ret_exit_calls']} calls closed at ret probes, the Go program made {go_made} ({unchosen} unchosen)")
