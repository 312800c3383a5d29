"""ember.torch.EmbeddingBagCollection: step for step the same as local nn.EmbeddingBags (sum,
mean, per-id weights, a table shared by two features) under the same optimizer; one pull request
per server per step for all tables; jagged inputs in each accepted form; clear errors."""

import numpy
import pytest

from conftest import cluster_config, ember, table

torch = pytest.importorskip("torch")
import ember.torch  # noqa: E402  (needs torch)

SGD = {"kind": "sgd", "learning_rate": 0.05}
ADAGRAD = {"kind": "adagrad", "learning_rate": 0.05, "initial_accumulator": 0.0,
           "epsilon": 1.0e-10}
DIMS = {"user": 4, "genre": 3, "item": 5}
VOCABULARY = 30
BATCH = 8


@pytest.fixture(scope="module")
def cluster():
    tables = [table("{}_{}".format(name, kind), dim=dim, optimizer=optimizer, seed=11)
              for kind, optimizer in (("sgd", SGD), ("adagrad", ADAGRAD), ("ahead", ADAGRAD))
              for name, dim in DIMS.items()]
    with ember.LocalCluster(cluster_config(tables, servers=2)) as local:
        yield local


def configs(kind):
    """user ids (one per sample, summed), genres (mean), and items with a weighted history: two
    features on one table (the input's weights apply to history alone)."""
    return [ember.torch.BagConfig("user_" + kind, ["user"]),
            ember.torch.BagConfig("genre_" + kind, ["genres"], "mean"),
            ember.torch.BagConfig("item_" + kind, ["item"]),
            ember.torch.BagConfig("item_" + kind, ["history"], weighted=True)]


def batches(steps=8, seed=4):
    """JaggedIds with bags of 0 to 4 ids (repeats within and across bags), weights on history."""
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        features, weights = {}, {}
        for name, most in (("user", 1), ("genres", 4), ("item", 1), ("history", 4)):
            least = 1 if most == 1 else 0
            lengths = torch.randint(least, most + 1, (BATCH,), generator=generator).tolist()
            features[name] = [torch.randint(0, VOCABULARY, (n,), generator=generator).tolist()
                              for n in lengths]
            weights[name] = [torch.rand(n, generator=generator).tolist() for n in lengths]
        keys = list(features)
        values = [i for key in keys for bag in features[key] for i in bag]
        lengths = [len(bag) for key in keys for bag in features[key]]
        history = [w for key in keys for bag in weights[key] for w in bag]
        targets = torch.randn(BATCH, generator=generator)
        yield ember.torch.JaggedIds(keys, values, lengths=lengths, weights=history), targets


def dense_layer():
    torch.manual_seed(3)
    return torch.nn.Linear(DIMS["user"] + DIMS["genre"] + 2 * DIMS["item"], 1)


def reference_pooled(weights, jagged):
    """The features pooled by torch's own EmbeddingBag function over full local tables."""
    pooled = []
    for feature, table, mode in (("user", "user", "sum"), ("genres", "genre", "mean"),
                                 ("item", "item", "sum"), ("history", "item", "sum")):
        (ids, _), offsets, per_id = jagged.feature(feature)
        per_id = per_id if feature == "history" else None
        pooled.append(torch.nn.functional.embedding_bag(ids, weights[table], offsets, mode=mode,
                                                        per_sample_weights=per_id))
    return torch.cat(pooled, dim=1)


def reference_history(kind, initial):
    weights = {name: torch.nn.Parameter(torch.from_numpy(rows.copy()))
               for name, rows in initial.items()}
    if kind == "sgd":
        optimizer = torch.optim.SGD(weights.values(), lr=SGD["learning_rate"])
    else:
        optimizer = torch.optim.Adagrad(weights.values(), lr=ADAGRAD["learning_rate"],
                                        initial_accumulator_value=0.0, eps=1e-10)
    dense = dense_layer()
    dense_optimizer = torch.optim.SGD(dense.parameters(), lr=0.1)
    history = []
    for jagged, targets in batches():
        loss = torch.nn.functional.mse_loss(dense(reference_pooled(weights, jagged)).squeeze(-1),
                                            targets)
        optimizer.zero_grad()
        dense_optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        dense_optimizer.step()
        history.append((loss.item(), {k: w.detach().numpy().copy() for k, w in weights.items()}))
    return history


