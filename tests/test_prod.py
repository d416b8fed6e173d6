"""Production binaries: stripped programs with separate debug files, debuginfod, no frame pointers.

Targets: tests/bin/work_nofp and burn_nofp, built -O2 -fomit-frame-pointer -g; each test splits
them as distributions do (objcopy --only-keep-debug, strip, objcopy --add-gnu-debuglink) and puts
the debug file in one of the places debuggers look. Exact call counts come from work's own truth.
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

from harness import (FNPROF, Skip, check, final_report, func, json_reports, run_fnprof, share_matches, target,
                     truth, wait_for)

CALLS = 300


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m, f"no build-id in {path}")
    return m.group(1)


def split(src, d, name="prog"):
    """Copies src to d/name, stripped, with its debug file d/name.debug and a .gnu_debuglink to it."""
    exe, dbg = os.path.join(d, name), os.path.join(d, name + ".debug")
    shutil.copy(src, exe)
    subprocess.run(["objcopy", "--only-keep-debug", exe, dbg], check=True)
    subprocess.run(["strip", "--strip-all", exe], check=True)
    subprocess.run(["objcopy", "--add-gnu-debuglink=" + dbg, exe], check=True)
    syms = subprocess.run(["readelf", "-S", exe], capture_output=True, text=True).stdout
    check(".symtab" not in syms, f"{exe} still has a .symtab")
    return exe, dbg


def check_counts(text, stderr):
    """outer and inner traced through the debug file's symbols: every call counted."""
    rep = final_report(text)
    for name in ("outer", "inner"):
        f, t = func(rep, name), truth(stderr, name)
        check(f["calls"] == t["calls"] == CALLS, f"{name}: {f['calls']} calls counted, {t['calls']:.0f} made")


def traced_launch(exe, wrap=None, env=None):
    """fnprof -f outer -f inner -- exe nest CALLS, optionally run inside `wrap` (a shell command
    prefix such as a mount namespace set-up ending in 'exec'). Returns (report text, stderr)."""
    d = tempfile.mkdtemp()
    try:
        out = os.path.join(d, "r.json")
        argv = [FNPROF, "-f", "outer", "-f", "inner", "--json", "-o", out, "--", exe, "nest", str(CALLS)]
        if wrap:
            argv = ["unshare", "-m", "sh", "-c", wrap + " " + " ".join(argv)]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
        return open(out).read(), p.stderr
    finally:
        shutil.rmtree(d)


def test_debuglink_beside_the_object():
    d = tempfile.mkdtemp()
    try:
        exe, _ = split(target("work_nofp"), d)
        check_counts(*traced_launch(exe))
    finally:
        shutil.rmtree(d)


def test_debuglink_in_dot_debug():
    d = tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        os.mkdir(os.path.join(d, ".debug"))
        os.rename(dbg, os.path.join(d, ".debug", os.path.basename(dbg)))
        check_counts(*traced_launch(exe))
    finally:
        shutil.rmtree(d)


def test_debuglink_crc_mismatch_is_refused():
    # A file of the right name but another program's debug info must not name this one's functions.
    d = tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        subprocess.run(["objcopy", "--only-keep-debug", target("work"), dbg], check=True)
        p = run_fnprof(["-f", "outer", "--", exe, "nest", "1"])
        check(p.returncode == 1 and "stripped" in p.stderr, f"exit {p.returncode}: {p.stderr[-800:]}")
    finally:
        shutil.rmtree(d)


# /usr/lib/debug is the system's: these tests see their own over it, in a mount namespace of their
# own (unshare -m: private propagation, gone with the test), fnprof and the target inside it.
def private_debug_dir(tree):
    return f"mount --bind {tree} /usr/lib/debug && exec"


def test_debuglink_under_usr_lib_debug():
    d, tree = tempfile.mkdtemp(), tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        dest = os.path.join(tree, d.lstrip("/"))
        os.makedirs(dest)
        os.rename(dbg, os.path.join(dest, os.path.basename(dbg)))
        check_counts(*traced_launch(exe, wrap=private_debug_dir(tree)))
    finally:
        shutil.rmtree(d)
        shutil.rmtree(tree)


