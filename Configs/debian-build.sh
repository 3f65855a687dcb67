#!/usr/bin/env bash
# make deb: jaq's Debian packages (libaudiotoolbox1, libaudiotoolbox-dev, jaq) from this tree,
# with dpkg-buildpackage (Docs/install.md, "Debian packages"). Run from the package root:
#   Configs/debian-build.sh OUT [BUILT GENERATE_MANUAL]
# The tree (without .build, .git and out) is copied to OUT/.stage-*/jaq-VERSION with
# Configs/debian as its debian/ and a changelog entry for VERSION (Sources/jaq/Version.swift,
# the one place the version is written), then built with `dpkg-buildpackage -us -uc -b`; the
# .deb files land in OUT. BUILT and GENERATE_MANUAL: package the products `make release`
# already built there instead of building them again (the tests do).
# DEB_COMPRESSION (xz, gzip, none...) is dpkg-deb's.
set -euo pipefail
out=$1
built=${2:-}
manual=${3:-}
root=$(pwd)
version=$(sed -n 's/^let jaqVersion = "\(.*\)"$/\1/p' Sources/jaq/Version.swift)
[ -n "$version" ] || { echo "no version in Sources/jaq/Version.swift" >&2; exit 1; }
mkdir -p "$out"
out=$(realpath "$out")
stage=$(mktemp -d "$out/.stage-XXXXXX")
trap 'rm -rf "$stage"' EXIT
src=$stage/jaq-$version
mkdir -p "$src"
# OUT itself is left out when it is inside the tree (the stage is in it).
inside=$(realpath --relative-to="$root" "$out")
case $inside in ..*) inside=out ;; esac
tar -C "$root" --exclude=./.build --exclude='./.build-*' --exclude=./.git --exclude=./.swiftpm \
    --exclude=./out --exclude="./$inside" --exclude=./debian -cf - . | tar -C "$src" -xf -
rm -rf "$src/Configs/debian"
cp -r Configs/debian "$src/debian"

# The changelog's one entry: this version, dated by the last commit (or SOURCE_DATE_EPOCH), so
# the same tree gives the same packages.
maintainer=$(sed -n 's/^Maintainer: //p' Configs/debian/control)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
{
    echo "jaq ($version) unstable; urgency=medium"
    echo
    echo "  * jaq $version: the command, libAudioToolbox.so.1 and its headers; the"
    echo "    changes are in the project's git history."
    echo
    echo " -- $maintainer  $(LC_ALL=C date -u -R -d "@$epoch")"
} > "$src/debian/changelog"

if [ -n "$built" ]; then
    export JAQ_BUILT=$(realpath "$built") JAQ_GENERATE_MANUAL=$(realpath "$manual")
fi
export JAQ_DEB_COMPRESSION=${DEB_COMPRESSION:-}
(cd "$src" && dpkg-buildpackage -us -uc -b >"$stage/build.log" 2>&1) || {
    tail -40 "$stage/build.log" >&2
    echo "dpkg-buildpackage failed (the last lines of its log are above)" >&2
    exit 1
}
arch=$(dpkg --print-architecture)
for p in libaudiotoolbox1 libaudiotoolbox-dev jaq; do
    mv "$stage/${p}_${version}_$arch.deb" "$out/"
    echo "$out/${p}_${version}_$arch.deb"
done
