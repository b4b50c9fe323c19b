#!/usr/bin/env bash
# Installs dependencies, builds the release binary and runs the proxy:
#   scripts/serve.sh [httpcache serve options...]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh
# The flags of scripts/install.sh (and so of package-deb.sh): a later
# install or package then reuses this build instead of rebuilding every
# module (different flags made SwiftPM start over).
SWIFT_ARGS=(-c release --static-swift-stdlib)
swift build "${SWIFT_ARGS[@]}" --product httpcache >&2
exec "$(swift build "${SWIFT_ARGS[@]}" --show-bin-path)/httpcache" serve "$@"
