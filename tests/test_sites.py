"""Entry probe sites (issue 22): the probe goes on the first instruction of the entry block that
the kernel emulates (push, nop, jcc, jmp, call: ~0.8 us a hit here) rather than on a first
instruction it single-steps (~10 us), unless a branch of the function can land in between.
"""
import os
import shutil
import socket
import subprocess
import tempfile

from harness import (BIN, Skip, check, final_report, fnprof_test, func, plain_output, run_fnprof, target, traced, truth,
                     wait_for)

STEPPED = {"single-stepped", "stepped-pair", "stepped-pair-ret"}


def listed(*args):
    """fnprof --list: (site, skip, exit, name) per function."""
    p = run_fnprof(["--list", *args])
    check(p.returncode == 0, p.stderr[-1500:])
    lines = p.stdout.splitlines()
    check(lines and lines[0].split()[4:8] == ["SITE", "SKIP", "EXIT", "FUNCTION"], f"header: {lines[:1]}")
    return [(c[4], int(c[5]), c[6], c[7]) for c in (line.split() for line in lines[1:])]


def not_stepped_share(rows):
    return sum(site not in STEPPED for site, *_ in rows) / len(rows)


def test_debian_libz_entries_mostly_emulated():
    # Debian's libz (-O2): 45 of its 123 functions (37%) had an entry that is not single-stepped
    # before this issue; ~89% have an emulated instruction in the entry block.
    rows = listed("-f", "libz:*", "--", target("zloop"), "loop")
    share = not_stepped_share(rows)
    print(f"# libz: {len(rows)} functions, {100 * share:.0f}% not single-stepped")
    check(len(rows) > 50, f"only {len(rows)} libz functions")
    check(share >= 0.80, f"{100 * share:.0f}% of libz's entries not single-stepped")
    deflate = [r for r in rows if r[3] == "deflate"]
    check(deflate and deflate[0][:2] == ("emulated-jcc", 3), f"deflate: {deflate}")   # test %rdi,%rdi; je


def test_go_entries_on_the_stack_checks_jbe():
    # Go: every function with a stack check starts `cmp 0x10(%r14),%rsp; jbe` -- the probe on the jbe.
    if not os.path.exists(os.path.join(BIN, "gotarget")):
        raise Skip("no Go toolchain")
    rows = listed("-f", "main.*", "-f", "strconv.*", "-f", "fmt.*", "--", target("gotarget"))
    share = not_stepped_share(rows)
    print(f"# Go: {len(rows)} functions, {100 * share:.0f}% not single-stepped")
    check(share >= 0.80, f"{100 * share:.0f}% of the Go program's entries not single-stepped")
    check(all(exit == "ret" for _, _, exit, _ in rows), "a Go function got a uretprobe")


def test_go_stack_growth_reentry_at_the_jbe_is_one_call():
    # The jbe's taken branch grows (copies) the stack and runs the function again from its start:
    # the probe on the jbe fires twice for one call, at the same offset from the stack's top.
    if not os.path.exists(os.path.join(BIN, "gotarget")):
        raise Skip("no Go toolchain")
    want = plain_output(target("gotarget"), "grow", 8, 20)
    rep, p = traced(["-f", "main.rec"], target("gotarget"), "grow", 8, 20)
    f, t = func(rep, "main.rec"), truth(p.stderr, "deep")
    check(f["site"] == "emulated-jcc" and f["entry_skip_bytes"] > 0, f"site {f['site']} +{f['entry_skip_bytes']}")
    check(p.stdout == want, "the target's output changed")
    check(f["calls"] == t["entries"], f"{f['calls']} calls of {t['entries']:.0f}")


def test_jcc_site_2ns_function_bias_removed():
    # xor; test; je: the probe 5 bytes in, on the je; its own calibration case removes its time.
    rep, p = traced(["-f", "site_jcc_tiny"], target("sites"), "tiny", 20000)
    f = func(rep, "site_jcc_tiny")
    check(f["site"] == "emulated-jcc" and f["entry_skip_bytes"] == 5, f"site {f['site']} +{f['entry_skip_bytes']}")
    check(f["calls"] == truth(p.stderr, "tiny")["calls"], f"calls {f['calls']}")
    check("emulated-jcc" in rep["calibration"] and rep["calibration"]["emulated-jcc"]["cost_ns"], "not calibrated")
    check(f["raw_wall_ns"]["avg"] > 300, "the probes must cost something, or this test proves nothing")
    # An emulated probe's cost, by this host's calibration; a single step would be several times more.
    emul = rep["calibration"]["emulated-jcc"]["bias_ns"]
    check(f["raw_wall_ns"]["avg"] < 3 * emul, f"raw {f['raw_wall_ns']['avg']:.0f} ns, the jcc probe calibrated at "
          f"{emul:.0f}: single-stepped")
    # The goal of issue 5 for a 2 ns function (< 0.3 us) plus 200 ns for a noisy moment, as for a push.
    check(f["wall_ns"]["avg"] < 300 + 200, f"2 ns function reads {f['wall_ns']['avg']:.0f} ns")


