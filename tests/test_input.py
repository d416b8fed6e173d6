"""Hostile input and launch safety (issue 11): what a target or its files can do to fnprof, and what
fnprof's launched command inherits. Each test failed on the code before the fix."""
import gzip
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import time

from harness import (BIN, FNPROF, ROOT, Skip, Target, check, final_report, func, json_reports, run_fnprof,
                     target, wait_for)

NO_ADMIN = ["setpriv", "--bounding-set=-sys_admin,-checkpoint_restore",
            "--inh-caps=-sys_admin,-checkpoint_restore"]


def run_with_timeout(args, timeout=20, **kw):
    """Runs fnprof; a hang is a failure with a message, not a harness crash."""
    try:
        return subprocess.run(args, capture_output=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"fnprof hung (over {timeout} s): {args}")


# --- item 2: the launched command's signals -----------------------------------------------------

def status_fields(text, *keys):
    return {l.split(":")[0]: l.split(":")[1].strip() for l in text.splitlines() if l.split(":")[0] in keys}


def test_launched_command_gets_default_signals():
    # fnprof ignores SIGPIPE for itself; `yes` under it must still die quietly of SIGPIPE.
    p = run_fnprof(["-f", "libc:write", "--", "sh", "-c", "yes | head -1"])
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1000:]}")
    check("Broken pipe" not in p.stderr, f"the command inherited an ignored SIGPIPE: {p.stderr[:300]}")
    plain = subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True).stdout
    traced = run_fnprof(["-f", "libc:read", "--", "cat", "/proc/self/status"]).stdout
    want, got = (status_fields(t, "SigIgn", "SigBlk") for t in (plain, traced))
    check(got == want, f"dispositions and mask {got}, untraced {want}")


# --- item 3: scripts and wrappers ---------------------------------------------------------------

def write_script(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def test_launch_follows_wrapper_script():
    # A version manager's shim: a shell script that execs the real program. -f NAME is resolved
    # against the program that finally runs, and fnprof says which one.
    d = tempfile.mkdtemp(prefix="fnprof-shim-")
    try:
        shim = write_script(d, "work", f'#!/bin/sh\n# shim\nexec {target("work")} "$@"\n')
        p = run_fnprof(["-f", "spin_us", "--json", "--", shim, "spin", "50", "200"])
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
        check(f"tracing {target('work')}" in p.stderr, f"fnprof must say what it traced: {p.stderr[:500]}")
        check(func(final_report(p.stdout), "spin_us")["calls"] == 200, "200 calls made")
        # /abs/lib.so:func needs no symbols of the executable; a shebang through env to the program.
        libc = "/lib/x86_64-linux-gnu/libc.so.6"
        env_shim = write_script(d, "work2", f'#!/usr/bin/env sh\nexec {target("work")} "$@"\n')
        p = run_fnprof(["-f", f"{libc}:getpid", "--json", "--", env_shim, "spin", "50", "10"])
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1500:]}")
        check(f"tracing {target('work')}" in p.stderr, f"the shells are not the program: {p.stderr[:500]}")
    finally:
        shutil.rmtree(d)


def test_launch_script_that_never_runs_the_function():
    d = tempfile.mkdtemp(prefix="fnprof-shim-")
    try:
        script = write_script(d, "s", "#!/bin/sh\nexit 0\n")
        p = run_fnprof(["-f", "spin_us", "--", script], timeout=30)
        check(p.returncode == 1 and "is a script" in p.stderr and "name the program" in p.stderr,
              f"exit {p.returncode}: {p.stderr[-800:]}")
    finally:
        shutil.rmtree(d)


# Issue 37, item 5: the common wrappers are followed to the program, as scripts are: through exec
# (env, nice, taskset, sh -c's last command) and through fork (timeout, a shell's other commands).
WRAPPERS = [["taskset", "-c", "0"], ["env", "FOO=1"], ["nice"], ["ionice", "-c", "2", "-n", "7"],
            ["chrt", "-o", "0"], ["setpriv", "--nnp"], ["timeout", "120"]]


