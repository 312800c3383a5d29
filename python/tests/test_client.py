"""ember.Client against a local cluster: round trips, async forms, cluster calls and errors."""

import os
import signal
import subprocess
import threading
import time

import numpy
import pytest

from conftest import cluster_config, ember, table

KEYS = numpy.array([0, 1, 7, 12345, 2**40 + 3, 2**63 + 5, 2**64 - 1], dtype=numpy.uint64)


def fresh_keys(start, n=64):
    # Keys no other test pushed to (the cluster fixture is shared by the module).
    return numpy.arange(start, start + n, dtype=numpy.uint64) * numpy.uint64(2654435761)


def test_pull_gives_the_deterministic_initial_rows(client):
    rows = client.pull("user", KEYS)
    assert rows.dtype == numpy.float32 and rows.shape == (len(KEYS), 8)
    numpy.testing.assert_array_equal(rows, client.initial_rows("user", KEYS))
    assert numpy.abs(rows).sum() > 0  # a normal initialiser, not zeros


def test_keys_in_other_integer_forms_give_the_same_rows(client):
    expected = client.pull("user", numpy.arange(10, dtype=numpy.uint64))
    numpy.testing.assert_array_equal(client.pull("user", numpy.arange(10, dtype=numpy.int64)),
                                     expected)
    numpy.testing.assert_array_equal(client.pull("user", list(range(10))), expected)
    numpy.testing.assert_array_equal(client.pull("user", numpy.arange(10, dtype=numpy.uint32)),
                                     expected)
    # An int64 key is its unsigned bit pattern: torch tensors carry keys above 2^63 that way.
    numpy.testing.assert_array_equal(client.pull("user", KEYS.view(numpy.int64)),
                                     client.pull("user", KEYS))
    # A strided view is read correctly too.
    strided = numpy.arange(20, dtype=numpy.uint64)[::2]
    numpy.testing.assert_array_equal(client.pull("user", strided),
                                     client.initial_rows("user", numpy.arange(0, 20, 2)))


def test_duplicate_keys_in_a_pull_each_get_the_row(client):
    keys = numpy.array([5, 5, 9, 5], dtype=numpy.uint64)
    rows = client.pull("user", keys)
    numpy.testing.assert_array_equal(rows[0], rows[1])
    numpy.testing.assert_array_equal(rows[0], rows[3])


def test_pull_into_out_writes_the_callers_buffer(client):
    out = numpy.zeros((len(KEYS), 8), dtype=numpy.float32)
    returned = client.pull("user", KEYS, out=out)
    assert returned is out or numpy.shares_memory(returned, out)
    numpy.testing.assert_array_equal(out, client.initial_rows("user", KEYS))


