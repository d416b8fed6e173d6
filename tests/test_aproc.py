"""-a keeps what it saw: processes that exit before the report keep their mappings, names and
function names (read the moment the kernel first samples them), and a process that execs is named
by its new image (COMM per exec).

Targets: tests/bin/shortlived burns a given CPU time (its own thread's clock: a busy machine makes
it live longer, never burn less) in shortlived_burn() and exits; `shortlived spawn N MS` runs N of
them one after another. tests/targets/shim.sh is a launcher as pyenv's shims are: shell work, then
exec. The names an exited process's frames get are compared with those -p gives a live one.
"""
import os
import re
import signal
import subprocess
import time

from harness import BIN, FNPROF, ROOT, Reaped, Skip, check, final_report, wait_for

SHORT = os.path.join(BIN, "shortlived")
SHIM = os.path.join(ROOT, "tests", "targets", "shim.sh")
PYTHON = "/usr/bin/python3.11"
# Hashes for a given CPU time in libcrypto (Debian's is stripped: its hot spot has no symbol).
HASHER = ("import hashlib, os, sys, time\n"
          "print('truth pid=%d' % os.getpid(), flush=True)\n"
          "end = time.process_time() + float(sys.argv[1])\n"
          "b = b'x' * (1 << 20)\n"
          "while time.process_time() < end:\n"
          "    hashlib.sha256(b).digest()\n")