def test_branch_into_the_skipped_bytes_keeps_the_probe_at_entry():
    # A loop back onto the instruction before the jne, and a switch case (jump table in .rodata,
    # read from the file) onto the cmp before the ja: a probe on the jne or ja would fire inside
    # the call. Every call counted once; the same switch without that case gets the ja.
    for mode, fn, skip in (("loop", "site_loop", 0), ("table", "site_table", 0), ("tableok", "site_table_ok", 5)):
        want = plain_output(target("sites"), mode, 3000)
        rep, p = traced(["-f", fn], target("sites"), mode, 3000)
        f = func(rep, fn)
        check(f["entry_skip_bytes"] == skip, f"{fn}: probe {f['entry_skip_bytes']} bytes in, want {skip}")
        check((f["site"] in STEPPED) == (skip == 0), f"{fn}: site {f['site']}")
        check(f["calls"] == truth(p.stderr, mode)["calls"], f"{fn}: {f['calls']} calls of 3000")
        check(p.stdout == want, f"{fn}: the target's output changed")


def test_nopw_then_push_probed_where_this_kernel_emulates():
    # Issue 34: what the kernel emulates is probed on it (--version -v lists it), not read off a
    # table for one kernel. `nopw 0x0(%rax,%rax,1); push %rbp`: the probe on the nopw where the
    # kernel emulates it (6.16 on), on the push where it single-steps it (6.1). Every call counted.
    p = run_fnprof(["--version", "-v"])
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("  uprobe emulates nopw")]
    check(p.returncode == 0 and len(line) == 1, f"--version -v: {p.stdout[-1500:]}")
    check(line[0].endswith(": yes") or line[0].endswith(": no (Linux 6.16)"), line[0])
    want = ("emulated-nop", 0) if line[0].endswith(": yes") else ("emulated", 6)
    rows = {name: (site, skip) for site, skip, _, name in listed("-f", "site_nopw_push", "--", target("sites"),
                                                                   "nopw", "10")}
    check(rows.get("site_nopw_push") == want, f"{rows}, want {want} ({line[0].strip()})")
    rep, p = traced(["-f", "site_nopw_push"], target("sites"), "nopw", 3000)
    f = func(rep, "site_nopw_push")
    check((f["site"], f["entry_skip_bytes"]) == want, f"traced: {f['site']} {f['entry_skip_bytes']}")
    check(f["calls"] == truth(p.stderr, "nopw")["calls"], f"{f['calls']} calls of 3000")


