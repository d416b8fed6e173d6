#!/usr/bin/env python3
"""Production binaries (issue 12): what --call-graph dwarf finds and costs, and symbol loading from
a big separate debug file. Run by `make bench` after bench.py (or alone: python3 bench/prod.py, as
root, after `make -C bench all`); prints its tables and puts them in bench/results.md, in the section
between the "prod.py" markers.

1. Stacks: bench/.output/burn_nofp (-O2 -fomit-frame-pointer, stripped, symbols from its debug file
   beside it), sampled at 347 Hz for 4 s, REPEATS times: the share of burn_a/burn_b samples whose
   stack reaches main, and their self ratio against the 3:1 the target measures itself.
2. Cost: a busy 2-thread process (work_nofp threads 2 N, both CPUs of this VM) sampled with -p for
   10 s at 99 and 999 Hz, --call-graph dwarf and fp: fnprof's CPU time (rusage) as % of one core,
   and the unwinding thread's own CPU (JSON unwind.cpu_ns).
3. Symbols: a generated C program of about 50 MB (-O1 -g: 85000 functions, 17 renamed copies of one
   compiled chunk), stripped, its debug file beside it; fnprof -p PID --list -f on a pattern of it:
   wall time and peak RSS, against the same binary with its own .symtab.
"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import peakrss

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, ".output")
FNPROF = os.path.join(HERE, "..", "fnprof")
REPEATS = int(os.environ.get("BENCH_REPEATS", "3"))


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def split(src, d, name):
    exe, dbg = os.path.join(d, name), os.path.join(d, name + ".debug")
    shutil.copy(src, exe)
    run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
    run(["strip", "--strip-all", exe], check=True)
    run(["objcopy", "--add-gnu-debuglink=" + dbg, exe], check=True)
    return exe


def timed(argv):
    """Runs argv; (CompletedProcess, wall s, its CPU s from wait4, its peak RSS MiB: peakrss.py)."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    status, ru, peak = peakrss.wait(p.pid)
    wall = time.monotonic() - t0
    out, err = p.stdout.read(), p.stderr.read()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p, out, err, wall, ru.ru_utime + ru.ru_stime, (peak or 0) / 1024


def stacks(d):
    exe = split(os.path.join(OUT, "burn_nofp"), d, "burn_nofp")
    rows = []
    for _ in range(REPEATS):
        folded = os.path.join(d, "f.folded")
        p = run([FNPROF, "-F", "347", "--json", "--folded", folded, "--", exe, "4"], timeout=120)
        ratio = float(re.search(r"ratio=([\d.]+)", p.stderr).group(1))
        rep = [json.loads(l) for l in p.stderr.splitlines() if l.startswith("{")][-1]
        lines = [(l.rsplit(" ", 1)[0].split(";"), int(l.rsplit(" ", 1)[1])) for l in open(folded)]
        lines = [([x for x in f if not x.endswith(" (inlined)")], c) for f, c in lines]
        leaf = [(f, c) for f, c in lines if f[-1] in ("burn_a", "burn_b")]
        reach = sum(c for f, c in leaf if "main" in f) / max(1, sum(c for _, c in leaf))
        self_ = {f["name"]: f["self_samples"] for f in rep["functions"]}
        rows.append((reach, self_["burn_a"] / self_["burn_b"] / ratio - 1))
    return rows


