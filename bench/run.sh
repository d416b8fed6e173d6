#!/bin/sh
# make bench: builds the benchmark's targets and floor (bench/Makefile), then runs bench/bench.py.
# BENCH_QUICK=1 for a short version; BENCH_REPEATS=N to choose the repeats. Needs root.
set -e
cd "$(dirname "$0")"
make -s -C . all
python3 bench.py "$@"
exec python3 profiles.py
