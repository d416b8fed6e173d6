"""Files a target chooses, which fnprof reads as root (security issue, items 5, 6, 7, 10, 11): sparse
files claiming gigabytes, a .go.buildinfo whose addresses wrap, device nodes and FIFOs where an object
should be, a .gopclntab built to be slow. Each test failed on the code before the fix."""
import ctypes
import os
import resource
import shutil
import struct
import subprocess
import tempfile
import time

from harness import (BIN, FNPROF, ROOT, Skip, ElfWriter, check, run_fnprof, target)

NOBODY = 65534

GIB = 1 << 30
NO_ADMIN = ["setpriv", "--bounding-set=-sys_admin,-checkpoint_restore",
            "--inh-caps=-sys_admin,-checkpoint_restore"]


def run_with_timeout(args, timeout=30, **kw):
    """Runs a command; a hang is a failure with a message, not a harness crash."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"hung (over {timeout} s): {args}")


def limit_memory():
    # 1 GiB of address space: a file that makes fnprof allocate what it claims fails at once, never swaps.
    resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))


def sparse_object(d, section, sh_type, claim=2 * GIB - 8):
    """An object whose section claims 2 GiB of a file that holds 4 KiB (ftruncate: a sparse file).
    2 GiB - 8: a whole number of symbols, or libelf refuses the table itself."""
    w = ElfWriter()
    # .text comes first: its address is BASE + 0x80; .dynsym names dyn_fn there.
    w.add(".text", ElfWriter.PROGBITS, b"\xc3" * 64, flags=ElfWriter.ALLOC | ElfWriter.EXEC)
    dynstr = w.add(".dynstr", ElfWriter.STRTAB, b"\0dyn_fn\0")
    w.add(".dynsym", ElfWriter.DYNSYM, b"\0" * 24 + ElfWriter.sym(1, ElfWriter.BASE + 0x80, 16),
          link=dynstr, entsize=24)
    strtab = w.add(".strtab", ElfWriter.STRTAB, b"\0big_fn\0")
    w.add(section, sh_type, claim=claim, link=strtab if sh_type == ElfWriter.SYMTAB else 0,
          entsize=24 if sh_type == ElfWriter.SYMTAB else 0)
    path = os.path.join(d, "libsparse.so")
    w.write(path)
    check(os.stat(path).st_blocks * 512 < 1 << 20, "the crafted file is not sparse")
    return path


# --- item 5: sparse files whose sections claim gigabytes ------------------------------------------

def check_sparse_section_refused(section, sh_type):
    d = tempfile.mkdtemp(prefix="fnprof-sparse-")
    try:
        path = sparse_object(d, section, sh_type)
        t0 = time.time()
        p = run_with_timeout([FNPROF, "--list", "-f", f"{path}:dyn_*", "--", target("work"), "count", "1"],
                             preexec_fn=limit_memory)
        took = time.time() - t0
        # Refused with a warning that names the file and the section; the rest of the object still read.
        check(p.returncode == 0 and "dyn_fn" in p.stdout, f"exit {p.returncode}: {p.stderr[-800:]}")
        check(f"{path}: section '{section}'" in p.stderr and "hole" in p.stderr, p.stderr[-800:])
        check(took < 10, f"took {took:.1f} s")
    finally:
        shutil.rmtree(d)


def test_sparse_symtab_refused():
    # Before: 2.1 GB and 13-20 s for --list (a larger claim exhausts the machine); now refused at once.
    check_sparse_section_refused(".symtab", ElfWriter.SYMTAB)


def test_sparse_gopclntab_refused():
    check_sparse_section_refused(".gopclntab", ElfWriter.PROGBITS)


def test_refused_section_name_sanitized():
    # The section's name is the file's: a terminal escape in it reaches the warning as '?'.
    d = tempfile.mkdtemp(prefix="fnprof-sparse-")
    try:
        path = sparse_object(d, "\x1b]0;owned\x07", ElfWriter.PROGBITS)
        p = run_with_timeout([FNPROF, "--list", "-f", f"{path}:dyn_*", "--", target("work"), "count", "1"],
                             preexec_fn=limit_memory)
        check(p.returncode == 0 and "section '?]0;owned?'" in p.stderr and "\x1b" not in p.stderr,
              f"exit {p.returncode}: {p.stderr[-800:]!r}")
    finally:
        shutil.rmtree(d)


# --- items 7 and 11: device nodes and FIFOs where an object should be ---------------------------

def test_fifo_as_system_wide_object_refused():
    # Without -p: fnprof opened the FIFO with a blocking open() and waited for a writer forever.
    d = tempfile.mkdtemp(prefix="fnprof-fifo-")
    try:
        fifo = os.path.join(d, "fifo.so")
        os.mkfifo(fifo)
        p = run_with_timeout([FNPROF, "-f", f"{fifo}:f", "-d", "1"], timeout=20)
        check(p.returncode == 1 and f"cannot open {fifo}: not a regular file" in p.stderr,
              f"exit {p.returncode}: {p.stderr[-800:]}")
    finally:
        shutil.rmtree(d)


IN_OPEN = 0x20


class OpenWatch:
    """Names of the entries of a directory that anyone opened (inotify IN_OPEN): an O_PATH open, which
    runs no driver's open and waits on no FIFO, is not one."""

    def __init__(self, d):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        check(self.fd >= 0 and self.libc.inotify_add_watch(self.fd, d.encode(), IN_OPEN) >= 0, "inotify")

    def opened(self):
        names = set()
        try:
            buf = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return names
        while buf:
            _, mask, _, n = struct.unpack("iIII", buf[:16])
            if mask & IN_OPEN:
                names.add(buf[16:16 + n].rstrip(b"\0").decode())
            buf = buf[16 + n:]
        return names

    def close(self):
        os.close(self.fd)


