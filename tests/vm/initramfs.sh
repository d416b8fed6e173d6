#!/bin/sh
# Usage: initramfs.sh OUT FILE...
# A gzipped cpio initramfs for the VM matrix: busybox (its applets linked at boot), tests/vm/init as
# /init, jq, and each FILE (paths relative to the repository root) at /r/FILE, so that the targets'
# rpath ($ORIGIN) and the checks' relative paths hold; with every shared library they load (ldd),
# at the path the dynamic loader looks for it.
set -eu
out=$1
shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/r" "$stage/proc" "$stage/sys" "$stage/dev" "$stage/tmp" "$stage/etc"
cp "$(command -v busybox)" "$stage/bin/busybox"
cp "$(command -v jq)" "$stage/bin/jq"  # the checks read fnprof's JSON with it
cp tests/vm/init "$stage/init"
for f in "$@"; do
	mkdir -p "$stage/r/$(dirname "$f")"
	cp -a "$f" "$stage/r/$f"
done
# The libraries fnprof opens itself (dlopen) where the host has them: capstone reads functions' code
# (entry sites, ret probes), libstdc++ demangles. Not libdebuginfod: the guest has no network.
dlopened=$(for so in libcapstone.so.4 libstdc++.so.6; do
	ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }'
done)
# The loader and the libraries, by the paths ldd resolves (a file that is not dynamic has none).
for f in "$stage/bin/jq" $dlopened "$@"; do
	case $f in /*) echo "$f" ;; esac
	ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'
done | grep -v "^$stage" | sort -u | while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
# /lib64 -> the loader's directory, as on the host.
[ -e "$stage/lib64" ] || { [ -d /lib64 ] && mkdir -p "$stage/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"; }
echo "root:x:0:0:root:/root:/bin/sh" > "$stage/etc/passwd"
echo "root:x:0:" > "$stage/etc/group"
(cd "$stage" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
