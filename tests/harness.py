"""Helpers shared by the integration tests: run fnprof, start targets, parse reports.

A test is a function named test_* in a tests/test_*.py module. It fails by raising
AssertionError (use check()), and is skipped, visibly, by raising Skip.
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "tests", "bin")
FNPROF = os.environ.get("FNPROF", os.path.join(ROOT, "fnprof"))
# The test build: fnprof with the hooks that only tests use (FNPROF_TEST_*; tests/tests.mk).
FNPROF_TEST = os.path.join(ROOT, "fnprof-test")


class Skip(Exception):
    """Raised by a test that cannot run here; the reason is printed."""


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def check_no_drops(dropped, calls, preemptions=0):
    """Nothing dropped, but switches back in that sched_switch did not report: counted, not lost
    silently, a few in 10000 calls of threads preempted all the time (see test_slow), or in a
    hundred preemptions inside the calls (3 in 300 calls of 200 us once, under load)."""
    d = dict(dropped)
    unseen = d.pop("switches_in_unseen", 0)
    check(unseen <= max(2, 0.001 * calls, 0.03 * preemptions) and not any(d.values()), f"dropped: {dropped}")


def target(name):
    """Path of a built target program (tests/targets/NAME.c -> tests/bin/NAME)."""
    path = os.path.join(BIN, name)
    check(os.path.exists(path), f"target {path} not built (run make test-build)")
    return path


def run_fnprof(args, timeout=60, env=None, stdin=None, exe=None):
    """Runs fnprof (or exe) to completion; returns the CompletedProcess (text, both streams)."""
    return subprocess.run([exe or FNPROF] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=env, stdin=stdin)


def fnprof_test():
    """fnprof-test's path (for a test that sets a test hook), checked to be built."""
    check(os.path.exists(FNPROF_TEST), f"{FNPROF_TEST} not built (run make test-build)")
    return FNPROF_TEST


def traced(args, *cmd, timeout=180, env=None, exe=None):
    """Launch mode with --json: (final report, process result); fnprof must exit 0. The report goes
    to a file (-o): the result's stdout is the command's alone, to compare with an untraced run's."""
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "report.json")
        p = run_fnprof(list(args) + ["--json", "-o", out, "--"] + [str(c) for c in cmd], timeout=timeout, env=env,
                       exe=exe)
        check(p.returncode == 0, f"fnprof exit {p.returncode}:\n{p.stderr[-3000:]}")
        with open(out) as f:
            return final_report(f.read()), p
    finally:
        shutil.rmtree(d)


def command_output(text):
    """A launched command's own stdout lines, fnprof's --json reports (also on stdout) left out."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("{"))


def plain_output(*cmd):
    """What a command prints untraced (stdout), to compare with a traced run's."""
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60).stdout


def json_reports(text):
    """The JSON report objects (one per line) in fnprof's output."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def final_report(text):
    reps = json_reports(text)
    check(reps, f"no JSON report in output:\n{text[-3000:]}")
    return reps[-1]


def func(report, name):
    """The entry of function name in a JSON report."""
    for f in report["functions"]:
        if f["name"] == name:
            return f
    raise AssertionError(f"function {name} not in report: {[f['name'] for f in report['functions']]}")


def truth(text, key):
    """Ground truth printed by a target: lines 'truth KEY field=value field=value'."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "truth" and parts[1] == key:
            return {k: float(v) for k, v in (p.split("=", 1) for p in parts[2:])}
    raise AssertionError(f"no 'truth {key}' line in target output:\n{text[-2000:]}")


def within(value, expected, rel=0.0, abs_=0.0):
    return abs(value - expected) <= max(rel * abs(expected), abs_)


class Reaped:
    """A background process in self.proc, killed and reaped when its with-block ends."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


class Target(Reaped):
    """A target program started in the background, to attach to with -p."""

    def __init__(self, name, *args, ready_line="ready"):
        self.proc = subprocess.Popen([target(name)] + [str(a) for a in args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.first = self.proc.stdout.readline()
        check(ready_line in self.first, f"{name} did not start: {self.first!r}")
        self.pid = self.proc.pid

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=30)
        return self.first + out, err


def share_matches(k, n, want, floor=0.02):
    """Whether k of n samples is the share want, within 4 standard deviations of a binomial count
    (at least floor): fewer samples on a busy machine widen the bound, as they widen the noise,
    while a wrong share still fails with the samples a run has."""
    sigma = (want * (1 - want) / max(n, 1)) ** 0.5
    return abs(k / max(n, 1) - want) <= max(4 * sigma, floor)


def probes_left(pid):
    """Number of uprobe breakpoints (int3) still installed in pid, seen through perf's list of uprobes."""
    # Each attached uprobe appears as a perf event fd of some process; with fnprof gone there must be none.
    n = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                try:
                    if os.readlink(f"/proc/{p}/fd/{fd}") == "anon_inode:[perf_event]":
                        n += 1
                except OSError:
                    pass
        except OSError:
            pass
    return n