def test_launch_follows_common_wrappers():
    work = target("work")
    # sh -c's command, its last: run by exec.
    for wrapper in WRAPPERS + [["sh", "-c", '"$@"', "sh"]]:
        if not shutil.which(wrapper[0]):
            raise Skip(f"{wrapper[0]} not installed")
        p = run_fnprof(["-f", "spin_us", "--json", "--", *wrapper, work, "spin", "50", "200"])
        check(p.returncode == 0, f"{wrapper}: exit {p.returncode}: {p.stderr[-1500:]}")
        check(f"tracing {work}" in p.stderr, f"{wrapper}: fnprof must say what it traced: {p.stderr[:500]}")
        check(func(final_report(p.stdout), "spin_us")["calls"] == 200, f"{wrapper}: 200 calls made")


def test_launch_follows_forks_of_wrappers_and_keeps_their_status():
    # The program in a fork child (timeout's; a shell's command that is not its last, or runs in
    # the background): traced; fnprof exits with the command's status, as it would untraced.
    work = target("work")
    for cmd in (["sh", "-c", f"{work} spin 50 200; exit 3"],
                ["timeout", "120", "sh", "-c", f"{work} spin 50 200; exit 3"],
                ["sh", "-c", f"{work} spin 50 200 & exit 3"],
                # More fork children than fnprof follows at once (16): the rest are let go.
                ["sh", "-c", f"for i in $(seq 40); do /bin/true & done; wait; {work} spin 50 200; exit 3"]):
        p = run_fnprof(["-f", "spin_us", "--json", "--", *cmd])
        check(p.returncode == 3, f"{cmd}: exit {p.returncode}, want the command's 3: {p.stderr[-1500:]}")
        check(f"tracing {work}" in p.stderr, f"{cmd}: fnprof must say what it traced: {p.stderr[:500]}")
        check(func(final_report(p.stdout), "spin_us")["calls"] == 200, f"{cmd}: 200 calls made")


def test_wrapper_running_a_program_without_the_function_stops_there():
    # The first program that is not a wrapper and lacks the functions ends the search at once: not
    # after the program ran to its end (a server never would).
    t0 = time.monotonic()
    p = run_with_timeout([FNPROF, "-f", "spin_us", "--", "env", "sleep", "60"], timeout=30, text=True)
    check(p.returncode == 1 and "sleep, which is not a wrapper" in p.stderr,
          f"exit {p.returncode}: {p.stderr[-800:]}")
    check(time.monotonic() - t0 < 20, "fnprof waited for the program to end")


# --- item 4: FIFOs and other non-regular files ----------------------------------------------------

def test_fifo_as_object_is_refused():
    d = tempfile.mkdtemp(prefix="fnprof-fifo-")
    try:
        fifo = os.path.join(d, "x.so")
        os.mkfifo(fifo)
        p = run_with_timeout([FNPROF, "--list", "-f", f"{fifo}:f", "--", target("work"), "count", "1"])
        check(p.returncode == 1 and b"not a regular file" in p.stderr, f"{p.returncode}: {p.stderr[-500:]}")
        with Target("work", "loop") as t:
            p = run_with_timeout([FNPROF, "-p", str(t.pid), "-d", "1", "-f", f"{fifo}:f"])
            check(p.returncode == 1 and b"not a regular file" in p.stderr, f"{p.returncode}: {p.stderr[-500:]}")
            p = run_with_timeout([FNPROF, "--list", "-f", "/dev/zero:f", "--", target("work"), "count", "1"])
            check(p.returncode == 1 and b"not a regular file" in p.stderr, f"{p.returncode}: {p.stderr[-500:]}")
    finally:
        shutil.rmtree(d)


# --- items 5 and 15: no CAP_SYS_ADMIN, so no /proc/PID/map_files ------------------------------------

def test_no_sys_admin_traces_through_target_root():
    # CAP_BPF + CAP_PERFMON without CAP_SYS_ADMIN: map_files cannot be opened; fnprof opens the
    # objects inside the target's root, checked by device and inode.
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    with Target("uselib", "500", "loop") as t:
        p = run_with_timeout(NO_ADMIN + [FNPROF, "-p", str(t.pid), "-d", "1", "--json", "-f", "libtarget:lib_spin"],
                             text=True)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1000:]}")
        check(func(final_report(p.stdout), "lib_spin")["calls"] > 0, "no calls counted")


