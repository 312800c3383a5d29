#!/usr/bin/env bash
# Installs what it needs, builds, runs every fuzz target briefly (scripts/fuzz.sh), then ember's
# whole test suite with ctest.
# Extra arguments go to ctest (e.g. -R Integration).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
BUILD_DIR="${EMBER_BUILD_DIR:-$ROOT/build}"
# A short fuzzing smoke run first (every target for EMBER_FUZZ_SECONDS, default 10; 0 skips it),
# so that ctest's summary stays the last lines; a finding fails the run.
if [[ ${EMBER_FUZZ_SECONDS:-10} != 0 ]]; then
  "$ROOT/scripts/fuzz.sh" --seconds "${EMBER_FUZZ_SECONDS:-10}"
fi
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "${EMBER_JOBS:-2}" "$@"
