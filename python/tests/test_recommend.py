"""ember.recommend and ember.evaluate_retrieval: a small two-tower model trained with `ember
cluster` (checkpointing as it goes), then served from its checkpoint."""

import os
import random
import subprocess

import pytest

from conftest import ember, table
from ember.cluster import find_binary


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    work = tmp_path_factory.mktemp("recommend")
    rng = random.Random(5)
    with open(work / "interactions.tsv", "w") as out:
        for user in range(60):
            for t in range(8):
                out.write("u{}\ti{}\t5\t{}\n".format(user, (user % 6) * 10 + rng.randrange(12), t))
    config = {
        "cluster": {"scheduler": "tcp://127.0.0.1:*", "servers": 1,
                    "server_bind": "tcp://127.0.0.1:*", "server_threads": 1, "partitions": 16,
                    "checkpoint_every": 10, "checkpoint_dir": str(work / "ckpt"),
                    "checkpoint_keep": 1},
        "tables": [table("user", optimizer={"kind": "adagrad", "learning_rate": 0.05}),
                   table("item", optimizer={"kind": "adagrad", "learning_rate": 0.05})],
        "model": {"embedding_dim": 8, "user_slots": 1, "item_slots": 1, "hidden": [16],
                  "output_dim": 8, "temperature": 0.2, "learning_rate": 0.003},
        "data": {"kind": "interactions",
                 "interactions": {"path": str(work / "interactions.tsv"), "delimiter": "\t",
                                  "user": 0, "item": 1, "rating": -1, "timestamp": 2,
                                  "negatives": 20, "seed": 5}},
        "train": {"epochs": 3, "batch_size": 32, "backend": "cpu", "log_every": 1000,
                  "user_tables": ["user"], "item_tables": ["item"]},
    }
    with ember._config.config_file(config) as (path, root):
        subprocess.run([find_binary(), "cluster", "--config", path, "--data-root", root],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=300)
    assert os.listdir(work / "ckpt")
    return config, work / "ckpt"


def test_recommend_answers_each_user_with_k_items_it_did_not_train_on(trained):
    config, checkpoint = trained
    answer = ember.recommend(config, checkpoint, ["u1", "u7"], k=5)
    assert set(answer) == {"u1", "u7"}
    trained_on = {}
    with open(config["data"]["interactions"]["path"]) as f:
        for line in f:
            user, item = line.split("\t")[:2]
            trained_on.setdefault(user, set()).add(item)
    for user, hits in answer.items():
        assert len(hits) == 5
        scores = [score for _, score in hits]
        assert scores == sorted(scores, reverse=True)
        # The user's training items are left out (its held-out test item may come back).
        assert len({item for item, _ in hits} & trained_on[user]) <= 1


def test_evaluate_retrieval_reports_recall_and_speed(trained):
    config, checkpoint = trained
    figures = ember.evaluate_retrieval(config, checkpoint, k=10, queries=100)
    assert figures["cases"] == 60
    assert figures["ann_recall"] >= 0.95
    assert figures["exact_recall"] == pytest.approx(figures["trainer_recall"])
    assert figures["queries"] == 100 and figures["queries_per_second"] > 0


def test_an_unknown_user_is_refused(trained):
    config, checkpoint = trained
    with pytest.raises(ember.EmberError, match="no user 'nobody'"):
        ember.recommend(config, checkpoint, ["nobody"])
