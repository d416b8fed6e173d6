"""A tool's own peak RSS: the VmHWM of its memory, read while it runs.

wait4()'s ru_maxrss is not it for a child of this runner: the high-water mark a process carries over
its exec includes the memory of the process it was forked from (here the Python runner's, tens of
MiB), so every tool read at least the runner's size. VmHWM is its own memory's, after the exec. It is
read every few ms until the process exits (a zombie has none): growth in its last few ms is missed.
"""
import os
import time

_peak = {}


def sample(pid):
    """Reads pid's VmHWM now; returns the highest seen (KiB), None before any reading."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    kib = int(line.split()[1])
                    _peak[pid] = max(kib, _peak.get(pid, 0))
                    break
    except (OSError, ValueError):
        pass
    return _peak.get(pid)


def peak(pid):
    """The highest VmHWM seen of pid (KiB, None if never read), forgotten then: pids are reused."""
    return _peak.pop(pid, None)


def wait(pid, poll=0.005):
    """wait4(pid) while sampling it: (status, rusage, peak KiB or None)."""
    while True:
        sample(pid)
        wpid, status, ru = os.wait4(pid, os.WNOHANG)
        if wpid == pid:
            return status, ru, peak(pid)
        time.sleep(poll)