def test_pull_into_a_strided_or_foreign_out_is_refused(client):
    # A strided view would be filled through a copy the caller never sees.
    wide = numpy.zeros((len(KEYS), 16), dtype=numpy.float32)
    with pytest.raises(ember.InvalidArgumentError, match="strided view"):
        client.pull("user", KEYS, out=wide[:, ::2])
    with pytest.raises(ValueError, match="strided view"):
        client.pull_async("user", KEYS, out=numpy.zeros((8, len(KEYS)), numpy.float32).T)
    assert not wide.any()
    with pytest.raises(ValueError, match="expected a float32 array to fill, got list"):
        client.pull("user", KEYS, out=[[0.0] * 8] * len(KEYS))
    read_only = numpy.zeros((len(KEYS), 8), dtype=numpy.float32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        client.pull("user", KEYS, out=read_only)


def test_sgd_push_applies_minus_learning_rate_times_gradient(client):
    keys = fresh_keys(1000)
    before = client.pull("user", keys)
    gradients = numpy.random.default_rng(1).standard_normal((len(keys), 8)).astype(numpy.float32)
    client.push("user", keys, gradients)
    after = client.pull("user", keys)
    numpy.testing.assert_allclose(after, before - numpy.float32(0.1) * gradients, rtol=1e-6,
                                  atol=1e-7)


def test_adagrad_push_follows_torch_adagrad(client):
    keys = fresh_keys(2000, 16)
    weights = client.pull("item", keys).astype(numpy.float64)
    accumulator = numpy.zeros_like(weights)
    rng = numpy.random.default_rng(2)
    for _ in range(3):
        gradients = rng.standard_normal((len(keys), 4)).astype(numpy.float32)
        client.push("item", keys, gradients)
        accumulator += gradients.astype(numpy.float64) ** 2
        weights -= 0.05 * gradients / (numpy.sqrt(accumulator) + 1e-10)
    numpy.testing.assert_allclose(client.pull("item", keys), weights, rtol=1e-5, atol=1e-6)


def test_async_pulls_and_pushes_overlap_and_complete(client):
    keys = fresh_keys(3000, 256)
    before = client.pull("user", keys)
    pushes = [client.push_async("user", keys[i::4], numpy.ones((64, 8), numpy.float32))
              for i in range(4)]
    for push in pushes:
        assert push.result(timeout=30) is None
        assert push.done()
    pulls = [client.pull_async("user", keys[i::4]) for i in range(4)]
    rows = [pull.result() for pull in pulls]
    for i in range(4):
        numpy.testing.assert_allclose(rows[i], before[i::4] - numpy.float32(0.1), rtol=1e-6)


def test_rows_equal_what_the_servers_write_to_a_checkpoint(client, tmp_path):
    keys = fresh_keys(4000, 100)
    client.push("user", keys, numpy.full((100, 8), 0.5, numpy.float32))
    pulled = client.pull("user", keys)
    checkpoint = client.checkpoint(str(tmp_path / "ckpt"), step=3)
    binary = ember.cluster.find_binary()
    subprocess.run([binary, "export", "--checkpoint", checkpoint, "--out",
                    str(tmp_path / "export")], check=True, capture_output=True)
    exported_keys = numpy.load(tmp_path / "export" / "user.keys.npy")
    exported_rows = numpy.load(tmp_path / "export" / "user.rows.npy")
    positions = numpy.searchsorted(exported_keys, keys)
    numpy.testing.assert_array_equal(exported_keys[positions], keys)
    numpy.testing.assert_array_equal(exported_rows[positions], pulled)


def test_checkpoint_and_restore_bring_rows_back(client, tmp_path):
    keys = fresh_keys(5000, 32)
    client.pull("user", keys)
    saved = client.pull("user", keys)
    checkpoint = client.checkpoint(str(tmp_path / "ckpt"), step=11)
    client.push("user", keys, numpy.ones((32, 8), numpy.float32))
    assert not numpy.array_equal(client.pull("user", keys), saved)
    assert client.restore(checkpoint) == 11
    numpy.testing.assert_array_equal(client.pull("user", keys), saved)


def test_tables_status_and_stats(client):
    tables = {spec["name"]: spec for spec in client.tables()}
    assert tables["user"]["dim"] == 8 and tables["user"]["optimizer"] == "sgd"
    assert tables["item"]["dim"] == 4 and tables["item"]["optimizer"] == "adagrad"
    status = client.status()
    assert status["epoch"] > 0 and status["partitions"] == 64
    assert [server["state"] for server in status["servers"]] == ["live", "live"]
    assert sum(server["partitions"] for server in status["servers"]) == 64
    client.pull("user", KEYS)
    stats = client.stats()
    assert len(stats) == 2
    assert sum(server["keys_pulled"] for server in stats) >= len(KEYS)
    assert sum(server["tables"]["user"]["rows"] for server in stats) >= len(KEYS)


# ---- errors ----

def test_wrong_key_dtype_and_shape_raise_value_errors(client):
    with pytest.raises(ember.InvalidArgumentError, match="float64"):
        client.pull("user", numpy.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="1-D"):
        client.pull("user", numpy.zeros((2, 2), dtype=numpy.uint64))
    with pytest.raises(ValueError, match="negative"):
        client.pull("user", numpy.array([3, -1], dtype=numpy.int32))
    with pytest.raises(ValueError, match="integer ids"):
        client.pull("user", numpy.array([True, False]))


def test_unknown_table_raises_not_found(client):
    with pytest.raises(ember.NotFoundError, match="unknown table 'nope'"):
        client.pull("nope", KEYS)
    with pytest.raises(LookupError):
        client.push("nope", KEYS, numpy.zeros((len(KEYS), 8), numpy.float32))


def test_gradients_that_do_not_match_the_rows_raise(client):
    with pytest.raises(ember.InvalidArgumentError, match=r"expected shape \(7, 8\).*got \(7, 4\)"):
        client.push("user", KEYS, numpy.zeros((7, 4), numpy.float32))
    with pytest.raises(ValueError, match=r"got \(6, 8\)"):
        client.push("user", KEYS, numpy.zeros((6, 8), numpy.float32))
    with pytest.raises(ValueError, match="float32, got float64"):
        client.push("user", KEYS, numpy.zeros((7, 8)))
    with pytest.raises(ValueError, match="out"):
        client.pull("user", KEYS, out=numpy.zeros((7, 3), numpy.float32))
    # Nothing was applied by the refused pushes.
    numpy.testing.assert_array_equal(client.pull("user", KEYS), client.initial_rows("user", KEYS))


def test_bad_client_options_raise(cluster):
    with pytest.raises(ValueError, match="timeout: must be > 0"):
        cluster.client(timeout=0)
    with pytest.raises(ValueError, match="heartbeat_interval"):
        cluster.client(heartbeat_interval=-1)


def test_a_closed_client_raises(cluster):
    closed = cluster.client()
    closed.close()
    closed.close()
    with pytest.raises(ember.EmberError, match="closed"):
        closed.pull("user", KEYS)
    named = cluster.client()
    named.close(reason="done with it")
    with pytest.raises(ember.EmberError, match="the client is closed: done with it"):
        named.push("user", KEYS, numpy.zeros((len(KEYS), 8), numpy.float32))


def outside_client(local, **options):
    """A client of `local` made by hand, as one on another machine would be: the cluster does not
    know it, so it does not close it when it stops."""
    return ember.Client(local.scheduler, key=local.key, scheduler_key=local.scheduler_key,
                        **options)


@pytest.fixture
def stopped_cluster():
    """A client whose cluster is gone (timeout 2 s)."""
    local = ember.LocalCluster(cluster_config([table("user")], servers=1))
    connected = outside_client(local, timeout=2.0)
    local.stop()
    yield connected
    connected.close()


def test_a_server_that_is_down_fails_after_the_timeout(stopped_cluster):
    start = time.monotonic()
    with pytest.raises((ember.DeadlineExceededError, ember.UnavailableError)):
        stopped_cluster.pull("user", KEYS)
    assert 1.5 < time.monotonic() - start < 10


def test_ctrl_c_during_a_pull_returns_within_a_second(cluster):
    local = ember.LocalCluster(cluster_config([table("user")], servers=1))
    connected = outside_client(local, timeout=60.0)
    local.stop()  # the pull would wait its whole minute
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            connected.pull("user", KEYS)
        assert time.monotonic() - start < 1.5
    finally:
        timer.cancel()
        connected.close()


def test_fp16_on_the_wire_rounds_rows_and_gradients_to_half_precision(cluster):
    keys = numpy.arange(500, 520, dtype=numpy.uint64)
    with cluster.client() as exact, cluster.client(wire_fp16=True) as half:
        rows = exact.pull("user", keys)
        halved = half.pull("user", keys)
        numpy.testing.assert_array_equal(halved, rows.astype(numpy.float16).astype(numpy.float32))
        assert not numpy.array_equal(halved, rows)  # it did travel as fp16
        gradients = numpy.full((len(keys), 8), 1.0 / 3.0, dtype=numpy.float32)
        half.push("user", keys, gradients)  # SGD, lr 0.1: each row moves by 0.1 * fp16(1/3)
        moved = rows - exact.pull("user", keys)
        numpy.testing.assert_allclose(moved, 0.1 * numpy.float32(numpy.float16(1.0 / 3.0)),
                                      rtol=1e-6)
