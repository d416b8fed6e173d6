#!/usr/bin/env python3
"""fnprof benchmark (issue 5, "Measurement truth").

The same target functions traced by nothing, the floor (an empty uprobe+uretprobe pair), bpftrace,
libbpf-tools funclatency and fnprof, interleaved in one run, several repeats, medians.

Every run is done the same way, whatever the tool:
  1. start the target; it prints the runtime address of the function and waits for a byte on stdin;
  2. start the tool (clock starts); poll /proc/PID/mem at the function's address every ~1 ms until its first
     byte changes (the uprobe's int3): that is the attach time;
  3. wait until the tool is idle (its CPU time grows by < 10% over 50 ms; at most 5 s), so that nothing it
     does after attaching (fnprof's calibration, bpftrace's set-up) runs during the measured loop;
  4. send the byte: the target makes N calls and prints total wall / N and the latency it measured of
     itself, inside the function (truth);
  5. stop the tool (it exits by itself on the target's exit, or gets SIGINT), read its report, and its CPU
     time from wait4()'s rusage, and its peak RSS from its VmHWM, read every few ms while it runs
     (peakrss.py: wait4's ru_maxrss would include this runner's own memory).

Only the Python standard library. Environment: BENCH_QUICK=1 (a ~1-2 minute version), BENCH_REPEATS=N.
"""
import datetime
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import peakrss

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, ".output")
FNPROF = os.path.join(ROOT, "fnprof")
QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
REPEATS = int(os.environ.get("BENCH_REPEATS", "2" if QUICK else "5"))
Q = 4 if QUICK else 1   # quick mode divides the call counts by this
# BENCH_CASES=a,b: only these cases (no pairs, sampling or 1000 functions), results.md left as it is
ONLY = [c for c in os.environ.get("BENCH_CASES", "").split(",") if c]

