#!/usr/bin/env python3
"""The kernel matrix (issue 34): each kernel of tests/vm/kernels booted in QEMU with an initramfs
holding the built fnprof, its libraries, the targets and tests/vm/checks.sh, whose CHECK lines come
back on the serial console. Prints a table, modes by kernels, with the first line of each failure,
and exits non-zero when a check that tests/vm/expect expects to pass does not.

Usage: vmtest.py [--diag] [--only CHECK,...] [KERNEL...]   (KERNEL: a label of tests/vm/kernels)
  --diag   instead of the checks, the verbose logs of a trace and of sampling, --calibrate and the
           listing of tests/vm/sitekinds, each kernel's in tests/bin/vm/LABEL.diag
Environment: VMTEST_ACCEL=kvm|tcg (default: KVM if a guest boots with it, else TCG).
"""
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VM = os.path.join(ROOT, "tests", "vm")
CACHE = os.path.join(ROOT, "tests", "bin", "vm")
# The downloaded kernels: kept by make clean (make distclean removes them).
KERNELS = os.path.join(ROOT, ".cache", "vm")
# What the checks run, relative to the repository root (checks.sh's paths).
FILES = ["fnprof", "tests/vm/checks.sh", "tests/bin/vm/sitekinds"] + [
    f"tests/bin/{t}" for t in ("work", "burn", "fleet", "offcpu", "mutex", "heap", "slowcall", "gotarget", "uselib",
                               "libtarget.so")]
BOOT_S = 30        # a KVM guest that has not started its checks by then never will (it boots in 3 s)
RUN_S = 1200       # a whole guest run, all checks (TCG: about 2 minutes)
RESULTS = ("PASS", "FAIL", "REFUSED")


def read_table(name):
    """The non-comment lines of tests/vm/NAME, split in fields."""
    with open(os.path.join(VM, name)) as f:
        return [line.split() for line in f if line.strip() and not line.lstrip().startswith("#")]


def kernels(labels):
    rows = [{"suite": r[0], "label": r[1], "nop": r[2]} for r in read_table("kernels")]
    unknown = set(labels) - {k["label"] for k in rows}
    if unknown:
        sys.exit(f"vmtest: no kernel {', '.join(sorted(unknown))} in tests/vm/kernels")
    return [k for k in rows if not labels or k["label"] in labels]


def expected(label, mode, table):
    """What tests/vm/expect expects of mode on the kernel: its last matching line, else PASS."""
    want = "PASS"
    for r in table:
        if r[0] == label and r[1] in (mode, "*"):
            want = r[2]
    return want


def fetch(k):
    d = os.path.join(KERNELS, k["suite"])
    p = subprocess.run(["sh", os.path.join(VM, "fetch.sh"), k["suite"], d], capture_output=True, text=True)
    if p.returncode:
        sys.stderr.write(p.stderr)
        sys.exit(f"vmtest: cannot get Debian {k['suite']}'s kernel ({k['label']}); make vmtest downloads it "
                 f"once from deb.debian.org into {d}: is the network reachable?")
    with open(os.path.join(d, "version")) as f:
        k["version"] = f.read().strip()
    k["vmlinuz"] = os.path.join(d, "vmlinuz")


def initramfs():
    missing = [f for f in FILES if not os.path.exists(os.path.join(ROOT, f))]
    if missing:
        sys.exit(f"vmtest: {', '.join(missing)} not built (make vmtest builds them)")
    out = os.path.join(CACHE, "initramfs.gz")
    subprocess.run(["sh", os.path.join(VM, "initramfs.sh"), out] + FILES, cwd=ROOT, check=True)
    return out


def qemu_argv(k, accel, initrd, append):
    cpu = ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else \
        ["-accel", "tcg,thread=single", "-cpu", "max"]  # multi-threaded TCG raced kernel text patching
    return ["qemu-system-x86_64", *cpu, "-m", "2G", "-smp", "2", "-kernel", k["vmlinuz"], "-initrd", initrd,
            "-append", f"console=ttyS0 quiet panic=-1 {append}", "-nographic", "-no-reboot", "-nic", "none",
            "-monitor", "none"]


def boot(k, accel, initrd, append, log):
    """Runs the guest to its end; its console lines. None where it never started its checks (with
    KVM: an emulation failure, or a guest that hangs) or ran past RUN_S."""
    lines, began = [], threading.Event()
    q = subprocess.Popen(qemu_argv(k, accel, initrd, append), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, errors="replace")

    def read():
        for line in q.stdout:
            lines.append(line.rstrip("\r\n"))
            log.write(line)
            if "VMTEST-BEGIN" in line:
                began.set()
            elif "emulation failure" in line or "KVM internal error" in line:
                q.kill()   # the guest is stopped for good
        began.set()        # QEMU is gone: no need to wait longer
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    t0 = time.monotonic()
    try:
        if not began.wait(BOOT_S if accel == "kvm" else RUN_S):
            return None
        q.wait(max(RUN_S - (time.monotonic() - t0), 1))
    except subprocess.TimeoutExpired:
        return None
    finally:
        if q.poll() is None:
            q.kill()
        q.wait()
        reader.join(5)
    return lines if any("VMTEST-END" in line for line in lines) else None