def ember_history(client, kind):
    """The rows after each step; kind "ahead" (Adagrad) draws the batches through
    ember.torch.prefetching, one ahead."""
    module = ember.torch.EmbeddingBagCollection(client, configs(kind))
    dense = dense_layer()
    dense_optimizer = torch.optim.SGD(dense.parameters(), lr=0.1)
    everything = numpy.arange(VOCABULARY)
    history = []
    data = batches()
    if kind == "ahead":
        data = ember.torch.prefetching(data, {module: lambda batch: batch[0]})
    for jagged, targets in data:
        pooled = module(jagged)
        assert pooled.keys() == ["user", "genres", "item", "history"]
        loss = torch.nn.functional.mse_loss(dense(pooled.values()).squeeze(-1), targets)
        dense_optimizer.zero_grad()
        loss.backward()
        dense_optimizer.step()
        module.flush()
        history.append((loss.item(), {name: client.pull("{}_{}".format(name, kind), everything)
                                      for name in DIMS}))
    return history, module


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "ahead"])
def test_bags_follow_local_embedding_bags_step_for_step(cluster, kind):
    with cluster.client() as client:
        initial = {name: client.initial_rows("{}_{}".format(name, kind), numpy.arange(VOCABULARY))
                   for name in DIMS}
        expected = reference_history("sgd" if kind == "sgd" else "adagrad", initial)
        got, module = ember_history(client, kind)
        if kind == "ahead":  # every batch prefetched; what pushes changed since was pulled again
            assert module.stats["prefetched"] == len(expected)
            assert module.stats["prefetch_misses"] == 0
            assert 0 < module.stats["keys_prefetched"] < module.stats["keys_pulled"] + \
                module.stats["keys_prefetched"]
        else:
            assert module.stats["pulls"] == len(expected)
        assert module.stats["pushes"] == 3 * len(expected)  # one per table per step
        for step, ((loss, rows), (expected_loss, expected_rows)) in enumerate(zip(got, expected)):
            assert loss == pytest.approx(expected_loss, rel=1e-5), step
            for name in DIMS:
                numpy.testing.assert_allclose(rows[name], expected_rows[name], rtol=1e-5,
                                              atol=1e-6, err_msg="{} step {}".format(name, step))
        for name in DIMS:
            assert not numpy.allclose(got[-1][1][name], initial[name])  # every table trained


def test_one_pull_request_per_server_for_all_tables(cluster):
    with cluster.client() as client:
        module = ember.torch.EmbeddingBagCollection(client, configs("sgd"))
        jagged, _ = next(batches(seed=9))
        before = [server["pull_requests"] for server in client.stats()]
        with torch.no_grad():
            module(jagged)
        after = [server["pull_requests"] for server in client.stats()]
        assert [b - a for a, b in zip(before, after)] == [1, 1]
        # One Embedding per table asks each server three times.
        for name in DIMS:
            ember.torch.Embedding(client, name + "_sgd")(torch.arange(VOCABULARY))
        again = [server["pull_requests"] for server in client.stats()]
        assert [b - a for a, b in zip(after, again)] == [3, 3]


class FakeKeyedJaggedTensor:
    """What ember reads of TorchRec's KeyedJaggedTensor."""

    def __init__(self, keys, values, lengths):
        self._keys, self._values, self._lengths = keys, values, lengths

    def keys(self):
        return self._keys

    def values(self):
        return self._values

    def lengths(self):
        return self._lengths

    def weights_or_none(self):
        return None


