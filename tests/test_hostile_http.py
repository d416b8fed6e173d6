"""--listen and the tables against hostile conditions: a process that maps more objects than fnprof may open
files, a query value too long to read, a client that hangs up while its profile is taken, a process name that
is not UTF-8 (every scrape must still parse), and thread and function names that carry terminal escapes.

Every server here listens on 127.0.0.1, on a free port, and is stopped by its test.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness import FNPROF, Skip, check, cpu_seconds, nofile_limited, target, wait_for
from test_fleet import Fnprof, http_get

MAPPINGS = 1500


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_many_mappings_under_nofile_1024_metrics_answer():
    """1500 objects (files) mapped, nofile 1024, DWARF unwinding: /metrics answers at once and fnprof does not spin.

    Before: the unwinder held a descriptor per object until accept4 failed with EMFILE, and the HTTP thread
    spun on the connection it could not accept (93% CPU, /metrics never answered)."""
    d = tempfile.mkdtemp()
    try:
        exe = nofile_limited(1024, d)
        # Distinct files (copies): the unwinder holds one descriptor per file, not per mapping.
        objs = os.path.join(d, "objs")
        os.mkdir(objs)
        for i in range(MAPPINGS):
            shutil.copyfile(os.path.join(os.path.dirname(target("manymaps")), "libtarget.so"),
                            os.path.join(objs, f"{i:05d}"))
        with Fnprof(["--sample", "--call-graph", "dwarf", "--", target("manymaps"), objs, str(MAPPINGS)],
                    exe=exe) as fp:
            line = fp.proc.stdout.readline()
            check(line.strip() == f"ready {MAPPINGS}", f"manymaps: {line!r}\n{fp.err()}")
            # The first samples make the unwinder report the objects; give it the time to take what it takes.
            # On a busy machine the target (and so the first samples) may take a while: up to 30 s.
            wait_for(lambda: "left out" in fp.err() or open_fds(fp.proc.pid) > 900, timeout=30)
            time.sleep(1)
            t0, cpu0 = time.time(), cpu_seconds(fp.proc.pid)
            try:
                status, body = http_get(f"http://{fp.addr}/metrics", timeout=5)
            except OSError as e:
                status, body = f"no answer ({e})", b""
            took = time.time() - t0
            time.sleep(2)
            share = (cpu_seconds(fp.proc.pid) - cpu0) / (time.time() - t0)
            fds = open_fds(fp.proc.pid)
            print(f"# /metrics: {status} in {took:.3f} s; fnprof: {100 * share:.0f}% of a CPU, {fds} fds")
            check(status == 200 and b"fnprof_" in body, f"/metrics: {status} after {took:.1f} s\n{fp.err()[-2000:]}")
            check(took < 3, f"/metrics took {took:.1f} s")
            check(fds < 900, f"fnprof holds {fds} descriptors of 1024")
            check(share < 0.5, f"fnprof used {100 * share:.0f}% of a CPU while serving")
            check(fp.err().count("left out") == 1, f"the cap is not said once:\n{fp.err()[-2000:]}")
            fp.stop(signal.SIGTERM)
            check(fp.proc.returncode == 0, f"fnprof exit {fp.proc.returncode}:\n{fp.err()[-2000:]}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fleet_fnprof():
    return Fnprof(["-f", "fleet_call", "--", target("fleet"), "300", "1000", "linger"])


def test_long_query_values_are_errors_not_defaults():
    """seconds= and pid= values too long to read answer 400 at once; before, they read as absent (30 s profile)."""
    with fleet_fnprof() as fp:
        for q in ("seconds=" + "4" * 40, "seconds=" + "0" * 39 + "1"):
            t0 = time.time()
            try:
                status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?{q}", timeout=10)
            except OSError as e:
                status, body = f"no answer ({e})", b""
            check(status == 400 and time.time() - t0 < 5, f"{q[:20]}...: {status} after {time.time() - t0:.1f} s")
        status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=1", timeout=30)
        check(status == 200 and body[:2] == b"\x1f\x8b", f"a valid profile request: {status}")
        # Each counted as what it was answered: two 400s, one profile served (before: three served).
        outcomes = dict(re.findall(r'fnprof_http_requests_total\{outcome="(\w+)"\} (\d+)', fp.metrics()))
        check(outcomes.get("bad_request") == "2" and outcomes.get("served") == "1", f"outcomes: {outcomes}")
        fp.stop(signal.SIGTERM)
    # System-wide, pid= picks the process: one too long to read is an error, not "every process".
    d = tempfile.mkdtemp()
    try:
        svc = os.path.join(d, "svc")
        shutil.copy(target("fleet"), svc)
        with Fnprof(["-f", f"{svc}:fleet_call"]) as fp:
            status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=1&pid={'1' * 40}", timeout=10)
            check(status == 400, f"pid= of 40 digits: {status} {body[:100]!r}")
            fp.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_client_hanging_up_frees_the_profile_worker():
    """A client that asks for a 30 s profile and hangs up: the next profile is served in seconds, not 503 for 30 s."""
    with fleet_fnprof() as fp:
        host, port = fp.addr.split(":")
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"GET /debug/pprof/profile?seconds=30 HTTP/1.1\r\nHost: x\r\n\r\n")
            time.sleep(0.5)
        t0, statuses = time.time(), []
        while time.time() - t0 < 8:
            status, body = http_get(f"http://{fp.addr}/debug/pprof/profile?seconds=1", timeout=30)
            statuses.append(status)
            if status != 503:
                break
            time.sleep(0.2)
        took = time.time() - t0
        print(f"# after the hang-up: {statuses[-1]} in {took:.1f} s ({len(statuses) - 1} times 503 before)")
        check(statuses[-1] == 200 and body[:2] == b"\x1f\x8b", f"answers after the hang-up: {statuses}")
        m = re.search(r'fnprof_http_requests_total\{outcome="hung_up"\} (\d+)', fp.metrics())
        check(m and int(m.group(1)) == 1, f"hang-ups counted: {m and m.group(0)}")
        fp.stop(signal.SIGTERM)


def test_process_name_not_utf8_scrape_parses():
    """--by comm with a process named w\\xff\\xfe (and its path in the object label): promtool accepts the page."""
    promtool = shutil.which("promtool")
    if not promtool:
        raise Skip("promtool is not installed (Debian package prometheus, in make test-deps)")
    d = tempfile.mkdtemp()
    try:
        prog = os.path.join(d.encode(), b"w\xff\xfe")
        shutil.copy(target("fleet"), prog)
        with Fnprof(["--by", "comm", "-f", "fleet_call", "--", os.fsdecode(prog), "50", "200", "linger"]) as fp:
            fp.wait_err("truth fleet_call")
            check(wait_for(lambda: b"fleet_call" in http_get(f"http://{fp.addr}/metrics")[1], timeout=5),
                  "no series")
            status, page = http_get(f"http://{fp.addr}/metrics")
            check(status == 200, f"/metrics: {status}")
            lint = subprocess.run([promtool, "check", "metrics"], input=page, capture_output=True, timeout=30)
            check(lint.returncode == 0, f"promtool: {lint.returncode} {lint.stderr[-500:]!r} {lint.stdout[-500:]!r}")
            series = [l for l in page.decode("utf-8").splitlines() if l.startswith("fnprof_calls_total{")]
            check(len(series) == 1 and 'comm="w\ufffd\ufffd"' in series[0], f"series: {series}")
            fp.stop(signal.SIGTERM)
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- terminal escapes in the offcpu, mutex and heap tables --------------------------------------------------

ESC_THREAD = b"\x1b]0;PWNED\x07"    # the program's file name: its main thread's name
ESC_FUNC = b"\x1b]0;PWNE\x07"       # as long as "sleep_1ms", which it replaces in the string table


def hostile_copy(d, name, rename=None):
    """target name copied to d under the escape name; rename (old, new): a function renamed in its symbols."""
    data = open(target(name), "rb").read()
    if rename:
        check(b"\0" + rename[0] + b"\0" in data, f"{rename[0]} not in {name}'s string table")
        data = data.replace(b"\0" + rename[0] + b"\0", b"\0" + rename[1] + b"\0")
    path = os.path.join(d.encode(), ESC_THREAD)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o755)
    return path


def test_profile_tables_escape_thread_and_function_names():
    """--per-thread tables of offcpu, mutex and heap: no ESC or BEL from a thread or function name reaches them."""
    runs = (("offcpu", "offcpu", ["2"], (b"sleep_1ms", ESC_FUNC)), ("mutex", "mutex", ["2"], None),
            ("heap", "heap", ["64", "2"], None))
    for kind, name, args, rename in runs:
        d = tempfile.mkdtemp()
        try:
            prog, out = hostile_copy(d, name, rename), os.path.join(d, "report.txt")
            p = subprocess.run([FNPROF.encode(), b"--profile", kind.encode(), b"--per-thread", b"-i", b"0.5",
                                b"-o", out.encode(), b"--", prog] + [a.encode() for a in args],
                               capture_output=True, timeout=90)
            check(p.returncode == 0, f"{kind}: exit {p.returncode}: {p.stderr[-1000:]!r}")
            text = open(out, "rb").read()
            check(b"thread " in text, f"{kind}: no per-thread table: {text[:500]!r}")
            check(b"\x1b" not in text and b"\x07" not in text, f"{kind}: an escape reaches the table: "
                  f"{[l for l in text.splitlines() if b'PWN' in l][:3]!r}")
            check(b"(?]0;PWNED?)" in text, f"{kind}: the thread's name is not shown sanitized: {text[:800]!r}")
            if rename:
                check(b"\n?]0;PWNE? " in text, f"{kind}: the function is not shown sanitized: {text[:800]!r}")
        finally:
            shutil.rmtree(d, ignore_errors=True)
