"""Bad input gets a clear message and a non-zero exit; the target is never harmed."""
import os
import shutil
import signal
import subprocess
import time

from harness import FNPROF, Skip, Target, check, final_report, func, run_fnprof, target, wait_for
from test_trace import check_no_breakpoints


def expect_error(args, code, *words):
    p = run_fnprof(args, timeout=30)
    check(p.returncode == code, f"exit {p.returncode}, want {code}: {p.stderr[-1500:]}")
    for w in words:
        check(w in p.stderr, f"'{w}' not in message: {p.stderr[-1500:]}")
    check("Segmentation" not in p.stderr and "AddressSanitizer" not in p.stderr, p.stderr)
    return p


def test_no_such_pid():
    expect_error(["-p", "999999", "-f", "x"], 1, "no such process")


def test_usage_errors():
    expect_error([], 2, "--help")
    expect_error(["-p", "abc", "-f", "x"], 2, "invalid PID")
    expect_error(["-p", "1", "-f", "x", "-d", "-3"], 2, "duration")
    expect_error(["-p", "1", "-f", "x", "--nonsense"], 2)


def test_function_not_found_suggests():
    expect_error(["-f", "spin_uss", "--", target("work"), "count", "1"], 1,
                 "no function 'spin_uss'", "did you mean", "spin_us")


def test_stripped_binary():
    path = f"/tmp/fnprof-stripped-{os.getpid()}"
    subprocess.run(["strip", "-o", path, target("work")], check=True)
    try:
        expect_error(["-f", "spin_us", "--", path, "count", "1"], 1, "stripped")
    finally:
        os.unlink(path)


def test_unknown_library():
    expect_error(["-f", "libnope:foo", "--", target("work"), "count", "1"], 1, "libnope")
    with Target("work", "loop") as t:
        expect_error(["-p", str(t.pid), "-f", "libnope:foo"], 1, "no object matching 'libnope'")


def test_ifunc_refused():
    p = run_fnprof(["--list", "-f", "libc:memcpy", "--", target("work"), "count", "1"])
    if p.returncode == 0:
        raise Skip("memcpy is not an IFUNC in this libc")
    check("IFUNC" in p.stderr, p.stderr)


def test_not_root():
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        FNPROF, "-f", "tiny", "--", target("work"), "count", "1"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 1, f"exit {p.returncode}: {p.stderr}")
    check("CAP_BPF" in p.stderr and "sudo" in p.stderr, p.stderr)


def test_failed_setup_leaves_no_child():
    p = expect_error(["-f", "no_such_fn", "--", target("work"), "loop"], 1, "no_such_fn")
    check("ready" not in p.stdout, "the command ran although tracing failed")


def test_kill9_leaves_no_probe():
    with Target("work", "loop") as t:
        fp = subprocess.Popen([FNPROF, "-p", str(t.pid), "-f", "spin_us", "-f", "sleep_us"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.8)
        fp.kill()
        fp.wait()
        # The kernel removes fd-owned probes when the last fd closes, right after exit.
        check(wait_for(lambda: _no_int3(t.pid), timeout=5), "breakpoints left after kill -9")
        check(t.proc.poll() is None, "target died")
        out, _ = t.stop()
        check("stopped" in out, "target did not finish normally")


def _no_int3(pid):
    try:
        check_no_breakpoints(pid, ["spin_us", "sleep_us"])
        return True
    except AssertionError:
        return False


def test_launch_sigint_forwarded_to_command():
    fp = subprocess.Popen([FNPROF, "-f", "spin_us", "--json", "--", target("work"), "loop"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check("ready" in fp.stdout.readline(), "command did not start")
    time.sleep(0.5)
    fp.send_signal(signal.SIGINT)
    out, err = fp.communicate(timeout=20)
    check(fp.returncode == 0, f"exit {fp.returncode}: {err[-1000:]}")
    check("stopped" in out, "command did not get the signal")
    check(func(final_report(out), "spin_us")["calls"] > 0, "no calls")


def test_output_file_is_new():
    import tempfile
    d = tempfile.mkdtemp()
    try:
        existing, link, victim = (os.path.join(d, n) for n in ("report", "link", "victim"))
        for path in (existing, victim):
            open(path, "w").write("keep\n")
        os.symlink(victim, link)
        for path in (existing, link):
            expect_error(["-o", path, "-f", "tiny", "--", target("work"), "count", "1"], 1, "exists")
        check(open(existing).read() == open(victim).read() == "keep\n", "an existing file was overwritten")
    finally:
        shutil.rmtree(d)


# Issue 37, item 4: LIB:NAME takes a soname, a file name or a prefix in every mode, and a name
# the program lacks is looked for in its libraries too.
PY = "/usr/bin/python3.11"
LIBZ = "/lib/x86_64-linux-gnu/libz.so.1"


def zlib_python():
    """Debian's python with libz mapped (imported), until stopped: the Popen."""
    p = subprocess.Popen([PY, "-c", "import zlib, time; print('ready', flush=True); time.sleep(120)"],
                         stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().strip() == "ready", "python did not start")
    return p


def test_library_by_soname_file_name_or_prefix_in_every_mode():
    if not os.path.exists(PY) or not os.path.exists(LIBZ):
        raise Skip("no Debian python3.11 or libz")
    # The soname the help shows (libz.so.1), the mapped file's name (libz.so.1.2.13), a prefix.
    names = ["libz.so.1", os.path.basename(os.path.realpath(LIBZ)), "libz"]
    py = zlib_python()
    try:
        for name in names:
            spec = f"{name}:deflate"
            # Attach, launch and system-wide mode.
            for args in (["--list", "-p", str(py.pid), "-f", spec], ["--list", "-f", spec, "--", PY, "-c", "0"],
                         ["--list", "-f", spec]):
                p = run_fnprof(args)
                check(p.returncode == 0 and p.stdout.split()[-1:] == ["deflate"],
                      f"{args}: exit {p.returncode}\n{p.stdout[-500:]}{p.stderr[-1000:]}")
    finally:
        py.kill()
        py.wait()


def test_suggestions_search_the_libraries():
    expect_error(["--list", "-f", "malloc", "--", target("work"), "count", "1"], 1,
                 "no function 'malloc'", "did you mean: libc:malloc")
    if not os.path.exists(PY):
        return
    py = zlib_python()
    try:
        expect_error(["--list", "-p", str(py.pid), "-f", "deflate"], 1, "did you mean: libz:deflate")
    finally:
        py.kill()
        py.wait()
