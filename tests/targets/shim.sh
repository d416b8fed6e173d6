#!/bin/sh
# A launcher as pyenv's shims are: a shell script that does some work of its own (here ~0.2 s of
# shell arithmetic, so that -a samples it before the exec), then execs the program, which keeps the
# pid. Usage: shim.sh PROGRAM ARGS...
i=0
while [ "$i" -lt "${SHIM_LOOPS:-40000}" ]; do
	i=$((i + 1))
done
exec "$@"