def test_no_sys_admin_message_names_capability():
    # The mapped library's path now names another file (a bind mount over it): without map_files
    # fnprof cannot reach the mapped file, refuses the other one, and says what is missing.
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    d = tempfile.mkdtemp(prefix="fnprof-caps-")
    lib = os.path.join(d, "libtarget.so")
    shutil.copy2(os.path.join(BIN, "libtarget.so"), lib)
    proc = subprocess.Popen([target("uselib"), "500", "loop"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, LD_PRELOAD=lib))
    mounted = False
    try:
        check("ready" in proc.stdout.readline(), "target did not start")
        subprocess.run(["mount", "--bind", target("work"), lib], check=True)
        mounted = True
        p = run_with_timeout(NO_ADMIN + [FNPROF, "-p", str(proc.pid), "-d", "1", "-f", f"{lib}:lib_spin"], text=True)
        check(p.returncode == 1 and "CAP_SYS_ADMIN" in p.stderr and "not the mapped one" in p.stderr,
              f"exit {p.returncode}: {p.stderr[-1000:]}")
    finally:
        if mounted:
            subprocess.run(["umount", lib])
        proc.terminate()
        proc.communicate(timeout=10)
        shutil.rmtree(d)


def test_symbolizer_never_opens_target_path_on_host():
    # The target lives in its own mount namespace, where a tmpfs holds its library; on the host the
    # same path is a FIFO. Without map_files, the symbolizer must look inside the target's root,
    # never at the host path (a FIFO there hung fnprof; a host file gave wrong names).
    if not shutil.which("setpriv") or not shutil.which("unshare"):
        raise Skip("setpriv or unshare not installed")
    d = tempfile.mkdtemp(prefix="fnprof-ns-")
    libdir = os.path.join(d, "lib")
    os.mkdir(libdir)
    lib = os.path.join(libdir, "libtarget.so")
    os.mkfifo(lib)
    script = (f"mount -t tmpfs none {libdir} && cp {os.path.join(BIN, 'libtarget.so')} {lib} && "
              f"LD_PRELOAD={lib} exec {target('uselib')} 1000000 loop")
    proc = subprocess.Popen(["unshare", "-m", "sh", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        check("ready" in proc.stdout.readline(), "target did not start")
        p = run_with_timeout(NO_ADMIN + [FNPROF, "-p", str(proc.pid), "--sample", "-d", "1", "--json"],
                             timeout=30, text=True)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1000:]}")
        names = {f["name"]: f for f in final_report(p.stdout)["functions"]}
        check("lib_spin" in names and names["lib_spin"]["object"] == lib, f"frames: {list(names)[:10]}")
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
        shutil.rmtree(d)


# --- item 6: an object truncated while fnprof reads it --------------------------------------------

def test_object_truncated_while_read():
    # A preloaded shim cuts the file as soon as fnprof maps it or has read it twice: with a mapping,
    # fnprof died of SIGBUS; read with pread, it says what happened.
    d = tempfile.mkdtemp(prefix="fnprof-trunc-")
    try:
        victim = os.path.join(d, "fnprof-truncate.so")
        shutil.copy2(os.path.join(BIN, "libtarget.so"), victim)
        env = dict(os.environ, LD_PRELOAD=os.path.join(BIN, "libshimtrunc.so"))
        p = run_with_timeout([FNPROF, "--list", "-f", f"{victim}:lib_spin", "--", target("work"), "count", "1"],
                             env=env, text=True)
        check(p.returncode == 1, f"exit {p.returncode} (-7 is SIGBUS): {p.stderr[-800:]}")
        check("truncated or rewritten while fnprof read it" in p.stderr, p.stderr[-800:])
    finally:
        shutil.rmtree(d)


def test_library_truncated_after_use_no_sigbus():
    # The target dlopens a library with DWARF, runs it, then truncates the file and goes on in its
    # own code. fnprof had the DWARF mapped (inlined frames) and libdwfl its CFI: the next read
    # beyond the new end was a SIGBUS (exit 135) and the report was lost.
    d = tempfile.mkdtemp(prefix="fnprof-trunclib-")
    try:
        for graph in ("fp", "dwarf"):
            lib = os.path.join(d, f"lib-{graph}.so")
            shutil.copy2(os.path.join(BIN, "libtarget.so"), lib)
            p = run_with_timeout([FNPROF, "--sample", "--call-graph", graph, "-i", "0.5", "--json", "--",
                                  target("trunclib"), lib, "1", "1"], text=True)
            check(p.returncode == 0, f"{graph}: exit {p.returncode} (135 is SIGBUS): {p.stderr[-800:]}")
            names = [{f["name"] for f in r.get("functions", [])} for r in json_reports(p.stdout)]
            check(any("lib_spin" in n for n in names), f"{graph}: lib_spin never reported: {names}")
            check(any(x.startswith("own_spin") for n in names for x in n),
                  f"{graph}: nothing sampled after the truncation: {names[-2:]}")
            check("truncated" in p.stdout, f"{graph}: the target did not truncate: {p.stdout}")
    finally:
        shutil.rmtree(d)


