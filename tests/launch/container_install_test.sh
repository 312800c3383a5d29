#!/usr/bin/env bash
# The container image's install step for real, outside a container: scripts/container-build.sh
# install from the existing build folder into a scratch prefix (no second build), its runtime
# check, then the installed binary's --help and a short training run with `ember cluster`.
# Exits 77 (skipped) without cmake or dpkg.
#
# usage: container_install_test.sh EMBER_BINARY BUILD_DIR
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="$(realpath "${2:-$ROOT/build}")"
for tool in cmake dpkg-query ldd; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

SCRATCH="$(mktemp -d /tmp/ember-container-test.XXXXXX)"
trap 'rm -rf "$SCRATCH"' EXIT
PREFIX="$SCRATCH/prefix"
fail() { echo "FAIL: $*"; exit 1; }

"$ROOT/scripts/container-build.sh" install "$BUILD_DIR" "$PREFIX" >"$SCRATCH/install.log" 2>&1 ||
  { cat "$SCRATCH/install.log"; fail "container-build.sh install failed"; }
tail -n 1 "$SCRATCH/install.log"
[[ -x "$PREFIX/bin/ember" && -x "$PREFIX/bin/ember-pod.sh" ]] || fail "ember or ember-pod.sh not installed"
packages="$PREFIX/share/ember/runtime-packages"
grep -qx 'libzmq5' "$packages" || fail "runtime-packages lacks libzmq5: $(cat "$packages")"
grep -qx 'librocksdb7.8\|librocksdb[0-9.]*' "$packages" || fail "runtime-packages lacks RocksDB"
# Every package is installed here, so this only checks (apt runs only for a missing one).
"$ROOT/scripts/container-build.sh" runtime "$PREFIX" || fail "container-build.sh runtime failed"

"$PREFIX/bin/ember" --help | grep -q "usage: ember <command>" || fail "ember --help"

cat >"$SCRATCH/job.yaml" <<'YAML'
cluster: {servers: 2, server_threads: 1, partitions: 32}
tables:
  - {name: u0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
model: {embedding_dim: 8, user_slots: 1, item_slots: 1, hidden: [16], output_dim: 8,
        temperature: 0.2, learning_rate: 0.01}
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 1000, seed: 3, num_clusters: 8}
train: {steps: 30, batch_size: 64, backend: cpu, log_every: 10, user_tables: [u0], item_tables: [i0]}
YAML
timeout 120 "$PREFIX/bin/ember" cluster --config "$SCRATCH/job.yaml" \
  --summary-json "$SCRATCH/summary.json" >"$SCRATCH/cluster.log" 2>&1 ||
  { tail -n 30 "$SCRATCH/cluster.log"; fail "ember cluster from the prefix failed"; }
grep -q '"steps": 30' "$SCRATCH/summary.json" || fail "no 30-step summary: $(cat "$SCRATCH/summary.json")"
echo "PASS"
