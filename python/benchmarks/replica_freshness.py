"""How fresh a serving replica stays while tt-bench trains, and what following costs training.

A local cluster (`ember cluster --serve`, authenticated with its throwaway keys) trains tt-bench
on synthetic data with `ember train`, round by round without a replica and with an `ember replica`
following it (the side that goes first alternates; the replica is started afresh each time and
copies the tables first), after a first run that is not measured. While training runs on either side, a probe pushes to keys of its own
every `--probe-ms`; with the replica it then reads the key there (with the reader key) until the
row is the one the cluster acknowledged: the time from the push's acknowledgement to then is one
lag sample. Prints the medians of the rounds' samples/s and their ratio, the lag's p50 and p99,
the replica's first copy and the stream's bytes per changed row (from its log).

    PYTHONPATH=build/python EMBER_BINARY=build/ember python3 python/benchmarks/replica_freshness.py \\
        --rounds 3 --steps 150
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE_TABLE = "item_id"
FIRST_PROBE_KEY = 1 << 62


def wait_for_line(path, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                text = f.read()
            if "\n" in text:
                return text.split("\n")[0]
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise RuntimeError("{} was not written within {} s".format(path, timeout))


class Probe(threading.Thread):
    """Pushes to its own keys; with a replica client, times each row's arrival there."""

    def __init__(self, trainer, replica, interval, read_interval, first_key):
        super().__init__(daemon=True)
        self.trainer, self.replica, self.interval = trainer, replica, interval
        self.read_interval = read_interval
        self.next_key = first_key
        self.lags_ms, self.lost = [], 0
        self.stop = threading.Event()

    def run(self):
        dim = next(t["dim"] for t in self.trainer.tables() if t["name"] == PROBE_TABLE)
        gradient = numpy.full((1, dim), 0.5, dtype=numpy.float32)
        while not self.stop.is_set():
            key = numpy.array([self.next_key], dtype=numpy.uint64)
            self.next_key += 1
            self.trainer.push(PROBE_TABLE, key, gradient)
            acknowledged = time.monotonic()
            if self.replica is not None:
                expected = self.trainer.lookup(PROBE_TABLE, key)
                while time.monotonic() - acknowledged < 10:
                    if numpy.array_equal(self.replica.lookup(PROBE_TABLE, key), expected):
                        self.lags_ms.append(1000 * (time.monotonic() - acknowledged))
                        break
                    time.sleep(self.read_interval)
                else:
                    self.lost += 1
            self.stop.wait(self.interval)


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (0 when it is gone)."""
    try:
        with open("/proc/{}/stat".format(pid)) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def cluster_cpu_seconds(cluster):
    """CPU seconds of the cluster's scheduler and servers (the children of `ember cluster`)."""
    children = subprocess.run(["ps", "--ppid", str(cluster.pid), "-o", "pid="],
                              stdout=subprocess.PIPE, text=True).stdout.split()
    return sum(cpu_seconds(int(pid)) for pid in children)


def train(cluster, binary, config, steps, work, name):
    summary = os.path.join(work, name + ".json")
    argv = [binary, "train", "--config", config, "--scheduler", cluster.scheduler,
            "--key", cluster.key, "--scheduler-key", cluster.scheduler_key, "--name", name,
            "--summary-json", summary, "--steps", str(steps)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=1800)
    with open(summary) as f:
        return json.load(f)["samples_per_second"]


def start_replica(cluster, binary, config, poll_ms, work, n, niceness):
    keys = os.path.dirname(cluster.key)
    endpoint_file = os.path.join(work, "replica-{}.endpoint".format(n))
    log = open(os.path.join(work, "replica-{}.log".format(n)), "w")
    argv = [binary, "replica", "--scheduler", cluster.scheduler, "--config", config,
            "--set", "security.keyring=" + keys, "--key", cluster.info["reader_key"],
            "--scheduler-key", cluster.scheduler_key, "--poll-ms", str(poll_ms),
            "--endpoint-file", endpoint_file]
    started = time.monotonic()
    process = subprocess.Popen(["nice", "-n", str(niceness)] + argv if niceness else argv,
                               stdout=log, stderr=subprocess.STDOUT)
    endpoint = wait_for_line(endpoint_file, 120)
    reader = ember.Client(endpoint, key=cluster.info["reader_key"],
                          scheduler_key=os.path.join(keys, "reader.pub"), read_only=True,
                          register_timeout=120.0)
    while True:  # a whole copy first: lookups are refused until then
        try:
            reader.lookup(PROBE_TABLE, numpy.array([1], dtype=numpy.uint64))
            break
        except ember.UnavailableError:
            time.sleep(0.05)
    return process, reader, time.monotonic() - started, log.name