def run_kernel(k, accels, initrd, append):
    """(accelerator, console lines, seconds) of the kernel's run; the first accelerator that works."""
    for accel in list(accels):
        t0 = time.monotonic()
        with open(os.path.join(CACHE, f"{k['label']}.{accel}.log"), "w") as log:
            lines = boot(k, accel, initrd, f"vmtest.nop={k['nop']} {append}", log)
        if lines is not None:
            return accel, lines, time.monotonic() - t0
        print(f"vmtest: {k['label']}: no result with {accel} in {time.monotonic() - t0:.0f} s "
              f"(console: tests/bin/vm/{k['label']}.{accel}.log)", flush=True)
        if accel == "kvm":
            accels.remove("kvm")   # the next kernels go straight to TCG
    return None, [], 0.0


def results(lines):
    """{mode: (result, reason)} from the CHECK lines."""
    out = {}
    for line in lines:
        m = re.match(r".*?CHECK (\S+) (\S+) ?(.*)", line)
        if m and m.group(2) in RESULTS:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def all_checks():
    """The checks checks.sh runs (its CHECKS line), as the guest names them."""
    with open(os.path.join(VM, "checks.sh")) as f:
        m = re.search(r'^CHECKS="([^"]*)"', f.read(), re.M)
    return [c.replace("_", "-") for c in m.group(1).split()] if m else []


def print_table(ks, runs, table, wanted):
    """The matrix; returns the checks expected to pass that did not. Every check of wanted is in it: a
    kernel that returned nothing (no boot, a broken initramfs) fails those it should pass."""
    modes = list(wanted)
    for r in runs.values():
        modes += [m for m in r["results"] if m not in modes]
    width = max([len(m) for m in modes] + [8])
    print(f"\n{'MODE':<{width}}  " + "  ".join(f"{k['label']:<10}" for k in ks))
    unexpected, notes = [], []
    for m in modes:
        cells = []
        for k in ks:
            got = runs[k["label"]]["results"].get(m, ("FAIL", "no result from the guest"))
            want = expected(k["label"], m, table)
            mark = ""
            if got[0] != "PASS" and not (want == "FAIL" or (want == "REFUSED" and got[0] == "REFUSED")):
                mark = "!"
                unexpected.append((k["label"], m))
            elif got[0] == "PASS" and want != "PASS":
                notes.append(f"{k['label']} {m}: passes, expected {want}: update tests/vm/expect")
            cells.append(f"{got[0] + mark:<10}")
        print(f"{m:<{width}}  " + "  ".join(cells))
    print(f"{'seconds':<{width}}  " + "  ".join(f"{runs[k['label']]['seconds']:<10.0f}" for k in ks))
    print(f"{'accel':<{width}}  " + "  ".join(f"{runs[k['label']]['accel'] or '-':<10}" for k in ks))
    print("(! : expected to pass, see tests/vm/expect)")
    for k in ks:
        r = runs[k["label"]]
        print(f"\n{k['label']} (Debian {k['suite']}, {k['version']}):")
        for m, (res, why) in r["results"].items():
            if res != "PASS":
                print(f"  {m}: {res}: {why}")
    for n in notes:
        print(f"note: {n}")
    return unexpected


def main(argv):
    diag = "--diag" in argv
    argv = [a for a in argv if a != "--diag"]
    append = "vmtest.run=diag" if diag else ""
    only = ""
    if "--only" in argv:
        i = argv.index("--only")
        only = argv[i + 1]
        append += f" vmtest.only={only}"
        del argv[i:i + 2]
    ks = kernels(argv)
    os.makedirs(CACHE, exist_ok=True)
    for k in ks:
        fetch(k)
    initrd = initramfs()
    accels = [os.environ["VMTEST_ACCEL"]] if os.environ.get("VMTEST_ACCEL") else \
        (["kvm", "tcg"] if os.access("/dev/kvm", os.R_OK | os.W_OK) else ["tcg"])
    runs = {}
    for k in ks:
        accel, lines, secs = run_kernel(k, accels, initrd, append)
        runs[k["label"]] = {"accel": accel, "seconds": secs, "results": results(lines)}
        print(f"vmtest: {k['label']} ({k['version']}): {len(runs[k['label']]['results'])} checks in {secs:.0f} s "
              f"({accel or 'no run'})", flush=True)
        if diag:
            path = os.path.join(CACHE, f"{k['label']}.diag")
            with open(path, "w") as f:
                f.write("\n".join(lines) + "\n")
            print(f"vmtest: {k['label']}: diagnostics in {os.path.relpath(path, ROOT)}")
    if diag:
        return 0
    wanted = only.split(",") if only else all_checks()
    unexpected = print_table(ks, runs, read_table("expect"), [w.replace("_", "-") for w in wanted])
    if unexpected:
        print(f"\nvmtest: {len(unexpected)} checks expected to pass did not: "
              + ", ".join(f"{k} {m}" for k, m in unexpected))
        return 1
    print("\nvmtest: every check expected to pass passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
