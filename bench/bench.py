#!/usr/bin/env python3
"""fnprof benchmark: per-call overhead, latency error, attach time, fnprof's own cost.

Every tool traces the same target functions, interleaved within each repeat:
  none         the target untraced
  floor        an empty uprobe + uretprobe pair (bench/floor.c): the least a tracer can cost
  bpftrace     uprobe/uretprobe with a stats() map, as a one-liner would
  funclatency  libbpf-tools
  fnprof       this project
The target (bench/loop.c) waits for SIGUSR1, which is sent once the tool's breakpoint is in
the target's memory, then runs its loop and prints what it measured itself.
Results: medians over REPEATS; printed, and written to bench/results.md.
Environment: BENCH_QUICK=1 for a short run.
"""
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "bench", "bin")
FNPROF = os.path.join(ROOT, "fnprof")
QUICK = os.environ.get("BENCH_QUICK") == "1"
REPEATS = 3 if QUICK else 5
TOOLS = ["none", "floor", "bpftrace", "funclatency", "fnprof"]


def entry_addr(pid, func):
    """Runtime address of func in pid, from fnprof --list (file offset) and /proc/PID/maps."""
    out = subprocess.run([FNPROF, "--list", "-p", str(pid), "-f", func], capture_output=True, text=True).stdout
    line = out.splitlines()[1].split()
    obj, off = line[0], int(line[2], 16)
    for m in open(f"/proc/{pid}/maps").read().splitlines():
        parts = m.split()
        start, end = (int(x, 16) for x in parts[0].split("-"))
        pgoff = int(parts[2], 16)
        if len(parts) >= 6 and parts[5] == obj and pgoff <= off < pgoff + end - start:
            return start + off - pgoff
    raise RuntimeError(f"{func} not mapped in {pid}")


def has_int3(pid, addr):
    try:
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(addr)
            return mem.read(1) == b"\xcc"
    except OSError:
        return False


def wait_int3(pid, addrs, t0, timeout=30):
    """Seconds from t0 until every address holds a breakpoint (None on timeout)."""
    pending = list(addrs)
    while pending and time.time() - t0 < timeout:
        pending = [a for a in pending if not has_int3(pid, a)]
        if pending:
            time.sleep(0.0005)
    return None if pending else time.time() - t0


def tool_cmd(tool, pid, binary, func):
    if tool == "floor":
        return [os.path.join(BIN, "floor"), str(pid), binary, func]
    if tool == "bpftrace":
        prog = (f"uprobe:{binary}:{func} {{ @s[tid] = nsecs; }} "
                f"uretprobe:{binary}:{func} /@s[tid]/ {{ @lat = stats(nsecs - @s[tid]); delete(@s[tid]); }}")
        return ["bpftrace", "-p", str(pid), "-e", prog]
    if tool == "funclatency":
        return ["funclatency", "-p", str(pid), f":{func}"]
    return [FNPROF, "-p", str(pid), "-f", func, "--json"]


def parse_tool(tool, out):
    """The tool's average latency (ns) and, where it gives them, p50 and p99."""
    if tool == "bpftrace":
        m = re.search(r"@lat: count \d+, average (\d+)", out)
        return {"avg": float(m.group(1))} if m else {}
    if tool == "funclatency":
        # Only a log2 histogram: the mean from bucket midpoints, as a reader of it would.
        unit = re.search(r"(nsecs|usecs|msecs)\s*:\s*count", out)
        scale = {"nsecs": 1, "usecs": 1e3, "msecs": 1e6}[unit.group(1)] if unit else 1
        rows = [(int(lo), int(hi), int(c)) for lo, hi, c in re.findall(r"(\d+) -> (\d+)\s*: (\d+)", out)]
        n = sum(c for _, _, c in rows)
        return {"avg": scale * sum(c * (lo + hi) / 2 for lo, hi, c in rows) / n} if n else {}
    if tool == "fnprof":
        lines = [l for l in out.splitlines() if l.startswith('{"mode":"trace"')]
        if not lines:
            return {}
        import json
        f = json.loads(lines[-1])["functions"][0]
        return {"avg": f["wall_ns"]["avg"], "p50": f["wall_ns"]["p50"], "p99": f["wall_ns"]["p99"]}
    return {}


