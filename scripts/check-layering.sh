#!/usr/bin/env bash
# Checks the module layering of docs/architecture.md on the source tree: which folders may include
# which, and that ZeroMQ stays inside the transport. Prints each violation with file and line;
# exits 1 if there is any. Run by the test suite (ctest -R Layering).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

failed=0
# forbid FOLDER PATTERN WHY: no source file under FOLDER may have an #include line matching PATTERN.
forbid() {
  local folder=$1 pattern=$2 why=$3 hits
  hits=$(grep -rnE --include='*.h' --include='*.cc' --include='*.cu' --include='*.cuh' \
           "^#include [<\"]($pattern)" "$folder" 2>/dev/null)
  if [[ -n $hits ]]; then
    printf '%s\n' "$hits" | sed "s/\$/   <- $why/"
    failed=1
  fi
}

# ZeroMQ lives in the transport alone (common/transport.cc; its key files may use zmq.h's key
# generation).
hits=$(grep -rnE --include='*.h' --include='*.cc' --include='*.cu' '^#include [<"](zmq\.h|zmq\.hpp)' \
         common embedding ps scheduler trainer app bench local python tests 2>/dev/null |
       grep -v '^common/transport\.cc:' | grep -v '^common/transport_security\.cc:.*zmq\.h>')
if [[ -n $hits ]]; then
  printf '%s\n' "$hits" | sed 's/$/   <- only common\/transport.cc talks to ZeroMQ/'
  failed=1
fi

forbid common 'embedding/|ps/|scheduler/|trainer/|app/|bench/|local/' "common depends on nothing else"
forbid embedding 'ps/|scheduler/|trainer/|app/|bench/|local/|common/(transport|rpc_channel|wire)' \
  "embedding knows no network"
forbid ps/server 'ps/client/|scheduler/|trainer/|app/|bench/|local/' "the server never includes the client"
forbid ps/client 'ps/server/|scheduler/|trainer/|app/|bench/|local/' "the client never includes the server"
forbid scheduler 'embedding/|ps/|trainer/|app/|bench/|local/' "the scheduler meets the others only on the wire"
forbid trainer 'ps/server/|scheduler/|app/|bench/|local/|common/(transport|rpc_channel|wire|frame)' \
  "the trainer reaches servers only through the client's API"
forbid local 'app/' "local/ is a library the command line uses, not the other way round"
forbid bench 'app/' "bench/ is a library the command line uses, not the other way round"

if ((failed)); then
  echo "layering: violations above (see docs/architecture.md)" >&2
  exit 1
fi
echo "layering: ok"
