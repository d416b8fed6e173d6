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


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def write_big_map(path, named, size):
    """A perf map of about size bytes: a line naming each (code, name) of named, then filler lines
    (60 bytes each, at addresses no process maps) up to size. Returns (bytes, lines)."""
    lines = [f"{code:x} 40 {name}\n" for code, name in named]
    filler = size // 61 - len(lines)
    with open(path, "w") as f:
        f.writelines(lines)
        f.writelines(f"{0x10000000 + 16 * i:x} 10 JS:*filler_{i:09d}_{'x' * 26}\n" for i in range(filler))
    return os.path.getsize(path), len(lines) + filler


def sample_reports(scope, args, seconds, timeout=120):
    """fnprof SCOPE (-a, or -p PID) for seconds, --json: (the sampling reports, result, with its wall
    time as wall_s); it must exit 0 in time."""
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "r.json")
        t0 = time.time()
        p = run_fnprof(list(scope) + ["-d", str(seconds), "--json", "-o", out] + list(args), timeout=timeout)
        p.wall_s = time.time() - t0
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        reps = [r for r in json_reports(open(out).read()) if r.get("mode") == "sample"]
        check(reps, f"no report: {p.stderr[-2000:]}")
        return reps, p
    finally:
        shutil.rmtree(d)


def all_report(args, seconds, timeout=120):
    return sample_reports(["-a"], args, seconds, timeout)


def pid_reports(pid, args, seconds, timeout=120):
    return sample_reports(["-p", str(pid)], args, seconds, timeout)


def named_pids(rep, prefix):
    return {f["pid"] for f in rep["functions"] if f["object"] == "[jit]" and f["name"].startswith(prefix)}


def test_perfmap_hardlinks_read_once():
    """8 processes of another user whose perf maps are hard links of one 16 MiB file (issue 32
    item 3: fnprof -a held a copy per process, 8 x 64 MiB maps took 836 MB and 18.5 s): the file
    is read once, held once (its text and a table of 32-byte entries), and names each process's
    code."""
    targets = []
    try:
        for _ in range(8):
            targets.append(JitTarget(seconds=30, prefix=NOBODY))
        first = targets[0].map
        size, lines = write_big_map(first, [(t.code, f"jitfn_shared_{t.pid}") for t in targets], 16 << 20)
        os.chown(first, 65534, 65534)
        for t in targets[1:]:
            os.link(first, t.map)
        reps, p = all_report(["-F", "199", "--call-graph", "fp"], 3)
        mem = reps[-1]["memory"]["perf_maps"]
        one_copy = size + 32 * lines
        check(mem["peak"] < 1.5 * one_copy, f"perf maps held {mem['peak']} bytes at most, one copy {one_copy}")
        check(mem["refused"] == 0 and mem["evicted"] == 0, f"{mem}")
        named = set().union(*(named_pids(r, "jitfn_shared_") for r in reps))
        check(len(named) >= 2, f"JIT code named in {sorted(named)} of {[t.pid for t in targets]}")
    finally:
        for t in targets:
            t.__exit__(None, None, None)


def test_perfmap_over_the_budget():
    """Two processes with perf maps of their own (two files, 16 MiB each) and --max-memory 64M
    (32 MiB for perf maps, room for one): one is read, the other is not, said and counted; perf
    maps never hold more than their share."""
    targets = []
    try:
        for _ in range(2):
            targets.append(JitTarget(seconds=30))
        sizes = [write_big_map(t.map, [(t.code, f"jitfn_own_{t.pid}")], 16 << 20) for t in targets]
        reps, p = all_report(["-F", "199", "--call-graph", "fp", "--max-memory", "64M"], 2)
        mem = reps[-1]["memory"]
        check(mem["limit"] == 64 << 20, f"{mem}")
        check(mem["perf_maps"]["peak"] <= 32 << 20, f"perf maps held {mem['perf_maps']['peak']} bytes")
        check(sizes[0][0] + 32 * sizes[0][1] < 32 << 20 < sum(s + 32 * n for s, n in sizes), f"sizes {sizes}")
        check(mem["perf_maps"]["refused"] >= 1, f"{mem}")
        check("no room in the memory budget" in p.stderr, p.stderr[-2000:])
    finally:
        for t in targets:
            t.__exit__(None, None, None)


def churn(t, stop, rounds):
    """Rewrites t's perf map every 0.3 s, as a runtime that keeps compiling: 256 new names of 4000
    bytes over its 1 MiB of code (issue 32 item 4)."""
    step = (1 << 20) // 256
    while not stop.is_set():
        tmp = t.map + ".new"
        with open(tmp, "w") as f:
            f.writelines(f"{t.code + i * step:x} {step:x} JS:r{rounds[0]:08d}_{i:04d}_{'y' * 3980}\n"
                         for i in range(256))
        os.rename(tmp, t.map)
        rounds[0] += 1
        stop.wait(0.3)


def test_perfmap_churning_names_bounded():
    """A process that keeps naming new code (4000-byte names, new ones every 0.3 s) sampled at
    ever new addresses: the names it made fnprof intern grew without end (under -a, 95 MB at
    10 s, 212 MB at 100 s). With --max-memory 4M the names stay within their half; once they
    fill three quarters of it they are dropped (counted) and the code is named again after.
    Sampled with -p: -a keeps its names in the same place (its processes' symbolizers share
    them), but a report of every process takes seconds on a busy machine, too few in 10 s."""
    import threading
    stop, rounds = threading.Event(), [0]
    with JitTarget(seconds=30, mode="sled") as t:
        th = threading.Thread(target=churn, args=(t, stop, rounds))
        th.start()
        try:
            reps, p = pid_reports(t.pid, ["-F", "999", "-i", "1", "--max-memory", "4M"], 10)
        finally:
            stop.set()
            th.join()
    share = 2 << 20
    for r in reps:
        check(r["memory"]["names"]["peak"] <= share, f"names held {r['memory']['names']}")
    renewed = [i for i, r in enumerate(reps) if r["memory"]["names"]["evicted"]]
    check(renewed, f"names never dropped: {[r['memory']['names'] for r in reps]}")
    after = [f["name"] for r in reps[renewed[0]:] for f in r["functions"] if f["object"] == "[jit]"]
    check(any(n.startswith("JS:r") for n in after), f"the JIT code not named after the names were dropped: "
          f"{[n[:24] for n in after]}")
