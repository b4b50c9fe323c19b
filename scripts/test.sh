#!/usr/bin/env bash
# Installs dependencies, builds everything (including tests) and runs the
# test suite. Exits with the test status. Extra arguments go to `swift test`
# (e.g. scripts/test.sh --filter IntegrationTests).
# SCRATCH_PATH=... selects another build directory (default .build).
# --sanitize address|thread builds with that sanitizer into .build-asan or
# .build-tsan (unless SCRATCH_PATH is set) and runs the tests under it, e.g.
# scripts/test.sh --sanitize address --filter CacheHTTPTests.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

SANITIZE=""
TEST_ARGS=()
while [[ $# -gt 0 ]]; do
  case "$1" in
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

echo "==> swift test" >&2
status=0
# The suite is XCTest only; without Swift Testing the run closes on XCTest's summary.
swift test "${SWIFT_ARGS[@]}" --skip-build --disable-swift-testing "${TEST_ARGS[@]}" </dev/null 2>&1 | tee "${TMPDIR:-/tmp}/httpcache-test.log" || status=$?
# XCTest's last summary, e.g. "Executed 679 tests, with 1 test skipped and 0 failures".
summary=$(grep -E "^[[:space:]]*Executed [0-9]+ tests?, with ([0-9]+ tests? skipped and )?[0-9]+ failures?" \
  "${TMPDIR:-/tmp}/httpcache-test.log" | tail -n 1 || true)
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