def test_what_the_kernel_emulates_is_probed_once_per_boot():
    # Issue 34: the probe takes tens of ms and leaves uprobe releases behind it: the first run of
    # a boot keeps its answer (root's, in /run), later runs read it; a file not fnprof's own
    # (another key, garbage) is probed over, never believed. In a folder of this test's own
    # (fnprof-test's FNPROF_TEST_RUNCACHE_DIR, for /run/fnprof): another fnprof running meanwhile
    # (another suite, a user's trace) would keep its answer in /run/fnprof between two of the runs.
    top = tempfile.mkdtemp()
    folder = os.path.join(top, "fnprof")
    path = os.path.join(folder, "uprobe-insns")
    env = dict(os.environ, FNPROF_TEST_RUNCACHE_DIR=folder)
    args = ["-v", "--list", "-f", "site_nopw_push", "--", target("sites"), "nopw", "1"]

    def source():
        p = run_fnprof(args, env=env, exe=fnprof_test())
        check(p.returncode == 0, p.stderr[-1500:])
        said = [ln for ln in p.stderr.splitlines() if "what the kernel emulates for a uprobe" in ln]
        check(len(said) == 1, p.stderr[-1500:])
        if "first run found" in said[0]:
            check(path in said[0], f"not read from the test's folder: {said[0]}")
        return "kept" if "first run found" in said[0] else "probed" if "probed in" in said[0] else said[0]

    try:
        check(source() == "probed", "no kept answer: probed")
        st = os.stat(path)
        check(st.st_uid == 0 and st.st_mode & 0o777 == 0o600, f"{path}: mode {st.st_mode:o}, uid {st.st_uid}")
        check(os.stat(folder).st_mode & 0o777 == 0o700, "the directory is root's alone")
        check(source() == "kept", "the second run probed again")
        size = st.st_size
        with open(path, "r+b") as f:
            f.write(b"another boot id " + b"\xff" * (size - 16))
        check(source() == "probed", "a foreign answer was believed")
        check(source() == "kept", "the new answer was not kept")
        # A form whose hit the probe did not see (a machine too busy for its children's calls) is no
        # answer: kept, it held for the whole boot (every form read "no" for a while on a loaded
        # machine). The first form's answer (after the 128-byte key and the 4-byte flag) made unknown:
        # probed over, and the new answer kept.
        with open(path, "r+b") as f:
            f.seek(132)
            f.write(b"\0\0\0\0")
        check(source() == "probed", "an answer with a form unknown was believed")
        check(source() == "kept", "the full answer was not kept")
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_deflate_right_in_each_launch():
    # Issue 22: deflate() of Debian's libz on 256 bytes (3-4 us), timed by its caller. The truth
    # is the same deflate in a private copy of libz (another inode: no probe), called in turn
    # with the traced one in the same run. Before: 0, 412, 2606, 7303, 5122 ns in five launches
    # (single-stepped entry). Goal: within 5% or 200 ns in each launch. The median: this shared
    # machine's preemptions move averages by microseconds, in the untraced copy's too. Allowed here:
    # 15% or 600 ns. The untraced copy's own median moves by up to 10% from one launch to the next
    # (3615-3986 ns in one series: the two copies' addresses are random, and so is how their code
    # and data share the caches), and the traced one's with it, each its own way; and in about one
    # launch in five under load the traced call's median reads 400-470 ns (12%) high, before this
    # issue's change as after it (the probes' kernel work evicting the call's lines, we think:
    # not measured). A single-stepped entry left uncorrected reads ~10 us high.
    for launch in range(5):
        rep, p = traced(["-f", "libz:deflate"], target("zloop"), "deflate", 20000)
        f, t = func(rep, "deflate"), truth(p.stderr, "deflate_untraced")
        check(f["calls"] == 20000, f"launch {launch}: {f['calls']} calls")
        err = f["wall_ns"]["p50"] - t["p50_ns"]
        print(f"# launch {launch}: fnprof p50 {f['wall_ns']['p50']} ns, untraced {t['p50_ns']:.0f} ns, "
              f"site {f['site']}")
        check(abs(err) <= max(0.15 * t["p50_ns"], 600),
              f"launch {launch}: deflate p50 {f['wall_ns']['p50']} ns vs untraced {t['p50_ns']:.0f} ns")


def test_cxx_leaf_gets_a_uretprobe_exits_stay_ret_elsewhere():
    # Issue 22, exits: in a C++ program every return was a ret probe, single-stepped (~10 us a
    # call here, against ~1 us for a uretprobe). mix() calls nothing, so no exception, longjmp or
    # stack switch passes its frame: a uretprobe. middle(), which an exception passes, keeps ret.
    want = plain_output(target("cxx_throw"), 3000)
    rep, p = traced(["-f", "lib::mix", "-f", "app::middle"], target("cxx_throw"), 3000)
    check(p.stdout == want, f"output changed: {p.stdout!r} vs {want!r}")
    mix, mid = func(rep, "lib::mix(long)"), func(rep, "app::middle(int)")
    check(mix["exit"] == "uretprobe" and "leaf" in (mix.get("exit_why") or ""), f"mix: {mix['exit']} {mix.get('exit_why')}")
    check(mid["exit"] == "ret", f"middle: {mid['exit']}")
    check(mix["calls"] == truth(p.stderr, "mix")["calls"], f"mix: {mix['calls']} calls")
    check(mid["calls"] == truth(p.stderr, "middle")["returned"], f"middle: {mid['calls']} returned")
    check(rep["dropped"]["abandoned_frames"] >= 999, f"{rep['dropped']}: 1000 frames were unwound")


def test_probe_overhead_names_the_stepped_functions():
    # Issue 22, item 4: where single-stepped probes make most of the overhead, the line says which
    # functions, and what --stepped=single would change.
    p = run_fnprof(["-f", "tiny", "-f", "tiny_push", "--", target("work"), "count", "5000"])
    check(p.returncode == 0, p.stderr[-1500:])
    lines = p.stderr.splitlines()
    i = next((k for k, line in enumerate(lines) if line.startswith("probe overhead:")), None)
    check(i is not None, f"no probe overhead line:\n{p.stderr[-1500:]}")
    check("single-stepped" in lines[i + 1] and " tiny " in lines[i + 1] + " " and "tiny_push" not in lines[i + 1],
          f"stepped line: {lines[i + 1]!r}")
    check("--stepped=single" in lines[i + 2], f"no advice: {lines[i + 2]!r}")


