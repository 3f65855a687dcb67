#!/usr/bin/env bash
# make install-built (Docs/install.md): installs the release products in BUILT under PREFIX,
# with DESTDIR before every path. Every setting comes from the environment the Makefile
# passes: BUILT, DESTDIR, PREFIX, BINDIR, LIBDIR, INCLUDEDIR, DATADIR, VERSION, SOVERSION,
# STRIP, GENERATE_MANUAL, MANUAL_DATE.
#
# The soname and runpaths are set on the installed copies with patchelf (after strip; one
# change per call: patchelf 0.14 drops --set-rpath given with --set-soname): SwiftPM has no
# per-product linker flags. The library's runpath is $ORIGIN/jaq/swift and jaq's is the same
# directory seen from BINDIR, where the Swift runtime libraries the two need are copied.
set -euo pipefail
: "${BUILT:?}" "${PREFIX:?}" "${BINDIR:?}" "${LIBDIR:?}" "${INCLUDEDIR:?}" "${DATADIR:?}" "${VERSION:?}" "${SOVERSION:?}"
DESTDIR=${DESTDIR:-}
STRIP=${STRIP:-}
for f in "$BUILT/libAudioToolbox.so" "$BUILT/jaq"; do
    [ -f "$f" ] || { echo "$f is missing: run make release (or make install)"; exit 1; }
done
command -v patchelf >/dev/null || { echo "patchelf is not installed (make deps-install, or apt-get install patchelf)"; exit 1; }
lib=$DESTDIR$LIBDIR
runtime=$lib/jaq/swift
library=$lib/libAudioToolbox.so.$VERSION
install -d "$DESTDIR$BINDIR" "$lib/pkgconfig" "$runtime" "$DESTDIR$INCLUDEDIR" "$DESTDIR$DATADIR/jaq"
# The headers in a directory of jaq's own (pkg-config --cflags adds -I.../include/jaq).
for d in AudioToolbox CoreAudio CoreAudioTypes CoreFoundation; do
    install -d "$DESTDIR$INCLUDEDIR/jaq/$d"
    install -m 644 Sources/CAudioToolbox/include/$d/*.h "$DESTDIR$INCLUDEDIR/jaq/$d/"
done
install -m 755 "$BUILT/libAudioToolbox.so" "$library"
install -m 755 "$BUILT/jaq" "$DESTDIR$BINDIR/jaq"
if [ -n "$STRIP" ]; then strip --strip-unneeded "$library" "$DESTDIR$BINDIR/jaq"; fi
patchelf --set-soname "libAudioToolbox.so.$SOVERSION" "$library"
patchelf --set-rpath '$ORIGIN/jaq/swift' "$library"
patchelf --set-rpath "\$ORIGIN/$(realpath -m --relative-to="$BINDIR" "$LIBDIR")/jaq/swift" "$DESTDIR$BINDIR/jaq"
ln -sf "libAudioToolbox.so.$VERSION" "$lib/libAudioToolbox.so.$SOVERSION"
ln -sf "libAudioToolbox.so.$SOVERSION" "$lib/libAudioToolbox.so"
# The Swift runtime: the toolchain's libraries that jaq or the library load, and CoreFoundation's
# libFoundation.so with what it needs, which the library opens on its first CF call (not linked:
# Sources/CAudioToolbox/CoreFoundationLoad.c).
foundation=$(dirname "$(ldd "$BUILT/libAudioToolbox.so" | awk '$1 == "libswiftCore.so" {print $3}')")/libFoundation.so
{ ldd "$BUILT/jaq" "$BUILT/libAudioToolbox.so" "$foundation" | awk '$3 ~ /\/lib\/swift\/linux\// {print $3}'; echo "$foundation"; } |
    sort -u | while read -r f; do
    install -m 644 "$f" "$runtime/"
done
if [ -n "$STRIP" ]; then strip --strip-unneeded "$runtime"/*.so; fi
sed -e "s|@PREFIX@|$PREFIX|; s|@LIBDIR@|$LIBDIR|; s|@INCLUDEDIR@|$INCLUDEDIR|; s|@VERSION@|$VERSION|" \
    Configs/AudioToolbox.pc.in > "$lib/pkgconfig/AudioToolbox.pc"
install -m 644 Configs/jackd.conf "$DESTDIR$DATADIR/jaq/jackd.conf"
Configs/install-docs.sh "$BUILT/jaq" "$GENERATE_MANUAL" "$MANUAL_DATE" "$DESTDIR$DATADIR"
if [ -z "$DESTDIR" ] && [ "$(id -u)" -eq 0 ]; then ldconfig; fi
echo "installed jaq $VERSION into $DESTDIR$PREFIX"
