#!/usr/bin/env bash
# Installs what it needs, builds ember once (scripts/setup.sh), then runs its whole test suite
# with ctest. Extra arguments go to ctest (e.g. -R Integration). The fuzz targets' smoke run is
# scripts/fuzz.sh, which CI runs after this.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
BUILD_DIR="${EMBER_BUILD_DIR:-$ROOT/build}"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${EMBER_JOBS:-2}" "$@"