def test_leaf_in_a_program_that_switches_stacks_keeps_ret_exits():
    # swapcontext or sigaltstack in the program: a signal handler on a stack above the thread's that
    # hits a uretprobe makes the kernel drop the returns pending below it, a leaf's too (SIGILL at
    # its return). So the leaf rule stops there: scramble() calls nothing and still gets ret probes.
    rows = {name: exit for _, _, exit, name in listed("-f", "scramble", "-f", "step", "--", target("coro"), "10")}
    check(rows.get("scramble") == "ret" and rows.get("step") == "ret", f"exits: {rows}")


# Issue 37: every function of real objects goes through the code reader (entry site, exits, jump
# tables) without killing fnprof. Debian's nginx crashed it (ngx_escape_json's jump table, whose
# base is not a rip-relative lea: a division by zero, exit 132) before anything was attached.
DEBIAN_NGINX = os.path.join(BIN, "debian", "nginx", "usr", "sbin", "nginx")


def list_whole_object(spec, *cmd):
    """--list over every function of one object: the rows, after checking that fnprof exited 0."""
    p = run_fnprof(["--list", "-f", spec, "--", *cmd], timeout=300)
    check(p.returncode == 0, f"--list -f {spec}: exit {p.returncode}\n{p.stderr[-1500:]}")
    rows = p.stdout.splitlines()[1:]
    check(rows, f"--list -f {spec}: no function listed")
    return rows


def test_list_every_function_of_debian_nginx():
    if not os.path.exists(DEBIAN_NGINX):
        raise Skip(f"Debian's nginx not unpacked at {DEBIAN_NGINX} (make test-deps)")
    rows = list_whole_object("ngx_escape_json", DEBIAN_NGINX)
    check(len(rows) == 1, f"ngx_escape_json: {rows}")
    rows = list_whole_object("nginx:*", DEBIAN_NGINX)
    check(any(r.split()[-1] == "ngx_escape_json" for r in rows), "ngx_escape_json not listed")


def test_list_every_function_of_debian_python_libc_and_go():
    py = "/usr/bin/python3.11"
    if not os.path.exists(py):
        raise Skip("no Debian python3.11")
    list_whole_object("python3.11:*", py)
    list_whole_object("libc:*", py)
    list_whole_object("gotarget:*", target("gotarget"))


def start_nginx(d):
    """Debian's nginx with a config of its own, on 127.0.0.1 at a free port: (master Popen, worker pid)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temps = " ".join(f"{k}_temp_path {d}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(f"worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log;\nevents {{}}\n"
                f"http {{ access_log off; {temps}\n"
                f"  server {{ listen 127.0.0.1:{port}; location / {{ return 200 ok; }} }} }}\n")
    master = subprocess.Popen([DEBIAN_NGINX, "-p", d, "-e", f"{d}/error.log", "-c", f"{d}/nginx.conf",
                               "-g", "daemon off;"])
    children = f"/proc/{master.pid}/task/{master.pid}/children"
    if not wait_for(lambda: os.path.exists(children) and open(children).read().split(), timeout=10):
        master.kill()
        log = os.path.join(d, "error.log")
        raise AssertionError(f"nginx started no worker: {open(log).read() if os.path.exists(log) else ''}")
    return master, int(open(children).read().split()[0])


def test_list_running_debian_nginx_worker():
    # The issue's own command: -p on a worker, -f ngx_escape_json, then every function.
    if not os.path.exists(DEBIAN_NGINX):
        raise Skip(f"Debian's nginx not unpacked at {DEBIAN_NGINX} (make test-deps)")
    d = tempfile.mkdtemp(prefix="fnprof-nginx-")
    master = None
    try:
        master, worker = start_nginx(d)
        p = run_fnprof(["-p", str(worker), "--list", "-f", "ngx_escape_json"])
        check(p.returncode == 0 and p.stdout.split()[-1:] == ["ngx_escape_json"],
              f"exit {p.returncode}: {p.stdout[-300:]}{p.stderr[-1000:]}")
        p = run_fnprof(["-p", str(worker), "--list", "-f", "nginx:*"], timeout=300)
        check(p.returncode == 0 and len(p.stdout.splitlines()) > 1, f"nginx:*: exit {p.returncode}: {p.stderr[-1000:]}")
    finally:
        if master:
            master.terminate()
            master.wait(timeout=30)
        shutil.rmtree(d)