# name, binary, mode, calls, ns (spin/sleep length), label
CASES = [
    ("nop_o2", "bt_o2", "nop", 20000 // Q, 0, "2 ns function, -O2"),
    ("nop_fp", "bt_fp", "nop", 100000 // Q, 0, "2 ns function, -fno-omit-frame-pointer"),
    ("nop_nop5", "bt_nop5", "nop", 40000 // Q, 0, "2 ns function, 5-byte nop entry"),
    ("spin_1us", "bt_fp", "spin", 50000 // Q, 1000, "1 us spin"),
    ("spin_10us", "bt_fp", "spin", 20000 // Q, 10000, "10 us spin"),
    ("spin_1ms", "bt_fp", "spin", 400 // Q, 1000000, "1 ms spin"),
    ("sleep_1ms", "bt_fp", "sleep", 400 // Q, 1000000, "1 ms sleep"),
    ("wl_o2", "bt_o2", "workload", 20000 // Q, 0, "2 ns function via pointer, -O2"),
    ("wl_fp", "bt_fp", "workload", 100000 // Q, 0, "2 ns function via pointer, -fno-omit-frame-pointer"),
    ("wl_nop5", "bt_nop5", "workload", 40000 // Q, 0, "2 ns function via pointer, 5-byte nop entry"),
]
FUNC = {"nop": "target_nop", "spin": "target_spin", "sleep": "target_sleep", "workload": "target_tiny"}
NOP_CASES = ["nop_o2", "nop_fp", "nop_nop5"]
# The bench's workload: a tight loop calling target_tiny through a function pointer, in the three builds.
WL_CASES = ["wl_o2", "wl_fp", "wl_nop5"]
WL_TOOLS = ["none", "bpftrace", "funclatency", "fnprof"]
# Cases whose figure is the reading itself (their truth is the untraced loop's ~2 ns per call).
TINY_CASES = NOP_CASES + WL_CASES
LAT_CASES = ["nop_o2", "spin_1us", "spin_10us", "spin_1ms", "sleep_1ms"]

TOOLS = ["none", "floor", "floor_multi", "bpftrace", "bpftrace_hist", "funclatency", "fnprof"]
TOOL_LABEL = {
    "none": "none", "floor": "floor (empty pair, perf links)", "floor_multi": "floor (empty pair, uprobe_multi)",
    "bpftrace": "bpftrace (stats)", "bpftrace_hist": "bpftrace (hist)", "funclatency": "funclatency",
    "fnprof": "fnprof",
}
# Tools run on the 2 ns function only (the floors have no latency to report, bpftrace's hist its mean).
NOP_ONLY_TOOLS = ["floor_multi", "bpftrace_hist"]
# Pair runs: calls of each twin function (target_nop, target_nop2) per build.
PAIR_CALLS = {"bt_o2": 10000 // Q, "bt_fp": 50000 // Q, "bt_nop5": 50000 // Q}

TARGET_TIMEOUT = 120
ATTACH_TIMEOUT = 30
STOP_GRACE = 0.5   # fnprof and the floor exit with the target; the others get SIGINT
INT_TIMEOUT = 60   # detaching can wait on RCU grace periods; SIGKILL does not make it faster


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def now():
    return time.monotonic()


# --- process helpers ---------------------------------------------------------------------------

def cpu_ns(pid):
    """CPU time of all threads of pid, in ns (schedstat), or None once it is gone."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        return None
    return total


def reap(pid, timeout):
    """wait4 with a timeout: (status, rusage) or None if still running."""
    end = now() + timeout
    while True:
        peakrss.sample(pid)
        try:
            wpid, status, ru = os.wait4(pid, os.WNOHANG)
        except ChildProcessError:
            return (0, None)
        if wpid == pid:
            return (status, ru)
        if now() >= end:
            return None
        time.sleep(0.005)


def kill_quiet(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


class Tool:
    """A tool process with output to a temp file; stop() returns (output, rusage, wall_s, how)."""

    def __init__(self, argv):
        self.out = tempfile.TemporaryFile(mode="w+b")
        self.t0 = now()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self.result = None

    def alive(self):
        if self.result is not None:
            return False
        r = reap(self.pid, 0)
        if r is not None:
            self.result = (r, now())
            return False
        return True

    def output(self):
        self.out.seek(0)
        return self.out.read().decode(errors="replace")

    def stop(self, grace=STOP_GRACE, int_timeout=INT_TIMEOUT):
        how = "exited"
        if self.result is None:
            r = reap(self.pid, grace)
            if r is None:
                how = "SIGINT"
                kill_quiet(self.pid, signal.SIGINT)
                r = reap(self.pid, int_timeout)
            if r is None:
                how = "killed"
                kill_quiet(self.pid, signal.SIGKILL)
                r = reap(self.pid, 5) or (0, None)
            self.result = (r, now())
        (status, ru), t1 = self.result
        self.proc.returncode = 0   # reaped by us; keep Popen from waiting again
        return self.output(), ru, t1 - self.t0, how, status


class Target:
    def __init__(self, argv, naddr=1):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        self.addrs = []
        while len(self.addrs) < naddr:
            line = self.proc.stdout.readline().decode()
            if not line:
                raise RuntimeError("target exited before printing its address")
            if line.startswith("addr "):
                self.addrs.append(int(line.split()[1], 16))
        self.lo, self.hi = min(self.addrs), max(self.addrs)
        self.mem = os.open(f"/proc/{self.pid}/mem", os.O_RDONLY)
        self.orig = self.read()

    def read(self):
        return os.pread(self.mem, self.hi - self.lo + 1, self.lo)

    def patched(self):
        """How many of the function entries have been changed (int3 or, later, the nop5 call)."""
        cur = self.read()
        return sum(1 for a in self.addrs if cur[a - self.lo] != self.orig[a - self.lo])

    def release(self):
        self.proc.stdin.write(b"x")
        self.proc.stdin.flush()   # communicate() closes it

    def finish(self, timeout=TARGET_TIMEOUT):
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise RuntimeError(f"target did not finish in {timeout} s")
        finally:
            os.close(self.mem)
        m = re.search(r"result calls=(\d+) total_ns=(\d+) ns_per_call=([\d.]+) truth_avg=([\d.]+) "
                      r"truth_p50=([\d.]+) truth_p99=([\d.]+)(?: entry=([0-9a-f]+))?", out.decode())
        if not m:
            raise RuntimeError("target printed no result")
        return dict(calls=int(m[1]), total_ns=int(m[2]), ns_per_call=float(m[3]),
                    truth_avg=float(m[4]), truth_p50=float(m[5]), truth_p99=float(m[6]), entry=m[7])

    def abort(self):
        self.proc.kill()
        try:
            self.proc.communicate(timeout=5)
        except Exception:
            pass
        try:
            os.close(self.mem)
        except OSError:
            pass


def probe_fds(pid):
    """(perf events, uprobe_multi links) that pid holds: each uprobe or uretprobe attached through a
    perf event is one; a uprobe_multi link (fnprof and floor -m where the kernel has them) stands for
    all the probes of one program in one object."""
    perf = multi = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link == "anon_inode:[perf_event]":
                    perf += 1
                elif link == "anon_inode:bpf_link":
                    with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                        if re.search(r"^link_type:\s*u(ret)?probe_multi", f.read(), re.M):
                            multi += 1
            except OSError:
                pass
    except OSError:
        pass
    return perf, multi


def extra_perf_fds(tool):
    """perf_event fds a tool holds besides its probes: bpftrace's perf buffer has one per CPU."""
    return os.cpu_count() if tool.startswith("bpftrace") else 0


def wait_ready(t, nprobes, timeout):
    """After the first int3: until the tool holds a perf event for each of its nprobes probes, or two
    uprobe_multi links (returns, entries: the int3 appears with the first), then until it is idle.
    Returns how its probes are attached: "perf" or "uprobe_multi"."""
    end = now() + timeout
    while True:
        perf, multi = probe_fds(t.pid)
        if perf >= nprobes or multi >= 2:
            break
        if not t.alive():
            out, _, _, _, _ = t.stop()
            raise RuntimeError("exited while attaching: " + first_line_reason(out))
        if now() > end:
            raise RuntimeError(f"fewer than {nprobes} probes after {timeout} s")
        time.sleep(0.002)
    wait_idle(t.pid)
    if not t.alive():
        out, _, _, _, _ = t.stop()
        raise RuntimeError("exited after attaching: " + first_line_reason(out))
    return "uprobe_multi" if multi >= 2 else "perf"


def wait_idle(pid, max_s=5.0):
    """Until pid's CPU time grows by < 5 ms in 50 ms (or max_s)."""
    end = now() + max_s
    prev = cpu_ns(pid)
    while now() < end:
        time.sleep(0.05)
        cur = cpu_ns(pid)
        if cur is None or prev is None:
            return
        if cur - prev < 5_000_000:
            return
        prev = cur


# --- tools -------------------------------------------------------------------------------------

def tool_argv(tool, pid, binpath, fn):
    if tool == "floor":
        return [os.path.join(OUT, "floor"), str(pid), binpath, fn]
    if tool == "floor_multi":
        return [os.path.join(OUT, "floor"), "-m", str(pid), binpath, fn]
    if tool == "bpftrace":
        prog = (f"uprobe:{binpath}:{fn} {{ @s[tid] = nsecs; }} "
                f"uretprobe:{binpath}:{fn} /@s[tid]/ {{ @lat = stats(nsecs - @s[tid]); delete(@s[tid]); }}")
        return ["bpftrace", "-p", str(pid), "-e", prog]
    if tool == "bpftrace_hist":
        prog = (f"uprobe:{binpath}:{fn} {{ @s[tid] = nsecs; }} "
                f"uretprobe:{binpath}:{fn} /@s[tid]/ {{ @h = hist(nsecs - @s[tid]); delete(@s[tid]); }}")
        return ["bpftrace", "-p", str(pid), "-e", prog]
    if tool == "funclatency":
        return ["funclatency", "-p", str(pid), ":" + fn]
    if tool == "fnprof":
        return [FNPROF, "-p", str(pid), "-f", fn, "--json"]
    raise ValueError(tool)


UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_bpftrace_hist(text):
    """bpftrace hist(): [lo, hi) buckets; mean from bucket midpoints."""
    n = s = 0
    for m in re.finditer(r"^\[(\d+)([KMG]?), (\d+)([KMG]?)\)\s+(\d+)", text, re.M):
        lo, hi, c = int(m[1]) * UNITS[m[2]], int(m[3]) * UNITS[m[4]], int(m[5])
        n += c
        s += c * (lo + hi) / 2
    for m in re.finditer(r"^\[(\d+)\]\s+(\d+)", text, re.M):   # [0], [1] single-value buckets
        n += int(m[2])
        s += int(m[2]) * int(m[1])
    return (s / n if n else None), n


def parse_funclatency(text):
    """libbpf-tools funclatency prints a log2 histogram only: mean from bucket midpoints."""
    n = s = 0
    for m in re.finditer(r"^\s*(\d+) -> (\d+)\s*: (\d+)", text, re.M):
        lo, hi, c = int(m[1]), int(m[2]), int(m[3])
        n += c
        s += c * (lo + hi + 1) / 2
    return (s / n if n else None), n


def parse_report(tool, text, fn):
    """-> dict(avg, p50, p99, calls, raw_avg) or raises with a reason."""
    if tool == "bpftrace":
        m = re.search(r"@lat: count (\d+), average (\d+), total (\d+)", text)
        if not m:
            raise RuntimeError("no @lat in output")
        return dict(avg=float(m[3]) / int(m[1]) if int(m[1]) else None, calls=int(m[1]))
    if tool == "bpftrace_hist":
        avg, n = parse_bpftrace_hist(text)
        if not n:
            raise RuntimeError("no histogram in output")
        return dict(avg=avg, calls=n)
    if tool == "funclatency":
        avg, n = parse_funclatency(text)
        if not n:
            raise RuntimeError("no histogram in output")
        return dict(avg=avg, calls=n)
    if tool == "fnprof":
        rep = None
        for line in text.splitlines():
            if line.startswith("{") and '"functions"' in line:
                try:
                    rep = json.loads(line)
                except ValueError:
                    pass
        if rep is None:
            raise RuntimeError("no JSON report")
        fns = [f for f in rep["functions"] if f.get("name") == fn] or rep["functions"]
        if not fns:
            raise RuntimeError("no function in report")
        f = fns[0]
        w = f.get("wall_ns", {})
        return dict(avg=w.get("avg"), p50=w.get("p50"), p99=w.get("p99"), calls=f.get("calls"),
                    raw_avg=f.get("raw_wall_ns", {}).get("avg"), site=f.get("site"),
                    bias=f.get("bias_ns"), steps=rep.get("fnprof", {}).get("steps"))
    return {}


def first_line_reason(text):
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("Attaching"):
            return line[:100]
    return "no output"


# --- one run -----------------------------------------------------------------------------------

def run_one(case, tool):
    name, binname, mode, n, ns, _ = case
    binpath = os.path.join(OUT, binname)
    fn = FUNC[mode]
    argv = [binpath, mode, str(n)] + ([str(ns)] if ns else [])
    res = dict(case=name, tool=tool)
    tgt = Target(argv)
    t = None
    try:
        if tool != "none":
            t = Tool(tool_argv(tool, tgt.pid, binpath, fn))
            while True:
                if tgt.patched():
                    res["attach_ms"] = (now() - t.t0) * 1e3
                    break
                if not t.alive():
                    out, _, _, _, _ = t.stop()
                    raise RuntimeError(first_line_reason(out))
                if now() - t.t0 > ATTACH_TIMEOUT:
                    raise RuntimeError(f"no breakpoint after {ATTACH_TIMEOUT} s")
                time.sleep(0.001)
            res["links"] = wait_ready(t, 2 + extra_perf_fds(tool), ATTACH_TIMEOUT)
        tgt.release()
        res.update(tgt.finish())
        if t:
            out, ru, wall, how, status = t.stop()
            if how == "killed":
                raise RuntimeError("did not stop on SIGINT")
            if ru:
                res["cpu_ms"] = (ru.ru_utime + ru.ru_stime) * 1e3
                res["rss_kb"] = peakrss.peak(t.pid)
            res["tool_wall_s"] = wall
            rep = parse_report(tool, out, fn)
            res.update({"tool_" + k: v for k, v in rep.items()})
            if rep.get("calls") is not None and rep["calls"] != res["calls"]:
                raise RuntimeError(f"counted {rep['calls']} of {res['calls']} calls")
    except Exception as e:   # noqa: BLE001 -- a tool's failure is a cell, not the end of the bench
        res["error"] = str(e) or type(e).__name__
        tgt.abort()
        if t:
            t.stop(grace=0)
    return res


def run_pair(binname, fnprof_first):
    """fnprof and the floor of fnprof's kind of link at once, on the twins target_nop and target_nop2
    of one target, called in alternating blocks: fnprof's cost above the floor without the noise
    of comparing different runs (another process, another moment). fnprof_first: fnprof on
    target_nop, the floor on target_nop2; else the other way round (the twins' own small difference
    cancels over the repeats)."""
    binpath = os.path.join(OUT, binname)
    n = PAIR_CALLS[binname]
    res = dict(case="pair_" + binname, tool="fnprof", fnprof_fn="target_nop" if fnprof_first else "target_nop2")
    floor_fn = "target_nop2" if fnprof_first else "target_nop"
    tgt = Target([binpath, "pair", str(n)], naddr=2)
    tools = []
    try:
        fp = Tool(tool_argv("fnprof", tgt.pid, binpath, res["fnprof_fn"]))
        tools.append(fp)
        res["links"] = wait_ready(fp, 2, ATTACH_TIMEOUT)
        fl = Tool(tool_argv("floor_multi" if res["links"] == "uprobe_multi" else "floor", tgt.pid, binpath,
                            floor_fn))
        tools.append(fl)
        wait_ready(fl, 2, ATTACH_TIMEOUT)
        if tgt.patched() != 2:
            raise RuntimeError("the twins are not both probed")
        wait_idle(fp.pid)
        tgt.release()
        try:
            out, _ = tgt.proc.communicate(timeout=TARGET_TIMEOUT)
        finally:
            os.close(tgt.mem)
        m = re.search(r"pair blocks=(\d+) a=([\d.]+) b=([\d.]+) d=([-\d.]+)", out.decode())
        if not m:
            raise RuntimeError("target printed no pair result")
        d = float(m[4])
        res.update(blocks=int(m[1]), a=float(m[2]), b=float(m[3]), calls=n,
                   fnprof_minus_floor=d if fnprof_first else -d)
        text, ru, _, how, _ = fp.stop()
        fl.stop()
        rep_ = parse_report("fnprof", text, res["fnprof_fn"])
        if rep_.get("calls") != n:
            raise RuntimeError(f"fnprof counted {rep_.get('calls')} of {n} calls")
    except Exception as e:   # noqa: BLE001
        res["error"] = str(e) or type(e).__name__
        tgt.abort()
        for t in tools:
            t.stop(grace=0)
    return res


def run_many(tool, nfuncs=1000):
    """Attach time for a glob matching 1000 functions (until the last one has its breakpoint)."""
    binpath = os.path.join(OUT, "many")
    res = dict(case="many", tool=tool)
    tgt = Target([binpath], naddr=nfuncs)
    t = None
    try:
        if tool == "fnprof":
            argv = [FNPROF, "-p", str(tgt.pid), "-f", "f_*", "--json"]
        else:
            prog = (f"uprobe:{binpath}:f_* {{ @s[tid] = nsecs; }} "
                    f"uretprobe:{binpath}:f_* /@s[tid]/ {{ @n = count(); delete(@s[tid]); }}")
            argv = ["bpftrace", "-p", str(tgt.pid), "-e", prog]
        t = Tool(argv)
        first = None
        while True:
            k = tgt.patched()
            if k and first is None:
                first = (now() - t.t0) * 1e3
            if k == nfuncs:
                res["attach_ms"] = (now() - t.t0) * 1e3
                res["first_ms"] = first
                break
            if not t.alive():
                out, _, _, _, _ = t.stop()
                raise RuntimeError(f"{k}/{nfuncs} attached; " + first_line_reason(out))
            if now() - t.t0 > (90 if not QUICK else 45):
                raise RuntimeError(f"{k}/{nfuncs} breakpoints after {90 if not QUICK else 45} s")
            time.sleep(0.001)
        wait_ready(t, 2 * nfuncs + extra_perf_fds(tool), 90)
        tgt.release()
        tgt.proc.communicate(timeout=30)
        os.close(tgt.mem)
        t_exit = now()
        # fnprof exits with the target; bpftrace gets SIGINT. Either then detaches 2000 probes.
        r = reap(t.pid, 5)
        if r is None and tool != "fnprof":
            kill_quiet(t.pid, signal.SIGINT)
        cap = 60 if QUICK else 150
        r = r or reap(t.pid, cap)
        res["exit_s"] = now() - t_exit
        if r is None:   # still detaching: leave it be (SIGKILL would not end it sooner)
            res["exit_note"] = f"> {cap} s, still detaching"
            t.result = ((0, None), now())
            ru = None
        else:
            t.result = (r, now())
            out, ru, wall, how, status = t.stop()
        if ru:
            res["cpu_ms"] = (ru.ru_utime + ru.ru_stime) * 1e3
            res["rss_kb"] = peakrss.peak(t.pid)
        if tool == "fnprof" and ru is not None:
            for line in out.splitlines():
                if line.startswith("{") and '"functions"' in line:
                    rep = json.loads(line)
                    res["funcs_reported"] = sum(1 for f in rep["functions"] if f.get("calls"))
    except Exception as e:   # noqa: BLE001
        res["error"] = str(e) or type(e).__name__
        tgt.abort()
        if t:
            t.stop(grace=0)
    return res


def run_sampling(tool, seconds):
    """Target spins (1 us calls) for SECONDS; fnprof samples it at 99 Hz. fnprof's own CPU over that window."""
    binpath = os.path.join(OUT, "bt_fp")
    res = dict(case="sampling", tool=tool)
    tgt = Target([binpath, "work", str(seconds), "1000"])
    t = None
    try:
        if tool == "fnprof":
            t = Tool([FNPROF, "-p", str(tgt.pid), "-F", "99", "-d", str(seconds + 10), "--json"])
            wait_idle(t.pid)
            time.sleep(0.2)
            if not t.alive():
                out, _, _, _, _ = t.stop()
                if "not implemented" in out:
                    raise NotImplementedError("n/a (not yet implemented)")
                raise RuntimeError(first_line_reason(out))
            c0, w0 = cpu_ns(t.pid), now()
        tgt.release()
        if t:
            # the window: the target's run; fnprof's CPU read just before the target exits
            end = w0 + seconds - 0.05
            while now() < end:
                time.sleep(0.02)
            c1, w1 = cpu_ns(t.pid), now()
        res.update(tgt.finish())
        if t:
            out, ru, wall, how, status = t.stop(grace=5)
            res["window_pct"] = (c1 - c0) / ((w1 - w0) * 1e9) * 100 if c0 is not None and c1 else None
            if ru:
                res["cpu_ms"] = (ru.ru_utime + ru.ru_stime) * 1e3
                res["rss_kb"] = peakrss.peak(t.pid)
                res["run_pct"] = res["cpu_ms"] / (wall * 1e3) * 100
            res["tool_wall_s"] = wall
    except NotImplementedError as e:
        res["error"] = str(e)
        tgt.abort()
    except Exception as e:   # noqa: BLE001
        res["error"] = "failed: " + (str(e) or type(e).__name__)
        tgt.abort()
        if t:
            t.stop(grace=0)
    return res


# --- aggregation and tables --------------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt_ns(v, signed=False):
    if v is None:
        return "-"
    a = abs(v)
    sign = ("+" if v >= 0 else "-") if signed else ("-" if v < 0 else "")
    if a >= 1e6:
        return f"{sign}{a / 1e6:.3f} ms"
    if a >= 1e4:
        return f"{sign}{a / 1e3:.1f} us"
    if a >= 1e3:
        return f"{sign}{a / 1e3:.2f} us"
    return f"{sign}{a:.0f} ns"


def table(header, rows):
    w = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |"
    return "\n".join([line(header), "|" + "|".join("-" * (x + 2) for x in w) + "|"] + [line(r) for r in rows])


def first_insn(binname, fn):
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", os.path.join(OUT, binname)],
                             capture_output=True, text=True, timeout=30).stdout
        m = re.search(rf"<{fn}>:\n\s*[0-9a-f]+:\s*(.+)", out)
        return re.sub(r"\s+", " ", m[1].strip()) if m else "?"
    except Exception:   # noqa: BLE001
        return "?"


class Results:
    def __init__(self, runs):
        self.runs = runs

    def sel(self, case, tool):
        return [r for r in self.runs if r["case"] == case and r["tool"] == tool]

    def errors(self, case, tool):
        rs = self.sel(case, tool)
        errs = [r["error"] for r in rs if "error" in r]
        if rs and len(errs) == len(rs):
            return errs[0]
        return None

    def ok(self, case, tool):
        return [r for r in self.sel(case, tool) if "error" not in r]

    def overhead(self, case, tool):
        """median over repeats of (traced ns/call - untraced ns/call of the same repeat)"""
        base = {r["rep"]: r["ns_per_call"] for r in self.ok(case, "none")}
        return med([r["ns_per_call"] - base[r["rep"]] for r in self.ok(case, tool) if r["rep"] in base])

    def fnprof_floor(self):
        """The floor that attaches as fnprof did: uprobe_multi links where it used them."""
        links = [r.get("links") for r in self.runs if r["tool"] == "fnprof" and r.get("links")]
        return "floor_multi" if links and max(set(links), key=links.count) == "uprobe_multi" else "floor"

    def paired(self, binname):
        """fnprof - floor on twin functions of one process: median over repeats, min, max."""
        v = [r["fnprof_minus_floor"] for r in self.ok("pair_" + binname, "fnprof")]
        return (med(v), min(v), max(v)) if v else (None, None, None)

    def truth(self, case):
        rs = self.ok(case, "none")
        if case in TINY_CASES:
            return med([r["ns_per_call"] for r in rs])
        return med([r["truth_avg"] for r in rs])

    def lat_err(self, case, tool, key="tool_avg", truth_key="truth_avg"):
        """median over runs of (tool's reading - the truth the target measured in that same run)"""
        nop_truth = self.truth(case) if case in TINY_CASES else None
        errs, pcts, vals = [], [], []
        for r in self.ok(case, tool):
            if r.get(key) is None:
                continue
            tr = nop_truth if nop_truth is not None else r[truth_key]
            vals.append(r[key])
            errs.append(r[key] - tr)
            pcts.append((r[key] - tr) / tr * 100 if tr else None)
        return med(vals), med(errs), med(pcts)

    def lat_range(self, case, tool, key="tool_avg"):
        """(min, max) over runs of the tool's reading, or None"""
        vals = [r[key] for r in self.ok(case, tool) if r.get(key) is not None]
        return (min(vals), max(vals)) if vals else None


def cell_fail(res, case, tool):
    e = res.errors(case, tool)
    return f"failed: {e}" if e else None


def build_report(runs, meta):
    res = Results(runs)
    parts = []
    parts.append(f"Machine: {meta['machine']}  \nDate: {meta['date']}; fnprof {meta['fnprof']}; "
                 f"{meta['versions']}; repeats: {meta['repeats']}{' (BENCH_QUICK)' if QUICK else ''}; "
                 f"medians." + (f"  \nAt the start, {meta['busy_at_start']} tasks were blocked in uprobe "
                                f"(de)registration (another tracer detaching): attach times suffer."
                                if meta.get("busy_at_start") else ""))

    # 1. per-call overhead on the 2 ns function
    hdr = ["build (first instruction)", "entry when probed", "untraced", "floor, perf links", "floor, uprobe_multi",
           "bpftrace (hist)", "bpftrace (stats)", "funclatency", "fnprof", "fnprof - floor", "fnprof - floor, paired"]
    rows = []
    for case in NOP_CASES:
        c = next(x for x in CASES if x[0] == case)
        base = med([r["ns_per_call"] for r in res.ok(case, "none")])
        fl = res.overhead(case, "floor")
        fnfloor = res.fnprof_floor()
        flf = res.overhead(case, fnfloor)
        entries = [r.get("entry") for r in res.ok(case, "floor") if r.get("entry")]
        ent = max(set(entries), key=entries.count) if entries else None
        ent = {"cc": "int3", "e8": "call (optimized)"}.get(ent, ent or "-")
        row = [f"{c[5].split(', ')[1]} (`{first_insn(c[1], 'target_nop')}`)", ent, fmt_ns(base)]
        for tool in ["floor", "floor_multi", "bpftrace_hist", "bpftrace", "funclatency", "fnprof"]:
            f = cell_fail(res, case, tool)
            o = res.overhead(case, tool)
            ref = flf if tool == "fnprof" else fl
            if f:
                row.append(f)
            elif o is None:
                row.append("-")
            elif tool.startswith("floor") or not ref:
                row.append(fmt_ns(o))
            else:
                row.append(f"{fmt_ns(o)} ({o / ref:.2f}x)")
        fo = res.overhead(case, "fnprof")
        row.append(fmt_ns(fo - flf, True) if fo is not None and flf is not None else "-")
        pv, plo, phi = res.paired(c[1])
        row.append(f"{fmt_ns(pv, True)} ({fmt_ns(plo, True)}..{fmt_ns(phi, True)})" if pv is not None
                   else (cell_fail(res, "pair_" + c[1], "fnprof") or "-"))
        rows.append(row)
    parts.append("### Per-call cost added to a 2 ns function\n\n"
                 "(traced ns/call - untraced ns/call of the same repeat; in brackets: ratio to the floor that "
                 "attaches as the tool does: perf links for bpftrace and funclatency, "
                 f"{'uprobe_multi' if res.fnprof_floor() == 'floor_multi' else 'perf'} links for fnprof; "
                 "fnprof - floor: against that floor; paired: fnprof and that floor at once on twin functions of "
                 "one process, median over the repeats (their range in brackets); entry when probed: the "
                 "function's first byte as the target reads it after the loop, under the floor)\n\n"
                 + table(hdr, rows))

    # 2. latency error
    hdr = ["case", "truth", "bpftrace (stats)", "funclatency (log2 midpoints)", "fnprof", "fnprof --raw figure"]
    rows = []
    for case in LAT_CASES:
        c = next(x for x in CASES if x[0] == case)
        row = [c[5] + (" (entry single-stepped)" if case == "nop_o2" else ""), fmt_ns(res.truth(case))]
        for tool, key in [("bpftrace", "tool_avg"), ("funclatency", "tool_avg"), ("fnprof", "tool_avg"),
                          ("fnprof", "tool_raw_avg")]:
            f = cell_fail(res, case, tool)
            v, e, p = res.lat_err(case, tool, key)
            if f:
                row.append(f)
            elif v is None:
                row.append("-")
            elif case.startswith("nop"):
                row.append(fmt_ns(v))
            else:
                row.append(f"{fmt_ns(e, True)} ({p:+.1f}%)" if p is not None else fmt_ns(e, True))
        rows.append(row)
    parts.append("### Latency error against the target's own ground truth\n\n"
                 "(average per call; for the 2 ns function the figure read, for the others the error of the "
                 "average; spin/sleep targets are built with -fno-omit-frame-pointer: entry `push %rbp`, emulated)\n\n"
                 + table(hdr, rows))

    # 2b. fnprof percentiles
    hdr = ["case", "truth p50", "fnprof p50", "truth p99", "fnprof p99"]
    rows = []
    for case in LAT_CASES[1:]:
        c = next(x for x in CASES if x[0] == case)
        row = [c[5]]
        f = cell_fail(res, case, "fnprof")
        for q in ("p50", "p99"):
            row.append(fmt_ns(med([r[f"truth_{q}"] for r in res.ok(case, "fnprof")])))
            v, e, p = res.lat_err(case, "fnprof", f"tool_{q}", f"truth_{q}")
            row.append(f if f else (f"{fmt_ns(v)} ({p:+.1f}%)" if v is not None and p is not None else "-"))
        rows.append(row)
    parts.append("### fnprof percentiles against the truth (the target's own per-call measurements)\n\n"
                 + table(hdr, rows))

    # 2c. every run of the 2 ns functions: the spread, not only the median
    hdr = ["case (first instruction)", "untraced", "bpftrace (stats)", "funclatency (log2 midpoints)", "fnprof",
           "fnprof --raw figure"]
    rows = []
    for case in TINY_CASES:
        c = next(x for x in CASES if x[0] == case)
        fn = FUNC[c[2]]
        row = [f"{c[5]} (`{first_insn(c[1], fn)}`)", fmt_ns(res.truth(case))]
        for tool, key in [("bpftrace", "tool_avg"), ("funclatency", "tool_avg"), ("fnprof", "tool_avg"),
                          ("fnprof", "tool_raw_avg")]:
            f = cell_fail(res, case, tool)
            v = res.lat_err(case, tool, key)[0]
            rg = res.lat_range(case, tool, key)
            row.append(f or ("-" if v is None else f"{fmt_ns(v)} ({fmt_ns(rg[0])}..{fmt_ns(rg[1])})"))
        rows.append(row)
    parts.append("### 2 ns functions, every run\n\n"
                 "(average per call each tool read: median over the runs, in brackets the lowest and the highest "
                 "run; the truth is ~2 ns. nop: `target_nop` called directly; via pointer: the workload, "
                 "`target_tiny` called through a function pointer in a tight loop)\n\n" + table(hdr, rows))

    # 2d. fnprof's start-up, step by step (its JSON's fnprof.steps)
    steps = {}
    for r in runs:
        if r["tool"] == "fnprof" and r.get("case") in [c[0] for c in CASES] and r.get("tool_steps"):
            for st in r["tool_steps"]:
                steps.setdefault(st["step"], []).append((st["wall_ms"], st["cpu_ms"]))
    if steps:
        rows = []
        for name, v in steps.items():
            w, c = [x[0] for x in v], [x[1] for x in v]
            rows.append([name, f"{med(w):.1f} ms ({min(w):.1f}..{max(w):.1f})",
                         f"{med(c):.1f} ms ({min(c):.1f}..{max(c):.1f})"])
        parts.append("### fnprof's start-up, step by step\n\n(each step's wall time and fnprof's CPU time in it, "
                     "all its threads: median over the runs of all cases, in brackets the range; from the `steps` of "
                     "its JSON, the same as `-v` prints)\n\n" + table(["step", "wall", "CPU"], rows))

    # 3. attach time and tool resources
    hdr = ["tool", "attach, 1 function", "attach, 1000 functions (f_*)", "exit after target, 1000 functions",
           "CPU per run", "peak RSS"]
    rows = []
    for tool in TOOLS[1:]:
        rs = [r for r in runs if r["tool"] == tool and r["case"] in [c[0] for c in CASES] and "error" not in r]
        errs = [r["error"] for r in runs if r["tool"] == tool and r["case"] != "many" and "error" in r]
        a = med([r.get("attach_ms") for r in rs])
        arg = [r["attach_ms"] for r in rs if r.get("attach_ms") is not None]
        row = [TOOL_LABEL[tool], f"{a:.1f} ms ({min(arg):.0f}..{max(arg):.0f})" if a is not None
               else (f"failed: {errs[0]}" if errs else "-")]
        mrs = [r for r in runs if r["case"] == "many" and r["tool"] == tool]
        if not mrs:
            row += ["not run", "-"]
        elif all("error" in r for r in mrs):
            row += ["failed: " + mrs[0]["error"], "-"]
        else:
            ok = [r for r in mrs if "error" not in r]
            row.append(f"{med([r['attach_ms'] for r in ok]):.0f} ms")
            ex = med([r.get("exit_s") for r in ok])
            notes_ = [r["exit_note"] for r in ok if r.get("exit_note")]
            row.append(notes_[0] if notes_ else (f"{ex:.1f} s" if ex is not None else "-"))
        cpu = med([r.get("cpu_ms") for r in rs])
        rss = med([r.get("rss_kb") for r in rs])
        row.append(f"{cpu:.0f} ms" if cpu is not None else "-")
        row.append(f"{rss / 1024:.1f} MiB" if rss is not None else "-")
        rows.append(row)
    parts.append("### Attach time and the tools' own cost\n\n"
                 "(attach: tool start until the int3 is in the target's memory at the function's entry, polled "
                 "every ~1 ms in /proc/PID/mem; for 1000 functions, until the last of the 1000 has it; exit: "
                 "from the target's exit (fnprof) or SIGINT (bpftrace) until the tool has exited, detaching. "
                 "in brackets the fastest and the slowest run; "
                 "CPU: the tool's utime+stime over a whole run, start to exit, median over all cases; "
                 "peak RSS: the tool's VmHWM)\n\n" + table(hdr, rows))

    # 4. sampling
    srs = [r for r in runs if r["case"] == "sampling" and r["tool"] == "fnprof"]
    if srs and all("error" in r for r in srs):
        srow = ["fnprof -p PID -F 99", srs[0]["error"], "-", "-", "-"]
    elif srs:
        ok = [r for r in srs if "error" not in r]
        base = {r["rep"]: r["ns_per_call"] for r in runs if r["case"] == "sampling" and r["tool"] == "none"
                and "error" not in r}
        slow = med([(r["ns_per_call"] / base[r["rep"]] - 1) * 100 for r in ok if r["rep"] in base])
        w, tot, rss = med([r.get("window_pct") for r in ok]), med([r.get("run_pct") for r in ok]), \
            med([r.get("rss_kb") for r in ok])
        srow = ["fnprof -p PID -F 99", f"{w:.3f}%" if w is not None else "-",
                f"{tot:.3f}%" if tot is not None else "-",
                f"{slow:+.2f}%" if slow is not None else "-", f"{rss / 1024:.1f} MiB" if rss else "-"]
    else:
        srow = ["fnprof -p PID -F 99", "not run", "-", "-", "-"]
    parts.append("### Sampling mode at 99 Hz\n\n(target: 1 us spin calls in a loop; fnprof's CPU as % of one "
                 "CPU: while the target runs (schedstat), and over fnprof's whole run start to exit (rusage); "
                 "target slowdown: its ns per call against an untraced run of the same repeat)\n\n"
                 + table(["mode", "fnprof CPU, steady", "fnprof CPU, whole run", "target slowdown", "peak RSS"],
                         [srow]))

    # 5. goals
    g = []

    def goal(text, ok, measured):
        g.append([text, measured, "n/a" if ok is None else ("yes" if ok else "NO")])

    for case in NOP_CASES:
        d = res.paired(next(x for x in CASES if x[0] == case)[1])[0]
        goal(f"cost <= floor + 150 ns ({case.split('_')[1]}, paired)", None if d is None else d <= 150,
             fmt_ns(d, True))
    a1 = med([r.get("attach_ms") for r in runs if r["tool"] == "fnprof" and r["case"] != "many"
              and "error" not in r])
    goal("attach 1 function < 30 ms", None if a1 is None else a1 < 30, f"{a1:.1f} ms" if a1 is not None else "-")
    am = med([r.get("attach_ms") for r in runs if r["tool"] == "fnprof" and r["case"] == "many"
              and "error" not in r])
    goal("attach 1000 functions < 1 s", None if am is None else am < 1000, f"{am:.0f} ms" if am is not None else "-")
    for case, lim, txt in [("spin_1us", 10, "1 us spin within 10%"), ("spin_10us", 3, "10 us spin within 3%")]:
        v, e, p = res.lat_err(case, "fnprof")
        goal(txt, None if p is None else abs(p) <= lim, f"{p:+.1f}%" if p is not None else "-")
    v, e, p = res.lat_err("nop_o2", "fnprof")
    goal("2 ns function (-O2) reads < 0.3 us", None if v is None else v < 300, fmt_ns(v))
    af = med([r.get("attach_ms") for r in runs if r["tool"] == "funclatency" and "error" not in r])
    goal("attach 1 function below funclatency's (median)", None if a1 is None or af is None else a1 < af,
         f"{a1:.1f} vs {af:.1f} ms" if a1 is not None and af is not None else "-")
    cpu = med([r.get("cpu_ms") for r in runs if r["tool"] == "fnprof" and r["case"] in ("spin_1ms", "sleep_1ms")
               and "error" not in r])
    goal("fnprof's own CPU, a ~0.5 s one-function run, < 50 ms", None if cpu is None else cpu < 50,
         f"{cpu:.0f} ms" if cpu is not None else "-")
    for case in TINY_CASES:
        rg = res.lat_range(case, "fnprof")
        goal(f"{case}: every run < 0.3 us", None if rg is None else rg[1] < 300,
             f"{fmt_ns(rg[0])}..{fmt_ns(rg[1])}" if rg else "-")
    for case in ("spin_1ms", "sleep_1ms"):
        for q in ("p50", "p99"):
            v, e, p = res.lat_err(case, "fnprof", f"tool_{q}", f"truth_{q}")
            goal(f"{case.replace('_', ' ')} {q} within 3%", None if p is None else abs(p) <= 3,
                 f"{p:+.1f}%" if p is not None else "-")
    w = srow[1]
    wv = float(w.rstrip("%")) if w.endswith("%") else None
    goal("sampling at 99 Hz < 0.5% of one CPU", None if wv is None else wv < 0.5, w)
    parts.append("### fnprof against the goals of issue 5\n\n" + table(["goal", "measured", "met"], g))

    notes = []
    for r in runs:
        if r.get("tool_calls") is not None and r.get("calls") and r["tool_calls"] != r["calls"]:
            notes.append(f"{r['tool']} on {r['case']} (repeat {r['rep']}) counted {r['tool_calls']} calls "
                         f"of {r['calls']}")
    failed = sorted({(r["case"], r["tool"], r["error"]) for r in runs if "error" in r})
    for c, t, e in failed:
        notes.append(f"{t} on {c}: {e}")
    if notes:
        parts.append("Notes:\n\n" + "\n".join("- " + n for n in notes[:40]))
    return "\n\n".join(parts) + "\n"


def busy_uprobe_tasks():
    """Tasks blocked in the kernel's uprobe/perf teardown or attach (another tool detaching, say)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[6]) & 0x00200000:
                    continue   # PF_KTHREAD
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                    w = f.read()
                if "uprobe" in w or w in ("wait_rcu_gp", "synchronize_rcu_normal"):
                    n += 1
        except OSError:
            pass
    return n


def machine():
    model = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    u = os.uname()
    return f"Linux {u.release} {u.machine}, {model}, {os.cpu_count()} CPUs"


def versions():
    out = []
    for argv in (["bpftrace", "--version"],):
        try:
            out.append(subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip())
        except Exception:   # noqa: BLE001
            out.append(f"{argv[0]}: not found")
    try:
        out.append("libbpf " + subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libbpf1"],
                                             capture_output=True, text=True, timeout=10).stdout.strip())
    except Exception:   # noqa: BLE001
        pass
    return ", ".join(x for x in out if x)


# results.md ends with measurements that bench.py does not make (bench/burst.py, by hand): kept.
KEPT_MARKER = "<!-- Below: measurements not made by bench.py"


def kept_measurements(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ""
    i = text.find(KEPT_MARKER)
    return "\n" + text[i:] if i >= 0 else ""


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--report":   # re-render the tables from a runs.json
        with open(sys.argv[2]) as f:
            d = json.load(f)
        print(build_report(d["runs"], d["meta"]))
        return 0
    if os.geteuid() != 0:
        log("bench: needs root (uprobes, BPF)")
        return 1
    t_start = now()
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except Exception:   # noqa: BLE001
        rev = "?"
    busy = busy_uprobe_tasks()
    if busy:
        log(f"bench: warning: {busy} tasks are inside uprobe (de)registration now; attach times will suffer")
    meta = dict(busy_at_start=busy, machine=machine(), date=datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                fnprof=rev or "?", versions=versions(), repeats=REPEATS)
    runs = []
    for rep in range(REPEATS):
        for case in CASES:
            if ONLY and case[0] not in ONLY:
                continue
            tools = TOOLS if case[0] in NOP_CASES else WL_TOOLS if case[0] in WL_CASES else \
                [t for t in TOOLS if t not in NOP_ONLY_TOOLS]
            for tool in tools:
                r = run_one(case, tool)
                r["rep"] = rep
                runs.append(r)
                log(f"[{now() - t_start:6.1f}s] rep {rep + 1}/{REPEATS} {case[0]:10s} {tool:14s} "
                    + (f"failed: {r['error']}" if "error" in r else
                       f"{r['ns_per_call']:10.1f} ns/call" + (f"  attach {r['attach_ms']:.1f} ms"
                                                            if "attach_ms" in r else "")
                       + (f"  read {r['tool_avg']:.0f} ns" if r.get("tool_avg") is not None else "")))
        for binname in ([] if ONLY else PAIR_CALLS):
            r = run_pair(binname, rep % 2 == 0)
            r["rep"] = rep
            runs.append(r)
            log(f"[{now() - t_start:6.1f}s] rep {rep + 1}/{REPEATS} pair {binname:8s} "
                + (f"failed: {r['error']}" if "error" in r else
                   f"fnprof - floor {r['fnprof_minus_floor']:+.0f} ns/call ({r['links']})"))
    secs = 2 if QUICK else 5
    for rep in range(0 if ONLY else 1 if QUICK else 3):
        for tool in ["none", "fnprof"]:
            r = run_sampling(tool, secs)
            r["rep"] = rep
            runs.append(r)
            log(f"[{now() - t_start:6.1f}s] sampling: {tool}: "
                + (r.get("error") or f"{r['ns_per_call']:.1f} ns/call"
                   + (f", fnprof {r.get('window_pct') or 0:.3f}% CPU" if tool == "fnprof" else "")))
            if tool == "fnprof" and r.get("error", "").startswith("n/a"):
                break
        if runs[-1].get("error", "").startswith("n/a"):
            break
    # Last: 1000 functions. Detaching 2000 perf-event uprobes waits for RCU grace periods one by one on
    # this kernel and slows every uprobe attach on the machine meanwhile, so it goes after the rest, once.
    many_tools = [] if ONLY else ["fnprof"] + (["bpftrace"] if os.environ.get("BENCH_MANY_BPFTRACE") else [])
    for tool in many_tools:
        r = run_many(tool)
        r["rep"] = 0
        runs.append(r)
        log(f"[{now() - t_start:6.1f}s] many: {tool}: " + (r.get("error") or f"{r['attach_ms']:.0f} ms")
            + (f", exit {r['exit_s']:.1f} s after the target" if "exit_s" in r else ""))
    with open(os.path.join(OUT, "runs-cases.json" if ONLY else "runs.json"), "w") as f:
        json.dump(dict(meta=meta, runs=runs), f, indent=1)
    report = build_report(runs, meta)
    report += f"\nBench time: {now() - t_start:.0f} s.\n"
    print(report)
    if ONLY:
        return 0
    path = os.path.join(HERE, "results.md")
    kept = kept_measurements(path)   # before open(path, "w") empties the file
    with open(path, "w") as f:
        f.write("# fnprof benchmark results\n\nProduced by `make bench` (bench/run.sh).\n\n" + report + kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