def test_device_planted_at_deleted_mapping_never_opened():
    # The target maps a library, deletes it and puts a character device at "PATH (deleted)", the name
    # /proc/PID/maps gives the mapping. Without map_files (no CAP_SYS_ADMIN), the symbolizer looks that
    # path up in the target's root: it opened the device (as root, without O_NOCTTY) before it checked
    # what it was. Here the device is /dev/null's (1, 3); inotify sees any open of it.
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    d = tempfile.mkdtemp(prefix="fnprof-dev-")
    lib = os.path.join(d, "libtarget.so")
    shutil.copy2(os.path.join(BIN, "libtarget.so"), lib)
    proc = subprocess.Popen([target("uselib"), "1000000", "loop"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, LD_PRELOAD=lib))
    watch = None
    try:
        check("ready" in proc.stdout.readline(), "target did not start")
        os.unlink(lib)
        planted = lib + " (deleted)"
        os.mknod(planted, 0o666 | 0o020000, os.makedev(1, 3))
        watch = OpenWatch(d)
        p = run_with_timeout(NO_ADMIN + [FNPROF, "-p", str(proc.pid), "--sample", "-d", "1", "--json"])
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-800:]}")
        opened = watch.opened()
        check(os.path.basename(planted) not in opened, f"fnprof opened the planted device: {opened}")
    finally:
        if watch:
            watch.close()
        proc.terminate()
        proc.communicate(timeout=10)
        shutil.rmtree(d)


# --- item 10: a .gopclntab built to be slow -------------------------------------------------------

def slow_pclntab_object(path, nfunc=200000, nsecs=20000):
    """A stripped Go-like object: a Go 1.20 .gopclntab of nfunc 16-byte functions in .text, after
    nsecs small executable sections that hold none of them. Looking each function's code up by a
    walk over the sections was nfunc x nsecs."""
    w = ElfWriter()
    for _ in range(nsecs):
        w.add(".x", ElfWriter.PROGBITS, flags=ElfWriter.ALLOC | ElfWriter.EXEC, addr=0x10000000, offset=0x100)
    text = b"\x90" * 16 * nfunc
    names = b"".join(b"f%d\0" % i for i in range(nfunc))
    name_offs, off = [], 0
    for i in range(nfunc):
        name_offs.append(off)
        off += len(b"f%d\0" % i)
    # Function table: (entry offset from textStart, record offset) pairs, nfunc + 1; then the records
    # (entry offset, name offset).
    functab_len = 8 * (nfunc + 1)
    functab = b"".join(struct.pack("<II", 16 * i, functab_len + 8 * i) for i in range(nfunc))
    functab += struct.pack("<II", 16 * nfunc, 0)
    records = b"".join(struct.pack("<II", 16 * i, name_offs[i]) for i in range(nfunc))
    header_len = 8 + 8 * 8
    names_at = header_len
    functab_at = names_at + len(names)
    # textStart 0: as a position-independent build leaves it, to be taken from .text's address.
    header = struct.pack("<IBBBB8Q", 0xfffffff1, 0, 0, 1, 8, nfunc, 0, 0, names_at, 0, 0, 0, functab_at)
    w.add(".gopclntab", ElfWriter.PROGBITS, header + names + functab + records, flags=ElfWriter.ALLOC)
    # Go 1.18+ .go.buildinfo: the version inline at 32, length-prefixed; then the (empty) module info.
    version = b"go1.21.0"
    w.add(".go.buildinfo", ElfWriter.PROGBITS, b"\xff Go buildinf:\x08\x02".ljust(32, b"\0") +
          bytes([len(version)]) + version + b"\0", flags=ElfWriter.ALLOC)
    w.add(".text", ElfWriter.PROGBITS, text, flags=ElfWriter.ALLOC | ElfWriter.EXEC)
    w.write(path)