def test_outputs_never_replace_an_existing_file():
    # As root, --pprof, --folded and --svg renamed over any file there and reset its mode to 0644
    # (a 0600 file became gzip data). Like -o: an existing file is an error before tracing, and one
    # that appears during the run is left alone too.
    d = tempfile.mkdtemp(prefix="fnprof-out-")
    try:
        for flag in ("-o", "--pprof", "--folded", "--svg"):
            path = os.path.join(d, flag.strip("-") + ".keep")
            with open(path, "w") as f:
                f.write("precious\n")
            os.chmod(path, 0o600)
            p = run_with_timeout([FNPROF, "--sample", flag, path, "--", target("work"), "count", "1"], text=True)
            check(p.returncode == 1 and "exists already" in p.stderr, f"{flag}: exit {p.returncode}: {p.stderr[-500:]}")
            check(open(path).read() == "precious\n" and stat.S_IMODE(os.stat(path).st_mode) == 0o600,
                  f"{flag}: the file was changed")
        late = os.path.join(d, "late.pb.gz")
        fp = subprocess.Popen([FNPROF, "--sample", "--pprof", late, "--", target("burn"), "1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        with open(late, "w") as f:
            f.write("made during the run\n")
        _, err = fp.communicate(timeout=60)
        check(fp.returncode != 0 and "exists" in err, f"late file: exit {fp.returncode}: {err[-500:]}")
        check(open(late).read() == "made during the run\n", "a file made during the run was replaced")
        p = run_fnprof(["--sample", "--pprof", os.path.join(d, "x"), "--folded", os.path.join(d, "x"), "--",
                        target("work"), "count", "1"])
        check(p.returncode == 2 and "--pprof and --folded name the same file" in p.stderr, p.stderr[-300:])
    finally:
        shutil.rmtree(d)


# --- item 7: caps on symbol count and name length ---------------------------------------------------

def hostile_elf(path, nr_syms, name_len):
    """An ELF with one executable segment and nr_syms function symbols all named by one long name."""
    text_off, text_size = 0x1000, 0x1000
    strtab = b"\0" + b"A" * name_len + b"\0"
    shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0"
    sym = b"".join(struct.pack("<IBBHQQ", 1, 0x12, 0, 1, 0x400000 + text_off + (i % text_size), 1)
                   for i in range(nr_syms))
    symtab = b"\0" * 24 + sym
    symtab_off = text_off + text_size
    strtab_off = symtab_off + len(symtab)
    shstr_off = strtab_off + len(strtab)
    sh_off = (shstr_off + len(shstrtab) + 7) & ~7
    ehdr = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + b"\0" * 9, 2, 62, 1, 0x400000 + text_off,
                       64, sh_off, 0, 64, 56, 1, 64, 5, 4)
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, 0x400000, 0x400000, sh_off, sh_off, 0x1000)
    shdrs = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
             struct.pack("<IIQQQQIIQQ", 1, 1, 6, 0x400000 + text_off, text_off, text_size, 0, 0, 16, 0),
             struct.pack("<IIQQQQIIQQ", 7, 2, 0, 0, symtab_off, len(symtab), 3, 1, 8, 24),
             struct.pack("<IIQQQQIIQQ", 15, 3, 0, 0, strtab_off, len(strtab), 0, 0, 1, 0),
             struct.pack("<IIQQQQIIQQ", 23, 3, 0, 0, shstr_off, len(shstrtab), 0, 0, 1, 0)]
    with open(path, "wb") as f:
        f.write(ehdr + phdr)
        f.write(b"\0" * (text_off - 64 - 56) + b"\xc3" * text_size + symtab + strtab + shstrtab)
        f.write(b"\0" * (sh_off - shstr_off - len(shstrtab)) + b"".join(shdrs))


