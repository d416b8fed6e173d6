"""A target with 30000 file mappings (security round 4, issue 32 item 2): one small library under 30000
names (hardlinks: one file), each name mapped once. Each test failed on the code before the fix.

Before: `-p PID -d 3` never ended (the DWARF unwinder re-read the 30000-line maps after every failed walk,
20 times a second, and walks failed because the fd cap left objects out; the final report waited on it),
SIGINT was ignored for 30 s and more, and under fp every mapping's object was read again (no dedupe by inode)
and looked up linearly. The time allowed is the same run's time on a target of 10 mappings, plus 12 s (the
issue's bound: 15 s for `-d 3`), so that a busy machine widens it as it slows both."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import FNPROF, check, nofile_limited, target, wait_for

LINKS = 30000


def copies_dir(d, n):
    """A directory of n copies 00000... of libtarget.so (n files)."""
    out = os.path.join(d, f"copies{n}")
    os.mkdir(out)
    for i in range(n):
        shutil.copyfile(os.path.join(os.path.dirname(target("manymaps")), "libtarget.so"), os.path.join(out, f"{i:05d}"))
    return out


def links_dir(d, n):
    """A directory of n hardlinks 00000... of one copy of libtarget.so (one file, n names)."""
    lib = os.path.join(d, "libtarget.so")
    shutil.copyfile(os.path.join(os.path.dirname(target("manymaps")), "libtarget.so"), lib)
    out = os.path.join(d, f"links{n}")
    os.mkdir(out)
    for i in range(n):
        os.link(lib, os.path.join(out, f"{i:05d}"))
    return out


class Mapper:
    """manymaps over a directory of names, started and mapped; killed on leaving, whatever happened."""

    def __init__(self, directory, n):
        self.proc = subprocess.Popen([target("manymaps"), directory, str(n)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != f"ready {n}":
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"manymaps: {line!r}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def timed_run(args, limit):
    """fnprof to its end: (seconds, exit code, stderr); killed at limit (a hang: exit None)."""
    t0 = time.monotonic()
    p = subprocess.Popen([FNPROF] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=limit)
        return time.monotonic() - t0, p.returncode, err
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        return time.monotonic() - t0, None, err


def perf_fds(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n


def sigint_latency(pid, limit):
    """Seconds from SIGINT to the exit of a `-p pid -d 60` run that has sampled for 2 s; None if it hung."""
    p = subprocess.Popen([FNPROF, "-p", str(pid), "-d", "60"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: p.poll() is not None or perf_fds(p.pid) > 0, timeout=30)
        check(p.poll() is None, f"fnprof exited before the signal: {p.returncode}")
        time.sleep(2)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=limit)
        return time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return None
    finally:
        p.kill()
        p.wait()


def test_30000_mappings_end_in_time_and_on_sigint():
    d = tempfile.mkdtemp()
    try:
        small, many = links_dir(d, 10), links_dir(d, LINKS)
        bases = {}
        for mode in ("dwarf", "fp"):
            args = ["--call-graph", mode, "-d", "3", "-p"]
            with Mapper(small, 10) as m:
                base, rc, err = bases[mode] = timed_run(args + [str(m.proc.pid)], 60)
                check(rc == 0, f"{mode}, 10 mappings: exit {rc}\n{err[-2000:]}")
            with Mapper(many, LINKS) as m:
                took, rc, err = timed_run(args + [str(m.proc.pid)], base + 12)
            print(f"# --call-graph {mode} -d 3: {base:.1f} s with 10 mappings, {took:.1f} s with {LINKS}")
            check(rc == 0, f"{mode}, {LINKS} mappings: exit {rc} after {took:.1f} s (10 mappings: {base:.1f} s)\n"
                           f"{err[-2000:]}")
        # The 5 s, and what a run of 10 mappings spends apart from its 3 s (the report, the exit).
        limit = 5 + bases["dwarf"][0] - 3
        with Mapper(many, LINKS) as m:
            took = sigint_latency(m.proc.pid, limit)
        print(f"# SIGINT to exit: {took} s")
        check(took is not None, f"fnprof did not end within {limit:.1f} s of SIGINT")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_all_one_process_leaves_fds_for_the_others():
    """-a with nofile 1024 (512 descriptors for all unwinders): a process mapping 1500 files takes its share,
    and a process started after it still has its stacks unwound through libc, up to _start.

    Before: the first process took all 512 and every object of the later one was left out: its stacks
    stopped at the sampled address (mapswork;spin_us)."""
    d = tempfile.mkdtemp()
    p = work = None
    try:
        exe, objs, folded = nofile_limited(1024, d), copies_dir(d, 1500), os.path.join(d, "all.folded")
        prog = os.path.join(d, "mapswork")   # a name of its own: other processes run work too
        shutil.copy(target("work"), prog)
        with Mapper(objs, 1500):
            p = subprocess.Popen([exe, "-a", "-d", "8", "--call-graph", "dwarf", "--folded", folded],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            check(wait_for(lambda: p.poll() is not None or perf_fds(p.pid) > 0, timeout=30), "fnprof did not start")
            time.sleep(2)   # the mapper is sampled meanwhile: its unwinder has taken what it may
            # It spins (1 ms at a time) until fnprof's run ends, and is killed then.
            work = subprocess.Popen([prog, "spin", "1000", "100000"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            _, err = p.communicate(timeout=60)
        check(p.returncode == 0, f"fnprof exit {p.returncode}\n{err[-2000:]}")
        with open(folded) as f:
            spins = [l for l in f.read().splitlines() if l.startswith("mapswork;") and ";spin_us" in l]
        whole = sum(int(l.rsplit(" ", 1)[1]) for l in spins if ";_start;" in l)
        total = sum(int(l.rsplit(" ", 1)[1]) for l in spins)
        print(f"# mapswork's spin_us: {whole} of {total} samples unwound up to _start")
        check(total >= 20, f"{total} samples of mapswork's spin_us\n{err[-2000:]}")
        check(whole >= 0.8 * total, f"{whole} of {total} unwound up to _start: {[l for l in spins if ';_start;' not in l][:5]}\n{err[-2000:]}")
    finally:
        for proc in (p, work):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(d, ignore_errors=True)