class Machine(Reaped):
    """fnprof -a --json ARGS in the background, from the moment its sampling events are attached
    (one perf event per online CPU among its fds) until stop(), which ends it with SIGINT and
    returns its final report."""

    def __init__(self, args):
        self.proc = subprocess.Popen([FNPROF, "-a", "-d", "600", "--json"] + args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        cpus = os.sysconf("SC_NPROCESSORS_ONLN")
        ok = wait_for(lambda: self.proc.poll() is not None or self.perf_fds() >= cpus, timeout=60)
        if not ok or self.proc.poll() is not None:
            check(False, f"fnprof -a did not start sampling: {self.stop_raw()[1][-2000:]}")

    def perf_fds(self):
        n = 0
        try:
            for fd in os.listdir(f"/proc/{self.proc.pid}/fd"):
                try:
                    n += os.readlink(f"/proc/{self.proc.pid}/fd/{fd}") == "anon_inode:[perf_event]"
                except OSError:
                    pass
        except OSError:
            pass
        return n

    def stop_raw(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return out, err

    def stop(self):
        out, err = self.stop_raw()
        check(self.proc.returncode == 0, f"fnprof -a exit {self.proc.returncode}:\n{err[-3000:]}")
        return final_report(out)


def rows_of(rep, pid):
    return [f for f in rep["functions"] if f["pid"] == pid]


def truth_pid(text):
    m = re.search(r"truth pid=(\d+)", text)
    check(m, f"no truth line in {text!r}")
    return int(m.group(1))


def spawned(n, ms, call_graph):
    """fnprof -a over n processes of ms milliseconds each, one after another: (report, their pids)."""
    with Machine(["--call-graph", call_graph]) as m:
        sp = subprocess.run([SHORT, "spawn", str(n), str(ms)], capture_output=True, text=True, timeout=600)
        check(sp.returncode == 0 and "done" in sp.stdout, f"spawn: {sp.returncode} {sp.stderr}")
        rep = m.stop()
    pids = [int(p) for p in re.findall(r"child pid=(\d+)", sp.stdout)]
    check(len(pids) == n, f"{len(pids)} children, not {n}")
    return rep, pids


def check_short_lived(call_graph):
    """100 processes that burn 30 ms each and exit (long before any report or 250 ms scan): at least
    80 of them show shortlived_burn under their name. Here 93-96 of 100 with fp and DWARF, on a
    2-core machine at load 10; 22 and 32 before their mappings were read at first sight. Each
    burns 30 ms of its own CPU time: at 99 Hz about 3 samples however busy the machine; one with
    none (or whose only samples lost their stack: counted in the report) cannot show it."""
    rep, pids = spawned(100, 30, call_graph)
    shown = [p for p in pids if any(f["name"] == "shortlived_burn" and f["comm"] == "shortlived"
                                    for f in rows_of(rep, p))]
    sampled = {f["pid"] for f in rep["functions"]} & set(pids)
    check(len(shown) >= 80,
          f"{call_graph}: {len(shown)} of 100 short-lived processes show shortlived_burn ({len(sampled)} sampled); "
          f"processes {rep['processes']}, unwind {rep.get('unwind')}, lost {rep['lost']} {rep['stacks_lost']}")
    check(rep["processes"]["maps_read"] >= len(shown), rep["processes"])


def test_short_lived_processes_show_their_function_fp():
    check_short_lived("fp")


def test_short_lived_processes_show_their_function_dwarf():
    check_short_lived("dwarf")


def check_named_as_p(rows, want_top, label):
    """No frame named by a bare number ("19+0x29c240"): one of no symbol is its object's
    file name plus offset, as -p names it; the hot spot is -p's."""
    for f in rows:
        m = re.fullmatch(r"(.+)\+0x[0-9a-f]+", f["name"])
        check(not m or m.group(1) == os.path.basename(f["object"]),
              f"{label}: frame {f['name']} in {f['object']}, not named as -p names it")
    crypto = [f for f in rows if os.path.basename(f["object"]).startswith("libcrypto")]
    check(crypto, f"{label}: no libcrypto frames in {[(f['name'], f['object']) for f in rows]}")
    top = max(crypto, key=lambda f: f["self_samples"])
    check(top["name"] == want_top, f"{label}: libcrypto's hot spot {top['name']}, -p names it {want_top}")


def p_hot_spot():
    """What -p calls the hasher's hot spot in libcrypto, the hasher alive throughout."""
    h = subprocess.Popen([PYTHON, "-c", HASHER, "30"], stdout=subprocess.PIPE, text=True)
    try:
        pid = truth_pid(h.stdout.readline())
        p = subprocess.run([FNPROF, "-p", str(pid), "-d", "2", "--json", "--call-graph", "fp"],
                           capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"fnprof -p: {p.stderr[-2000:]}")
        rows = [f for f in final_report(p.stdout)["functions"]
                if os.path.basename(f["object"]).startswith("libcrypto")]
    finally:
        h.kill()
        h.wait()
    if not rows:
        raise Skip("python's hashlib does not run in libcrypto here")
    return max(rows, key=lambda f: f["self_samples"])["name"]


def test_exited_process_named_as_p():
    """A Python process hashing 1 s of CPU in libcrypto (stripped: its hot spot has no symbol) that
    exits before -a's report: its frames are named as -p names them ("libcrypto.so.3+0x29c240"),
    not by the fd number the file was read through ("19+0x29c240")."""
    if not os.path.exists(PYTHON):
        raise Skip(f"no {PYTHON}")
    want = p_hot_spot()
    with Machine(["--call-graph", "fp"]) as m:
        h = subprocess.run([PYTHON, "-c", HASHER, "1"], capture_output=True, text=True, timeout=120)
        pid = truth_pid(h.stdout)
        check(wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=10), f"{pid} still there")
        rep = m.stop()
    check_named_as_p(rows_of(rep, pid), want, f"exited process {pid}")


def test_comm_after_exec():
    """A program started through a shell script that execs it (shim.sh: ~0.5 s of shell work first,
    so that its shell is sampled too: some 50 samples at 99 Hz): its samples after the exec carry the program's name, and its
    stacks its functions, not the shell's name and [unknown]. The pre-exec image's mappings are
    dropped: the program's are read after the exec. (Samples are counted per process, not per
    image: the shell's take the program's name too.)"""
    with Machine(["--call-graph", "fp"]) as m:
        h = subprocess.run([SHIM, SHORT, "burn", "400"], capture_output=True, text=True, timeout=120)
        pid = truth_pid(h.stdout)
        rep = m.stop()
    rows = rows_of(rep, pid)
    check(rows, f"shim'd process {pid} not in the report")
    burn = [f for f in rows if f["name"] == "shortlived_burn"]
    check(burn and all(f["comm"] == "shortlived" for f in burn),
          f"after exec: {[(f['comm'], f['name']) for f in rows][:12]}")
