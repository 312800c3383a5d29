#!/usr/bin/env bash
# Runs on a GPU machine, from inside a bundle made by scripts/make-bundle.sh: the GPU tests, the
# dense-step benchmark (fp32 with and without CUDA graphs, and TF32), the end-to-end tt-bench run
# (4 servers, CUDA trainer, pipelined), and the PyTorch reference of the same model when its
# script is given as $1. Everything goes under $OUT (default: ./gpu-results), one file per part.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${OUT:-$HERE/gpu-results}"
TORCH_REFERENCE="${1:-}"
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$HERE/lib:${LD_LIBRARY_PATH:-}"
cd "$HERE"

run() {  # run NAME COMMAND...: output to $OUT/NAME.txt, and a line of status to the console
  local name=$1
  shift
  local start=$SECONDS
  "$@" >"$OUT/$name.txt" 2>&1
  echo "$name: exit $? in $((SECONDS - start)) s"
}

nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1
run gpu-tests ./trainer_tests --gtest_filter='*Cuda*'
run dense-fp32 ./ember bench-dense --backend cuda --batches 4096,16384
run dense-fp32-nographs ./ember bench-dense --backend cuda --batches 4096,16384 --no-graphs
run dense-tf32 ./ember bench-dense --backend cuda --batches 4096,16384 --tf32
run end-to-end ./ember cluster --config configs/tt-bench-gpu.yaml \
  --summary-json "$OUT/end-to-end.json"
if [[ -n $TORCH_REFERENCE ]]; then
  run torch python3 "$TORCH_REFERENCE" --batches 4096,16384 --compile
fi
grep -h -E "samples/s|busy|throughput|PASSED|FAILED" "$OUT"/*.txt | tail -40