def test_build_id_directory():
    d, tree = tempfile.mkdtemp(), tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        # No debuglink: found by build-id alone.
        subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", exe], check=True)
        bid = build_id(exe)
        os.makedirs(os.path.join(tree, ".build-id", bid[:2]))
        os.rename(dbg, os.path.join(tree, ".build-id", bid[:2], bid[2:] + ".debug"))
        check_counts(*traced_launch(exe, wrap=private_debug_dir(tree)))
        # Without that directory, the same binary has no symbols: the test depends on it.
        p = run_fnprof(["-f", "outer", "--", exe, "nest", "1"])
        check(p.returncode == 1 and "stripped" in p.stderr, f"exit {p.returncode}: {p.stderr[-500:]}")
    finally:
        shutil.rmtree(d)
        shutil.rmtree(tree)


def make_root(root, prog):
    """A container-style root holding prog and the libraries it loads (from ldd)."""
    libs = subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    for path in [prog] + [w for w in libs.split() if w.startswith("/")]:
        dest = os.path.join(root, path.lstrip("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.realpath(path), dest)


def entry_patched(pid, addr):
    """Whether the target's code at addr holds a breakpoint (the uprobe is in)."""
    with open(f"/proc/{pid}/mem", "rb") as m:
        m.seek(addr)
        return m.read(1) == b"\xcc"


def load_base(pid, exe_inside):
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) >= 6 and f[5].endswith(exe_inside) and int(f[2], 16) == 0:
            return int(f[0].split("-")[0], 16)
    raise AssertionError(f"{exe_inside} not mapped by {pid}")


def test_container_root_debug_file():
    # The target runs chrooted; its debug file is in the root's /usr/lib/debug/.build-id only.
    # fnprof (outside) must look there, through /proc/PID/root, not in the host's /usr/lib/debug.
    d, root = tempfile.mkdtemp(), tempfile.mkdtemp(prefix="fnprof-root-")
    try:
        exe, dbg = split(target("work_nofp"), d)
        subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", exe], check=True)
        make_root(root, exe)
        bid = build_id(exe)
        bdir = os.path.join(root, "usr/lib/debug/.build-id", bid[:2])
        os.makedirs(bdir)
        shutil.copy(dbg, os.path.join(bdir, bid[2:] + ".debug"))
        outer = int(subprocess.run(["nm", dbg], capture_output=True, text=True).stdout.split(" T outer")[0]
                    .split("\n")[-1], 16)
        proc = subprocess.Popen(["chroot", root, exe, "gate", str(CALLS)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            check("ready" in proc.stdout.readline(), "chrooted target did not start")
            out = os.path.join(d, "r.json")
            fp = subprocess.Popen([FNPROF, "-p", str(proc.pid), "-f", "outer", "-f", "inner", "--json", "-o", out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            addr = load_base(proc.pid, exe) + outer
            check(wait_for(lambda: entry_patched(proc.pid, addr) or fp.poll() is not None, 20),
                  "probes never attached")
            proc.stdin.write("go\n")
            proc.stdin.flush()
            _, terr = proc.communicate(timeout=30)
            _, ferr = fp.communicate(timeout=30)
            check(fp.returncode == 0, f"fnprof exit {fp.returncode}: {ferr[-1500:]}")
            check_counts(open(out).read(), terr)
        finally:
            proc.kill()
            proc.communicate()
    finally:
        shutil.rmtree(d)
        shutil.rmtree(root)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# debuginfod has no option to choose its address: it listens on every interface. It runs here in
# a network namespace of its own (unshare -n) where only lo exists, with fnprof and the target:
# nothing outside can reach it, and it reaches nothing.
DEBUGINFOD_SCRIPT = r"""
set -e
ip link set lo up
debuginfod -p {port} -F {dir} -d {dir}/db.sqlite -t 0 -g 0 >{dir}/debuginfod.log 2>&1 &
srv=$!
trap 'kill $srv' EXIT
for i in $(seq 200); do
    curl -sf -r 0-0 http://127.0.0.1:{port}/buildid/{bid}/debuginfo -o /dev/null && break
    sleep 0.1
done
{pre}
{env} DEBUGINFOD_URLS=http://127.0.0.1:{port} DEBUGINFOD_CACHE_PATH={cache} {fnprof} {args}
"""


def run_in_netns(script):
    return subprocess.run(["unshare", "-n", "sh", "-c", script], capture_output=True, text=True, timeout=120)


def test_debuginfod_server():
    if not shutil.which("debuginfod") or not shutil.which("curl"):
        raise Skip("no debuginfod or curl (Debian debuginfod, curl): make test-deps")
    d, srv, cache = tempfile.mkdtemp(), tempfile.mkdtemp(), tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", exe], check=True)
        os.rename(dbg, os.path.join(srv, "prog.debug"))
        out = os.path.join(d, "r.json")
        # As if run with sudo by user nobody: the download belongs to that user (and the command
        # runs as nobody: its directory must be readable).
        os.chmod(d, 0o755)
        os.chown(cache, 65534, 65534)
        sudo = "SUDO_USER=nobody SUDO_UID=65534 SUDO_GID=65534"
        args = f"-f outer -f inner --json -o {out} -- {exe} nest {CALLS}"
        p = run_in_netns(DEBUGINFOD_SCRIPT.format(port=free_port(), dir=srv, bid=build_id(exe), cache=cache,
                                                  fnprof=FNPROF, args=args, env=sudo, pre=""))
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
        check_counts(open(out).read(), p.stderr)
        cached = [os.path.join(r, f) for r, _, fs in os.walk(cache) for f in fs if f == "debuginfo"]
        check(cached, f"nothing in the debuginfod cache {cache}")
        check(os.stat(cached[0]).st_uid == 65534, f"{cached[0]} owned by uid {os.stat(cached[0]).st_uid}")
    finally:
        for x in (d, srv, cache):
            shutil.rmtree(x)


def test_debuginfod_under_sudo_root_writes_nothing_the_user_chose():
    # Under sudo the cache is the user's to redirect: a DEBUGINFOD_CACHE_PATH naming a root-owned
    # directory, or a symlink <cache>/<build-id> -> a root-owned directory. Root must neither
    # write there nor give anything there to the user (that was a root escalation).
    if not shutil.which("debuginfod") or not shutil.which("curl"):
        raise Skip("no debuginfod or curl (Debian debuginfod, curl): make test-deps")
    d, srv, rootdir, cache, victim = (tempfile.mkdtemp() for _ in range(5))
    try:
        exe, dbg = split(target("work_nofp"), d)
        subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", exe], check=True)
        os.rename(dbg, os.path.join(srv, "prog.debug"))
        os.chmod(d, 0o755)
        for x in (rootdir, victim):
            os.chmod(x, 0o755)
        os.chown(cache, 65534, 65534)
        os.symlink(victim, os.path.join(cache, build_id(exe)))
        sudo = "SUDO_USER=nobody SUDO_UID=65534 SUDO_GID=65534"
        for c in (rootdir, cache):
            p = run_in_netns(DEBUGINFOD_SCRIPT.format(port=free_port(), dir=srv, bid=build_id(exe), cache=c,
                                                      fnprof=FNPROF, args=f"-f outer -- {exe} nest 10", env=sudo,
                                                      pre=""))
            # No download (the user cannot write there): a warning, then no symbols for prog.
            check(p.returncode == 1 and "is stripped" in p.stderr, f"cache {c}: exit {p.returncode}: {p.stderr[-1500:]}")
        for x in (rootdir, victim):
            st = os.lstat(x)
            check(st.st_uid == 0 and st.st_gid == 0, f"{x} given to uid {st.st_uid} gid {st.st_gid}")
            check(not os.listdir(x), f"root wrote into {x}: {os.listdir(x)}")
    finally:
        for x in (d, srv, rootdir, cache, victim):
            shutil.rmtree(x)


SLOW_LO = "ip link set lo mtu 1500; tc qdisc add dev lo root tbf rate {rate} burst 32kb latency 1s"


def padded_debug_server(d, srv):
    """work_nofp split in d, no debuglink; its debug file, padded to over 1 MiB, served from srv."""
    exe, dbg = split(target("work_nofp"), d)
    subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", exe], check=True)
    pad = os.path.join(d, "pad")
    with open(pad, "wb") as f:
        f.write(os.urandom(1 << 20))
    subprocess.run(["objcopy", "--add-section", f".fnprof_pad={pad}", dbg, os.path.join(srv, "prog.debug")],
                   check=True)
    return exe


def test_debuginfod_stalled_download_times_out():
    # 100 kbit/s is under libdebuginfod's floor (100 KiB/s for DEBUGINFOD_TIMEOUT seconds, 2 here):
    # the download is abandoned with one warning, and fnprof goes on with what it has.
    if not shutil.which("debuginfod") or not shutil.which("curl") or not shutil.which("tc"):
        raise Skip("no debuginfod, curl or tc (Debian debuginfod, curl, iproute2): make test-deps")
    d, srv, cache = tempfile.mkdtemp(), tempfile.mkdtemp(), tempfile.mkdtemp()
    try:
        exe = padded_debug_server(d, srv)
        t0 = time.monotonic()
        p = run_in_netns(DEBUGINFOD_SCRIPT.format(
            port=free_port(), dir=srv, bid=build_id(exe), cache=cache, fnprof=FNPROF,
            args=f"-F 99 --json -- {exe} nest 2000", env="DEBUGINFOD_TIMEOUT=2", pre=SLOW_LO.format(rate="100kbit")))
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
        warns = [l for l in p.stderr.splitlines() if "debuginfod" in l and "warning" in l]
        check(len(warns) == 1, f"warnings: {warns}")
        check(time.monotonic() - t0 < 30, f"took {time.monotonic() - t0:.0f} s")
    finally:
        for x in (d, srv, cache):
            shutil.rmtree(x)


def test_debuginfod_slow_download_shows_progress():
    # lo slowed to 3 Mbit/s (in the test's own network namespace; tbf needs packets under its
    # burst: MTU 1500): a 1 MiB debug file takes ~3 s, fnprof says what it is waiting for, and the
    # symbols then arrive as usual.
    if not shutil.which("debuginfod") or not shutil.which("curl") or not shutil.which("tc"):
        raise Skip("no debuginfod, curl or tc (Debian debuginfod, curl, iproute2): make test-deps")
    d, srv, cache = tempfile.mkdtemp(), tempfile.mkdtemp(), tempfile.mkdtemp()
    try:
        exe = padded_debug_server(d, srv)
        out = os.path.join(d, "r.json")
        args = f"-f outer -f inner --json -o {out} -- {exe} nest {CALLS}"
        p = run_in_netns(DEBUGINFOD_SCRIPT.format(
            port=free_port(), dir=srv, bid=build_id(exe), cache=cache, fnprof=FNPROF, args=args, env="",
            pre=SLOW_LO.format(rate="3mbit")))
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-3000:]}")
        check(re.search(r"fnprof: downloading debug info of prog from debuginfod: \d+ KiB", p.stderr),
              f"no progress line: {p.stderr[-800:]}")
        check_counts(open(out).read(), p.stderr)
    finally:
        for x in (d, srv, cache):
            shutil.rmtree(x)


def test_debuginfod_unreachable_is_one_warning():
    # Nothing listens on the port: one warning, then sampling goes on with what it has.
    d, cache = tempfile.mkdtemp(), tempfile.mkdtemp()
    try:
        exe, dbg = split(target("burn_nofp"), d)
        subprocess.run(["objcopy", "--remove-section=.gnu_debuglink", exe], check=True)
        os.unlink(dbg)
        env = dict(os.environ, DEBUGINFOD_URLS=f"http://127.0.0.1:{free_port()}", DEBUGINFOD_CACHE_PATH=cache)
        p = run_fnprof(["-F", "99", "--json", "--", exe, "1"], env=env)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-800:]}")
        warns = [l for l in p.stderr.splitlines() if "debuginfod" in l]
        check(len(warns) == 1 and "warning" in warns[0], f"debuginfod messages: {warns}")
        off = run_fnprof(["-F", "99", "--json", "--no-debuginfod", "--", exe, "1"], env=env)
        check(off.returncode == 0 and "debuginfod" not in off.stderr, f"--no-debuginfod: {off.stderr[-500:]}")
    finally:
        shutil.rmtree(d)
        shutil.rmtree(cache)


# --- stacks without frame pointers -------------------------------------------------------------

def sample_folded(args, cmd, env=None):
    """(last JSON sampling report, folded lines as (frames, count)) of one launched run."""
    d = tempfile.mkdtemp()
    try:
        out, folded = os.path.join(d, "r.json"), os.path.join(d, "f.folded")
        p = subprocess.run([FNPROF] + args + ["--json", "-o", out, "--folded", folded, "--"] + cmd,
                           capture_output=True, text=True, timeout=90, env=env)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
        reps = [r for r in json_reports(open(out).read()) if r.get("mode") == "sample"]
        lines = [(l.rsplit(" ", 1)[0].split(";"), int(l.rsplit(" ", 1)[1])) for l in open(folded).read().splitlines()]
        p.report = reps[-1]
        return p, lines
    finally:
        shutil.rmtree(d)


def share_reaching(lines, leaf, frame, anywhere=False):
    """Of the samples whose leaf frame is leaf (anywhere: with leaf on the stack), the share whose
    stack holds frame above it."""
    lines = [([x for x in f if not x.endswith(" (inlined)")], c) for f, c in lines]
    sel = [(f, c) for f, c in lines if (leaf in f if anywhere else f[-1] == leaf)]
    tot = sum(c for _, c in sel)
    return sum(c for f, c in sel if frame in f[:f.index(leaf)]) / max(tot, 1), tot


def test_stacks_without_frame_pointers_reach_main():
    # burn_nofp, stripped, symbols from its debug file: the default walk (auto = CFI) finds
    # burn_both and main above the hot leaves; the 3:1 ratio holds.
    d = tempfile.mkdtemp()
    try:
        exe, _ = split(target("burn_nofp"), d)
        p, lines = sample_folded(["-F", "347"], [exe, "3"])
        t = truth(p.stderr, "burn")
        for leaf in ("burn_a", "burn_b"):
            share, n = share_reaching(lines, leaf, "main")
            check(n > 50 and share >= 0.9, f"{leaf}: {share:.0%} of {n} samples reach main")
        a = next(f for f in p.report["functions"] if f["name"] == "burn_a")["self_samples"]
        b = next(f for f in p.report["functions"] if f["name"] == "burn_b")["self_samples"]
        check(share_matches(a, a + b, t["ratio"] / (1 + t["ratio"])),
              f"self ratio {a / b:.2f} ({a} and {b} samples) vs truth {t['ratio']:.2f}")
        # work() is inlined into both: a frame of its own in the stacks (from the debug file's DWARF).
        inl = sum(c for f, c in lines if f[-2:] == ["burn_a", "work (inlined)"])
        check(inl > 0.5 * a, f"{inl} burn_a;work (inlined) samples of {a}")
        # Frame pointers alone lose the callers of this code: what the test above depends on.
        _, fp = sample_folded(["-F", "347", "--call-graph", "fp"], [exe, "1"])
        share, n = share_reaching(fp, "burn_a", "main")
        check(share < 0.5, f"--call-graph fp: {share:.0%} of {n} burn_a samples reach main")
    finally:
        shutil.rmtree(d)


def test_traced_run_samples_with_the_same_unwinding():
    # -f outer --sample: the sampler of a traced run walks the same way; inner's samples reach main,
    # past outer's uretprobe (which replaced outer's return address on the stack).
    d = tempfile.mkdtemp()
    try:
        exe, _ = split(target("work_nofp"), d)
        p, lines = sample_folded(["-f", "outer", "--sample", "-F", "347"], [exe, "nest", "5000"])
        share, n = share_reaching(lines, "inner", "main", anywhere=True)
        check(n > 50 and share >= 0.9, f"inner: {share:.0%} of {n} samples reach main")
        # outer calls inner: inner's frame right under outer's (inner's samples mostly land in the
        # clock_gettime its inlined clock_ns calls, so inner is seldom the leaf: 0-3 samples).
        plain = [[x for x in f if not x.endswith(" (inlined)")] for f, _ in lines]
        check(any(f[i - 1:i + 1] == ["outer", "inner"] for f in plain for i in range(1, len(f))),
              "no outer;inner stack")
    finally:
        shutil.rmtree(d)


def test_debian_libz_under_python():
    # Debian's own stripped libz (no .symtab, no debug file installed) and stripped python3:
    # libz's internal functions are rows named libz.so.1.2.13+0xADDR, and the Python
    # interpreter's frames are found above them.
    py = "/usr/bin/python3"
    libz = os.path.realpath("/lib/x86_64-linux-gnu/libz.so.1")
    if not os.path.exists(py) or not os.path.exists(libz):
        raise Skip("no Debian python3 or libz")
    # 2 s of its own CPU time, not of the clock: a busy machine gave it 94 samples in 2 s once.
    script = ("import zlib, os, time\n"
              "data = os.urandom(1 << 16) + bytes(1 << 16)\n"
              "t = time.process_time()\n"
              "while time.process_time() - t < 2:\n"
              "    zlib.compress(data, 6)\n")
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    p, lines = sample_folded(["-F", "199"], [py, "-c", script], env=env)
    base = os.path.basename(libz)
    rows = [f for f in p.report["functions"] if f["object"].endswith(base)]
    named = [f for f in rows if f["name"].startswith(base + "+0x")]
    check(len(named) >= 2, f"libz rows: {[(f['name'], f['self_pct']) for f in rows[:6]]}")
    check(sum(f["self_pct"] for f in rows) > 50, f"libz self {sum(f['self_pct'] for f in rows):.0f}%")
    check(not any(f["name"] == "[unknown]" and f["object"].endswith(base) for f in rows), "a bare [unknown] libz row")
    in_libz = [(f, c) for f, c in lines if f[-1].startswith(base + "+0x") or f[-1] in ("deflate", "adler32_z")]
    tot = sum(c for _, c in in_libz)
    above = sum(c for f, c in in_libz if "_PyEval_EvalFrameDefault" in f and "Py_BytesMain" in f)
    check(tot > 100 and above >= 0.9 * tot, f"{above} of {tot} libz samples show the interpreter above")


def test_unnamed_function_traced_by_its_address_name():
    # Stripped, no debug file anywhere: outer is "prog+0xADDR" (its FDE), and tracing that name
    # counts every call.
    d = tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        os.unlink(dbg)
        nm = subprocess.run(["nm", target("work_nofp")], capture_output=True, text=True).stdout.split("\n")
        addr = {l.split()[2]: int(l.split()[0], 16) for l in nm if len(l.split()) == 3}
        out = os.path.join(d, "r.json")
        p = run_fnprof(["-f", f"prog+{addr['outer']:#x}", "--json", "-o", out, "--", exe, "nest", str(CALLS)])
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-800:]}")
        f = func(final_report(open(out).read()), f"prog+{addr['outer']:#x}")
        check(f["calls"] == truth(p.stderr, "outer")["calls"] == CALLS, f"{f['calls']} calls")
    finally:
        shutil.rmtree(d)