def wait_for(cond, timeout=10.0, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


class ElfWriter:
    """A crafted x86-64 ELF executable, for tests of hostile files: one PT_LOAD (read, execute) maps the
    file at BASE; sections are laid out in the order added. A section may claim more bytes than it holds
    (claim=): it is then placed past everything else and the file extended with ftruncate, so that the
    claimed bytes are a hole (a sparse file)."""
    BASE = 0x400000
    PROGBITS, SYMTAB, STRTAB, NOBITS, DYNSYM = 1, 2, 3, 8, 11
    ALLOC, EXEC = 2, 4

    def __init__(self):
        self.secs = []

    def add(self, name, sh_type, data=b"", flags=0, link=0, entsize=0, addr=None, claim=None, offset=None):
        """Adds a section; returns its index. addr: BASE + its file offset when None and flags has ALLOC.
        offset: a fixed file offset (the data is then not written) instead of a place of its own."""
        self.secs.append(dict(name=name, type=sh_type, data=data, flags=flags, link=link, entsize=entsize,
                              addr=addr, claim=claim, offset=offset))
        return len(self.secs)

    @staticmethod
    def sym(name_off, value, size, shndx=1, info=0x12):
        """One Elf64_Sym (default: a global function)."""
        return struct.pack("<IBBHQQ", name_off, info, 0, shndx, value, size)

    def write(self, path):
        names = b"\0"
        name_off = []
        for s in self.secs + [dict(name=".shstrtab")]:
            name_off.append(len(names))
            names += s["name"].encode() + b"\0"
        body = bytearray(b"\0" * (64 + 56))
        for s in self.secs:
            if s["claim"] is None and s["offset"] is None:
                body += b"\0" * (-len(body) % 16)
                s["off"] = len(body)
                body += s["data"]
            elif s["offset"] is not None:
                s["off"] = s["offset"]
        shstr_off = len(body)
        body += names
        body += b"\0" * (-len(body) % 8)
        sh_off = len(body)
        end = sh_off + 64 * (len(self.secs) + 2)
        sparse = (end + 0xfff) & ~0xfff
        for s in self.secs:
            if s["claim"] is not None:
                s["off"] = sparse
                sparse = (sparse + s["claim"] + 0xfff) & ~0xfff
        shdrs = [b"\0" * 64]
        for i, s in enumerate(self.secs):
            addr = s["addr"] if s["addr"] is not None else (self.BASE + s["off"] if s["flags"] & self.ALLOC else 0)
            size = s["claim"] if s["claim"] is not None else len(s["data"])
            shdrs.append(struct.pack("<IIQQQQIIQQ", name_off[i], s["type"], s["flags"], addr, s["off"], size,
                                     s["link"], 1 if s["type"] in (self.SYMTAB, self.DYNSYM) else 0, 16,
                                     s["entsize"]))
        shdrs.append(struct.pack("<IIQQQQIIQQ", name_off[-1], self.STRTAB, 0, 0, shstr_off, len(names), 0, 0, 1, 0))
        ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + b"\0" * 9, 2, 62, 1, self.BASE + 64 + 56,
                           64, sh_off, 0, 64, 56, 1, 64, len(shdrs), len(shdrs) - 1)
        phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, self.BASE, self.BASE, end, end, 0x1000)
        body[0:64 + 56] = ehdr + phdr
        with open(path, "wb") as f:
            f.write(bytes(body) + b"".join(shdrs))
            f.truncate(max(end, sparse))


def nofile_limited(n, directory, exe=FNPROF):
    """A wrapper script in directory that runs exe with RLIMIT_NOFILE n, soft and hard (it cannot raise it),
    as `prlimit --nofile=n` would; its path."""
    path = os.path.join(directory, "nofile-limited")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nulimit -n {n} || exit 99\nexec "{exe}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def cpu_seconds(pid):
    """utime + stime of process pid, all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
