#!/usr/bin/env bash
# Builds the Debian package of HTTPCache:
#
#   scripts/package-deb.sh               -> dist/httpcache_VERSION_amd64.deb
#
# Contents: /usr/bin/httpcache and the C library, header and httpcache.pc
# (built by scripts/install.sh: release, the Swift runtime static), the
# systemd unit (/lib/systemd/system/httpcache.service) running
# `httpcache serve --config /etc/httpcache/httpcache.conf` as the system user
# httpcache, the cache in /var/cache/httpcache, logs in /var/log/httpcache
# with a logrotate snippet (SIGUSR1), /etc files kept as conffiles, and
# httpcache(1) (packaging/make-manpage.sh, from the binary's --help), the
# README, a DEP 5 copyright file and the lintian overrides (with reasons).
#
# Environment:
#   DIST=dir             where the .deb goes (default dist)
#   SCRATCH_PATH=dir     build directory of install.sh (default .build): a
#                        warm one is reused (the tests' .build/install-test/build,
#                        or the release build scripts/serve.sh made: same flags)
#   LINTIAN=1            run lintian on the result and fail on an error
set -euo pipefail

die() { echo "package-deb: ERROR: $*" >&2; exit 1; }
log() { echo "package-deb: $*" >&2; }

case "${1:-}" in
  -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) die "no arguments expected (see --help)" ;;