def limit_memory():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_symbol_count_and_name_length_capped():
    # 2 MB files that asked for 20 GB and 6 GB: a name over 64 KiB, and names far beyond the size
    # of their string table. Under a 1 GiB address-space limit, a clear error, never "out of memory".
    d = tempfile.mkdtemp(prefix="fnprof-elf-")
    try:
        for nr, length in ((20000, 1 << 20), (100000, 60000)):
            path = os.path.join(d, f"hostile-{nr}.so")
            hostile_elf(path, nr, length)
            t0 = time.time()
            p = run_with_timeout([FNPROF, "--list", "-f", f"{path}:A*", "--", target("work"), "count", "1"],
                                 timeout=60, text=True, preexec_fn=limit_memory)
            check(p.returncode == 1 and "not a sane ELF file" in p.stderr, f"exit {p.returncode}: {p.stderr[-600:]}")
            check(time.time() - t0 < 20, f"took {time.time() - t0:.1f} s")
        # A sane file of the same shape still lists.
        path = os.path.join(d, "sane.so")
        hostile_elf(path, 10, 100)
        p = run_fnprof(["--list", "-f", f"{path}:A*", "--", target("work"), "count", "1"])
        check(p.returncode == 0 and "A" * 100 in p.stdout, f"exit {p.returncode}: {p.stderr[-600:]}")
    finally:
        shutil.rmtree(d)


# --- item 8: the privilege drop under sudo ----------------------------------------------------------

def sudo_run(env_extra, cmd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDO_")}
    env.update(env_extra, HOME="/root", USER="root", LOGNAME="root")
    # Root with supplementary groups, as root under sudo often has.
    return subprocess.run(["setpriv", "--groups=4,27", FNPROF, "-f", "libc:getpid", "--", "sh", "-c", cmd],
                          capture_output=True, text=True, timeout=30, env=env)


def test_sudo_drop_without_sudo_user():
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    import grp
    import pwd
    nobody = pwd.getpwuid(65534)
    want_groups = sorted({65534} | {g.gr_gid for g in grp.getgrall() if nobody.pw_name in g.gr_mem})
    p = sudo_run({"SUDO_UID": "65534", "SUDO_GID": "65534"}, 'id -u; id -G; echo "$HOME $USER $LOGNAME"')
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-800:]}")
    uid, groups, envs = p.stdout.splitlines()[:3]
    check(uid == "65534", f"uid {uid}")
    check(sorted(int(g) for g in groups.split()) == want_groups, f"groups {groups}: root's kept?")
    check(envs == f"{nobody.pw_dir} {nobody.pw_name} {nobody.pw_name}", f"HOME USER LOGNAME: {envs}")


def test_sudo_drop_fails_closed():
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    for env in ({"SUDO_UID": "abc", "SUDO_GID": "0", "SUDO_USER": "nobody"},
                {"SUDO_UID": "65534x", "SUDO_GID": "65534"},
                {"SUDO_UID": "65534", "SUDO_GID": "-1"},
                {"SUDO_UID": "4000000", "SUDO_GID": "4000000"}):
        p = sudo_run(env, "echo ran as $(id -u)")
        check(p.returncode == 1 and "ran as" not in p.stdout, f"{env}: exit {p.returncode}, {p.stdout!r}")
        check("SUDO_UID" in p.stderr, f"{env}: {p.stderr[-500:]}")


# --- item 13: names from the target, per output -----------------------------------------------------

HOSTILE_NAME = b"\x1b]0;X\xff\n"   # 7 bytes, as long as "spin_us": OSC escape, ';', bad UTF-8, newline


def hostile_work(d):
    data = open(target("work"), "rb").read()
    check(b"\0spin_us\0" in data, "spin_us not in work's string table")
    path = os.path.join(d, "work")
    with open(path, "wb") as f:
        f.write(data.replace(b"\0spin_us\0", b"\0" + HOSTILE_NAME + b"\0"))
    os.chmod(path, 0o755)
    return path


def pprof_strings(path):
    """The string table of a pprof file (field 6 of Profile)."""
    data, i, out = gzip.open(path).read(), 0, []

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if b < 0x80:
                return v
    while i < len(data):
        key = varint()
        if key & 7 == 0:
            varint()
        elif key & 7 == 2:
            n = varint()
            if key >> 3 == 6:
                out.append(data[i:i + n])
            i += n
        else:
            raise AssertionError(f"unexpected wire type {key & 7}")
    return out


