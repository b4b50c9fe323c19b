#!/usr/bin/env bash
# Builds and installs HTTPCache's C library and command-line binary:
#
#   scripts/install.sh [PREFIX]          (default PREFIX: /usr/local)
#
# Installs
#   PREFIX/include/httpcache.h
#   PREFIX/lib/libhttpcache.so.X.Y.Z, libhttpcache.so.X, libhttpcache.so
#   PREFIX/lib/pkgconfig/httpcache.pc
#   PREFIX/bin/httpcache
# Both binaries carry the Swift runtime inside them: hosts need only libc,
# libstdc++, libuv and OpenSSL. Running it again replaces the same files.
#
# Environment:
#   DESTDIR=dir          stage under dir (paths inside the files stay PREFIX)
#   SCRATCH_PATH=dir     build directory (default .build)
#   HTTPCACHE_NO_STRIP=1 keep the symbol tables (for debugging)
set -euo pipefail

usage() {
  sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}
die() { echo "install: ERROR: $*" >&2; exit 1; }
log() { echo "install: $*" >&2; }

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  -*) usage >&2; die "unknown option $1" ;;
esac
[[ $# -le 1 ]] || { usage >&2; die "too many arguments"; }

# An explicit empty argument is a mistake (an unset variable), not "default".
if [[ $# -eq 1 ]]; then PREFIX=$1; else PREFIX=/usr/local; fi
[[ -n "$PREFIX" ]] || die "PREFIX is empty"
[[ "$PREFIX" != *[[:space:]]* ]] || die "PREFIX contains white space (pkg-config cannot express it): $PREFIX"
# The prefix is written into httpcache.pc, so it must not depend on the cwd.
[[ "$PREFIX" == /* ]] || PREFIX="$PWD/$PREFIX"
while [[ "$PREFIX" == */ ]]; do PREFIX=${PREFIX%/}; done
[[ -n "$PREFIX" ]] || die "PREFIX / is not supported (use /usr)"
DESTDIR=${DESTDIR:-}
if [[ -n "$DESTDIR" && "$DESTDIR" != /* ]]; then DESTDIR="$PWD/$DESTDIR"; fi
SCRATCH=${SCRATCH_PATH:-}
if [[ -n "$SCRATCH" && "$SCRATCH" != /* ]]; then SCRATCH="$PWD/$SCRATCH"; fi

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

scripts/install-deps.sh

# The header is the one source of the version: the .so name follows it.
header_number() {
  sed -n "s/^#define HC_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" include/httpcache.h
}
MAJOR=$(header_number MAJOR); MINOR=$(header_number MINOR); PATCH=$(header_number PATCH)
[[ -n "$MAJOR" && -n "$MINOR" && -n "$PATCH" ]] || die "cannot read HC_VERSION_* from include/httpcache.h"
VERSION="$MAJOR.$MINOR.$PATCH"
SONAME="libhttpcache.so.$MAJOR"
REALNAME="libhttpcache.so.$VERSION"

# --static-swift-stdlib on both builds: the same flags, so neither rebuilds
# the other's modules (it changes nothing for the static library product).
SWIFT_ARGS=(-c release --static-swift-stdlib)
[[ -n "$SCRATCH" ]] && SWIFT_ARGS+=(--scratch-path "$SCRATCH")
for product in HTTPCacheCStatic httpcache; do
  log "swift build -c release --product $product"
  swift build "${SWIFT_ARGS[@]}" --product "$product" </dev/null >&2 || die "swift build of $product failed"
done
BIN=$(swift build "${SWIFT_ARGS[@]}" --show-bin-path)

# libhttpcache.so: link the C API's object files (the list SwiftPM used for
# the static library) ourselves, because SwiftPM cannot link the Swift
# runtime statically into a dynamic library.
# - object files, not the .a: static-stdlib-args.lnk passes --exclude-libs ALL,
#   which would hide the hc_ symbols of an archive;
# - -static-stdlib: Swift runtime, libdispatch, BlocksRuntime from swift_static;
# - lld: gold keeps local symbols in .dynsym (nm -D would list Swift names);
# - the version script exports hc_* only;
# - signal_guard.o last, so its constructor runs after the runtime's and puts
#   back any crash handler the runtime's backtracer installed.
OBJECT_LIST="$BIN/HTTPCacheCStatic.product/Objects.LinkFileList"
[[ -s "$OBJECT_LIST" ]] || die "missing $OBJECT_LIST (did SwiftPM change its layout?)"
mapfile -t OBJECTS < <(sed -e 's/^"\(.*\)"$/\1/' "$OBJECT_LIST")
for object in "${OBJECTS[@]}"; do [[ -f "$object" ]] || die "object file not found: $object"; done

STAGE="$BIN/libhttpcache"
mkdir -p "$STAGE"
CC_BIN=${CC:-cc}
command -v "$CC_BIN" >/dev/null 2>&1 || CC_BIN=clang
log "linking $REALNAME"
"$CC_BIN" -O2 -fPIC -Wall -Wextra -Werror -c packaging/signal_guard.c -o "$STAGE/signal_guard.o" \
  || die "cannot compile packaging/signal_guard.c"
(cd "$STAGE" && swiftc -emit-library -static-stdlib -use-ld=lld -o "$STAGE/$REALNAME" "${OBJECTS[@]}" \
  -luv -lssl -lcrypto -lz \
  -Xlinker --version-script="$ROOT/packaging/httpcache.map" \
  -Xlinker "-soname=$SONAME" \
  -Xlinker -z -Xlinker now -Xlinker -z -Xlinker relro \
  -Xlinker "$STAGE/signal_guard.o") >&2 || die "linking $REALNAME failed"

# Refuse to install a library that is not self-contained or exports more.
swift_deps() { ldd "$1" | grep -E 'libswift|libdispatch|libBlocksRuntime|libFoundation' || true; }
[[ -z "$(swift_deps "$STAGE/$REALNAME")" ]] || die "$REALNAME needs Swift libraries: $(swift_deps "$STAGE/$REALNAME")"
[[ -z "$(swift_deps "$BIN/httpcache")" ]] || die "httpcache needs Swift libraries: $(swift_deps "$BIN/httpcache")"
extra=$(nm -D --defined-only "$STAGE/$REALNAME" | awk '$3 !~ /^hc_/' || true)
[[ -z "$extra" ]] || die "$REALNAME exports more than hc_*: $extra"
[[ -n "$(nm -D --defined-only "$STAGE/$REALNAME" | awk '$3 ~ /^hc_/')" ]] || die "$REALNAME exports no hc_ symbol"

# Install.
ROOTED="$DESTDIR$PREFIX"
installed=()
put() { # put MODE SOURCE DEST
  install -D -m "$1" "$2" "$ROOTED/$3" || die "cannot install $ROOTED/$3"
  installed+=("$PREFIX/$3")
}
strip_file() {
  [[ "${HTTPCACHE_NO_STRIP:-0}" == 1 ]] && return 0
  strip --strip-unneeded "$1" || die "strip failed for $1"
}

put 0644 include/httpcache.h include/httpcache.h

cp "$STAGE/$REALNAME" "$STAGE/$REALNAME.install"
strip_file "$STAGE/$REALNAME.install"
put 0755 "$STAGE/$REALNAME.install" "lib/$REALNAME"
ln -sfn "$REALNAME" "$ROOTED/lib/$SONAME"
ln -sfn "$SONAME" "$ROOTED/lib/libhttpcache.so"
installed+=("$PREFIX/lib/$SONAME -> $REALNAME" "$PREFIX/lib/libhttpcache.so -> $SONAME")

# Only the .so is installed, so -lhttpcache is all a user links with
# (libuv and OpenSSL are its own DT_NEEDED entries). The rpath lets a host
# built against a prefix outside the loader's path find it at run time.
cat >"$STAGE/httpcache.pc" <<EOF
prefix=$PREFIX
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: httpcache
Description: Play-while-download HTTP caching proxy for media (C API)
Version: $VERSION
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lhttpcache
EOF
put 0644 "$STAGE/httpcache.pc" lib/pkgconfig/httpcache.pc

cp "$BIN/httpcache" "$STAGE/httpcache.install"
strip_file "$STAGE/httpcache.install"
put 0755 "$STAGE/httpcache.install" bin/httpcache
rm -f "$STAGE/$REALNAME.install" "$STAGE/httpcache.install"

# A system prefix: refresh the loader cache so hosts find libhttpcache.so.0.
if [[ -z "$DESTDIR" && ( "$PREFIX" == /usr || "$PREFIX" == /usr/local ) && "$(id -u)" -eq 0 ]] \
   && command -v ldconfig >/dev/null 2>&1; then
  ldconfig || log "warning: ldconfig failed"
fi

echo "installed httpcache $VERSION${DESTDIR:+ under $DESTDIR}:"
printf '  %s\n' "${installed[@]}"
