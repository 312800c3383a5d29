#!/usr/bin/env bash
# The container image built and run as a cluster with podman: the base image made without a
# registry (scripts/podman-base-image.sh), the Dockerfile's runtime stage over the existing build
# folder (scripts/container-image.sh --prebuilt: no second build), then deploy/'s manifests as
# podman containers (container_cluster.py): train, a server SIGKILLed and started again on its
# volume, a drain by preStop hook, /metrics scraped from each container. Exits 77 (skipped), with
# the reason, where podman cannot run: not root, a tool missing, no container runtime that works.
#
# usage: container_cluster_test.sh EMBER_BINARY BUILD_DIR
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
EMBER="$(realpath "${1:-$ROOT/build/ember}")"
BUILD_DIR="$(realpath "${2:-$ROOT/build}")"
[[ $(id -u) -eq 0 ]] || { echo "SKIP: podman's networks and debootstrap need root"; exit 77; }
for tool in podman debootstrap kubectl; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
python3 -c "import yaml" 2>/dev/null || { echo "SKIP: python3 has no yaml module (python3-yaml)"; exit 77; }

SCRATCH="$(mktemp -d /tmp/ember-containers.XXXXXX)"
PREFIX="ember-test-$$"
IMAGE="localhost/$PREFIX:latest"
# What container_cluster.py makes is named PREFIX-*; it removes it itself, and this also when it
# was killed.
cleanup() {
  podman rm -f -t 0 $(podman ps -aq --filter "label=$PREFIX") >/dev/null 2>&1
  podman volume ls -q | grep "^$PREFIX-" | xargs -r podman volume rm -f >/dev/null 2>&1
  podman secret ls --format '{{.Name}}' | grep "^$PREFIX-" | xargs -r podman secret rm >/dev/null 2>&1
  podman network rm -f "$PREFIX-net" >/dev/null 2>&1
  podman rmi -f "$IMAGE" >/dev/null 2>&1
  rm -rf "$SCRATCH"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The base image: a debootstrap of Debian's mirror, kept between runs.
if ! "$ROOT/scripts/podman-base-image.sh" >"$SCRATCH/base.log" 2>&1; then
  cat "$SCRATCH/base.log"
  echo "SKIP: the base image could not be made (above: no mirror reachable?)"
  exit 77
fi
cat "$SCRATCH/base.log"
# shellcheck source=../../scripts/podman-options.sh
source "$ROOT/scripts/podman-options.sh"
podman_options_probe || { echo "SKIP: $PODMAN_UNUSABLE"; exit 77; }
echo "podman $(podman version --format '{{.Client.Version}}'), options: ${PODMAN_OPTIONS[*]:-none}"

start=$SECONDS
"$ROOT/scripts/container-image.sh" --prebuilt "$BUILD_DIR" --tag "$IMAGE" >"$SCRATCH/image.log" 2>&1 ||
  { tail -n 40 "$SCRATCH/image.log"; fail "the image did not build"; }
echo "image built in $((SECONDS - start)) s: $(tail -n 1 "$SCRATCH/image.log")"
podman run --rm "${PODMAN_OPTIONS[@]}" "$IMAGE" --help | grep -q "usage: ember <command>" ||
  fail "the image's entrypoint does not run ember"

kubectl kustomize "$ROOT/deploy" >"$SCRATCH/rendered.yaml" 2>"$SCRATCH/kustomize.err" ||
  { cat "$SCRATCH/kustomize.err"; fail "kubectl kustomize deploy/ failed"; }
EMBER="$EMBER" "$ROOT/deploy/make-secrets.sh" "$SCRATCH/keys" >"$SCRATCH/secrets.yaml" \
  2>"$SCRATCH/secrets.err" || { cat "$SCRATCH/secrets.err"; fail "deploy/make-secrets.sh failed"; }
timeout 800 python3 "$ROOT/tests/launch/container_cluster.py" "$SCRATCH/rendered.yaml" \
  "$SCRATCH/secrets.yaml" "$IMAGE" "$SCRATCH" "$PREFIX" "${PODMAN_OPTIONS[@]}" ||
  fail "the cluster of containers (above)"
