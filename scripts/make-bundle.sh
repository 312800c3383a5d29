#!/usr/bin/env bash
# Builds ember with the CUDA backend and packs a self-contained folder (default: bundle/) for a
# machine that has a GPU and CUDA but not Debian's libraries: the `ember` binary and the test
# binaries, stripped, with the shared libraries they need (minus glibc and CUDA) in bundle/lib,
# found through an $ORIGIN/lib rpath. Run the result there as bundle/ember, bundle/trainer_tests.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${EMBER_BUNDLE_BUILD_DIR:-$ROOT/build-bundle}"
OUT="${1:-$ROOT/bundle}"

EMBER_BUILD_DIR="$BUILD_DIR" \
EMBER_CMAKE_ARGS="-DEMBER_BUNDLE_RPATH=ON -DEMBER_WITH_CUDA=ON ${EMBER_CMAKE_ARGS:-}" \
  "$ROOT/scripts/setup.sh"

rm -rf "$OUT"
mkdir -p "$OUT/lib"
binaries=("$BUILD_DIR/ember" "$BUILD_DIR"/tests/*_tests)
for binary in "${binaries[@]}"; do
  cp "$binary" "$OUT/"
  strip "$OUT/$(basename "$binary")"
done
# Every non-system, non-CUDA library any binary needs, with its own dependencies.
for binary in "${binaries[@]}"; do
  ldd "$binary" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    libcuda*|libcublas*|libcudart*|libnvrtc*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
cp -r "$ROOT/configs" "$OUT/configs"
cp "$ROOT/scripts/gpu-bench.sh" "$OUT/"
du -sh "$OUT"
