#!/usr/bin/env bash
# Installs the Debian packages ember builds with (only when some are missing) and builds ember in
# Release into build/ (or $EMBER_BUILD_DIR). Run by demo.sh and test.sh; runnable on its own.
# EMBER_PACKAGES=binary installs only what the ember binary builds with (the container image's
# build stage); the default installs also what the tests, the Python module and the fuzzers need.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${EMBER_BUILD_DIR:-$ROOT/build}"
JOBS="${EMBER_JOBS:-2}"

PACKAGES=(
  g++ cmake ninja-build pkg-config
  libzmq3-dev cppzmq-dev libsodium-dev capnproto libcapnp-dev
  librocksdb-dev zlib1g-dev
  libopenblas-dev libyaml-cpp-dev libspdlog-dev
  libcli11-dev nlohmann-json3-dev
  # ember recommend: the approximate nearest-neighbour index (FAISS, HNSW).
  libfaiss-dev
  # --metrics-bind.
  prometheus-cpp-dev
)
if [[ "${EMBER_PACKAGES:-all}" != binary ]]; then
  PACKAGES+=(
    libgtest-dev
    # The Python module (python/): pybind11 and Debian's python3 with numpy, torch and pytest.
    python3-dev pybind11-dev python3-numpy python3-pytest python3-torch python3-yaml
    python3-matplotlib  # ember plot
    # promtool, to check what --metrics-bind serves.
    prometheus
    # The launch tests: a single-node Slurm for scripts/slurm/, kubectl for deploy/, podman (with
    # runc, and debootstrap for the base image) for the container image. Containers find each
    # other by name through the dnsname plugin of podman's CNI networks (a Recommends of podman's
    # stack, so not installed with --no-install-recommends; without it no name resolves).
    slurmctld slurmd slurm-client munge
    podman runc debootstrap golang-github-containernetworking-plugin-dnsname
    # The fuzz targets (scripts/fuzz.sh): clang with libFuzzer and the sanitizer runtimes.
    clang-16 libfuzzer-16-dev libclang-rt-16-dev
  )
  # kubectl may already come from another package, which then owns /usr/bin/kubectl.
  if ! command -v kubectl >/dev/null; then PACKAGES+=(kubernetes-client); fi
fi

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if ((${#missing[@]})); then
  echo "ember: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi

cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${EMBER_CMAKE_ARGS:-}
ninja -C "$BUILD_DIR" -j "$JOBS"