def test_target_names_sanitized_per_output():
    d = tempfile.mkdtemp(prefix="fnprof-names-")
    try:
        prog = hostile_work(d)
        folded, pprof = os.path.join(d, "out.folded"), os.path.join(d, "out.pb.gz")
        pattern = b"\x1b*"
        p = subprocess.run([FNPROF.encode(), b"-f", pattern, b"--sample", b"--folded", folded.encode(),
                            b"--pprof", pprof.encode(), b"--json", b"--", prog.encode(), b"spin", b"3000", b"200"],
                           capture_output=True, timeout=60)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-1000:]!r}")
        # Strict: invalid UTF-8 in a JSON line raises (the target's own lines carry the raw name).
        reps = [json.loads(l.decode("utf-8")) for l in p.stdout.splitlines() if l.startswith(b"{")]
        trace = [r for r in reps if r["mode"] == "trace"][-1]
        check(trace["functions"][0]["name"] == "\x1b]0;X\ufffd\n", repr(trace["functions"][0]["name"]))
        check(not any(b"\x1b" in l for l in p.stdout.splitlines() if l.startswith(b"{")), "raw ESC in JSON")
        lines = open(folded, "rb").read().splitlines()
        check(lines and all(l.rsplit(b" ", 1)[1].isdigit() for l in lines), f"broken folded lines: {lines[:5]}")
        check(any(b";\x1b" in l or b"?]0:X?" in l for l in lines) and not any(b"\x1b" in l for l in lines),
              f"the frame is not sanitized: {[l for l in lines if b'X' in l][:3]}")
        for s in pprof_strings(pprof):
            s.decode("utf-8")
        table = subprocess.run([FNPROF.encode(), b"-f", pattern, b"--", prog.encode(), b"spin", b"100", b"10"],
                               capture_output=True, timeout=60)
        report = table.stderr[table.stderr.find(b"\ntotal:"):]   # the target's own lines carry the raw name
        check(table.returncode == 0 and b"\x1b" not in report and b"\n?]0;X?? " in report,
              f"table: {table.stderr[-600:]!r}")
        listing = subprocess.run([FNPROF.encode(), b"--list", b"-f", pattern, b"--", prog.encode()],
                                 capture_output=True, timeout=60)
        check(listing.returncode == 0 and b"\x1b" not in listing.stdout, f"--list: {listing.stdout[-300:]!r}")
    finally:
        shutil.rmtree(d)


# --- item 14: the executable by device and inode ----------------------------------------------------

def test_executable_matched_by_device_and_inode():
    # Two fresh tmpfs mounts number their files alike: the target maps, below its executable, a file
    # of the other mount with the executable's inode number. fnprof took that file for the program.
    d = tempfile.mkdtemp(prefix="fnprof-ino-")
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    os.mkdir(a)
    os.mkdir(b)
    mounted = []
    try:
        for m in (a, b):
            subprocess.run(["mount", "-t", "tmpfs", "none", m], check=True)
            mounted.append(m)
        prog = os.path.join(a, "mapfile")
        shutil.copy2(target("mapfile"), prog)
        ino = os.stat(prog).st_ino
        for i in range(64):
            data = os.path.join(b, f"data{i}")
            with open(data, "w") as f:
                f.write("not a program\n")
            if os.stat(data).st_ino == ino:
                break
        else:
            raise Skip(f"tmpfs gave no file the inode number {ino}")
        with _start(prog, data) as proc:
            p = run_fnprof(["-p", str(proc.pid), "-d", "0.5", "--json", "-f", "tick"])
            check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-800:]}")
            f = func(final_report(p.stdout), "tick")
            check(f["calls"] > 10 and f["object"] == prog, f"{f['calls']} calls in {f['object']}")
    finally:
        for m in mounted:
            subprocess.run(["umount", "-l", m])
        shutil.rmtree(d)


