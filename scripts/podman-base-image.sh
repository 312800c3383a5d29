#!/usr/bin/env bash
# Makes the Dockerfile's base image, debian:bookworm, without a registry: debootstrap (minbase)
# from Debian's mirror into a scratch folder, then `podman import` as localhost/debian:bookworm,
# which `FROM debian:bookworm` resolves to. Does nothing when the image exists.
#
#   scripts/podman-base-image.sh [MIRROR]   (default http://deb.debian.org/debian)
#
# Needs root, debootstrap and podman (Debian's packages of those names).
set -euo pipefail

IMAGE="${EMBER_BASE_IMAGE:-localhost/debian:bookworm}"
MIRROR="${1:-http://deb.debian.org/debian}"

if podman image exists "$IMAGE"; then
  echo "podman-base-image: $IMAGE exists"
  exit 0
fi
for tool in debootstrap podman; do
  command -v "$tool" >/dev/null || { echo "podman-base-image: $tool is not installed" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "podman-base-image: debootstrap needs root" >&2; exit 1; }

ROOTFS="$(mktemp -d /tmp/ember-bookworm.XXXXXX)"
trap 'rm -rf "$ROOTFS"' EXIT
echo "podman-base-image: debootstrap bookworm from $MIRROR" >&2
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 ||
  { tail -n 20 "$ROOTFS.log" >&2; rm -f "$ROOTFS.log"; exit 1; }
rm -f "$ROOTFS.log"
# The mirror the image's apt uses, as on Docker Hub's image.
echo "deb $MIRROR bookworm main" >"$ROOTFS/etc/apt/sources.list"
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" -c . | podman import --change 'CMD ["bash"]' - "$IMAGE" >/dev/null
echo "podman-base-image: made $IMAGE ($(podman image inspect --format '{{.Size}}' "$IMAGE") bytes)"
