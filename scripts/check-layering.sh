#!/usr/bin/env bash
# Checks the module layering of docs/architecture.md on the source tree: which folders may include
# which (fuzz/ and python/ too), that ZeroMQ stays inside the transport and Cap'n Proto inside the
# codec. Prints each violation with file and line; exits 1 if there is any. Run by the test suite
# (ctest -R Layering); scripts/check-links.py checks the same map on the link graph.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2

failed=0
FOLDERS=(common embedding ps scheduler trainer app bench local python tests fuzz)
# includes PATTERN WHERE...: the #include lines matching PATTERN in the sources under WHERE, as
# FILE:LINE:TEXT.
includes() {
  local pattern=$1
  shift
  grep -rnHE --include='*.h' --include='*.cc' --include='*.cu' --include='*.cuh' \
    "^#include [<\"]($pattern)" "$@" 2>/dev/null
}
# report WHY HITS: prints each hit with WHY and marks the check failed.
report() {
  if [[ -n $2 ]]; then
    printf '%s\n' "$2" | sed "s|\$|   <- $1|"
    failed=1
  fi
}
# forbid WHERE PATTERN WHY: no source file under WHERE may have an #include line matching PATTERN.
forbid() { report "$3" "$(includes "$2" "$1")"; }
# confine PATTERN FILES WHY: only the files whose path matches the regex FILES may have an
# #include line matching PATTERN, anywhere in ember.
confine() { report "$3" "$(includes "$1" "${FOLDERS[@]}" | grep -vE "^($2):")"; }

# ZeroMQ lives in the transport alone (common/transport.cc; its key files may use zmq.h's key
# generation), Cap'n Proto in the codec alone (and the tests that write hostile messages by hand;
# the fuzz build's compatibility header of Cap'n Proto's own headers).
confine 'zmq\.hpp' 'common/transport\.cc' "only common/transport.cc talks to ZeroMQ"
confine 'zmq\.h[>"]' 'common/transport(_security)?\.cc' "only common/transport.cc talks to ZeroMQ"
capnp_readers='common/wire[a-z_]*\.(h|cc)|fuzz/capnp_clang_compat\.h'
capnp_readers+='|tests/common/wire_test\.cc|tests/integration/insider_suite_test\.cc'
confine 'capnp/|kj/|common/ember\.capnp\.h' "$capnp_readers" \
  "only the codec (common/wire*) reads and writes Cap'n Proto messages"

forbid common 'embedding/|ps/|scheduler/|trainer/|app/|bench/|local/' "common depends on nothing else"
forbid embedding 'ps/|scheduler/|trainer/|app/|bench/|local/|common/(transport|rpc_channel|wire)' \
  "embedding knows no network"
forbid ps/server 'ps/client/|scheduler/|trainer/|app/|bench/|local/' "the server never includes the client"
forbid ps/client 'ps/server/|ps/replica/|scheduler/|trainer/|app/|bench/|local/' "the client never includes the server"
forbid ps/replica 'ps/server/|scheduler/|trainer/|app/|bench/|local/' \
  "a replica follows the servers over the wire, as a client does"
forbid scheduler 'embedding/|ps/|trainer/|app/|bench/|local/' "the scheduler meets the others only on the wire"
forbid trainer 'ps/server/|scheduler/|app/|bench/|local/|common/(transport|rpc_channel|wire|frame)' \
  "the trainer reaches servers only through the client's API"
forbid local 'app/' "local/ is a library the command line uses, not the other way round"
forbid bench 'app/' "bench/ is a library the command line uses, not the other way round"
forbid fuzz 'app/|bench/' "fuzz targets drive the libraries, not the command line"
for support in fuzz/fuzz_support.h fuzz/fuzz_support.cc; do
  forbid "$support" \
    'embedding/|ps/|scheduler/|trainer/|app/|bench/|local/|common/(transport|rpc_channel|wire|frame)' \
    "what every fuzz target links knows no network"
done
forbid python 'ps/server/|scheduler/|app/|bench/|local/local_cluster' \
  "the Python module starts ember processes; it runs no server in process"

if ((failed)); then
  echo "layering: violations above (see docs/architecture.md)" >&2
  exit 1
fi
echo "layering: ok"
