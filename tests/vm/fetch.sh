#!/bin/sh
# Usage: fetch.sh SUITE DIR
# Debian's cloud kernel of SUITE (bullseye, bookworm, trixie), unpacked into DIR: DIR/vmlinuz and
# DIR/version. apt runs on a private state under DIR (its own sources, lists and cache), so the
# machine's apt sources and lists are left alone; a kernel already in DIR is used as it is (nothing
# downloaded). The package list is signed with the Debian archive keys of debian-archive-keyring.
set -eu
suite=$1 dir=$2
mirror=${VMTEST_MIRROR:-http://deb.debian.org/debian}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -s "$dir/vmlinuz" ] && [ -s "$dir/version" ] && exit 0
mkdir -p "$dir" && dir=$(cd "$dir" && pwd)  # apt takes relative paths as relative to /etc/apt

apt=$dir/apt
rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$apt/prefs"
echo "deb [signed-by=$keyring] $mirror $suite main" > "$apt/sources.list"
# Every path apt reads or writes is ours; status /dev/null: nothing installed here matters.
set -- -q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts="$apt/parts" \
	-o Dir::Etc::Preferences="$apt/prefs/none" -o Dir::Etc::PreferencesParts="$apt/prefs" \
	-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Dir::State::status=/dev/null \
	-o APT::Architectures=amd64 -o Acquire::Languages=none -o APT::Sandbox::User="$(id -un)" \
	-o Debug::NoLocking=1
if ! apt-get "$@" update >"$apt/update.log" 2>&1 || grep -q '^[WE]:' "$apt/update.log"; then
	echo "vmtest: cannot read Debian's $suite package list from $mirror (no network?):" >&2
	grep '^[WE]:' "$apt/update.log" | head -3 >&2
	exit 1
fi
# linux-image-cloud-amd64 depends on the suite's current signed image; the -unsigned package holds
# the same kernel without the signature template.
image=$(apt-cache "$@" depends linux-image-cloud-amd64 | sed -n 's/^ *Depends: \(linux-image-[^ ]*-cloud-amd64\)$/\1/p')
if [ -z "$image" ]; then
	echo "vmtest: no linux-image-cloud-amd64 in Debian's $suite" >&2
	exit 1
fi
(cd "$apt" && apt-get "$@" download "$image-unsigned") >"$apt/download.log" 2>&1 || {
	echo "vmtest: cannot download $image-unsigned from $mirror:" >&2
	tail -3 "$apt/download.log" >&2
	exit 1
}
rm -rf "$apt/root" && dpkg-deb -x "$apt"/"$image"-unsigned_*.deb "$apt/root"
cp "$apt"/root/boot/config-* "$dir/config"
cp "$apt"/root/boot/vmlinuz-* "$dir/vmlinuz.tmp"
echo "${image#linux-image-}" | sed 's/-cloud-amd64$//' > "$dir/version"
mv "$dir/vmlinuz.tmp" "$dir/vmlinuz"
rm -rf "$apt"
