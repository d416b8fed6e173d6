"""The kernel's BPF run-time statistics (run_time_ns, run_cnt per program), on for a bench's cases.

They cost a little on every program run, so they are on only while a bench that reads them runs, and
put back as they were after it.
"""
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
