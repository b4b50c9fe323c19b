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
swift test "${SWIFT_ARGS[@]}" --skip-build "$@" </dev/null || status=$?

if [[ $status -eq 0 ]]; then
  echo "==> tests passed" >&2
else
  echo "==> tests FAILED (exit $status)" >&2
fi
exit "$status"
