"""A perf map (/tmp/perf-PID.map) is the target's file: fnprof reads it as it reads a target's
ELF files. A FIFO, a huge file, garbage, an overlong name, a file of another user, a symlink out
of the target's root: fnprof stays up, exits 0 and names nothing from them; names are made safe
for the terminal; a container's map is its own (its /tmp, its pid in its pid namespace).

Target: tests/targets/jit.c ("nowrite": the test writes the map), spinning in anonymous
executable memory at the address it prints ("ready pid=N code=ADDR size=64").
"""
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import time

from harness import Skip, check, json_reports, run_fnprof, target, wait_for
from test_input import pprof_strings


class JitTarget:
    """jit SECONDS nowrite, started in the background (optionally under a prefix: chroot)."""

    def __init__(self, seconds=6, prefix=(), exe=None, mode="nowrite"):
        self.proc = subprocess.Popen(list(prefix) + [exe or target("jit"), str(seconds), mode],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.match(r"ready pid=(\d+) code=([0-9a-f]+) size=(\d+)", line)
        check(m, f"jit did not start: {line!r} {self.proc.stderr.read() if self.proc.poll() is not None else ''}")
        self.nspid, self.code = int(m.group(1)), int(m.group(2), 16)
        self.pid = self.proc.pid
        self.map = f"/tmp/perf-{self.pid}.map"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.communicate()
        if os.path.lexists(self.map):
            os.unlink(self.map)


def profile(pid, extra=(), timeout=60):
    """fnprof -p PID for 1.5 s: (last sampling report, result). Must exit 0 in time."""
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "r.json")
        p = run_fnprof(["-p", str(pid), "-d", "1.5", "-F", "199", "--json", "-o", out] + list(extra),
                       timeout=timeout)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        reps = [r for r in json_reports(open(out).read()) if r.get("mode") == "sample"]
        check(reps, f"no report: {p.stderr[-2000:]}")
        return reps[-1], p
    finally:
        shutil.rmtree(d)


def jit_names(rep):
    return [f["name"] for f in rep["functions"] if f["object"] == "[jit]" and f["name"] != "[unknown]"]


def check_nothing_named(rep, why):
    check(rep["samples"] > 50, f"only {rep['samples']} samples")
    check(not jit_names(rep), f"{why}: named {jit_names(rep)}")
    check(any(f["object"] == "[jit]" for f in rep["functions"]), f"no [jit] frames: {rep['functions'][:3]}")


def test_perfmap_fifo():
    """A FIFO where the map should be: not opened (no wait on it), said, nothing named."""
    with JitTarget() as t:
        os.mkfifo(t.map)
        rep, p = profile(t.pid)
        check_nothing_named(rep, "FIFO")
        check("not a regular file" in p.stderr, p.stderr[-1000:])


def test_perfmap_huge_file():
    """Over 64 MiB (sparse): refused, said, its valid first line names nothing."""
    with JitTarget() as t:
        with open(t.map, "w") as f:
            f.write(f"{t.code:x} 40 jitfn_huge\n")
            f.truncate(65 << 20)
        rep, p = profile(t.pid)
        check_nothing_named(rep, "huge file")
        check("larger than 64 MiB" in p.stderr, p.stderr[-1000:])


def test_perfmap_garbage_then_one_good_line():
    """200 KiB of binary garbage (a fixed seed) and malformed lines, then one valid line: that
    line alone names the code."""
    rnd = random.Random(24)
    bad = [b"zz 40 nohex\n", b"%x 0 zerosize\n", b"%x\n", b"%x 40\n", b"ffffffffffffffff 40 wraps\n",
           b"%x 40 a\0b\n", b"\n", b"\xff\xfe 40 x\n"]
    with JitTarget() as t:
        with open(t.map, "wb") as f:
            f.write(bytes(rnd.getrandbits(8) for _ in range(200 << 10)) + b"\n")
            for line in bad:
                f.write(line.replace(b"%x", b"%x" % t.code))
            f.write(b"%x 40 jitfn_good\n" % t.code)
        rep, _ = profile(t.pid)
        check(jit_names(rep) == ["jitfn_good"], f"names: {jit_names(rep)}")


def test_perfmap_overlong_name():
    """A line longer than 4 KiB is skipped; so is an unfinished one already too long."""
    with JitTarget() as t:
        with open(t.map, "w") as f:
            f.write(f"{t.code:x} 40 " + "n" * 5000 + "\n")
            f.write(f"{t.code:x} 40 " + "m" * 100000)
        rep, _ = profile(t.pid)
        check_nothing_named(rep, "overlong names")