def test_every_input_form_pools_the_same(cluster):
    with cluster.client() as client:
        module = ember.torch.EmbeddingBagCollection(
            client, [ember.torch.BagConfig("genre_sgd", "genres", "mean")])
        lists = {"genres": [[1, 2, 2], [], [7]], "other": [[1], [2], [3]]}
        values = torch.tensor([1, 2, 2, 7, 1, 2, 3])
        lengths = torch.tensor([3, 0, 1, 1, 1, 1])
        forms = [lists,
                 ember.torch.JaggedIds.from_lists(lists),
                 ember.torch.JaggedIds(["genres", "other"], values, lengths=lengths),
                 ember.torch.JaggedIds(["genres", "other"], values.numpy(),
                                       offsets=[0, 3, 3, 4, 5, 6, 7]),
                 FakeKeyedJaggedTensor(["genres", "other"], values, lengths)]
        with torch.no_grad():
            pooled = [module(form)["genres"] for form in forms]
        rows = torch.from_numpy(client.pull("genre_sgd", numpy.array([1, 2, 7])))
        expected = torch.stack([(rows[0] + 2 * rows[1]) / 3, torch.zeros(3), rows[2]])
        for got in pooled:
            torch.testing.assert_close(got, expected)


def test_bad_configs_and_inputs_are_refused_naming_what_is_wrong(cluster):
    with cluster.client() as client:
        BagConfig = ember.torch.BagConfig
        with pytest.raises(ember.NotFoundError, match="genre_sgdd"):
            ember.torch.EmbeddingBagCollection(client, [BagConfig("genre_sgdd", ["g"])])
        with pytest.raises(ember.InvalidArgumentError, match="pooling"):
            ember.torch.EmbeddingBagCollection(client, [BagConfig("genre_sgd", ["g"], "max")])
        with pytest.raises(ember.InvalidArgumentError, match="feature 'g'"):
            ember.torch.EmbeddingBagCollection(
                client, [BagConfig("genre_sgd", ["g"]), BagConfig("item_sgd", ["g"])])
        module = ember.torch.EmbeddingBagCollection(client, [BagConfig("genre_sgd", ["g"],
                                                                       "mean")])
        with pytest.raises(ember.InvalidArgumentError, match="no feature 'g'"):
            module({"h": [[1]]})
        with pytest.raises(ember.InvalidArgumentError, match="weighted features need pooling"):
            ember.torch.EmbeddingBagCollection(client, [BagConfig("genre_sgd", ["g"], "mean",
                                                                  weighted=True)])
        weighted = ember.torch.EmbeddingBagCollection(client, [BagConfig("genre_sgd", ["g"],
                                                                         weighted=True)])
        with pytest.raises(ember.InvalidArgumentError, match="the input has no weights"):
            weighted({"g": [[1]]})
        with pytest.raises(ember.InvalidArgumentError, match="add up to 3"):
            ember.torch.JaggedIds(["g"], [1, 2], lengths=[3])
        with pytest.raises(ember.InvalidArgumentError, match="either lengths or offsets"):
            ember.torch.JaggedIds(["g"], [1, 2])
        with pytest.raises(ember.InvalidArgumentError, match="is negative"):
            module({"g": [[1, -4]]})
        with pytest.raises(TypeError, match="KeyedJaggedTensor"):
            module(torch.tensor([1, 2]))


def test_state_dict_brings_back_every_table_of_the_collection(cluster, tmp_path):
    with cluster.client() as client:
        ember.torch.set_state_dir(client, tmp_path)
        module = ember.torch.EmbeddingBagCollection(client, configs("sgd"))
        data = list(batches(steps=3, seed=21))
        everything = numpy.arange(VOCABULARY)

        def train(jagged):
            module(jagged).values().sum().backward()
            module.flush()

        def rows():
            return {name: client.pull(name + "_sgd", everything) for name in DIMS}

        train(data[0][0])
        state = module.state_dict()
        at_cut = rows()
        train(data[1][0])
        assert not numpy.allclose(rows()["item"], at_cut["item"])
        module.load_state_dict(state)
        for name, expected in at_cut.items():
            numpy.testing.assert_array_equal(rows()[name], expected, err_msg=name)
