"""What the Python binding costs: pull and push throughput from Python against the C++ client's
(`ember bench --scheduler`) on the same local cluster, the two alternating round by round so that
both see the same machine load. Prints each round and the medians of the per-round ratios.

    PYTHONPATH=build/python /usr/bin/python3 python/benchmarks/client_overhead.py

Both sides send one request at a time from one client, with keys drawn uniformly from a table
populated beforehand, so the ratio is the binding's overhead (key conversion, the GIL, the numpy
result) on top of the same C++ client.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy

import ember
from ember.cluster import find_binary


def python_round(client, table, keys_per_request, requests, vocabulary, dim, rng):
    """Keys per second of `requests` pulls, then as many pushes, from Python."""
    batches = [rng.integers(0, vocabulary, keys_per_request, dtype=numpy.uint64)
               for _ in range(requests)]
    gradients = numpy.full((keys_per_request, dim), 1e-3, numpy.float32)
    out = numpy.empty((keys_per_request, dim), numpy.float32)
    start = time.perf_counter()
    for keys in batches:
        client.pull(table, keys, out=out)
    pull = requests * keys_per_request / (time.perf_counter() - start)
    start = time.perf_counter()
    for keys in batches:
        client.push(table, keys, gradients)
    push = requests * keys_per_request / (time.perf_counter() - start)
    return pull, push


def cpp_round(cluster, table, keys_per_request, requests, vocabulary, dim):
    """Keys per second of the same traffic from the C++ client (`ember bench --scheduler`)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run([find_binary(), "bench", "--scheduler", cluster.scheduler,
                        "--key", cluster.key, "--scheduler-key", cluster.scheduler_key,
                        "--table", table, "--dim", str(dim), "--clients", "1",
                        "--keys-per-request", str(keys_per_request), "--requests", str(requests),
                        "--rounds", "1", "--exponent", "0", "--vocabulary", str(vocabulary),
                        "--json", report.name],
                       check=True, capture_output=True)
        figures = json.load(open(report.name))
    return figures["pull"]["keys_per_second"], figures["push"]["keys_per_second"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--keys-per-request", type=int, default=4096)
    parser.add_argument("--requests", type=int, default=100, help="per round and operation")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vocabulary", type=int, default=200_000)
    args = parser.parse_args()

    table = "bench"
    config = {
        "cluster": {"scheduler": "tcp://127.0.0.1:*", "servers": args.servers,
                    "server_bind": "tcp://127.0.0.1:*", "partitions": 256},
        "tables": [{"name": table, "dim": args.dim,
                    "optimizer": {"kind": "adagrad", "learning_rate": 0.05}}],
    }
    rng = numpy.random.default_rng(1)
    with ember.LocalCluster(config) as cluster, cluster.client() as client:
        # Every row exists before the timed rounds.
        everything = numpy.arange(args.vocabulary, dtype=numpy.uint64)
        for first in range(0, args.vocabulary, 65536):
            client.pull(table, everything[first:first + 65536])
        ratios = {"pull": [], "push": []}
        print("round  python pull keys/s  C++ pull keys/s  ratio   python push keys/s  "
              "C++ push keys/s  ratio")
        for round_number in range(args.rounds):
            py_pull, py_push = python_round(client, table, args.keys_per_request, args.requests,
                                            args.vocabulary, args.dim, rng)
            cpp_pull, cpp_push = cpp_round(cluster, table, args.keys_per_request, args.requests,
                                           args.vocabulary, args.dim)
            ratios["pull"].append(py_pull / cpp_pull)
            ratios["push"].append(py_push / cpp_push)
            print("{:5d}  {:18.0f}  {:15.0f}  {:5.2f}   {:18.0f}  {:15.0f}  {:5.2f}".format(
                round_number, py_pull, cpp_pull, ratios["pull"][-1], py_push, cpp_push,
                ratios["push"][-1]))
        print("median python/C++: pull {:.2f}, push {:.2f} ({} keys per request, dim {}, {} "
              "servers)".format(statistics.median(ratios["pull"]),
                                statistics.median(ratios["push"]), args.keys_per_request,
                                args.dim, args.servers))


if __name__ == "__main__":
    main()
