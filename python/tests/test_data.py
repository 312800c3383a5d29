"""ember.InteractionData: the trainer's split and keys, and ember's ranking evaluation of vectors
computed in Python, against brute-force references."""

import math

import numpy
import pytest

from conftest import ember


@pytest.fixture(scope="module")
def data_config(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interactions")
    rng = numpy.random.default_rng(4)
    lines = []
    for user in range(40):
        items = rng.choice(60, size=int(rng.integers(3, 12)), replace=False,
                           p=numpy.linspace(2, 1, 60) / numpy.linspace(2, 1, 60).sum())
        for time, item in enumerate(items):
            lines.append("u{}\ti{}\t5\t{}".format(user, item, 1000 + time))
    (folder / "ratings.tsv").write_text("\n".join(lines) + "\n")
    return {
        "tables": [{"name": "user_id", "dim": 4}, {"name": "item_id", "dim": 4}],
        "data": {"kind": "interactions",
                 "interactions": {"path": str(folder / "ratings.tsv"), "delimiter": "\t",
                                  "user": 0, "item": 1, "rating": 2, "timestamp": 3,
                                  "negatives": 20, "seed": 9, "validation": True}},
    }


@pytest.fixture(scope="module")
def data(data_config):
    return ember.InteractionData(data_config)


def test_split_and_keys(data):
    assert data.num_users == 40 and data.num_items <= 60
    users, items = data.train_pairs()
    assert len(users) == len(items) == data.num_train
    test_users, candidates = data.cases("test")
    assert candidates.shape == (len(test_users), 21)
    validation_users, validation_candidates = data.cases("validation")
    # The held-out items are never training pairs of their user.
    trained = set(zip(users.tolist(), items.tolist()))
    for user, held_out in zip(test_users.tolist(), candidates[:, 0].tolist()):
        assert (user, held_out) not in trained
    for user, held_out in zip(validation_users.tolist(), validation_candidates[:, 0].tolist()):
        assert (user, held_out) not in trained
    assert len(set(data.user_keys().tolist())) == data.num_users
    assert len(set(data.item_keys().tolist())) == data.num_items
    assert data.user_id(0).startswith("u") and data.item_id(0).startswith("i")


def brute_force(data, user_vectors, item_vectors, split, k=10):
    users, candidates = data.cases(split)
    hits, gains = [], []
    for user, row in zip(users, candidates):
        scores = item_vectors[row] @ user_vectors[user]
        rank = int((scores[1:] >= scores[0]).sum())  # ties count against the held-out item
        hits.append(rank < k)
        gains.append(1 / math.log2(rank + 2) if rank < k else 0.0)
    return numpy.mean(hits), numpy.mean(gains)


@pytest.mark.parametrize("split", ["test", "validation"])
def test_sampled_evaluation_equals_a_brute_force_ranking(data, split):
    rng = numpy.random.default_rng(11)
    user_vectors = rng.standard_normal((data.num_users, 5)).astype(numpy.float32)
    item_vectors = rng.standard_normal((data.num_items, 5)).astype(numpy.float32)
    figures = data.evaluate(user_vectors, item_vectors, k=10, split=split)
    hit_rate, ndcg = brute_force(data, user_vectors, item_vectors, split)
    assert figures["hit_rate@10"] == pytest.approx(hit_rate)
    assert figures["ndcg@10"] == pytest.approx(ndcg)
    assert figures["cases"] == len(data.cases(split)[0])


@pytest.mark.parametrize("protocol", ["sampled", "full"])
def test_popularity_vectors_give_the_popularity_baseline(data, protocol):
    counts = data.item_train_counts().astype(numpy.float32)
    figures = data.evaluate(numpy.ones((data.num_users, 1), numpy.float32), counts[:, None],
                            protocol=protocol)
    baseline = data.popularity(protocol=protocol)
    for part in ("warm", "cold"):
        assert figures.pop(part) == pytest.approx(baseline.pop(part))
    assert figures == pytest.approx(baseline)
    metric = "recall@10" if protocol == "full" else "hit_rate@10"
    assert 0 < figures[metric] <= 1


def test_identical_vectors_score_no_hits(data):
    # Ties rank pessimistically: untrained, identical rows cannot look good.
    figures = data.evaluate(numpy.ones((data.num_users, 3), numpy.float32),
                            numpy.ones((data.num_items, 3), numpy.float32))
    assert figures["hit_rate@10"] == 0 and figures["tie_fraction"] == 1


def test_bad_arguments_raise(data, data_config):
    good_users = numpy.ones((data.num_users, 3), numpy.float32)
    with pytest.raises(ValueError, match="item vectors: expected"):
        data.evaluate(good_users, numpy.ones((data.num_items + 1, 3), numpy.float32))
    with pytest.raises(ValueError, match="same number of columns"):
        data.evaluate(good_users, numpy.ones((data.num_items, 2), numpy.float32))
    with pytest.raises(ValueError, match="protocol"):
        data.popularity(protocol="everything")
    with pytest.raises(ValueError, match="split"):
        data.cases("train")
    with pytest.raises(ValueError, match="slot 1"):
        data.user_keys(slot=1)
    config = dict(data_config)
    config["data"] = {"kind": "interactions",
                      "interactions": {"path": "/nonexistent/ratings.tsv"}}
    with pytest.raises(ember.EmberError, match="/nonexistent/ratings.tsv"):
        ember.InteractionData(config)


def test_bags_of_single_and_multi_valued_slots(data, data_config):
    values, offsets = data.user_bags(0)
    assert offsets.tolist() == list(range(data.num_users + 1))
    assert values.tolist() == data.user_keys(0).tolist()
    assert data.history_slot is None
    with pytest.raises(ember.EmberError, match="no causal user history"):
        data.train_histories()
    config = dict(data_config)
    config["data"] = {"kind": "interactions", "interactions": dict(
        data_config["data"]["interactions"], user_history=3, causal_history=True)}
    with_history = ember.InteractionData(config)
    slot = with_history.history_slot
    assert slot == 1
    with pytest.raises(ValueError, match="multi-valued"):
        with_history.user_keys(slot)
    values, offsets = with_history.user_bags(slot)
    lengths = numpy.diff(offsets)
    assert len(lengths) == with_history.num_users and lengths.min() >= 1 and lengths.max() == 3
    assert len(values) == offsets[-1]
    values, offsets = with_history.train_histories()
    lengths = numpy.diff(offsets)
    assert len(lengths) == with_history.num_train
    assert lengths.min() == 1 and lengths.max() == 3  # a user's first pair: the empty-history key