def run_case(tool, binary, args, func="f"):
    """One traced run of the target. Returns the target's and the tool's figures."""
    target = subprocess.Popen([binary] + [str(a) for a in args], stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, BENCH_WAIT="1"))
    target.stdout.readline()
    res = {}
    proc = None
    try:
        if tool != "none":
            addr = entry_addr(target.pid, func)
            t0 = time.time()
            proc = subprocess.Popen(tool_cmd(tool, target.pid, binary, func), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            res["attach_s"] = wait_int3(target.pid, [addr], t0)
            if res["attach_s"] is None:
                res["error"] = "breakpoint never appeared"
        target.send_signal(signal.SIGUSR1)
        out = target.communicate(timeout=600)[0]
        m = re.search(r"ns_per_call=([\d.]+) inside_avg_ns=([\d.]+)", out)
        res["ns_per_call"], res["inside_ns"] = float(m.group(1)), float(m.group(2))
        if proc:
            if tool != "fnprof":  # fnprof ends by itself when the target exits
                time.sleep(0.2)
                proc.send_signal(signal.SIGINT)
            text = proc.stdout.read()
            res.update(parse_tool(tool, text))
            try:
                _, status, ru = os.wait4(proc.pid, 0)
                proc.returncode = status
                res["rss_kb"], res["cpu_s"] = ru.ru_maxrss, ru.ru_utime + ru.ru_stime
            except ChildProcessError:  # reaped already: no resource figures for this run
                proc.returncode = 0
    finally:
        for p in (target, proc):
            if p and p.poll() is None:
                p.kill()
    return res


def median(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, unit="ns", digits=0):
    return "n/a" if v is None else f"{v:.{digits}f} {unit}".strip()


def overhead_table(out):
    """Per-call cost added to a ~2 ns function, by entry build."""
    n = 20000 if QUICK else 50000
    builds = [("loop-stepped", "-O2 (first instruction single-stepped)"),
              ("loop-push", "push %rbp (emulated)"),
              ("loop-nop5", "5-byte nop (optimized into a call)")]
    out.append("\n### Per-call cost added to a 2 ns function (median of %d, ns per call)\n" % REPEATS)
    out.append("| entry | none | floor | bpftrace | funclatency | fnprof | fnprof - floor | fnprof / floor |")
    out.append("|---|---|---|---|---|---|---|---|")
    for build, label in builds:
        runs = {t: [] for t in TOOLS}
        for _ in range(REPEATS):
            for t in TOOLS:
                runs[t].append(run_case(t, os.path.join(BIN, build), ["call", n]))
        base = median(runs["none"], "ns_per_call")
        cost = {t: (median(runs[t], "ns_per_call") or 0) - base for t in TOOLS[1:]}
        out.append(f"| {label} | {base:.1f} | " + " | ".join(f"{cost[t]:.0f}" for t in TOOLS[1:])
                   + f" | {cost['fnprof'] - cost['floor']:.0f} | {cost['fnprof'] / cost['floor']:.2f} |")
        print(out[-1], flush=True)


def latency_table(out):
    """What each tool reports for functions whose time the target measures itself."""
    cases = [("2 ns function (push %rbp entry)", "loop-push", ["call", 20000], "f", None),
             ("1 us spin", "loop-push", ["spin", 1, 20000], "spin", None),
             ("10 us spin", "loop-push", ["spin", 10, 5000], "spin", None),
             ("1 ms spin", "loop-push", ["spin", 1000, 300 if not QUICK else 100], "spin", None),
             ("1 ms sleep", "loop-push", ["sleep", 1000, 300 if not QUICK else 100], "nap", None)]
    out.append("\n### Latency reported vs the target's own measurement (median of %d)\n" % REPEATS)
    out.append("| case | truth | bpftrace | funclatency | fnprof avg | fnprof p50 | fnprof error |")
    out.append("|---|---|---|---|---|---|---|")
    for label, build, args, func, _ in cases:
        runs = {t: [] for t in ("bpftrace", "funclatency", "fnprof")}
        for _ in range(REPEATS):
            for t in runs:
                runs[t].append(run_case(t, os.path.join(BIN, build), args, func))
        truth = median(runs["fnprof"], "inside_ns") if func != "f" else 2.0
        cells = []
        for t in runs:
            v = median(runs[t], "avg")
            cells.append("n/a" if v is None else f"{v:.0f} ({100 * (v - truth) / truth:+.0f}%)" if truth > 10
                         else f"{v:.0f}")
        fn_avg, fn_p50 = median(runs["fnprof"], "avg"), median(runs["fnprof"], "p50")
        err = "n/a" if fn_avg is None else f"{fn_avg - truth:+.0f} ns"
        out.append(f"| {label} | {truth:.0f} | {cells[0]} | {cells[1]} | {cells[2]} | {fmt(fn_p50)} | {err} |")
        print(out[-1], flush=True)
        if label == "1 ms spin":
            resources = runs["fnprof"]
    rss, cpu = median(resources, "rss_kb"), median(resources, "cpu_s")
    out.append(f"\nfnprof's own cost over the 1 ms spin runs: max RSS {fmt(rss and rss / 1024, 'MiB', 1)}, "
               f"CPU {fmt(cpu and cpu * 1000, 'ms')} per run (load, calibration, attach, reports, detach).")


def attach_table(out):
    """Start to breakpoint in place: one function, and 1000 (fnprof glob)."""
    out.append("\n### Attach time (from start to breakpoint in the target, median of %d)\n" % REPEATS)
    out.append("| tool | 1 function | 1000 functions |")
    out.append("|---|---|---|")
    for t in ("bpftrace", "funclatency", "fnprof"):
        one = median([run_case(t, os.path.join(BIN, "loop-push"), ["call", 1000]) for _ in range(REPEATS)],
                     "attach_s")
        many = attach_many() if t == "fnprof" else None
        out.append(f"| {t} | {fmt(one and one * 1000, 'ms', 1)} | {fmt(many and many * 1000, 'ms')} |")
        print(out[-1], flush=True)


def attach_many():
    target = subprocess.Popen([os.path.join(BIN, "many")], stdout=subprocess.PIPE, text=True)
    target.stdout.readline()
    try:
        addrs = [entry_addr(target.pid, "f_0"), entry_addr(target.pid, "f_999")]
        t0 = time.time()
        proc = subprocess.Popen([FNPROF, "-p", str(target.pid), "-f", "f_*", "-d", "30"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        took = wait_int3(target.pid, addrs, t0, timeout=60)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        return took
    finally:
        target.kill()
        target.wait()


def sampling_cost(out):
    """fnprof sampling at 99 Hz of a busy process: its own CPU time, and the BPF program's."""
    secs = 5 if QUICK else 10
    target = subprocess.Popen([os.path.join(ROOT, "tests", "bin", "burn"), str(secs + 5)],
                              stderr=subprocess.DEVNULL)
    try:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=False)
        proc = subprocess.Popen([FNPROF, "-p", str(target.pid), "-d", str(secs)], stderr=subprocess.PIPE, text=True)
        time.sleep(secs / 2)
        stats = subprocess.run(["bpftool", "prog", "show", "name", "on_sample"], capture_output=True,
                               text=True).stdout
        proc.stderr.read()
        _, _, ru = os.wait4(proc.pid, 0)
        user = (ru.ru_utime + ru.ru_stime) / secs * 100
        m = re.search(r"run_time_ns (\d+) run_cnt (\d+)", stats)
        bpf = f"{int(m.group(1)) / int(m.group(2)):.0f} ns per sample" if m else "n/a"
        out.append(f"\n### Sampling at 99 Hz\n\nfnprof process: {user:.2f}% of one CPU over {secs} s "
                   f"(loading, symbolizing, reporting); BPF program: {bpf} "
                   f"(99 samples/s x that = {float(m.group(1)) / int(m.group(2)) * 99 / 1e7:.4f}% of one CPU)." if m else "")
        print(out[-1], flush=True)
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"], check=False)
        target.kill()
        target.wait()


def main():
    if os.geteuid() != 0:
        sys.exit("bench: needs root")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    out = [f"## fnprof benchmark\n\n{time.strftime('%Y-%m-%d')}, Linux {platform.release()}, {os.cpu_count()} CPUs "
           f"({cpu}), {'quick run' if QUICK else 'full run'}."]
    print(out[0], flush=True)
    overhead_table(out)
    latency_table(out)
    attach_table(out)
    sampling_cost(out)
    with open(os.path.join(ROOT, "bench", "results.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\nwritten to bench/results.md")


if __name__ == "__main__":
    main()
