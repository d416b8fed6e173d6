"""The kernel's BPF run-time statistics (run_time_ns, run_cnt per program), on for a bench's cases.

They cost a little on every program run, so they are on only while a bench that reads them runs, and
put back as they were after it.
"""
import argparse
import contextlib
import os

STATS = "/proc/sys/kernel/bpf_stats_enabled"


@contextlib.contextmanager
def bpf_stats():
    old = open(STATS).read().strip() if os.path.exists(STATS) else None
    if old is not None:
        open(STATS, "w").write("1")
    try:
        yield
    finally:
        if old is not None:
            open(STATS, "w").write(old)


def repeats_arg():
    """--repeats (BENCH_REPEATS, default 5) and --quick (BENCH_QUICK): how many times each case runs, 2
    when quick; and whether the bench is quick."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=int(os.environ.get("BENCH_REPEATS", 5)))
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get("BENCH_QUICK")))
    a = ap.parse_args()
    return (2 if a.quick else a.repeats), a.quick
