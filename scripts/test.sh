#!/usr/bin/env bash
# Installs dependencies, builds everything (including tests) and runs the
# test suite. Exits with the test status. Extra arguments go to `swift test`
# (e.g. scripts/test.sh --filter IntegrationTests).
# SCRATCH_PATH=... selects another build directory (default .build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh

SWIFT_ARGS=()
if [[ -n "${SCRATCH_PATH:-}" ]]; then
  SWIFT_ARGS+=(--scratch-path "$SCRATCH_PATH")
fi

echo "==> swift build --build-tests" >&2
swift build "${SWIFT_ARGS[@]}" --build-tests </dev/null

echo "==> swift test" >&2
status=0
# The suite is XCTest only; without Swift Testing the run closes on XCTest's summary.
swift test "${SWIFT_ARGS[@]}" --skip-build --disable-swift-testing "$@" </dev/null 2>&1 | tee "${TMPDIR:-/tmp}/httpcache-test.log" || status=$?
summary=$(grep -E "^[[:space:]]*Executed [0-9]+ tests?, with [0-9]+ failures?" "${TMPDIR:-/tmp}/httpcache-test.log" | tail -n 1 || true)
if [[ -n "$summary" ]]; then
  total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$summary")
  failed=$(sed -E 's/.*with ([0-9]+) failures?.*/\1/' <<<"$summary")
  echo "tests: $((total - failed)) passed, $failed failed"
fi

if [[ $status -eq 0 ]]; then
  echo "==> tests passed" >&2
else
  echo "==> tests FAILED (exit $status)" >&2
fi
exit "$status"
