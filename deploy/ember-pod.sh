#!/usr/bin/env bash
# What a Kubernetes pod of ember runs where the pod itself decides a flag (deploy/; installed
# into the image's bin/ by scripts/container-build.sh).
#
#   ember-pod.sh server FLAGS...   `ember server FLAGS...`, plus --join when this pod is not one of
#                                  the cluster's first EMBER_INITIAL_SERVERS servers (its ordinal,
#                                  the number ending POD_NAME, is at least that), or when its data
#                                  directory belongs to a drained server (then emptied first: the
#                                  rows live on other servers now, and it joins afresh)
#   ember-pod.sh drain FLAGS...    the preStop hook: `ember drain FLAGS... --server ID` for the
#                                  server of this pod, ID read from its data directory's
#                                  server-identity file (the scheduler hands out ids in order of
#                                  registration, so the ordinal is not the id); on success marks
#                                  the data directory drained. Does nothing for a server that
#                                  never registered.
#
# Environment: POD_NAME, EMBER_DATA_DIR (the server's --data-dir), EMBER_INITIAL_SERVERS
# (cluster.servers), EMBER (default: ember on PATH). With EMBER_POD_DRY_RUN=1 it prints the command
# it would run, one argument a line, and changes nothing (the deploy test checks the flags so).
set -euo pipefail

EMBER="${EMBER:-ember}"
DATA_DIR="${EMBER_DATA_DIR:-/var/lib/ember}"
IDENTITY="$DATA_DIR/server-identity"  # "<id> <endpoint>", written by the server (ps/server/server.h)
DRAINED="$DATA_DIR/drained"

run() {
  if [[ "${EMBER_POD_DRY_RUN:-0}" == 1 ]]; then
    printf '%s\n' "$@"
    exit 0
  fi
  exec "$@"
}

role="${1:-}"
(($# > 0)) && shift
case "$role" in
  server)
    name="${POD_NAME:?POD_NAME must name the pod}"
    ordinal="${name##*-}"
    if ! [[ "$ordinal" =~ ^[0-9]+$ ]]; then
      echo "ember-pod: POD_NAME '$name' does not end in a StatefulSet ordinal" >&2
      exit 2
    fi
    join=()
    if ((ordinal >= ${EMBER_INITIAL_SERVERS:?EMBER_INITIAL_SERVERS must be cluster.servers})); then
      join=(--join)
    fi
    if [[ -f "$DRAINED" ]]; then
      if [[ "${EMBER_POD_DRY_RUN:-0}" != 1 ]]; then
        echo "ember-pod: $DATA_DIR held a drained server; emptying it and joining afresh" >&2
        find "$DATA_DIR" -mindepth 1 -delete
      fi
      join=(--join)
    fi
    run "$EMBER" server "$@" "${join[@]}"
    ;;
  drain)
    if [[ ! -s "$IDENTITY" ]]; then
      echo "ember-pod: no $IDENTITY: this server never registered; nothing to drain" >&2
      [[ "${EMBER_POD_DRY_RUN:-0}" == 1 ]] && run "$EMBER" drain "$@" --server 0
      exit 0
    fi
    read -r id _ <"$IDENTITY"
    if [[ "${EMBER_POD_DRY_RUN:-0}" == 1 ]]; then run "$EMBER" drain "$@" --server "$id"; fi
    "$EMBER" drain "$@" --server "$id"
    touch "$DRAINED"
    ;;
  *)
    echo "usage: ember-pod.sh server|drain FLAGS..." >&2
    exit 2
    ;;
esac
