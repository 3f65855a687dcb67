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
# Prints one flag a line (a path with spaces stays one flag): read them into an array.
#
# usage: Configs/release-flags.sh [swift]   (run from the package root)
set -e
swift=${1:-swift}
path=$(command -v "$swift" || command -v /opt/swift/usr/bin/swift) || { echo "swift not found" >&2; exit 1; }
# The toolchain's own bin directory: from its runtime resource path (.../usr/lib/swift), which
# is right also when `swift` is a proxy such as swiftly's; else beside the swift found.
resources=$("$path" -print-target-info 2>/dev/null | sed -n 's/.*"runtimeResourcePath": "\(.*\)".*/\1/p' | head -1)
lld=${resources:+$resources/../../bin/ld.lld}
[ -n "$lld" ] && [ -x "$lld" ] || lld=$(dirname "$(readlink -f "$path")")/ld.lld
[ -x "$lld" ] || { echo "$lld is missing: the Swift toolchain's lld links the release library" >&2; exit 1; }
lld=$(cd "$(dirname "$lld")" && pwd)/ld.lld   # the directory made plain; ld.lld itself (a link to lld) kept, its name says which linker
root=$(pwd)
mkdir -p .build
printf '{ "schemaVersion": "1.0", "linker": { "path": "%s" } }\n' "$lld" > .build/release-toolset.json
printf '%s\n' --toolset "$root/.build/release-toolset.json" -Xlinker --undefined-version -Xlinker "--version-script=$root/Configs/libAudioToolbox.map"