def stop_replica(process, reader):
    reader.close()
    process.terminate()
    process.wait(timeout=60)


def stream_figures(log_path):
    # The replica logs its stream's totals when it stops (see ReplicaFeed).
    with open(log_path) as f:
        for line in f:
            if "stream: " in line:
                return line.strip().split("stream: ", 1)[1]
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default=os.path.join(ROOT, "configs", "tt-bench.yaml"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150, help="training steps per side")
    parser.add_argument("--poll-ms", type=int, default=100)
    parser.add_argument("--probe-ms", type=int, default=50)
    parser.add_argument("--probe-read-ms", type=int, default=50,
                        help="how often the probe reads its key on the replica until it arrives"
                             " (the lag's resolution; its lookups load the shared cores, and"
                             " every 10 ms they cost the side with a replica about 1.5%% of the"
                             " machine's CPU)")
    parser.add_argument("--replica-nice", type=int, default=0,
                        help="run the replica at this niceness (a replica sharing the training"
                             " machine's cores yields them to training)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()
    binary = os.environ.get("EMBER_BINARY", os.path.join(ROOT, "build", "ember"))

    without, with_replica, lags, lost, copies, streams = [], [], [], 0, [], []
    cluster_cpu = {False: [], True: []}  # per side: the servers' CPU seconds per sample
    replica_cpu = []  # the replica's CPU seconds per second of training
    next_key = FIRST_PROBE_KEY
    with tempfile.TemporaryDirectory() as work, ember.LocalCluster(args.config) as cluster:
        trainer = cluster.client(name="probe")
        # One run first, not measured: the tables' first rows are created here, not in a round.
        train(cluster, binary, args.config, args.steps, work, "warm-up")
        for round_index in range(args.rounds):
            for half in range(2):
                replica_side = (round_index + half) % 2 == 1
                process = reader = None
                if replica_side:
                    process, reader, copy, log = start_replica(
                        cluster, binary, args.config, args.poll_ms, work, round_index,
                        args.replica_nice)
                    copies.append(copy)
                probe = Probe(trainer, reader, args.probe_ms / 1000.0, args.probe_read_ms / 1000.0,
                              next_key)
                probe.start()
                name = "train-{}-{}".format(round_index, half)
                cpu_before = cluster_cpu_seconds(cluster)
                replica_before = cpu_seconds(process.pid) if process else 0.0
                started = time.monotonic()
                rate = train(cluster, binary, args.config, args.steps, work, name)
                elapsed = time.monotonic() - started
                cluster_cpu[replica_side].append(
                    (cluster_cpu_seconds(cluster) - cpu_before) / (rate * elapsed))
                if process:
                    replica_cpu.append((cpu_seconds(process.pid) - replica_before) / elapsed)
                probe.stop.set()
                probe.join()
                next_key = probe.next_key
                if replica_side:
                    with_replica.append(rate)
                    lags += probe.lags_ms
                    lost += probe.lost
                    stop_replica(process, reader)
                    streams.append(stream_figures(log))
                else:
                    without.append(rate)
            print("round {}: {:.0f} samples/s without a replica, {:.0f} with".format(
                round_index + 1, without[-1], with_replica[-1]), flush=True)
    ratios = [w / o for w, o in zip(with_replica, without)]
    lags.sort()
    figures = {
        "samples_per_second_without": statistics.median(without),
        "samples_per_second_with": statistics.median(with_replica),
        "ratio": statistics.median(ratios),
        "lag_ms_p50": float(numpy.percentile(lags, 50)) if lags else None,
        "lag_ms_p99": float(numpy.percentile(lags, 99)) if lags else None,
        "lag_ms_max": lags[-1] if lags else None,
        "lag_samples": len(lags), "lag_lost": lost,
        "copy_seconds": statistics.median(copies), "streams": streams,
        "server_cpu_per_sample_without": statistics.median(cluster_cpu[False]),
        "server_cpu_per_sample_with": statistics.median(cluster_cpu[True]),
        "replica_cpu_cores": statistics.median(replica_cpu),
        "rounds": args.rounds, "steps": args.steps, "poll_ms": args.poll_ms,
        "replica_nice": args.replica_nice,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
