#!/usr/bin/env bash
# Samples/s of a whole cluster (all trainers' samples over the longest trainer's time) with 1, 2
# and 4 trainers in each mode (asp, bsp, ssp) on the tt-bench workload, and the time each trainer
# spent waiting for the others. Prints one table row
# per run; RUNS repeats each run and reports the median cluster rate.
#
#   scripts/bench-trainers.sh [STEPS] [extra `ember cluster` arguments...]
# Environment: EMBER (the binary, default build/ember), CONFIG (default configs/tt-bench.yaml),
# TRAINERS (default "1 2 4"), MODES (default "asp bsp ssp"), STALENESS (default 2), RUNS (default 1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EMBER="${EMBER:-$ROOT/build/ember}"
CONFIG="${CONFIG:-$ROOT/configs/tt-bench.yaml}"
STEPS="${1:-20}"
shift || true
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# Prints "cluster_samples_per_second wait_ms_per_step_of_each_trainer..." for one run.
run_once() {
  local mode="$1" trainers="$2"
  "$EMBER" cluster --config "$CONFIG" --backend cpu --steps "$STEPS" --trainers "$trainers" \
    --mode "$mode" --staleness "${STALENESS:-2}" --summary-json "$WORK/summary.json" "${@:3}" \
    > "$WORK/log" 2>&1 || { echo "run failed: $mode x $trainers" >&2; tail -5 "$WORK/log" >&2; return 1; }
  python3 - "$WORK/summary.json" "$trainers" <<'PY'
import json, sys
path, trainers = sys.argv[1], int(sys.argv[2])
files = [path] + [f"{path}.{r}" for r in range(1, trainers)]
summaries = [json.load(open(f)) for f in files]
# The trainers run side by side: the cluster's rate is all their samples over the longest of them.
rate = sum(s["samples"] for s in summaries) / max(s["seconds"] for s in summaries)
print(f"{rate:.0f} " + " ".join(f"{s['wait_ms_per_step']:.1f}" for s in summaries))
PY
}

printf "%-5s %8s %20s   %s\n" mode trainers "cluster samples/s" "wait ms/step per trainer"
for mode in ${MODES:-asp bsp ssp}; do
  for trainers in ${TRAINERS:-1 2 4}; do
    results=()
    for ((i = 0; i < ${RUNS:-1}; ++i)); do results+=("$(run_once "$mode" "$trainers" "$@")"); done
    median="$(printf "%s\n" "${results[@]}" | sort -n | sed -n "$(( (${#results[@]} + 1) / 2 ))p")"
    printf "%-5s %8s %20s   %s\n" "$mode" "$trainers" "${median%% *}" "${median#* }"
  done
done
