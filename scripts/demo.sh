#!/usr/bin/env bash
# ember's main job: installs what it needs, builds, and trains tt-bench on synthetic Zipf data on
# a local cluster (scheduler + 2 servers + 1 trainer, each its own process on loopback).
# Extra arguments go to `ember cluster` (e.g. --steps 100, --config configs/movielens-100k.yaml).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
BUILD_DIR="${EMBER_BUILD_DIR:-$ROOT/build}"
config="$ROOT/configs/tt-bench.yaml"
args=()
while (($#)); do
  if [[ $1 == --config ]]; then config="$2"; shift 2; else args+=("$1"); shift; fi
done
exec "$BUILD_DIR/ember" cluster --config "$config" "${args[@]}"
