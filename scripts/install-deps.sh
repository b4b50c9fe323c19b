#!/usr/bin/env bash
# Installs the Debian packages HTTPCache needs to build, test and benchmark.
# Skips apt entirely when everything is already installed.
set -euo pipefail

PACKAGES=(
  libuv1-dev libssl-dev zlib1g-dev pkg-config   # build: libuv core + OpenSSL + zlib
  nginx ffmpeg curl openssl ca-certificates   # tests: origin server, media fixtures, clients
  libavformat-dev libavcodec-dev libavutil-dev   # tests: examples/c/ffmpeg_host.c (an AVIOContext over hc_reader)
  wrk                                 # benchmarks
  varnish squid                       # benchmarks: reverse-proxy peers (each started by the bench with its own configuration)
  dpkg-dev lintian                    # scripts/package-deb.sh and its test (dpkg-shlibdeps, lintian)
  chromium                            # tests: the /ui/ page in a real browser (headless, DevTools protocol)
)

log() { echo "install-deps: $*" >&2; }
die() { echo "install-deps: ERROR: $*" >&2; exit 1; }

is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script supports Debian/Ubuntu only"

missing=()
for pkg in "${PACKAGES[@]}"; do
  is_installed "$pkg" || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  log "all packages already installed"
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "not root and sudo is not available; install as root: ${missing[*]}"
  # Non-interactive (CI, no stdin): never wait for a password prompt.
  if [[ -t 0 ]]; then SUDO=(sudo); else SUDO=(sudo -n); fi
fi

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-o Dpkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)

log "installing: ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" update -qq </dev/null \
  || die "apt-get update failed"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTS[@]}" install -y -qq --no-install-recommends \
  "${missing[@]}" </dev/null >/dev/null \
  || die "apt-get install failed for: ${missing[*]}"

for pkg in "${missing[@]}"; do
  is_installed "$pkg" || die "$pkg is still not installed after apt-get install"
done

# Installing nginx may start the distribution's nginx service on port 80.
# The tests run their own nginx instances, so stop it (best effort: there may
# be no systemd/init scripts in a container).
stop_system_nginx() {
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    "${SUDO[@]}" systemctl stop nginx >/dev/null 2>&1 || true
    "${SUDO[@]}" systemctl disable nginx >/dev/null 2>&1 || true
  fi
  if command -v service >/dev/null 2>&1; then
    "${SUDO[@]}" service nginx stop >/dev/null 2>&1 || true
  fi
  local pidfile=/run/nginx.pid
  if [[ -s "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    "${SUDO[@]}" nginx -s quit >/dev/null 2>&1 || "${SUDO[@]}" kill -QUIT "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$(cat "$pidfile" 2>/dev/null || echo 0)" 2>/dev/null || break
      sleep 0.1
    done
  fi
}

# varnish and squid start a system service on install (ports 6081 and 3128);
# the bench starts its own instances, so stop those too (best effort).
stop_system_service() {
  local name=$1
  if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    "${SUDO[@]}" systemctl stop "$name" >/dev/null 2>&1 || true
    "${SUDO[@]}" systemctl disable "$name" >/dev/null 2>&1 || true
  fi
  if command -v service >/dev/null 2>&1; then
    "${SUDO[@]}" service "$name" stop >/dev/null 2>&1 || true
  fi
}

for pkg in "${missing[@]}"; do
  case "$pkg" in
    nginx)
      stop_system_nginx
      log "stopped the system nginx service (tests start their own)" ;;
    varnish|squid)
      stop_system_service "$pkg"
      log "stopped the system $pkg service (the bench starts its own)" ;;
  esac
done

log "done"
