"""fnprof itself under AddressSanitizer and UndefinedBehaviorSanitizer (the fnprof-asan build)."""
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

from harness import ROOT, check, final_report, func, target

ASAN = os.path.join(ROOT, "fnprof-asan")


def run_asan(args):
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    p = subprocess.run([ASAN] + args, capture_output=True, text=True, timeout=120, env=env)
    for word in ("AddressSanitizer", "LeakSanitizer", "runtime error"):
        check(word not in p.stderr, f"{word} in fnprof-asan {' '.join(args)}:\n{p.stderr[-4000:]}")
    return p


def test_asan_trace_counters_hist_json():
    p = run_asan(["-f", "touch_pages", "-e", "page-faults,cycles", "--hist", "--json", "-i", "0.05",
                  "--", target("work"), "pages", "8", "400"])
    check(p.returncode == 0, p.stderr[-2000:])
    check(func(final_report(p.stdout), "touch_pages")["calls"] == 400, "calls")


def test_asan_table_ret_mode_cxx():
    p = run_asan(["-f", "app::*", "--hist", "--", target("cxx_throw"), "300"])
    check(p.returncode == 0 and "app::middle(int)" in p.stderr, p.stderr[-2000:])


def test_asan_errors_and_lists():
    check(run_asan(["-f", "nope", "--", target("work"), "count", "1"]).returncode == 1, "not found")
    check(run_asan(["--list", "-f", "*", "--", target("work"), "count", "1"]).returncode == 0, "--list")
    check(run_asan(["--list-events"]).returncode == 0, "--list-events")
    check(run_asan(["-p", "x"]).returncode == 2, "usage")


def test_asan_bursts_and_calibration():
    p = run_asan(["-f", "tiny", "--max-overhead", "5", "--", target("work"), "rate", "20000", "20"])
    check(p.returncode == 0, p.stderr[-2000:])
    check(run_asan(["--calibrate"]).returncode == 0, "--calibrate")


def test_asan_follow_forks_and_stack_switching():
    p = run_asan(["-f", "spin_us", "--follow-forks", "-i", "0.1", "--", target("work"), "forktree", "100", "100"])
    check(p.returncode == 0 and p.stderr.count("fork child pid") >= 2, p.stderr[-2000:])
    p = run_asan(["-f", "step", "--json", "--", target("coro"), "500"])
    check(p.returncode == 0 and func(final_report(p.stdout), "step")["calls"] == 1000, p.stderr[-2000:])


def test_asan_svg_pictures():
    d = tempfile.mkdtemp()
    try:
        for i, args in enumerate((["-f", "parse_record", "-f", "wait_*", "--sample", "-F", "499"],
                                  ["-f", "parse_record", "-i", "0.2", "--per-thread", "--sample"])):
            path = os.path.join(d, f"{i}.svg")
            p = run_asan(args + ["--svg", path, "--", target("demo"), "1"])
            check(p.returncode == 0, p.stderr[-2000:])
            ET.parse(path)
    finally:
        shutil.rmtree(d)


def test_asan_profiles_all_kinds_pprof():
    d = tempfile.mkdtemp()
    try:
        base = os.path.join(d, "p.pb.gz")
        p = run_asan(["--profile", "cpu", "--profile", "offcpu", "--profile", "mutex", "--profile", "heap",
                      "--heap-rate", "16K", "-i", "0.3", "--json", "--pprof", base, "--", target("mutex"), "0.8"])
        check(p.returncode == 0, p.stderr[-2000:])
        check(len(os.listdir(d)) == 4, f"files: {os.listdir(d)}")
        p = run_asan(["--profile", "heap", "--per-thread", "--", target("heap"), "8", "0.4"])
        check(p.returncode == 0 and "thread " in p.stderr, p.stderr[-2000:])
        # The duty cycle's thread, attaching and detaching while reports read the maps.
        p = run_asan(["--profile", "heap", "--max-overhead", "5", "-i", "0.3", "--", target("heap"), "rate", "1.5",
                      "300"])
        check(p.returncode == 0 and "~ estimated" in p.stderr and "in use: unknown" in p.stderr, p.stderr[-2000:])
    finally:
        shutil.rmtree(d)
