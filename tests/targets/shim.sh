#!/bin/sh
# A launcher as pyenv's shims are: a shell script that does some work of its own (here ~0.5 s of
# shell arithmetic, so that -a samples it before the exec), then execs the program, which keeps the
# pid. Usage: shim.sh PROGRAM ARGS...
i=0
while [ "$i" -lt "${SHIM_LOOPS:-200000}" ]; do
	i=$((i + 1))
done
exec "$@"
