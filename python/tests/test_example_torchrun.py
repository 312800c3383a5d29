"""The torchrun MovieLens example (python/examples/movielens_torchrun.py) on a small synthetic
interactions file: two ranks in bsp run to the end, write their figures, make one pull request
per server per step for all seven tables, train as one process on the whole batch does, and beat
the most-popular baseline on data whose users keep to one group of items. Every run is bounded
and its process group killed if it overruns."""

import json
import os
import sys

import numpy
import pytest

from conftest import SOURCE_DIR, ember

pytest.importorskip("torch")
pytest.importorskip("torch.distributed.run")
pytest.importorskip("yaml")
import ember.launch  # noqa: E402

EXAMPLE = SOURCE_DIR / "python" / "examples" / "movielens_torchrun.py"
USERS, ITEMS, GROUPS, PER_USER = 48, 80, 4, 12
SERVERS = 2


def write_data(folder):
    """MovieLens-shaped files: each user rates PER_USER items of their own group of items (so
    the history and ids tell a user's group, and popularity does not)."""
    rng = numpy.random.default_rng(7)
    lines = []
    for user in range(1, USERS + 1):
        group = user % GROUPS
        items = rng.choice(numpy.arange(group, ITEMS, GROUPS), PER_USER, replace=False) + 1
        lines += ["{}\t{}\t{}\t{}".format(user, item, 4, 1000 * user + t)
                  for t, item in enumerate(items)]
    (folder / "u.data").write_text("\n".join(lines) + "\n")
    (folder / "u.user").write_text("".join(
        "{}|{}|M|job{}|00000\n".format(u, 20 + u % 3, u % 5) for u in range(1, USERS + 1)))
    (folder / "u.item").write_text("".join(
        "{}|film {}|01-Jan-{}||url|{}|{}|{}\n".format(
            i, i, 1990 + i % 4, int(i % 3 == 0), int(i % 3 == 1), int(i % 3 == 2))
        for i in range(1, ITEMS + 1)))


def config(folder):
    adagrad = {"kind": "adagrad", "learning_rate": 0.1, "initial_accumulator": 0.0,
               "epsilon": 1.0e-10}
    user_tables = ["user_id", "user_occupation", "user_age", "user_history"]
    item_tables = ["item_id", "item_genres", "item_release"]
    side = {"delimiter": "|", "id": 0}
    return {
        "cluster": {"scheduler": "tcp://127.0.0.1:*", "servers": SERVERS,
                    "server_bind": "tcp://127.0.0.1:*", "server_threads": 1, "partitions": 16},
        "tables": [{"name": name, "dim": 8, "optimizer": adagrad,
                    "initializer": {"kind": "normal", "mean": 0.0, "stddev": 0.01}}
                   for name in user_tables + item_tables],
        "model": {"embedding_dim": 8, "user_slots": 4, "item_slots": 3, "hidden": [16],
                  "output_dim": 8, "temperature": 0.1, "learning_rate": 0.01, "seed": 1},
        "data": {"kind": "interactions", "interactions": {
            "path": str(folder / "u.data"), "delimiter": "\t", "user": 0, "item": 1,
            "rating": 2, "timestamp": 3, "min_rating": 0, "negatives": 20, "seed": 42,
            "user_history": 5, "causal_history": True,
            "user_features": dict(side, path=str(folder / "u.user"), features=[[3], [1]]),
            "item_features": dict(side, path=str(folder / "u.item"), features=[[5, 6, 7], [2]]),
        }},
        "train": {"epochs": 6, "batch_size": 32, "user_tables": user_tables,
                  "item_tables": item_tables},
    }


def run_example(tmp_path, name, ranks, timeout=120):
    """The example on the synthetic data, under torchrun with `ranks` ranks (1: one process
    without torchrun); rank 0's figures."""
    config_path = tmp_path / "config.yaml"
    if not config_path.exists():
        write_data(tmp_path)
        config_path.write_text(json.dumps(config(tmp_path)))  # JSON is YAML
    results = tmp_path / (name + ".json")
    example = [str(EXAMPLE), "--config", str(config_path), "--data-root", str(tmp_path),
               "--results", str(results)]
    argv = [sys.executable] + example
    if ranks > 1:
        argv = ember.launch.torchrun_argv(example[0], example[1:], ranks=ranks)
    env = dict(os.environ, PYTHONPATH=str(os.path.dirname(os.path.dirname(ember.__file__))))
    log_path = tmp_path / (name + ".log")
    code = ember.launch.run_bounded(argv, log_path, timeout, env=env, cwd=tmp_path)
    if code != 0:
        pytest.fail("{} ended with {}:\n{}".format(name, code, log_path.read_text()[-4000:]))
    return json.loads(results.read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The example on the same data under torchrun with two ranks, and as one process."""
    folder = tmp_path_factory.mktemp("example")
    return {"two_ranks": run_example(folder, "two-ranks", 2),
            "one_process": run_example(folder, "one-process", 1)}


def test_two_ranks_in_bsp_complete_and_write_their_figures(runs):
    figures = runs["two_ranks"]
    assert figures["world_size"] == 2 and figures["mode"] == "bsp"
    steps_per_epoch = (USERS * PER_USER - 2 * USERS) // 32  # less test and validation items
    assert figures["steps"] >= 6 * (steps_per_epoch - 1)
    assert figures["samples"] == figures["steps"] * 32
    for key in ("hr@10", "ndcg@10", "recall@10_full", "popularity_hr@10"):
        assert 0.0 <= figures[key] <= 1.0, key
    assert numpy.isfinite(figures["loss_end"])


def test_one_pull_request_per_server_per_rank_and_step(runs):
    # The servers count both ranks' requests: one per server each, for all seven tables.
    assert runs["two_ranks"]["pull_requests_per_step"] == 2 * SERVERS
    assert runs["one_process"]["pull_requests_per_step"] == SERVERS


def test_two_ranks_train_as_one_process_on_the_whole_batch(runs):
    two, one = runs["two_ranks"], runs["one_process"]
    assert two["steps"] == one["steps"]
    assert two["loss_end"] == pytest.approx(one["loss_end"], abs=1e-4)
    assert two["hr@10"] == pytest.approx(one["hr@10"], abs=0.05)


def test_beats_most_popular(runs):
    figures = runs["two_ranks"]
    assert figures["hr@10"] > figures["popularity_hr@10"] + 0.1, figures
