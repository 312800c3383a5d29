#!/usr/bin/env bash
# Builds ember's libFuzzer targets (fuzz/) into their own build folder and runs each of them (or
# those named) for a bounded time or number of inputs, on a copy of its seed corpus. Prints per
# target the inputs run, inputs per second, new corpus entries and findings (crashes, leaks,
# timeouts, out-of-memory) with the file each finding's input was saved to; exits 1 on any
# finding. docs/fuzzing.md has more.
#
#   scripts/fuzz.sh [--seconds N | --runs N] [--timeout S] [--rss-mb M] [--update-corpus]
#                   [--write-corpus] [--build-only] [TARGET...]
#
#   --seconds N      run each target for N seconds (default 10)
#   --runs N         run each target for N inputs instead
#   --timeout S      one input running longer than S seconds is a finding (default 10)
#   --rss-mb M       a target using more than M MiB of memory is a finding (default 2048)
#   --update-corpus  merge what the run found new into fuzz/corpus/<target>/ (minimised)
#   --write-corpus   rewrite the seeds that ember's own writers make (fuzz/corpus_writer.h)
#   --build-only     build, run nothing
#   TARGET           wire_request, server_handler, ... (default: all of fuzz/*_fuzzer.cc)
#
# Environment: EMBER_FUZZ_BUILD_DIR (default build-fuzz/), EMBER_FUZZ_CXX (default clang++-16),
# EMBER_JOBS (build jobs, default 2). Each run works in BUILD_DIR/runs/<target>/: corpus/ (the
# copy it grows), findings/ (inputs that failed), log.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$(mkdir -p "${EMBER_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}" &&
             cd "${EMBER_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}" && pwd)"
CXX_COMPILER="${EMBER_FUZZ_CXX:-clang++-16}"
JOBS="${EMBER_JOBS:-2}"

seconds=10
runs=""
timeout=10
rss_mb=2048
update_corpus=0
write_corpus=0
build_only=0
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; runs=""; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --timeout) timeout="$2"; shift 2 ;;
    --rss-mb) rss_mb="$2"; shift 2 ;;
    --update-corpus) update_corpus=1; shift ;;
    --write-corpus) write_corpus=1; shift ;;
    --build-only) build_only=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  for source in "$ROOT"/fuzz/*_fuzzer.cc; do
    name="$(basename "$source" .cc)"
    targets+=("${name%_fuzzer}")
  done
fi
for target in "${targets[@]}"; do
  if [[ ! -f "$ROOT/fuzz/${target}_fuzzer.cc" ]]; then
    echo "fuzz.sh: no fuzz target '$target' (fuzz/${target}_fuzzer.cc)" >&2
    exit 2
  fi
done

# ---- Build ----
if ! command -v "$CXX_COMPILER" >/dev/null; then
  echo "fuzz.sh: $CXX_COMPILER not found (scripts/setup.sh installs clang-16)" >&2
  exit 2
fi
C_COMPILER="${CXX_COMPILER/clang++/clang}"
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then  # (a configure that failed is run again)
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX_COMPILER" -DCMAKE_C_COMPILER="$C_COMPILER" "${launcher[@]}" \
    -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_WITH_CUDA=OFF >/dev/null
fi
ninja_targets=(ember_fuzz_corpus)
for target in "${targets[@]}"; do ninja_targets+=("${target}_fuzzer"); done
ninja -C "$BUILD_DIR" -j "$JOBS" "${ninja_targets[@]}"

if ((write_corpus)); then
  "$BUILD_DIR/fuzz/ember_fuzz_corpus" "$ROOT/fuzz/corpus" "$ROOT"
fi
if ((build_only)); then exit 0; fi

# ---- Run ----
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
# Scratch files (inputs of the file readers, checkpoints the server handler writes) go to memory
# when it can: a checkpoint's flush to disk would otherwise dominate the server handler's time.
if [[ -z ${TMPDIR:-} && -d /dev/shm && -w /dev/shm ]]; then export TMPDIR=/dev/shm; fi
symbolizer="$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)"
if [[ -n $symbolizer ]]; then export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-$symbolizer}"; fi
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if [[ -n $runs ]]; then
  limit=(-runs="$runs") budget="$runs inputs"
else
  limit=(-max_total_time="$seconds") budget="$seconds s"
fi

# stat NAME LOG: the value of libFuzzer's final "stat::NAME:" line (0 when missing).
stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -1 | grep . || echo 0; }

failed=0
summary=()
for target in "${targets[@]}"; do
  work="$BUILD_DIR/runs/$target"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/findings"
  if [[ -d "$ROOT/fuzz/corpus/$target" ]]; then cp -r "$ROOT/fuzz/corpus/$target/." "$work/corpus/"; fi
  seeds=$(find "$work/corpus" -type f | wc -l)
  echo "fuzz: $target ($budget, $seeds seeds)"
  status=0
  # In its work folder, so that anything a target writes by a relative path lands there.
  (cd "$work" && "$BUILD_DIR/fuzz/${target}_fuzzer" "${limit[@]}" -timeout="$timeout" \
     -rss_limit_mb="$rss_mb" -print_final_stats=1 -artifact_prefix="$work/findings/" \
     "$work/corpus" >"$work/log" 2>&1) || status=$?
  execs=$(stat number_of_executed_units "$work/log")
  per_second=$(stat average_exec_per_sec "$work/log")
  new_units=$(stat new_units_added "$work/log")
  findings=$(find "$work/findings" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
               -o -name 'oom-*' \) | sort)
  line="$(printf '%-20s %12s inputs %8s/s %5s new' "$target" "$execs" "$per_second" "$new_units")"
  if [[ -n $findings || $status -ne 0 ]]; then
    failed=1
    line+="  FINDING (exit $status)"
    for finding in $findings; do kind="$(basename "$finding")"; line+=$'\n'"    ${kind%%-*}: $finding"; done
    line+=$'\n'"    log: $work/log"
    grep -m3 -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|EMBER_CHECK failed)" "$work/log" |
      sed 's/^/    /' >>"$work/summary" || true
    if [[ -s $work/summary ]]; then line+=$'\n'"$(cat "$work/summary")"; fi
  else
    line+="  ok"
  fi
  summary+=("$line")
  if ((update_corpus)); then
    mkdir -p "$ROOT/fuzz/corpus/$target"
    "$BUILD_DIR/fuzz/${target}_fuzzer" -merge=1 "$ROOT/fuzz/corpus/$target" "$work/corpus" \
      >>"$work/log" 2>&1 || true
  fi
done

echo
echo "fuzz: results (work folders under $BUILD_DIR/runs/)"
printf '%s\n' "${summary[@]}"
if ((failed)); then
  echo "fuzz: FINDINGS above; reproduce one with: $BUILD_DIR/fuzz/<target>_fuzzer <input file>" >&2
  exit 1
fi
