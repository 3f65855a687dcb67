#!/bin/sh
# Prints the flags every release build of jaq is linked with (make release, make test, the tests'
# own release builds: ReleaseProducts), after writing the toolset file they name.
#
# libAudioToolbox.so.1 exports the C API alone: Configs/libAudioToolbox.map, a linker version
# script. The toolchain's lld links it: GNU ld keeps the hidden Swift symbols that its GOT entries
# name in the dynamic table (as LOCAL entries), lld resolves them in place and leaves only the C
# API. SwiftPM takes a linker only from a toolset file, written here into .build. The executables
# are linked with the same flags and define none of the C API: --undefined-version.
#
# usage: Configs/release-flags.sh [swift]   (run from the package root)
set -e
swift=${1:-swift}
path=$(command -v "$swift" || command -v /opt/swift/usr/bin/swift) || { echo "swift not found" >&2; exit 1; }
lld=$(dirname "$(readlink -f "$path")")/ld.lld
[ -x "$lld" ] || { echo "$lld is missing: the Swift toolchain's lld links the release library" >&2; exit 1; }
root=$(pwd)
mkdir -p .build
printf '{ "schemaVersion": "1.0", "linker": { "path": "%s" } }\n' "$lld" > .build/release-toolset.json
echo "--toolset $root/.build/release-toolset.json -Xlinker --undefined-version -Xlinker --version-script=$root/Configs/libAudioToolbox.map"
