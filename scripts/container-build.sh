#!/usr/bin/env bash
# The container image's build steps (Dockerfile), runnable without a container runtime:
#
#   container-build.sh build BUILD_DIR PREFIX   scripts/setup.sh (packages, then the build into
#                                               BUILD_DIR), then `install`
#   container-build.sh install BUILD_DIR PREFIX cmake --install BUILD_DIR into PREFIX, plus
#                                               deploy/ember-pod.sh, and PREFIX/share/ember/
#                                               runtime-packages: the Debian packages owning the
#                                               shared libraries PREFIX/bin/ember loads;
#                                               libraries no package owns (a CUDA toolkit's)
#                                               are copied into PREFIX/lib
#   container-build.sh runtime PREFIX           installs (apt) those packages where missing, then
#                                               checks every library of PREFIX/bin/ember resolves
#                                               (PREFIX/lib on the loader's path, as the image's
#                                               LD_LIBRARY_PATH puts it)
#
# The Dockerfile's build stage runs `build`, its runtime stage `runtime` on the copied PREFIX; the
# launch test runs `install` and `runtime` on the existing build folder (no second build).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  echo "usage: container-build.sh build BUILD_DIR PREFIX | install BUILD_DIR PREFIX | runtime PREFIX" >&2
  exit 2
}

# Writes PREFIX/share/ember/runtime-packages (one package a line): the packages owning the shared
# libraries of PREFIX/bin/ember, asked of dpkg in one call. A library is looked up by the path ldd
# printed, its /usr twin (merged /usr: dpkg may know /usr/lib/x/libz.so.1 where ldd says
# /lib/x/libz.so.1) and its resolved path. Libraries no package owns (a CUDA toolkit under
# /usr/local, say) are copied into PREFIX/lib under the name the binary asks for.
write_runtime_packages() {
  local prefix="$1" lib candidate path owner found
  local -a libs=() candidates=() packages=()
  local -A owner_of=()
  mapfile -t libs < <(ldd "$prefix/bin/ember" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
  if ((${#libs[@]} == 0)); then
    echo "container-build: ldd lists no shared library of $prefix/bin/ember" >&2
    exit 1
  fi
  for lib in "${libs[@]}"; do
    candidates+=("$lib" "/usr$lib" "${lib#/usr}" "$(readlink -f "$lib")")
  done
  # Lines "package[:arch][, other]: /path"; paths no package owns only make dpkg complain.
  while IFS= read -r line; do
    path="${line#*: }"
    owner="${line%%: *}"
    owner="${owner%%,*}"
    owner_of["$path"]="${owner%%:*}"
  done < <(dpkg-query -S "${candidates[@]}" 2>/dev/null)
  for lib in "${libs[@]}"; do
    found=""
    for candidate in "$lib" "/usr$lib" "${lib#/usr}" "$(readlink -f "$lib")"; do
      if [[ -n "${owner_of[$candidate]:-}" ]]; then found="${owner_of[$candidate]}"; break; fi
    done
    if [[ -n "$found" ]]; then
      packages+=("$found")
    else
      echo "container-build: $lib belongs to no Debian package; copied into $prefix/lib" >&2
      mkdir -p "$prefix/lib"
      cp -L "$lib" "$prefix/lib/$(basename "$lib")"
    fi
  done
  mkdir -p "$prefix/share/ember"
  printf '%s\n' "${packages[@]}" | sort -u >"$prefix/share/ember/runtime-packages"
}

install_prefix() {
  local build_dir="$1" prefix="$2"
  cmake --install "$build_dir" --prefix "$prefix"
  install -m 0755 "$ROOT/deploy/ember-pod.sh" "$prefix/bin/ember-pod.sh"
  write_runtime_packages "$prefix"
  echo "container-build: installed into $prefix; runtime packages:" \
       "$(tr '\n' ' ' <"$prefix/share/ember/runtime-packages")"
}

runtime() {
  local prefix="$1" package
  local -a missing=()
  while read -r package; do
    [[ -n "$package" ]] || continue
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done <"$prefix/share/ember/runtime-packages"
  if ((${#missing[@]})); then
    echo "container-build: installing ${missing[*]}" >&2
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
    rm -rf /var/lib/apt/lists/*
  fi
  local libraries
  libraries="$(LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$prefix/bin/ember")"
  if grep -q "not found" <<<"$libraries"; then
    echo "container-build: libraries of $prefix/bin/ember not found:" >&2
    grep "not found" <<<"$libraries" >&2
    exit 1
  fi
}

case "${1:-}" in
  build)
    (($# == 3)) || usage
    EMBER_BUILD_DIR="$2" "$ROOT/scripts/setup.sh"
    install_prefix "$2" "$3"
    ;;
  install)
    (($# == 3)) || usage
    install_prefix "$2" "$3"
    ;;
  runtime)
    (($# == 2)) || usage
    runtime "$2"
    ;;
  *) usage ;;
esac