def cost(d):
    exe = split(os.path.join(OUT, "work_nofp"), d, "work_nofp")
    res = {}
    for mode in ("dwarf", "fp"):
        for hz in (99, 999):
            target = subprocess.Popen([exe, "threads", "2", "1000000"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            time.sleep(0.5)
            p, out, err, wall, cpu, rss = timed([FNPROF, "-p", str(target.pid), "-d", "10", "-F", str(hz),
                                                 "--call-graph", mode, "--json"])
            target.kill()
            target.wait()
            rep = [json.loads(l) for l in err.splitlines() if l.startswith("{")][-1]
            unwind = rep.get("unwind", {})
            res[(mode, hz)] = (100 * cpu / wall, 100 * unwind.get("cpu_ns", 0) / 1e9 / wall, rep["samples"], rss,
                               unwind.get("truncated", 0), unwind.get("cpu_ns", 0) / 1e3 / max(unwind.get("samples", 1), 1))
    return res


def big_program(d):
    """A ~50 MB program with DWARF: one chunk of 5000 functions compiled once, linked 17 times under
    renamed symbols."""
    src = ["volatile long sink;"]
    for i in range(5000):
        src.append(f"struct s_{i} {{ long a, b; int c[4]; }};")
        src.append(f"__attribute__((noinline)) long big_fn_{i}(long x, struct s_{i} *p) {{ long y = x * {i} + p->a; "
                   f"for (int k = 0; k < 4; k++) y += p->c[k] * (k + {i}); if (y & 1) y ^= p->b; sink += y; return y; }}")
    open(os.path.join(d, "chunk.c"), "w").write("\n".join(src) + "\n")
    open(os.path.join(d, "main.c"), "w").write("#include <unistd.h>\nint main(void) { pause(); return 0; }\n")
    run(["cc", "-g", "-O1", "-c", os.path.join(d, "chunk.c"), "-o", os.path.join(d, "chunk.o")], check=True)
    objs = []
    for k in range(17):
        o = os.path.join(d, f"c{k}.o")
        run(["objcopy", f"--prefix-symbols=c{k}_", os.path.join(d, "chunk.o"), o], check=True)
        objs.append(o)
    exe = os.path.join(d, "big")
    run(["cc", "-g", os.path.join(d, "main.c")] + objs + ["-o", exe], check=True)
    return exe


def symbols(d):
    full = big_program(d)
    size = os.path.getsize(full)
    stripped = split(full, d, "big_stripped")
    res = {}
    for name, exe in (("own .symtab", full), ("debug file", stripped)):
        target = subprocess.Popen([exe])
        time.sleep(0.2)
        best = None
        for _ in range(REPEATS):
            p, out, err, wall, cpu, rss = timed([FNPROF, "-p", str(target.pid), "--list", "-f", "c3_big_fn_12*"])
            assert p.returncode == 0 and "c3_big_fn_12" in out, err
            best = min(best or (9e9, 0), (wall, rss))
        target.kill()
        target.wait()
        res[name] = best
    return size, res


def table(head, rows):
    w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "| " + " | ".join(str(x).ljust(n) for x, n in zip(r, w)) + " |"
    return "\n".join([line(head), "|" + "|".join("-" * (n + 2) for n in w) + "|"] + [line(r) for r in rows])


def main():
    if os.geteuid():
        sys.exit("prod.py needs root (BPF)")
    d = tempfile.mkdtemp()
    t0 = time.time()
    try:
        st = stacks(d)
        co = cost(d)
        size, sy = symbols(d)
    finally:
        shutil.rmtree(d)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    reach, err = med([r for r, _ in st]), med([abs(e) for _, e in st])
    out = ["<!-- prod.py: begin -->", "## Production binaries (bench/prod.py, issue 12)", "",
           f"Stacks of an -O2 -fomit-frame-pointer program (burn, stripped, its debug file beside it), 347 Hz, "
           f"4 s, {REPEATS} runs, medians:", "",
           table(["figure", "measured", "goal", "met"],
                 [["burn_a/burn_b samples whose stack reaches main", f"{100 * reach:.1f}%", ">= 90%",
                   "yes" if reach >= 0.9 else "no"],
                  ["self ratio burn_a:burn_b against the target's own", f"{100 * err:.1f}% off", "within 15%",
                   "yes" if err <= 0.15 else "no"]]), "",
           "What sampling costs fnprof (rusage over a 10 s `-p` run of a process keeping both CPUs busy):", "",
           table(["call graph", "Hz", "samples", "fnprof CPU (% of one core)", "of which unwinding",
                  "unwinding per sample", "cut short", "peak RSS"],
                 [[m, hz, v[2], f"{v[0]:.2f}%", f"{v[1]:.2f}%",
                   f"{v[5]:.1f} us" if m == "dwarf" else "-", v[4], f"{v[3]:.1f} MiB"]
                  for (m, hz), v in sorted(co.items())]), "",
           "(fnprof CPU counts the whole run, start-up included: loading BPF, reading every mapped "
           "object's symbols. The run is 10 s; the target's CPU share varies with the VM's other load.)", "",
           f"Symbols from the debug file of a {size / 2**20:.0f} MB program (85000 functions, -O1 -g), "
           f"`fnprof -p PID --list -f PATTERN`, best of {REPEATS}:", "",
           table(["symbols from", "fnprof wall", "peak RSS"],
                 [[k, f"{v[0]:.2f} s", f"{v[1]:.1f} MiB"] for k, v in sy.items()]), "",
           f"prod.py time: {time.time() - t0:.0f} s.", "<!-- prod.py: end -->"]
    text = "\n".join(out)
    print(text)
    path = os.path.join(HERE, "results.md")
    old = open(path).read() if os.path.exists(path) else ""
    old = re.sub(r"\n*<!-- prod.py: begin -->.*<!-- prod.py: end -->\n?", "", old, flags=re.S)
    open(path, "w").write(old.rstrip("\n") + "\n\n" + text + "\n")


if __name__ == "__main__":
    main()