def test_perfmap_terminal_escapes():
    """A name with terminal escapes: the table shows it with '?', never the escape bytes."""
    with JitTarget() as t:
        with open(t.map, "w") as f:
            f.write(f"{t.code:x} 40 jitfn\x1b]0;owned\x07\x1b[31mred\n")
        p = run_fnprof(["-p", str(t.pid), "-d", "1.5", "-F", "199"], timeout=60)
        check(p.returncode == 0, p.stderr[-2000:])
        check("\x1b" not in p.stderr and "\x07" not in p.stderr, "escape bytes reached the terminal")
        check("jitfn?]0;owned??[31mred" in p.stderr, p.stderr[-1500:])


CONTROL = (b"\x1b", b"\x07", b"\x7f", "\u009b".encode())


def test_perfmap_escapes_in_no_output_file():
    """The same name (ESC, BEL, DEL and a C1 CSI) in every file fnprof writes: pprof (before: kept as
    is, and `go tool pprof -top` sent it to the terminal), folded, SVG and JSON: named, but no byte of
    an escape left."""
    d = tempfile.mkdtemp()
    try:
        files = {k: os.path.join(d, k) for k in ("pb.gz", "folded", "svg", "json")}
        with JitTarget() as t:
            with open(t.map, "w") as f:
                f.write(f"{t.code:x} 40 jitfn\x1b]0;owned\x07\x7f\u009b31mred\n")
            p = run_fnprof(["-p", str(t.pid), "-d", "1.5", "-F", "199", "--pprof", files["pb.gz"], "--folded",
                            files["folded"], "--svg", files["svg"], "--json", "-o", files["json"]], timeout=60)
        check(p.returncode == 0, p.stderr[-2000:])
        for kind, path in files.items():
            with open(path, "rb") as f:
                data = f.read()
            if kind == "pb.gz":  # its strings: varints are bytes of any value
                data = b"\n".join(pprof_strings(path))
            check(b"jitfn" in data and b"owned" in data, f"{kind}: the JIT function is not named")
            left = [c for c in CONTROL if c in data]
            check(not left, f"{kind}: escape bytes {left} kept")
    finally:
        shutil.rmtree(d)


def test_perfmap_of_another_user():
    """A map owned by a user other than the target's (planted in a shared /tmp): refused."""
    with JitTarget() as t:
        with open(t.map, "w") as f:
            f.write(f"{t.code:x} 40 jitfn_planted\n")
        os.chown(t.map, 12345, 12345)
        rep, p = profile(t.pid)
        check_nothing_named(rep, "another user's map")
        check("not owned by the process's user" in p.stderr, p.stderr[-1000:])


def chroot_target(root, mode):
    """jit_static in its own root and pid namespace (as in a container): the JitTarget, whose pid
    is then the host's pid of the jit process (unshare's child)."""
    if not shutil.which("unshare") or not shutil.which("chroot"):
        raise Skip("no unshare or chroot (util-linux, coreutils)")
    os.makedirs(os.path.join(root, "tmp"))
    shutil.copy(target("jit_static"), os.path.join(root, "jit"))
    t = JitTarget(prefix=["unshare", "--pid", "--fork", "--kill-child", "chroot", root], exe="/jit", mode=mode)

    def host_pid():
        for p in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.readlink(f"/proc/{p}/root") == root and open(f"/proc/{p}/cmdline").read().startswith("/jit"):
                    return int(p)
            except OSError:
                pass
        return None

    check(wait_for(host_pid, timeout=5), "jit process not found in /proc")
    t.pid = host_pid()
    t.map = f"/tmp/perf-{t.pid}.map"
    return t


def test_perfmap_container_uses_its_own():
    """A target in its own root and pid namespace: its /tmp/perf-1.map (pid 1 there) names the
    code, not a map on the host's /tmp under its host pid."""
    root = tempfile.mkdtemp()
    try:
        with chroot_target(root, "write") as t:
            check(t.nspid == 1 and t.pid != 1, f"pid {t.pid}, in its namespace {t.nspid}")
            with open(t.map, "w") as f:
                f.write(f"{t.code:x} 40 jitfn_host_file\n")
            rep, _ = profile(t.pid)
            check(jit_names(rep) == ["jitfn_spin [compiled]"], f"names: {jit_names(rep)}")
    finally:
        shutil.rmtree(root)


def test_perfmap_symlink_out_of_root():
    """The container's map a symlink to a file outside its root (absolute, and by ..): never
    followed out; nothing named."""
    root = tempfile.mkdtemp()
    outside = tempfile.NamedTemporaryFile("w", suffix=".map", dir="/tmp", delete=False)
    try:
        with chroot_target(root, "nowrite") as t:
            outside.write(f"{t.code:x} 40 jitfn_outside\n")
            outside.close()
            link = os.path.join(root, "tmp", "perf-1.map")
            for dest in (outside.name, "../../../../../../../../.." + outside.name):
                if os.path.lexists(link):
                    os.unlink(link)
                os.symlink(dest, link)
                rep, _ = profile(t.pid)
                check_nothing_named(rep, f"symlink to {dest}")
    finally:
        os.unlink(outside.name)
        shutil.rmtree(root)
