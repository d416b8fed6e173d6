#!/bin/sh
# Usage: initramfs.sh OUT FILE...
# A gzipped cpio initramfs for the VM matrix: busybox (its applets linked at boot), tests/vm/init as
# /init, and each FILE (paths relative to the repository root) at /r/FILE, so that the targets'
# rpath ($ORIGIN) and the checks' relative paths hold; with every shared library they load (ldd),
# at the path the dynamic loader looks for it.
set -eu
out=$1
shift
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/r" "$stage/proc" "$stage/sys" "$stage/dev" "$stage/tmp" "$stage/etc"
cp "$(command -v busybox)" "$stage/bin/busybox"
cp tests/vm/init "$stage/init"
for f in "$@"; do
	mkdir -p "$stage/r/$(dirname "$f")"
	cp -a "$f" "$stage/r/$f"
done
# The loader and the libraries, by the paths ldd resolves (a file that is not dynamic has none).
for f in "$@"; do
	ldd "$f" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'
done | sort -u | while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done
# /lib64 -> the loader's directory, as on the host.
[ -e "$stage/lib64" ] || { [ -d /lib64 ] && mkdir -p "$stage/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"; }
echo "root:x:0:0:root:/root:/bin/sh" > "$stage/etc/passwd"
echo "root:x:0:" > "$stage/etc/group"
(cd "$stage" && find . | cpio -o -H newc --quiet) | gzip -1 > "$out.tmp"
mv "$out.tmp" "$out"
