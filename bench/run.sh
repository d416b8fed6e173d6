#!/bin/sh
# make bench: builds the benchmark's targets and floor (bench/Makefile), then runs bench/bench.py.
# BENCH_QUICK=1 for a short version; BENCH_REPEATS=N to choose the repeats. Needs root.
set -e
cd "$(dirname "$0")"
make -s -C . all
python3 bench.py "$@"
# Issue 12: stacks without frame pointers, unwinding cost, symbols from a big debug file.
python3 prod.py
# Issue 15: attach time with the target's CPU busy, against funclatency.
python3 attach_busy.py
python3 startup.py
# Issue 16: what the offcpu, mutex and heap profiles cost the target.
python3 profiles.py
# Issue 24: the offcpu, mutex and heap profiles' stacks, fp against dwarf (needs make test-build).
make -s -C .. test-build
exec python3 profile_stacks.py
