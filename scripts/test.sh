#!/usr/bin/env bash
# Installs dependencies, builds everything (including tests) and runs the
# test suite. Exits with the test status. `scripts/test.sh --help` lists the
# choices without building.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: scripts/test.sh [--quick] [--sanitize address|thread] [swift test arguments...]

  (no option)          everything, as CI does (.ci/run): unit tests, every integration
                       test, release builds, the Debian package, fuzz and benchmark smoke runs
  --quick              the fast tier for daily work: every unit test target and a smoke set
                       of integration tests (one or a few per area); a few minutes after a build
  --filter PATTERN     a subset (passed to `swift test`): a target, a class or Class/testName,
                       e.g. --filter CoreProxyTests or --filter 'SharedCacheTests/testVary'
  --sanitize address   the suite under ASan, built into .build-asan (thread: TSan, .build-tsan);
                       combines with --quick and --filter
  --help               this text (nothing is built)

Environment: SCRATCH_PATH=DIR selects another build folder (default .build).
USAGE
}

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SANITIZE=""
QUICK=0
TEST_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --quick) QUICK=1; shift ;;
    --sanitize)
      [[ $# -ge 2 ]] || { echo "test.sh: --sanitize needs address or thread" >&2; exit 2; }
      SANITIZE="$2"; shift 2 ;;
    --sanitize=*) SANITIZE="${1#--sanitize=}"; shift ;;
    *) TEST_ARGS+=("$1"); shift ;;
  esac
done
case "$SANITIZE" in
  "") ;;
  address) SCRATCH_PATH="${SCRATCH_PATH:-.build-asan}"
    # XCTest itself leaks; Swift's backtracer would muddle the sanitizer's report.
    export ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" SWIFT_BACKTRACE=enable=no ;;
  thread) SCRATCH_PATH="${SCRATCH_PATH:-.build-tsan}"
    export TSAN_OPTIONS="halt_on_error=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}" SWIFT_BACKTRACE=enable=no ;;
  *) echo "test.sh: --sanitize takes address or thread, not '$SANITIZE'" >&2; exit 2 ;;
esac

scripts/install-deps.sh

SWIFT_ARGS=()
if [[ -n "${SCRATCH_PATH:-}" ]]; then
  SWIFT_ARGS+=(--scratch-path "$SCRATCH_PATH")
fi
if [[ -n "$SANITIZE" ]]; then
  SWIFT_ARGS+=(--sanitize="$SANITIZE")
  # Tests that bound memory (RSS) know their figures mean nothing under a sanitizer.
  export HTTPCACHE_SANITIZER="$SANITIZE"
  echo "==> sanitizer: $SANITIZE (scratch path $SCRATCH_PATH)" >&2
fi

echo "==> swift build --build-tests" >&2
swift build "${SWIFT_ARGS[@]}" --build-tests </dev/null

if [[ $QUICK -eq 1 ]]; then
  # Unit test targets whole, and per area of the integration tests the test
  # that shows the area works end to end (byte-exact through a real origin).
  # Release builds, the package, fuzz and benchmark runs are left to the full suite.
  QUICK_FILTERS=(
    '^CacheHTTPTests\.' '^CacheIOTests\.' '^CacheStorageTests\.' '^CacheUpstreamTests\.'
    '^CacheLoadingTests\.' '^CacheProxyTests\.' '^HTTPCacheCTests\.'
    'IntegrationTests\.CoreProxyTests/'
    'IntegrationTests\.HLSProxyTests/testGzipPlaylistIsRewrittenOnProxyURLs'
    'IntegrationTests\.DASHProxyTests/testGzipManifest'
    'IntegrationTests\.SharedCacheTests/'
    'IntegrationTests\.ValidatorTests/'
    'IntegrationTests\.TLSTests/'
    'IntegrationTests\.TunnelTests/'
    'IntegrationTests\.CLITests/'
    'IntegrationTests\.ReaderTests/'
    'IntegrationTests\.PreloadTests/'
    'IntegrationTests\.EvictionTests/'
    'IntegrationTests\.PrefetchTests/testHLSVODInOrderSegmentsAfterTheFirstTwoComeFromPrefetches'
  )
  for f in "${QUICK_FILTERS[@]}"; do TEST_ARGS+=(--filter "$f"); done
  echo "==> quick tier: unit tests and a smoke set of integration tests" >&2
fi

echo "==> swift test" >&2
status=0
# The suite is XCTest only; without Swift Testing the run closes on XCTest's summary.
# A log of this run's own: two checkouts testing at once must not read each other's summary.
log=$(mktemp "${TMPDIR:-/tmp}/httpcache-test.XXXXXX.log")
trap 'rm -f "$log"' EXIT
swift test "${SWIFT_ARGS[@]}" --skip-build --disable-swift-testing "${TEST_ARGS[@]}" </dev/null 2>&1 | tee "$log" || status=$?
# XCTest's last summary, e.g. "Executed 679 tests, with 1 test skipped and 0 failures".
summary=$(grep -E "^[[:space:]]*Executed [0-9]+ tests?, with ([0-9]+ tests? skipped and )?[0-9]+ failures?" \
  "$log" | tail -n 1 || true)
if [[ -n "$summary" ]]; then
  total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$summary")
  failed=$(sed -E 's/.* ([0-9]+) failures?.*/\1/' <<<"$summary")
  skipped=$(sed -E -n 's/.*with ([0-9]+) tests? skipped.*/\1/p' <<<"$summary")
  echo "tests: $((total - failed - ${skipped:-0})) passed, $failed failed, ${skipped:-0} skipped"
fi

if [[ $status -eq 0 ]]; then
  echo "==> tests passed" >&2
else
  echo "==> tests FAILED (exit $status)" >&2
fi
exit "$status"
