# Sourced by the scripts that run podman (container-image.sh, the container launch test): sets
# PODMAN_OPTIONS, the options `podman run` and `podman build` need on this machine, or returns 1
# with the reason in PODMAN_UNUSABLE.
#
# podman's defaults ask for more open files (1048576) than a process without CAP_SYS_RESOURCE may
# raise its limit to, and crun refuses cgroup v1 hybrid hosts. Where a plain run fails, the options
# become runc with the open-files limits this shell already has and at most 4096 processes. Needs
# an image to try: $EMBER_BASE_IMAGE (default localhost/debian:bookworm, made by
# scripts/podman-base-image.sh).

podman_options_probe() {
  local image="${EMBER_BASE_IMAGE:-localhost/debian:bookworm}" error
  PODMAN_OPTIONS=()
  PODMAN_UNUSABLE=""
  if ! command -v podman >/dev/null; then
    PODMAN_UNUSABLE="podman is not installed"
    return 1
  fi
  if ! podman image exists "$image"; then
    PODMAN_UNUSABLE="no image $image to try podman with (scripts/podman-base-image.sh makes it)"
    return 1
  fi
  if error="$(podman run --rm "$image" true 2>&1)"; then return 0; fi
  if command -v runc >/dev/null; then
    # Processes: at most 4096 (ember's processes need far fewer), since runc's own limit may be
    # below this shell's and only lowering it is permitted.
    local nproc
    nproc="$(ulimit -Su)"
    if [[ "$nproc" == unlimited ]] || ((nproc > 4096)); then nproc=4096; fi
    PODMAN_OPTIONS=(--runtime runc --ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)"
                    --ulimit "nproc=$nproc:$nproc")
    if podman run --rm "${PODMAN_OPTIONS[@]}" "$image" true >/dev/null 2>&1; then return 0; fi
  fi
  PODMAN_OPTIONS=()
  PODMAN_UNUSABLE="podman cannot run a container here: ${error//$'\n'/ }"
  return 1
}
