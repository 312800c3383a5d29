"""ember.torch.Embedding: step for step the same as a local nn.Embedding with the same optimizer,
with and without prefetch; on a CUDA device where there is one."""

import numpy
import pytest

from conftest import cluster_config, ember, table

torch = pytest.importorskip("torch")
import ember.torch  # noqa: E402  (needs torch)

DIM = 6
SGD = {"kind": "sgd", "learning_rate": 0.05}
ADAGRAD = {"kind": "adagrad", "learning_rate": 0.05, "initial_accumulator": 0.0,
           "epsilon": 1.0e-10}


@pytest.fixture(scope="module")
def cluster():
    tables = []
    for kind, optimizer in (("sgd", SGD), ("adagrad", ADAGRAD)):
        for copy in ("plain", "prefetched", "natural", "loader", "cuda"):
            tables.append(table("{}_{}".format(kind, copy), dim=DIM, optimizer=optimizer,
                                seed=7))
    with ember.LocalCluster(cluster_config(tables)) as local:
        yield local


class Model(torch.nn.Module):
    """A small scorer: embeddings of a (user, item) pair, a dense layer, a scalar."""

    def __init__(self, embedding):
        super().__init__()
        self.embedding = embedding
        torch.manual_seed(3)
        self.dense = torch.nn.Linear(2 * DIM, 1)

    def forward(self, pairs):
        rows = self.embedding(pairs)  # (batch, 2, dim)
        return self.dense(rows.reshape(len(pairs), -1)).squeeze(-1)


def batches(steps=12, batch=16, vocabulary=40, seed=5):
    # Small vocabulary: ids repeat within a batch and across consecutive batches.
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        pairs = torch.randint(0, vocabulary, (batch, 2), generator=generator)
        targets = torch.randn(batch, generator=generator)
        yield pairs, targets


def reference_step_rows(optimizer_kind, initial):
    """The rows of a pure-PyTorch run, after each step."""
    embedding = torch.nn.Embedding(len(initial), DIM)
    with torch.no_grad():
        embedding.weight.copy_(torch.from_numpy(initial))
    model = Model(embedding)
    if optimizer_kind == "sgd":
        rows_optimizer = torch.optim.SGD(embedding.parameters(), lr=SGD["learning_rate"])
    else:
        rows_optimizer = torch.optim.Adagrad(embedding.parameters(), lr=ADAGRAD["learning_rate"],
                                             initial_accumulator_value=0.0, eps=1e-10)
    dense_optimizer = torch.optim.SGD(model.dense.parameters(), lr=0.1)
    history = []
    for pairs, targets in batches():
        loss = torch.nn.functional.mse_loss(model(pairs), targets)
        rows_optimizer.zero_grad()
        dense_optimizer.zero_grad()
        loss.backward()
        rows_optimizer.step()
        dense_optimizer.step()
        history.append((loss.item(), embedding.weight.detach().numpy().copy()))
    return history


def ember_step_rows(client, table_name, prefetch=False, device=None):
    layer = ember.torch.Embedding(client, table_name, device=device)
    model = Model(layer).to(device or "cpu")
    dense_optimizer = torch.optim.SGD(model.dense.parameters(), lr=0.1)
    everything = torch.arange(40)
    data = list(batches())
    history = []
    if prefetch:
        layer.prefetch(data[0][0])
    for step, (pairs, targets) in enumerate(data):
        if prefetch and step + 1 < len(data):
            layer.prefetch(data[step + 1][0])
        loss = torch.nn.functional.mse_loss(model(pairs.to(device or "cpu")),
                                            targets.to(device or "cpu"))
        dense_optimizer.zero_grad()
        loss.backward()
        dense_optimizer.step()
        layer.flush()
        history.append((loss.item(), client.pull(table_name, everything.numpy())))
    return history, layer


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_rows_follow_a_local_embedding_step_for_step(cluster, kind):
    with cluster.client() as client:
        initial = client.initial_rows("{}_plain".format(kind), numpy.arange(40))
        expected = reference_step_rows(kind, initial)
        got, layer = ember_step_rows(client, "{}_plain".format(kind))
        assert layer.stats["pushes"] == len(expected)
        for step, ((loss, rows), (expected_loss, expected_rows)) in enumerate(zip(got, expected)):
            assert loss == pytest.approx(expected_loss, rel=1e-5), step
            numpy.testing.assert_allclose(rows, expected_rows, rtol=1e-5, atol=1e-6,
                                          err_msg="step {}".format(step))
        assert not numpy.allclose(got[-1][1], initial)  # it did train


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_prefetch_changes_nothing_but_when_rows_arrive(cluster, kind):
    with cluster.client() as client:
        reference = reference_step_rows(kind, client.initial_rows("{}_prefetched".format(kind),
                                                                  numpy.arange(40)))
        got, layer = ember_step_rows(client, "{}_prefetched".format(kind), prefetch=True)
        assert layer.stats["prefetched"] == len(reference)
        assert layer.stats["prefetch_misses"] == 0
        assert layer.stats["keys_prefetched"] > 0  # some rows did come ahead of time
        for step, ((loss, rows), (expected_loss, expected_rows)) in enumerate(zip(got,
                                                                                  reference)):
            assert loss == pytest.approx(expected_loss, rel=1e-5), step
            numpy.testing.assert_allclose(rows, expected_rows, rtol=1e-5, atol=1e-6,
                                          err_msg="step {}".format(step))


