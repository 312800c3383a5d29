"""ember.LocalCluster: starts from a dict or a file, stops every process it started (also when the
interpreter dies), and reports a bad config with ember's message."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
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


def test_the_processes_die_with_the_interpreter():
    # A child interpreter starts a cluster, reports the PIDs, and is killed without any clean-up.
    child, pids, _ = start_child_cluster(servers=2)
    try:
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


def test_its_clients_fail_at_once_once_it_stopped():
    local = ember.LocalCluster(cluster_config([table("user")], servers=1))
    client = local.client(timeout=30.0)
    pending = client.pull_async("user", numpy.arange(10, dtype=numpy.uint64))
    pending.result(timeout=30)
    local.stop()
    start = time.monotonic()
    with pytest.raises(ember.EmberError, match="closed: its local cluster was stopped"):
        client.pull("user", [1, 2])
    assert time.monotonic() - start < 1.0
    with pytest.raises(ember.EmberError, match="stopped"):
        local.client()


def test_its_clients_fail_within_a_second_when_its_processes_die():
    local = ember.LocalCluster(cluster_config([table("user")], servers=1))
    try:
        client = local.client(timeout=30.0)
        client.pull("user", [1])
        os.kill(local.pid, signal.SIGKILL)  # its scheduler and servers die with it
        start = time.monotonic()
        with pytest.raises(ember.EmberError, match="its local cluster exited"):
            while time.monotonic() - start < 20:  # a pull in flight fails too, as Aborted
                client.pull("user", [1])
        assert time.monotonic() - start < 1.5
    finally:
        local.stop()


def start_child_cluster(servers=1):
    """A child interpreter with a local cluster of `servers`; returns the process, the cluster's
    PIDs and its scratch folder (read from the child's first line of output)."""
    script = textwrap.dedent("""
        import json, time
        import ember
        local = ember.LocalCluster({config!r})
        pids = [local.pid] + {descendants}(local.pid)
        print(json.dumps({{"pids": pids, "dir": local._dir}}), flush=True)
        time.sleep(120)
    """).format(config=cluster_config([table("user")], servers=servers),
                descendants="__import__('test_local_cluster').descendants")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(__file__)] + env.get("PYTHONPATH", "").split(os.pathsep))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env,
                             text=True)
    started = json.loads(child.stdout.readline())
    return child, started["pids"], started["dir"]


def test_sigterm_stops_the_cluster_and_removes_its_scratch_folder():
    child, pids, folder = start_child_cluster()
    try:
        assert os.path.isdir(folder) and all(alive(pid) for pid in pids)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=30) == -signal.SIGTERM  # it still ends as SIGTERM ends it
        assert wait_until_gone(pids) == []
        assert not os.path.exists(folder)
    finally:
        child.kill()
        child.wait()


def test_the_scratch_folder_of_a_killed_interpreter_goes_with_the_next_cluster():
    child, pids, folder = start_child_cluster()
    try:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        assert wait_until_gone(pids) == []
        assert os.path.isdir(folder)  # nothing ran to remove it
    finally:
        child.kill()
        child.wait()
    # Folders made in the last minute may belong to a cluster not holding its lock yet: kept.
    with ember.LocalCluster(cluster_config([table("user")], servers=1)):
        assert os.path.isdir(folder)
    # An older one is removed; one without an owner.lock (not a cluster's) is left alone.
    foreign = tempfile.mkdtemp(prefix="ember_local_cluster_")
    try:
        long_ago = time.time() - 120
        for old in (folder, foreign):
            os.utime(old, (long_ago, long_ago))
        with ember.LocalCluster(cluster_config([table("user")], servers=1)) as local:
            assert not os.path.exists(folder)
            assert os.path.isdir(foreign)
            assert os.path.isdir(local._dir)  # its own, locked, stays
    finally:
        shutil.rmtree(foreign, ignore_errors=True)


def test_closing_a_client_whose_cluster_died_waits_for_no_timeout():
    # A client made by hand, and every process of its cluster killed: a server's lost connection
    # has the client's I/O thread ask the (dead) scheduler for the routing, a call that would hold
    # up closing for its whole 20 s timeout.
    local = ember.LocalCluster(cluster_config([table("user")], servers=1))
    try:
        client = ember.Client(local.scheduler, key=local.key, scheduler_key=local.scheduler_key,
                              timeout=20.0)
        client.pull("user", [1])
        processes = [local.pid] + descendants(local.pid)
        for pid in processes:
            os.kill(pid, signal.SIGKILL)
        assert wait_until_gone(processes) == []
        pending = client.pull_async("user", [1])
        time.sleep(1.0)
        start = time.monotonic()
        client.close(leave=False)
        assert time.monotonic() - start < 5.0
        with pytest.raises(ember.EmberError, match="closed"):
            pending.result(timeout=5)
    finally:
        local.stop()