esac

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
DIST=${DIST:-dist}
[[ "$DIST" == /* ]] || DIST="$ROOT/$DIST"
# dpkg-deb --root-owner-group makes root own every file: no fakeroot needed.
for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool not found (apt-get install dpkg-dev)"
done

header_number() { sed -n "s/^#define HC_VERSION_$1 \([0-9][0-9]*\)\$/\1/p" include/httpcache.h; }
VERSION="$(header_number MAJOR).$(header_number MINOR).$(header_number PATCH)"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "cannot read HC_VERSION_* from include/httpcache.h"
ARCH=$(dpkg --print-architecture)
SONAME_MAJOR=$(header_number MAJOR)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/httpcache-deb.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE="$WORK/httpcache"

# The binary, library, header and .pc, as install.sh builds and checks them.
log "building with scripts/install.sh /usr"
DESTDIR="$STAGE" scripts/install.sh /usr >&2 || die "scripts/install.sh failed"

# pkg-config files of an architecture-dependent library go under the
# multiarch folder, so a cross build for another architecture does not pick
# this one up (pkg-config searches it first; the .pc's libdir stays /usr/lib).
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH) || die "dpkg-architecture failed"
mkdir -p "$STAGE/usr/lib/$MULTIARCH/pkgconfig"
mv "$STAGE/usr/lib/pkgconfig/httpcache.pc" "$STAGE/usr/lib/$MULTIARCH/pkgconfig/httpcache.pc"
rmdir "$STAGE/usr/lib/pkgconfig"

# Debian policy: shared libraries are not executable.
chmod 0644 "$STAGE/usr/lib/libhttpcache.so.$VERSION"
install -D -m 0644 packaging/deb/httpcache.service "$STAGE/lib/systemd/system/httpcache.service"
install -D -m 0644 packaging/deb/httpcache.conf "$STAGE/etc/httpcache/httpcache.conf"
install -D -m 0644 packaging/deb/logrotate "$STAGE/etc/logrotate.d/httpcache"
DOC="$STAGE/usr/share/doc/httpcache"
install -D -m 0644 packaging/deb/copyright "$DOC/copyright"
# The library sits in this package, not in libhttpcache0: the overrides
# file says why and what the split will be.
install -D -m 0644 packaging/deb/lintian-overrides "$STAGE/usr/share/lintian/overrides/httpcache"
# The README, compressed as Debian compresses documentation over 4 KiB.
gzip -9n < README.md > "$DOC/README.md.gz"
chmod 0644 "$DOC/README.md.gz"
# A native package's changelog: this version, dated by the last commit.
DATE=$(git log -1 --format=%cD 2>/dev/null || date -R)
MAINTAINER="HTTPCache maintainers <maintainers@users.noreply.a-seed-225fb517.example>"
printf 'httpcache (%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n' \
  "$VERSION" "$VERSION" "$MAINTAINER" "$DATE" | gzip -9n > "$DOC/changelog.gz"
chmod 0644 "$DOC/changelog.gz"

# httpcache(1), made from the staged binary's own --help (so it cannot
# drift from the CLI it documents), dated like the changelog.
MAN="$STAGE/usr/share/man/man1"
mkdir -p "$MAN"
packaging/make-manpage.sh "$STAGE/usr/bin/httpcache" "$VERSION" "$(date -u -d "$DATE" +%Y-%m-%d)" \
  > "$WORK/httpcache.1" || die "cannot make the manual page"
gzip -9n < "$WORK/httpcache.1" > "$MAN/httpcache.1.gz"
chmod 0644 "$MAN/httpcache.1.gz"

# What the binaries need, as dpkg-shlibdeps finds it (a debian/control of our own).
mkdir -p "$WORK/shlibs/debian"
printf 'Source: httpcache\n\nPackage: httpcache\nArchitecture: any\n' > "$WORK/shlibs/debian/control"
LIBFILE=$(cd "$STAGE" && ls usr/lib/libhttpcache.so."$VERSION")
SHLIBS=$(cd "$WORK/shlibs" && dpkg-shlibdeps -O -e "$STAGE/usr/bin/httpcache" -e "$STAGE/$LIBFILE" 2>/dev/null) \
  || die "dpkg-shlibdeps failed"
DEPENDS=${SHLIBS#shlibs:Depends=}
[[ -n "$DEPENDS" && "$DEPENDS" != "$SHLIBS" ]] || die "no shared-library dependencies found"

DEBIAN="$STAGE/DEBIAN"
mkdir -p "$DEBIAN"
SIZE=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat > "$DEBIAN/control" <<CONTROL
Package: httpcache
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $SIZE
Depends: adduser, $DEPENDS
Section: net
Priority: optional
Description: play-while-download HTTP caching proxy for media
 HTTPCache serves media while it downloads: a player fetches through the
 proxy, which answers ranges from the bytes it has and fetches the others
 once, for every reader. As a service it reads
 /etc/httpcache/httpcache.conf, reloads it on SIGHUP, reopens its logs on
 SIGUSR1 and drains on SIGQUIT.
 .
 The package also carries the C library (libhttpcache.so), its header and
 its pkg-config file.
CONTROL
printf '/etc/httpcache/httpcache.conf\n/etc/logrotate.d/httpcache\n' > "$DEBIAN/conffiles"
printf 'libhttpcache %s httpcache (>= %s)\n' "$SONAME_MAJOR" "$VERSION" > "$DEBIAN/shlibs"
printf 'activate-noawait ldconfig\n' > "$DEBIAN/triggers"
for script in postinst prerm postrm; do install -m 0755 "packaging/deb/$script" "$DEBIAN/$script"; done
chmod 0644 "$DEBIAN/control" "$DEBIAN/conffiles" "$DEBIAN/shlibs" "$DEBIAN/triggers"
(cd "$STAGE" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | LC_ALL=C sort -z \
  | xargs -0 md5sum) > "$DEBIAN/md5sums"
chmod 0644 "$DEBIAN/md5sums"
# Folders 0755 whatever the umask was.
find "$STAGE" -type d -exec chmod 0755 {} +

mkdir -p "$DIST"
DEB="$DIST/httpcache_${VERSION}_${ARCH}.deb"
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >&2 || die "dpkg-deb failed"

if [[ "${LINTIAN:-0}" == 1 ]]; then
  command -v lintian >/dev/null 2>&1 || die "lintian not found (scripts/install-deps.sh installs it)"
  lintian --fail-on error "$DEB" >&2 || die "lintian found errors in $DEB"
fi
echo "$DEB"
