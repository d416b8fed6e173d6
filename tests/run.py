#!/usr/bin/env python3
"""Runs the unit test binaries and the integration tests; ends with 'N passed, N failed'.

Usage: tests/run.py [NAME_SUBSTRING ...]   (only tests whose name contains one of them)
"""
import glob
import importlib.util
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402


def selected(name, filters):
    return not filters or any(f in name for f in filters)


def run_unit(filters, results):
    for path in sorted(glob.glob(os.path.join(harness.BIN, "unit", "test_*"))):
        name = "unit/" + os.path.basename(path)
        if not selected(name, filters):
            continue
        p = subprocess.run([path], capture_output=True, text=True, timeout=120, cwd=HERE)
        # Unit binaries print one "ok NAME" / "FAIL NAME: why" line per case.
        for line in p.stdout.splitlines():
            if line.startswith("ok "):
                results.append((f"{name}:{line[3:]}", "pass", ""))
            elif line.startswith("FAIL "):
                results.append((f"{name}:{line[5:]}", "fail", ""))
        if p.returncode != 0 and not any(r[0].startswith(name) and r[1] == "fail" for r in results):
            results.append((name, "fail", f"exit {p.returncode}\n{p.stderr[-3000:]}"))
        for r in results:
            if r[0].startswith(name):
                print(f"{r[1].upper():5} {r[0]}", flush=True)


def run_integration(filters, results):
    for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
        modname = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = f"{modname}.{name}"
            if not selected(full, filters):
                continue
            t0 = time.time()
            try:
                getattr(mod, name)()
                status, detail = "pass", ""
            except harness.Skip as e:
                status, detail = "skip", str(e)
            except Exception:  # a crash of the test itself is a failure too
                status, detail = "fail", traceback.format_exc()
            results.append((full, status, detail))
            print(f"{status.upper():5} {full} ({time.time() - t0:.1f}s)"
                  + (f": {detail}" if status == "skip" else ""), flush=True)
            if status == "fail":
                print("      " + detail.replace("\n", "\n      "), flush=True)


def main():
    filters = sys.argv[1:]
    if os.geteuid() != 0:
        print("tests need root (BPF, uprobes): run with sudo", file=sys.stderr)
    results = []
    run_unit(filters, results)
    run_integration(filters, results)
    passed = sum(1 for r in results if r[1] == "pass")
    failed = sum(1 for r in results if r[1] == "fail")
    skipped = sum(1 for r in results if r[1] == "skip")
    for r in results:
        if r[1] == "fail":
            print(f"failed: {r[0]}")
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
