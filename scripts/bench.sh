#!/usr/bin/env bash
# Installs dependencies, builds the release binaries and runs the benchmarks:
#   scripts/bench.sh [httpcache-bench options...]
# e.g. scripts/bench.sh --json bench.json, scripts/bench.sh --smoke,
#      scripts/bench.sh --scenarios 1,2 --duration 10
#      scripts/bench.sh --scenarios 15,16,17 (reverse proxy vs Varnish, Squid, nginx)
# Prints one table (httpcache next to nginx direct and nginx as a slice cache,
# and in scenarios 15-17 as a reverse proxy next to Varnish and Squid, with
# ratios), a PASS/MISS/not measured verdict per target (issues #15, #34) and
# a summary "N PASS, M MISS, K not measured" (also in --json). Every run is
# bounded in time and stops by itself.
# SCRATCH_PATH=... selects another build directory (default .build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh

# The Swift runtime linked in, as scripts/install.sh builds what is deployed:
# the memory figures are those of the installed binary.
SWIFT_ARGS=(-c release --static-swift-stdlib)
if [[ -n "${SCRATCH_PATH:-}" ]]; then
  SWIFT_ARGS+=(--scratch-path "$SCRATCH_PATH")
fi

echo "==> swift build -c release --static-swift-stdlib (httpcache, httpcache-bench, httpcache-micro)" >&2
for product in httpcache httpcache-bench httpcache-micro; do
  swift build "${SWIFT_ARGS[@]}" --product "$product" </dev/null >&2
done
BIN=$(swift build "${SWIFT_ARGS[@]}" --show-bin-path)

echo "==> httpcache-bench $*" >&2
"$BIN/httpcache-bench" --proxy "$BIN/httpcache" "$@"
