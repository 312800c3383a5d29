"""ember.Client.lookup: read-only rows for serving, against a local cluster."""

import numpy
import pytest

from conftest import ember


def keys_from(start, n=32):
    # Keys no other test of this module touched (the cluster fixture is shared by the module).
    return numpy.arange(start, start + n, dtype=numpy.uint64) * numpy.uint64(2654435761)


def rows_on_servers(client):
    return sum(table["rows"] for server in client.stats() for table in server["tables"].values())


def test_lookup_of_untouched_keys_gives_initial_rows_and_creates_none(client):
    keys = keys_from(1_000)
    before = rows_on_servers(client)
    rows = client.lookup("user", keys)
    assert rows.dtype == numpy.float32 and rows.shape == (len(keys), 8)
    numpy.testing.assert_array_equal(rows, client.initial_rows("user", keys))
    assert rows_on_servers(client) == before


def test_flag_mode_returns_found_flags_and_zero_rows_for_missing_keys(client):
    stored = keys_from(2_000, 4)
    pulled = client.pull("user", stored)
    keys = numpy.concatenate([stored, keys_from(3_000, 3)])
    rows, found = client.lookup("user", keys, missing="flag")
    assert found.dtype == numpy.bool_
    numpy.testing.assert_array_equal(found, [True] * 4 + [False] * 3)
    numpy.testing.assert_array_equal(rows[:4], pulled)
    numpy.testing.assert_array_equal(rows[4:], numpy.zeros((3, 8), dtype=numpy.float32))


def test_lookup_of_trained_rows_changes_nothing(client):
    keys = keys_from(4_000, 16)
    gradients = numpy.full((len(keys), 4), 0.5, dtype=numpy.float32)
    client.push("item", keys, gradients)
    trained = client.pull("item", keys)
    numpy.testing.assert_array_equal(client.lookup("item", keys), trained)
    # Adagrad's next step reads the accumulated state; a lookup between steps leaves it as it was.
    client.push("item", keys, gradients)
    after = client.pull("item", keys)
    assert not numpy.array_equal(after, trained)
    numpy.testing.assert_array_equal(client.lookup("item", keys), after)


def test_bad_mode_and_unknown_table_raise(client):
    with pytest.raises(ValueError, match="missing"):
        client.lookup("user", keys_from(5_000, 2), missing="zeros")
    with pytest.raises(ember.NotFoundError, match="'nope'"):
        client.lookup("nope", keys_from(5_000, 2))


def test_a_reader_looks_up_and_may_do_nothing_else(cluster, client):
    keys = keys_from(6_000, 8)
    trained = client.pull("user", keys)
    with cluster.reader() as reader:
        numpy.testing.assert_array_equal(reader.lookup("user", keys), trained)
        assert {t["name"] for t in reader.tables()} == {"user", "item"}
        assert reader.status()["servers"]
        assert len(reader.stats()) == 2
        before = rows_on_servers(client)
        with pytest.raises(ember.PermissionDeniedError, match="read-only"):
            reader.pull("user", keys_from(7_000, 2))
        with pytest.raises(ember.PermissionDeniedError, match="read-only"):
            reader.push("user", keys, numpy.ones((len(keys), 8), dtype=numpy.float32))
        with pytest.raises(ember.PermissionDeniedError, match="read-only"):
            reader.end_step()
        assert rows_on_servers(client) == before
    numpy.testing.assert_array_equal(client.pull("user", keys), trained)


def test_a_reader_key_cannot_register_as_a_trainer(cluster):
    with pytest.raises(ember.PermissionDeniedError, match="needs the role trainer"):
        ember.Client(cluster.scheduler, key=cluster.info["reader_key"],
                     scheduler_key=cluster.scheduler_key, register_timeout=5.0)
