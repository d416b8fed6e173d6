"""--listen and the tables against hostile conditions: a process name that is not UTF-8 (every scrape must
still parse), and thread and function names that carry terminal escapes.

Every server here listens on 127.0.0.1, on a free port, and is stopped by its test.
"""
import os
import shutil
import signal
import subprocess
import tempfile

from harness import FNPROF, Skip, check, target, wait_for
from test_fleet import Fnprof, http_get


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