def train_with_look_ahead(client, table_name, order):
    """The rows after each step when the next batch is prefetched in `order`: "natural" calls
    prefetch(next) before forward(current) (no batch is prefetched before the loop), "loader"
    draws the batches through ember.torch.prefetching two ahead."""
    layer = ember.torch.Embedding(client, table_name)
    model = Model(layer)
    dense_optimizer = torch.optim.SGD(model.dense.parameters(), lr=0.1)
    data = list(batches())
    if order == "loader":
        data = ember.torch.prefetching(data, {layer: lambda batch: batch[0]}, depth=2)
    history = []
    for step, (pairs, targets) in enumerate(data):
        if order == "natural" and step + 1 < len(data):
            layer.prefetch(data[step + 1][0])
        loss = torch.nn.functional.mse_loss(model(pairs), targets)
        dense_optimizer.zero_grad()
        loss.backward()
        dense_optimizer.step()
        layer.flush()
        history.append((loss.item(), client.pull(table_name, numpy.arange(40))))
    return history, layer


@pytest.mark.parametrize("order", ["natural", "loader"])
def test_look_ahead_in_any_order_stays_exact(cluster, order):
    name = "adagrad_" + order
    with cluster.client() as client:
        reference = reference_step_rows("adagrad", client.initial_rows(name, numpy.arange(40)))
        got, layer = train_with_look_ahead(client, name, order)
        steps = len(reference)
        # Natural order: every batch but the first was prefetched; the loader: all of them.
        assert layer.stats["prefetched"] == (steps - 1 if order == "natural" else steps)
        assert layer.stats["prefetch_misses"] == (1 if order == "natural" else 0)
        assert layer.stats["keys_prefetched"] > 0
        for step, ((loss, rows), (expected_loss, expected_rows)) in enumerate(zip(got,
                                                                                  reference)):
            assert loss == pytest.approx(expected_loss, rel=1e-5), step
            numpy.testing.assert_allclose(rows, expected_rows, rtol=1e-5, atol=1e-6,
                                          err_msg="step {}".format(step))


def test_prefetch_in_another_order_falls_back_to_pulls(cluster):
    with cluster.client() as client:
        layer = ember.torch.Embedding(client, "sgd_plain")
        layer.prefetch(torch.tensor([1, 2, 3]))
        with torch.no_grad():
            rows = layer(torch.tensor([[4, 5]]))
        assert rows.shape == (1, 2, DIM)
        assert layer.stats["prefetch_misses"] == 1
        numpy.testing.assert_array_equal(rows[0].numpy(), client.pull("sgd_plain", [4, 5]))


def test_duplicate_ids_push_one_summed_gradient(cluster):
    with cluster.client() as client:
        layer = ember.torch.Embedding(client, "sgd_plain")
        keys = numpy.array([1000, 1001], dtype=numpy.uint64)
        before = client.pull("sgd_plain", keys)
        out = layer(torch.tensor([1000, 1000, 1000, 1001]))
        out.sum().backward()
        layer.flush()
        after = client.pull("sgd_plain", keys)
        numpy.testing.assert_allclose(after[0], before[0] - 3 * 0.05, rtol=1e-6)
        numpy.testing.assert_allclose(after[1], before[1] - 1 * 0.05, rtol=1e-6)
        assert layer.stats["pushes"] == 1


