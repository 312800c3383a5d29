"""Fixtures of the Python module's tests: small configs and local clusters on loopback.

The tests skip when the module was not built (no pybind11 or Python headers at configure time).
"""

import os
import pathlib

import pytest

ember = pytest.importorskip("ember", reason="the ember Python module is not built")

SOURCE_DIR = pathlib.Path(os.environ.get("EMBER_SOURCE_DIR",
                                         pathlib.Path(__file__).resolve().parents[2]))


def table(name, dim=8, optimizer=None, stddev=0.1, seed=None, initializer=None):
    spec = {
        "name": name,
        "dim": dim,
        "initializer": initializer or {"kind": "normal", "mean": 0.0, "stddev": stddev},
        "optimizer": optimizer or {"kind": "sgd", "learning_rate": 0.1},
    }
    if seed is not None:
        spec["seed"] = seed
    return spec


def cluster_config(tables, servers=2, partitions=64, **sections):
    config = {
        "cluster": {"scheduler": "tcp://127.0.0.1:*", "servers": servers,
                    "server_bind": "tcp://127.0.0.1:*", "server_threads": 1,
                    "partitions": partitions},
        "tables": tables,
    }
    config.update(sections)
    return config


@pytest.fixture(scope="module")
def cluster():
    """Two servers with an SGD table `user` (dim 8, lr 0.1) and an Adagrad table `item`."""
    config = cluster_config([
        table("user"),
        table("item", dim=4,
              optimizer={"kind": "adagrad", "learning_rate": 0.05, "initial_accumulator": 0.0,
                         "epsilon": 1.0e-10}),
    ])
    with ember.LocalCluster(config) as local:
        yield local


@pytest.fixture
def client(cluster):
    with cluster.client() as connected:
        yield connected