def test_planted_fifo_debug_file_does_not_hang():
    # Where the debuglink points, a FIFO (a hostile container could plant one): not a debug file,
    # and opening it must not block fnprof.
    d = tempfile.mkdtemp()
    try:
        exe, dbg = split(target("work_nofp"), d)
        os.unlink(dbg)
        os.mkfifo(dbg)
        p = run_fnprof(["-f", "outer", "--", exe, "nest", "1"], timeout=20)
        check(p.returncode == 1 and "stripped" in p.stderr, f"exit {p.returncode}: {p.stderr[-500:]}")
    finally:
        shutil.rmtree(d)


def test_stacks_after_exec_through_a_wrapper():
    # A command started through a wrapper that runs a while, then execs it (a shell, pyenv's
    # shims): the objects the unwinder knew (the shell's, sampled) are all replaced; stacks of the
    # program it became reach _start (the walk goes through libc, mapped anew).
    d = tempfile.mkdtemp()
    try:
        exe, _ = split(target("burn_nofp"), d)
        busy = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"
        p, lines = sample_folded(["-F", "347"], ["/bin/bash", "-c", f"{busy}; exec {exe} 2"])
        share, n = share_reaching(lines, "burn_a", "_start")
        check(n > 50 and share >= 0.9, f"burn_a: {share:.0%} of {n} samples reach _start")
    finally:
        shutil.rmtree(d)