def test_no_grad_forward_pushes_nothing(cluster):
    with cluster.client() as client:
        layer = ember.torch.Embedding(client, "sgd_plain")
        with torch.no_grad():
            layer(torch.tensor([2000, 2001]))
        assert layer.stats["pushes"] == 0


def test_bad_ids_and_tables_raise(cluster):
    with cluster.client() as client:
        # The same exception as the client's for the same cause.
        with pytest.raises(ember.NotFoundError, match="unknown table 'nope'"):
            ember.torch.Embedding(client, "nope")
        with pytest.raises(ember.NotFoundError, match="unknown table 'nope'"):
            client.pull("nope", [1])
        layer = ember.torch.Embedding(client, "sgd_plain")
        with pytest.raises(TypeError, match="integer"):
            layer(torch.tensor([1.5]))
        with pytest.raises(TypeError, match="integer"):
            layer(["a", "b"])
        # A negative id is refused, not read as a key far away.
        with pytest.raises(ember.InvalidArgumentError, match="id -1 at position 2 is negative"):
            layer(torch.tensor([[4, 5], [-1, 6]]))
        with pytest.raises(ValueError, match="negative"):
            layer.prefetch(torch.tensor([-3]))
        # Unless asked for: then int64 ids are keys' bit patterns, -1 is key 2^64 - 1.
        unsigned = ember.torch.Embedding(client, "sgd_plain", unsigned_ids=True)
        with torch.no_grad():
            numpy.testing.assert_array_equal(unsigned(torch.tensor([-1])).numpy(),
                                             client.pull("sgd_plain", [2**64 - 1]))


def test_numpy_arrays_and_lists_are_ids_too(cluster):
    with cluster.client() as client:
        layer = ember.torch.Embedding(client, "sgd_plain")
        with torch.no_grad():
            expected = layer(torch.tensor([[3000, 3001], [3002, 3000]])).numpy()
            numpy.testing.assert_array_equal(
                layer(numpy.array([[3000, 3001], [3002, 3000]], dtype=numpy.int64)).numpy(),
                expected)
            numpy.testing.assert_array_equal(
                layer(numpy.array([[3000, 3001], [3002, 3000]], dtype=numpy.uint32)).numpy(),
                expected)
            numpy.testing.assert_array_equal(layer([[3000, 3001], [3002, 3000]]).numpy(),
                                             expected)


def test_the_padding_id_reads_zeros_and_is_never_pushed(cluster):
    with cluster.client() as client:
        layer = ember.torch.Embedding(client, "sgd_plain", padding_idx=-1)
        key_of_minus_one = client.lookup("sgd_plain", [2**64 - 1])
        reference = torch.nn.Embedding(2, DIM, padding_idx=1)  # rows of 4000 and of the padding
        with torch.no_grad():
            reference.weight[0] = torch.from_numpy(client.initial_rows("sgd_plain", [4000])[0])
        ids = torch.tensor([[4000, -1, 4000], [-1, -1, 4000]])
        rows = layer(ids)
        expected = reference(torch.where(ids == -1, 1, 0))
        numpy.testing.assert_array_equal(rows.detach().numpy(), expected.detach().numpy())
        rows.sum().backward()
        expected.sum().backward()
        layer.flush()
        # 4000's gradient is the sum over its three positions; nothing reached key 2^64 - 1.
        numpy.testing.assert_allclose(
            client.pull("sgd_plain", [4000])[0],
            (reference.weight[0] - SGD["learning_rate"] * reference.weight.grad[0]).detach(),
            rtol=1e-6)
        numpy.testing.assert_array_equal(client.lookup("sgd_plain", [2**64 - 1]),
                                         key_of_minus_one)
        with torch.no_grad():  # a batch of padding alone
            assert not layer(torch.tensor([-1, -1])).any()
        layer(torch.tensor([-1])).sum().backward()
        layer.flush()
        assert layer.stats["pushes"] == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_rows_on_a_cuda_device_train_the_same(cluster):
    with cluster.client() as client:
        reference = reference_step_rows("sgd", client.initial_rows("sgd_cuda", numpy.arange(40)))
        got, _ = ember_step_rows(client, "sgd_cuda", prefetch=True, device="cuda")
        numpy.testing.assert_allclose(got[-1][1], reference[-1][1], rtol=1e-4, atol=1e-5)
