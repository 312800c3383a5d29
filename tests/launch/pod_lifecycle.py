#!/usr/bin/env python3
"""deploy/ember-pod.sh against real processes on loopback: what the server StatefulSet's pods do
when it scales, without Kubernetes. Pods ember-server-0 and -1 form the cluster; ember-server-2
(ordinal >= EMBER_INITIAL_SERVERS) joins and gets partitions; its preStop hook (`ember-pod.sh
drain`) finds its id in its data directory, drains it, and the server exits by itself; started
again on the same data directory (a later scale-up), it empties it and joins afresh under a new
id. Every process is stopped by PID at the end; every wait is bounded.

usage: pod_lifecycle.py EMBER_BINARY EMBER_POD_SH
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

CONFIG = """
cluster: {servers: 2, server_threads: 1, partitions: 64}
tables:
  - {name: u0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
model: {embedding_dim: 8, user_slots: 1, item_slots: 1, hidden: [16], output_dim: 8,
        temperature: 0.2, learning_rate: 0.01}
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 1000, seed: 3, num_clusters: 8}
train: {steps: 30, batch_size: 64, backend: cpu, log_every: 10, user_tables: [u0], item_tables: [i0]}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Test:
    def __init__(self, ember, ember_pod):
        self.ember, self.ember_pod = ember, ember_pod
        self.dir = tempfile.mkdtemp(prefix="ember-pod-test-")
        self.config = os.path.join(self.dir, "job.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        self.scheduler = f"tcp://127.0.0.1:{free_port()}"
        self.processes = []
        self.log = open(os.path.join(self.dir, "processes.log"), "w")

    def start(self, argv, env=None):
        process = subprocess.Popen(argv, env=dict(os.environ, **(env or {})), stdout=self.log,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.processes.append(process)
        return process

    def start_pod(self, ordinal):
        data_dir = os.path.join(self.dir, f"data-{ordinal}")
        os.makedirs(data_dir, exist_ok=True)
        env = {"POD_NAME": f"ember-server-{ordinal}", "EMBER_INITIAL_SERVERS": "2",
               "EMBER_DATA_DIR": data_dir, "EMBER": self.ember}
        return self.start([self.ember_pod, "server", "--config", self.config, "--scheduler",
                           self.scheduler, "--bind", "tcp://127.0.0.1:*", "--data-dir", data_dir,
                           "--threads", "1"], env)

    def status(self):
        """{server id: (state, partitions)} from `ember status`, or {} if it failed."""
        out = subprocess.run([self.ember, "status", "--scheduler", self.scheduler],
                             capture_output=True, text=True, timeout=30)
        servers = {}
        for line in out.stdout.splitlines():
            match = re.match(r"^(\d+)\s+\S+\s+(\S+)\s+(\d+)\s", line)
            if match:
                servers[int(match.group(1))] = (match.group(2), int(match.group(3)))
        return servers

    def wait_for(self, what, predicate, timeout_s):
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            last = self.status()
            if predicate(last):
                return last
            time.sleep(0.3)
        raise AssertionError(f"{what}: not within {timeout_s} s (last status {last})")

    def run(self):
        self.start([self.ember, "scheduler", "--config", self.config, "--bind", self.scheduler])
        self.start_pod(0)
        self.start_pod(1)
        self.wait_for("the first two pods form the cluster",
                      lambda s: len(s) == 2 and all(p > 0 for _, p in s.values()), 30)
        pod2 = self.start_pod(2)
        self.wait_for("ember-server-2 joins and takes a share",
                      lambda s: len(s) == 3 and s[2][1] > 0 and sum(p for _, p in s.values()) == 64, 60)
        with open(os.path.join(self.dir, "data-2", "server-identity")) as f:
            assert f.read().split()[0] == "2", "ember-server-2 did not record id 2"
        drain = subprocess.run(
            [self.ember_pod, "drain", "--scheduler", self.scheduler, "--wait-s", "60"],
            env=dict(os.environ, EMBER_DATA_DIR=os.path.join(self.dir, "data-2"), EMBER=self.ember),
            capture_output=True, text=True, timeout=90)
        assert drain.returncode == 0, f"the preStop drain failed: {drain.stdout} {drain.stderr}"
        assert "draining server 2" in drain.stdout, drain.stdout
        assert os.path.exists(os.path.join(self.dir, "data-2", "drained")), "no drained mark"
        pod2.wait(timeout=20)  # the drained server exits by itself
        self.wait_for("server 2 holds nothing",
                      lambda s: s.get(2, ("", 1))[1] == 0 and s[0][1] + s[1][1] == 64, 30)
        self.start_pod(2)  # the StatefulSet scales up again: same name, same volume
        self.wait_for("ember-server-2 joins afresh as server 3",
                      lambda s: 3 in s and s[3][0] == "live" and s[3][1] > 0, 60)
        with open(os.path.join(self.dir, "data-2", "server-identity")) as f:
            assert f.read().split()[0] == "3", "the emptied data directory did not take id 3"
        print("pod_lifecycle: join, preStop drain and rejoin under a new id: PASS")

    def stop(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        self.log.close()


def main():
    test = Test(os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2]))
    try:
        test.run()
        return 0
    except (AssertionError, OSError, subprocess.SubprocessError) as error:
        print(f"FAIL: {error}")
        test.stop()
        with open(os.path.join(test.dir, "processes.log")) as f:
            print("---- processes.log (last lines)")
            print("".join(f.readlines()[-40:]))
        return 1
    finally:
        test.stop()
        shutil.rmtree(test.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