class _start:
    def __init__(self, prog, *args):
        self.proc = subprocess.Popen([prog] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if "ready" not in self.proc.stdout.readline():
            self.proc.kill()
            raise AssertionError(f"{prog} did not start: {self.proc.communicate()[1]}")

    def __enter__(self):
        return self.proc

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.communicate()


# --- item 16: --list and setuid ---------------------------------------------------------------------

def test_list_refuses_setuid():
    if not shutil.which("setpriv"):
        raise Skip("setpriv not installed")
    d = tempfile.mkdtemp(prefix="fnprof-suid-", dir=os.path.join(ROOT, "tests", "bin"))
    try:
        os.chmod(d, 0o755)
        copy = os.path.join(d, "fnprof")
        shutil.copy2(FNPROF, copy)
        os.chown(copy, 0, 0)
        os.chmod(copy, 0o4755)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                            copy, "--list", "-f", "tiny", "--", target("work"), "count", "1"],
                           capture_output=True, text=True, timeout=30)
        if "refusing" not in p.stderr and p.returncode != 0:
            raise Skip(f"setuid has no effect here: {p.stderr[-300:]}")
        check(p.returncode == 1 and "refusing to run setuid" in p.stderr, f"exit {p.returncode}: {p.stdout[-300:]}")
    finally:
        shutil.rmtree(d)


# --- item 17: Ctrl-C forwarding never reaches a recycled pid ------------------------------------------

def take_pid(pid, tries=200):
    """A `sleep` process with pid pid (through ns_last_pid), or None."""
    for _ in range(tries):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        p = subprocess.Popen(["sleep", "60"])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


def test_ctrl_c_never_signals_recycled_pid():
    # The launched command exits (reaped by fnprof) while a fork child keeps the run going; its pid
    # is then given to an unrelated process. Ctrl-C must not reach that one.
    fp = subprocess.Popen([FNPROF, "--follow-forks", "-f", "libc:getpid", "--", "sh", "-c",
                           "echo $$; sleep 8 & exit 0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    try:
        pid = int(fp.stdout.readline())
        check(wait_for(lambda: not os.path.exists(f"/proc/{pid}"), timeout=10), "the command was not reaped")
        victim = take_pid(pid)
        if not victim:
            raise Skip(f"could not recycle pid {pid}")
        fp.send_signal(signal.SIGINT)
        time.sleep(1)
        check(victim.poll() is None, f"fnprof signalled the process that took pid {pid}")
        fp.send_signal(signal.SIGINT)
        fp.communicate(timeout=20)
    finally:
        if fp.poll() is None:
            fp.kill()
            fp.communicate()
        if victim:
            victim.kill()
            victim.wait()


# --- item 19: `make test-deps test` on a fresh machine builds the Go target ---------------------------

def test_make_test_deps_test_builds_go_target():
    # A PATH without go, a dpkg that has no golang-go and an apt-get that "installs" it: the
    # README's second command must then build the Go target (GO was looked up before test-deps).
    go = shutil.which("go")
    if not go:
        raise Skip("go is not installed")
    d = tempfile.mkdtemp(prefix="fnprof-fresh-")
    try:
        fake = os.path.join(d, "path")
        os.mkdir(fake)
        for dirname in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
            for name in os.listdir(dirname) if os.path.isdir(dirname) else []:
                if name not in ("go", "dpkg-query", "apt-get") and not os.path.lexists(os.path.join(fake, name)):
                    os.symlink(os.path.join(dirname, name), os.path.join(fake, name))
        write_script(fake, "dpkg-query", '#!/bin/sh\nfor a; do p=$a; done\n'
                     '[ "$p" = golang-go ] && [ ! -e "$(dirname "$0")/go" ] && exit 1\necho "install ok installed"\n')
        write_script(fake, "apt-get", f'#!/bin/sh\n[ "$1" = update ] || ln -sf {go} "$(dirname "$0")/go"\n')
        bin_dir = os.path.join(d, "bin")
        os.makedirs(bin_dir)
        os.symlink(os.path.join(BIN, ".gocache"), os.path.join(bin_dir, ".gocache"))
        # Not the outer make's flags (its TESTS, its jobserver) when the suite runs under `make test`.
        env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
        env["PATH"] = fake
        p = subprocess.run(["make", "-C", ROOT, f"TEST_BIN={bin_dir}", "UNIT_BINS=", "test-deps", "test",
                            "TESTS=unit/test_sanitize"], capture_output=True, text=True, timeout=500, env=env)
        check(os.path.exists(os.path.join(bin_dir, "gotarget")),
              f"the Go target was not built (exit {p.returncode}): {p.stdout[-1500:]}{p.stderr[-1500:]}")
    finally:
        shutil.rmtree(d)
