#!/usr/bin/env bash
# Installs dependencies, builds the release binary and runs the proxy:
#   scripts/serve.sh [httpcache serve options...]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh
swift build -c release --product httpcache >&2
exec .build/release/httpcache serve "$@"
