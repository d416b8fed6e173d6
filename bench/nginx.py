#!/usr/bin/env python3
"""Debian's nginx under load, untraced and with libc's accept4, writev and close traced system-wide.

nginx (tests/bin/debian, from make test-deps) runs with WORKERS workers on 127.0.0.1, answering
`return 200` with access_log off; bench/.output/httpload drives it with CLIENTS clients, one
connection per request, for SECONDS. Each repeat runs, one after the other: untraced; traced by
fnprof (`-f libc:accept4 -f libc:writev -f libc:close`, no -p: every process); traced with
FNPROF_NO_UPROBE_SESSION=1 (the exits before uprobe sessions: ret probes in every process); every
other repeat in the reverse order. In every
arm a Go program mapping libc (tests/bin/gotarget-lib, cgo calls of dup and close, ~2000 a second)
runs alongside; its output must be that of an untraced run, and the report must say it kept ret
probes while the nginx workers took the uretprobe. Prints medians and ranges of requests per second
and of each traced arm's share of the untraced figure of the same repeat.

Usage: python3 bench/nginx.py [--repeats 5] [--seconds 5] [--clients 4] [--workers 2]
(as root, after make test-build test-deps and make -C bench .output/httpload)
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FNPROF = os.path.join(ROOT, "fnprof")
NGINX = os.path.join(ROOT, "tests", "bin", "debian", "nginx", "usr", "sbin", "nginx")
LOAD = os.path.join(HERE, ".output", "httpload")
GO = os.path.join(ROOT, "tests", "bin", "gotarget-lib")
GO_ARGS = ["2", "100000", "1000"]   # 2 goroutines, a call each per ms: runs past the arm, then killed
FUNCS = ["-f", "libc:accept4", "-f", "libc:writev", "-f", "libc:close"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(d, workers, port):
    temps = " ".join(f"{k}_temp_path {d}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(f"worker_processes {workers}; pid {d}/nginx.pid; error_log {d}/error.log;\n"
                "events { worker_connections 1024; }\n"
                f"http {{ access_log off; {temps} server {{ listen 127.0.0.1:{port}; "
                "location / { return 200 'hello\\n'; } } }\n")
    p = subprocess.Popen([NGINX, "-p", d, "-e", f"{d}/error.log", "-c", f"{d}/nginx.conf", "-g", "daemon off;"])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return p
        except OSError:
            time.sleep(0.05)
    p.kill()
    raise SystemExit("nginx did not start")


def load(port, clients, seconds):
    out = subprocess.run([LOAD, str(port), str(clients), str(seconds)], capture_output=True, text=True,
                         check=True).stdout
    f = dict(kv.split("=") for kv in out.split())
    if int(f["errors"]):
        raise SystemExit(f"httpload: {out}")
    return float(f["rps"])


def start_fnprof(env, report):
    err = open(report + ".err", "w")
    p = subprocess.Popen([FNPROF] + FUNCS + ["--json", "-o", report, "-v"], env=env, stdout=subprocess.DEVNULL,
                         stderr=err)
    for _ in range(300):
        with open(report + ".err") as f:
            text = f.read()
        if "attached" in text and "calibration" in text.split("attached", 1)[1] or p.poll() is not None:
            break
        time.sleep(0.05)
    if p.poll() is not None:
        raise SystemExit(f"fnprof exited: {open(report + '.err').read()[-2000:]}")
    time.sleep(1.0)   # its calibration runs after the attach: not inside the measured stretch
    return p


def one_arm(args, port, traced, env, d, want_go):
    """requests/s of one arm, and (traced) the report's exits per process and the Go check."""
    report = os.path.join(d, f"report-{time.monotonic_ns()}.json")
    fp = start_fnprof(env, report) if traced else None
    go = subprocess.Popen([GO] + GO_ARGS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    rps = load(port, args.clients, args.seconds)
    go.terminate()   # not a crash: Go dies of the SIGTERM (SIGINT may be ignored in a background job)
    go_out, go_err = go.communicate(timeout=30)
    harmed = go.returncode != -signal.SIGTERM or "panic" in go_err or "fatal" in go_err or go_out != want_go
    exits = {}
    if fp:
        fp.terminate()
        fp.wait(timeout=60)
        with open(report) as f:
            rep = [json.loads(l) for l in f if l.startswith("{")][-1]
        for e in rep.get("exits_per_process", []):
            exits.setdefault(f"{e['comm']}:{e['exit']}", []).append(e["pid"])
        exits["dropped"] = {k: v for k, v in rep["dropped"].items() if v}
        exits["calls"] = {f["name"]: f["calls"] for f in rep["functions"]}
    return rps, harmed, go.pid, exits


def spread(v):
    return f"median {statistics.median(v):.3f}, range {min(v):.3f}-{max(v):.3f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    for path in (NGINX, LOAD, GO, FNPROF):
        if not os.path.exists(path):
            raise SystemExit(f"{path} missing: make test-build test-deps; make -C bench .output/httpload")
    d = tempfile.mkdtemp(prefix="fnprof-nginx-bench-")
    port = free_port()
    nginx = start_nginx(d, args.workers, port)
    # An interrupted run of the Go program prints nothing on stdout: that is the output to keep.
    want_go = ""
    arms = {"untraced": (False, None), "sessions": (True, dict(os.environ)),
            "no sessions": (True, dict(os.environ, FNPROF_NO_UPROBE_SESSION="1"))}
    rps = {a: [] for a in arms}
    ratio = {a: [] for a in arms if a != "untraced"}
    try:
        load(port, args.clients, 1)   # warm-up
        for r in range(args.repeats):
            # Every other repeat in the reverse order: a drift of the machine's load favours no arm.
            for a in list(arms) if r % 2 == 0 else list(arms)[::-1]:
                traced, env = arms[a]
                v, harmed, gopid, exits = one_arm(args, port, traced, env, d, want_go)
                rps[a].append(v)
                print(f"repeat {r + 1} {a}: {v:.0f} req/s; Go process {gopid} "
                      f"{'HARMED' if harmed else 'unharmed'}; {json.dumps(exits) if exits else ''}", flush=True)
                if harmed:
                    raise SystemExit("the Go process was harmed")
            for a in ratio:
                ratio[a].append(rps[a][-1] / rps["untraced"][-1])
    finally:
        nginx.send_signal(signal.SIGQUIT)
        nginx.wait(timeout=30)
        shutil.rmtree(d, ignore_errors=True)
    print(f"\nnginx ({args.workers} workers), {args.clients} clients, one connection per request, "
          f"{args.seconds:g} s per arm, {args.repeats} repeats")
    for a in arms:
        print(f"  {a:12s} req/s: {spread([round(x) for x in rps[a]])}")
    for a in ratio:
        print(f"  {a:12s} share of untraced: {spread(ratio[a])}")


if __name__ == "__main__":
    sys.exit(main())