def test_pclntab_lookup_not_quadratic():
    # Before: 23.5 s here (16 s reported) for --list; now well under a second.
    d = tempfile.mkdtemp(prefix="fnprof-pcln-")
    try:
        path = os.path.join(d, "slow.so")
        slow_pclntab_object(path)
        t0 = time.time()
        p = run_with_timeout([FNPROF, "--list", "-f", f"{path}:f19999?", "--", target("work"), "count", "1"],
                             timeout=60)
        took = time.time() - t0
        check(p.returncode == 0 and p.stdout.count("f19999") == 10, f"exit {p.returncode}: {p.stderr[-800:]}")
        check(took < 5, f"--list took {took:.1f} s")
    finally:
        shutil.rmtree(d)


# --- outputs: every path checked before the run, never through another user's link ----------------

def output_run(args, cwd=None, env=None):
    """fnprof sampling `burn 0.3` with the output flags args: (result, whether the command ran)."""
    p = run_with_timeout([FNPROF, "-F", "199"] + args + ["--", target("burn"), "0.3"], timeout=60,
                         cwd=cwd, env=env)
    return p, "truth burn" in p.stderr


OUTPUT_FLAGS = (["--json", "-o"], ["--pprof"], ["--folded"], ["--svg"], ["--profile", "offcpu", "--pprof"])


def test_output_paths_checked_before_the_command_runs():
    """A path that cannot be written is an error before tracing (before: --pprof, --folded, --svg and
    the other profiles' files failed after the whole run); a file claimed before a later one failed is
    not left behind, empty."""
    d = tempfile.mkdtemp()
    try:
        for flag in OUTPUT_FLAGS:
            p, ran = output_run(flag + ["/nonexistent/x"])
            check(p.returncode == 1 and "/nonexistent/x" in p.stderr and "No such file" in p.stderr,
                  f"{flag}: exit {p.returncode}: {p.stderr[-600:]}")
            check(not ran, f"{flag}: the command ran (the run went on) before the path was found bad")
        p, ran = output_run(["--pprof", "a.pb.gz", "--svg", "/nonexistent/x"], cwd=d)
        check(p.returncode == 1 and not ran and not os.listdir(d), f"left behind: {os.listdir(d)}")
        p, ran = output_run(["--pprof", "a.pb.gz", "--folded", "f.txt", "--svg", "s.svg"], cwd=d)
        check(p.returncode == 0 and ran, p.stderr[-600:])
        check(sorted(os.listdir(d)) == ["a.pb.gz", "f.txt", "s.svg"], f"written: {os.listdir(d)}")
        check(all(os.path.getsize(os.path.join(d, n)) > 0 for n in os.listdir(d)), "an output is empty")
    finally:
        shutil.rmtree(d)


def test_outputs_never_through_another_users_link():
    """Under sudo, a link the invoking user (or anyone) made in a directory of theirs, pointing into a
    root-only directory: no output is created there (before: all were, root-owned). A user's link into
    their own directory, and root's links (/var/run -> /run), still work."""
    d = tempfile.mkdtemp()
    try:
        os.chmod(d, 0o755)
        home, vault, mine = (os.path.join(d, n) for n in ("home", "vault", "home/mine"))
        os.makedirs(mine)
        os.mkdir(vault, 0o700)
        os.chown(home, NOBODY, NOBODY)
        os.chown(mine, NOBODY, NOBODY)
        for name, to in (("d", "../vault"), ("m", "mine")):
            os.symlink(to, os.path.join(home, name))
            os.lchown(os.path.join(home, name), NOBODY, NOBODY)
        os.symlink("home/mine", os.path.join(d, "rootlink"))   # root's own link
        env = dict(os.environ, SUDO_UID=str(NOBODY), SUDO_GID=str(NOBODY))
        for flag in OUTPUT_FLAGS:
            p, ran = output_run(flag + [os.path.join(home, "d", "out")], env=env)
            check(p.returncode == 1 and "symbolic link" in p.stderr and not ran,
                  f"{flag}: exit {p.returncode}: {p.stderr[-600:]}")
            check(not os.listdir(vault), f"{flag}: written in the root-only directory: {os.listdir(vault)}")
        for i, via in enumerate(("home/m", "rootlink")):
            p, _ = output_run(["--json", "-o", os.path.join(d, via, f"r{i}.json")], env=env)
            check(p.returncode == 0, f"through {via}: {p.stderr[-600:]}")
        check(sorted(os.listdir(mine)) == ["r0.json", "r1.json"], f"{os.listdir(mine)}")
    finally:
        shutil.rmtree(d)

