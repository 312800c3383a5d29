"""ember.LocalCluster: starts from a dict or a file, stops every process it started (also when the
interpreter dies), and reports a bad config with ember's message."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy
import pytest

from conftest import SOURCE_DIR, cluster_config, ember, table


def descendants(pid):
    """Every process below `pid` (children, grandchildren), from /proc."""
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for task in os.listdir("/proc/{}/task".format(parent)) if os.path.exists(
                "/proc/{}/task".format(parent)) else []:
            try:
                with open("/proc/{}/task/{}/children".format(parent, task)) as children:
                    for child in children.read().split():
                        found.append(int(child))
                        frontier.append(int(child))
            except OSError:
                pass
    return found


def alive(pid):
    try:
        with open("/proc/{}/stat".format(pid)) as stat:
            return stat.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_gone(pids, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def test_leaving_the_block_stops_every_process():
    with ember.LocalCluster(cluster_config([table("user")], servers=3)) as local:
        processes = [local.pid] + descendants(local.pid)
        assert len(processes) == 1 + 1 + 3  # ember cluster, the scheduler, three servers
        with local.client() as client:
            assert len(client.status()["servers"]) == 3
    assert wait_until_gone(processes) == []


def test_servers_override_and_a_config_file(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(json.dumps(cluster_config([table("user", dim=3)], servers=1)))
    with ember.LocalCluster(str(path), servers=2, overrides={"cluster.partitions": 32}) as local:
        with local.client() as client:
            status = client.status()
            assert len(status["servers"]) == 2 and status["partitions"] == 32
            assert client.pull("user", [1, 2]).shape == (2, 3)


def test_the_shipped_movielens_config_serves(tmp_path):
    config = SOURCE_DIR / "configs" / "movielens-100k.yaml"
    with ember.LocalCluster(str(config), servers=1) as local:
        with local.client() as client:
            assert {spec["name"] for spec in client.tables()} >= {"user_id", "item_id"}


def test_a_bad_config_raises_with_the_key_named():
    config = cluster_config([table("user", optimizer={"kind": "sgdd", "learning_rate": 0.1})])
    with pytest.raises(ember.EmberError, match="sgdd"):
        ember.LocalCluster(config)


def test_the_processes_die_with_the_interpreter(tmp_path):
    # A child interpreter starts a cluster, reports the PIDs, and is killed without any clean-up.
    script = textwrap.dedent("""
        import json, os, sys, time
        import ember
        local = ember.LocalCluster({config!r})
        pids = [local.pid] + {descendants}(local.pid)
        print(json.dumps(pids), flush=True)
        time.sleep(120)
    """).format(config=cluster_config([table("user")], servers=2),
                descendants="__import__('test_local_cluster').descendants")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(__file__)] + env.get("PYTHONPATH", "").split(os.pathsep))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env,
                             text=True)
    try:
        pids = json.loads(child.stdout.readline())
        assert len(pids) == 4
        assert all(alive(pid) for pid in pids)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        assert wait_until_gone(pids) == []
    finally:
        child.kill()
        child.wait()


def test_a_missing_config_file_raises():
    with pytest.raises(FileNotFoundError):
        ember.LocalCluster("/nonexistent/ember.yaml")


def test_pushes_reach_every_server():
    with ember.LocalCluster(cluster_config([table("user")], servers=2)) as local:
        with local.client() as client:
            keys = numpy.arange(1000, dtype=numpy.uint64)
            client.push("user", keys, numpy.ones((1000, 8), numpy.float32))
            rows = [server["tables"]["user"]["rows"] for server in client.stats()]
            assert sum(rows) == 1000 and min(rows) > 0
