#!/usr/bin/env bash
# Builds the ember image from the Dockerfile with podman:
#
#   scripts/container-image.sh [--tag TAG]                    the whole build, ember compiled in
#                                                             the image's build stage
#   scripts/container-image.sh --prebuilt BUILD_DIR [--tag TAG]
#                                                             the runtime stage only, over an
#                                                             existing build folder, installed by
#                                                             container-build.sh install into a
#                                                             scratch context (no second build)
#
# TAG defaults to localhost/ember:latest. Makes the base image first where it is missing
# (scripts/podman-base-image.sh) and uses the podman options this machine needs
# (scripts/podman-options.sh). Prints the image's size last.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TAG="localhost/ember:latest"
PREBUILT=""
while (($#)); do
  case "$1" in
    --tag) TAG="$2"; shift 2 ;;
    --prebuilt) PREBUILT="$(realpath "$2")"; shift 2 ;;
    *) echo "usage: container-image.sh [--prebuilt BUILD_DIR] [--tag TAG]" >&2; exit 2 ;;
  esac
done

"$ROOT/scripts/podman-base-image.sh"
# shellcheck source=podman-options.sh
source "$ROOT/scripts/podman-options.sh"
podman_options_probe || { echo "container-image: $PODMAN_UNUSABLE" >&2; exit 1; }

if [[ -z "$PREBUILT" ]]; then
  podman build "${PODMAN_OPTIONS[@]}" --build-arg EMBER_PREFIX=source -t "$TAG" "$ROOT"
else
  CONTEXT="$(mktemp -d /tmp/ember-image.XXXXXX)"
  trap 'rm -rf "$CONTEXT"' EXIT
  "$ROOT/scripts/container-build.sh" install "$PREBUILT" "$CONTEXT/prefix" >"$CONTEXT/install.log" 2>&1 ||
    { cat "$CONTEXT/install.log" >&2; exit 1; }
  mkdir -p "$CONTEXT/scripts"
  cp "$ROOT/Dockerfile" "$CONTEXT/"
  cp "$ROOT/scripts/container-build.sh" "$CONTEXT/scripts/"
  podman build "${PODMAN_OPTIONS[@]}" --build-arg EMBER_PREFIX=prebuilt -t "$TAG" "$CONTEXT"
fi
echo "container-image: $TAG, $(podman image inspect --format '{{.Size}}' "$TAG") bytes"
