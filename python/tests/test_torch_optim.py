"""ember.torch.ServerOptimizer against plain torch: learning-rate schedules, gradient accumulation,
loss scaling (GradScaler's protocol) with inf/NaN steps skipped, gradient clipping, zero_grad
between forward and backward, its state_dict, and a bag collection under it."""

import itertools

import numpy
import pytest

from conftest import cluster_config, ember, table

torch = pytest.importorskip("torch")
import ember.torch  # noqa: E402  (needs torch)

DIM = 4
VOCABULARY = 24
SGD = {"kind": "sgd", "learning_rate": 0.1}
ADAGRAD = {"kind": "adagrad", "learning_rate": 0.1, "initial_accumulator": 0.0,
           "epsilon": 1.0e-10}
CASES = ["schedule", "accumulate", "scale", "clip", "late_zero_grad", "skip", "bags", "state"]


@pytest.fixture(scope="module")
def cluster():
    tables = [table("{}_{}".format(kind, case), dim=DIM, optimizer=optimizer, seed=5)
              for kind, optimizer in (("sgd", SGD), ("adagrad", ADAGRAD)) for case in CASES]
    with ember.LocalCluster(cluster_config(tables)) as local:
        yield local


@pytest.fixture
def client(cluster):
    with cluster.client() as connected:
        yield connected


def batches(steps, seed=3, batch=6):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randint(0, VOCABULARY, (batch, 2), generator=generator),
             torch.randn(batch, generator=generator)) for _ in range(steps)]


class Scorer(torch.nn.Module):
    def __init__(self, embedding):
        super().__init__()
        self.embedding = embedding
        torch.manual_seed(7)
        self.dense = torch.nn.Linear(2 * DIM, 1)

    def forward(self, pairs):
        return self.dense(self.embedding(pairs).reshape(len(pairs), -1)).squeeze(-1)


def torch_rows_optimizer(kind, parameters):
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=SGD["learning_rate"])
    return torch.optim.Adagrad(parameters, lr=ADAGRAD["learning_rate"],
                               initial_accumulator_value=0.0, eps=1e-10)


class Run:
    """One training run, of plain torch (`client` None: a local nn.Embedding) or of ember (an
    Embedding under a ServerOptimizer), driven the same way by each test."""

    def __init__(self, kind, name, client=None):
        self.client, self.table = client, "{}_{}".format(kind, name)
        if client is None:
            self.embedding = torch.nn.Embedding(VOCABULARY, DIM)
            with torch.no_grad():
                self.embedding.weight.copy_(torch.from_numpy(self.initial(kind, name)))
            self.rows_optimizer = torch_rows_optimizer(kind, self.embedding.parameters())
        else:
            self.embedding = ember.torch.Embedding(client, self.table)
            self.rows_optimizer = ember.torch.ServerOptimizer(self.embedding)
        self.model = Scorer(self.embedding)
        self.dense_optimizer = torch.optim.SGD(self.model.dense.parameters(), lr=0.1)

    _initial = {}

    @classmethod
    def initial(cls, kind, name):
        return cls._initial[(kind, name)]

    def loss(self, pairs, targets):
        return torch.nn.functional.mse_loss(self.model(pairs), targets)

    def zero_grad(self):
        self.rows_optimizer.zero_grad()
        self.dense_optimizer.zero_grad()

    def step(self):
        self.rows_optimizer.step()
        self.dense_optimizer.step()

    def rows_gradients(self):
        """What clipping and unscaling see of the rows' gradients."""
        if self.client is None:
            return [self.embedding.weight]
        return self.rows_optimizer.gradient_tensors()

    def rows(self):
        if self.client is None:
            return self.embedding.weight.detach().numpy().copy()
        self.embedding.flush()
        return self.client.pull(self.table, numpy.arange(VOCABULARY))


def both_runs(client, kind, name):
    Run._initial[(kind, name)] = client.initial_rows("{}_{}".format(kind, name),
                                                     numpy.arange(VOCABULARY))
    return Run(kind, name), Run(kind, name, client)


def assert_same_rows(reference, ember_run, step):
    numpy.testing.assert_allclose(ember_run.rows(), reference.rows(), rtol=1e-5, atol=1e-6,
                                  err_msg="step {}".format(step))


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_a_learning_rate_schedule_reaches_the_servers(client, kind):
    runs = both_runs(client, kind, "schedule")
    schedulers = [torch.optim.lr_scheduler.StepLR(run.rows_optimizer, step_size=2, gamma=0.3)
                  for run in runs]
    for step, (pairs, targets) in enumerate(batches(6)):
        for run, scheduler in zip(runs, schedulers):
            run.zero_grad()
            run.loss(pairs, targets).backward()
            run.step()
            scheduler.step()
        assert_same_rows(*runs, step)
    assert runs[1].rows_optimizer.param_groups[0]["lr"] == pytest.approx(0.1 * 0.3 ** 3)


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_accumulated_micro_batches_make_one_server_step(client, kind):
    runs = both_runs(client, kind, "accumulate")
    data = batches(9)
    for step in range(3):
        for run in runs:
            run.zero_grad()
            for pairs, targets in data[3 * step:3 * step + 3]:
                (run.loss(pairs, targets) / 3).backward()
            run.step()
        assert_same_rows(*runs, step)
    assert runs[1].rows_optimizer.stats["pushes"] == 3  # one per step, not per micro-batch


def unscale_and_check(optimizers, scale):
    """GradScaler's unscale_ as it treats an optimizer: every gradient its param groups reach is
    divided by the scale; True when one is not finite (the step is to be skipped)."""
    found_inf = False
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            for parameter in group["params"]:
                if parameter.grad is not None:
                    parameter.grad.div_(scale)
                    found_inf |= not bool(torch.isfinite(parameter.grad).all())
    return found_inf


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_a_scaled_loss_is_unscaled_before_the_push(client, kind):
    runs = both_runs(client, kind, "scale")
    for step, (pairs, targets) in enumerate(batches(4)):
        for run in runs:
            run.zero_grad()
            (run.loss(pairs, targets) * 1024).backward()
            assert not unscale_and_check([run.rows_optimizer, run.dense_optimizer], 1024)
            run.step()
        assert_same_rows(*runs, step)


def test_a_step_with_a_non_finite_gradient_is_skipped_and_nothing_is_pushed(client):
    reference, run = both_runs(client, "sgd", "skip")
    pairs, targets = batches(1)[0]
    before = run.rows()
    run.zero_grad()
    (run.loss(pairs, targets) * float("inf")).backward()
    assert unscale_and_check([run.rows_optimizer, run.dense_optimizer], 1024)
    # GradScaler.step() does not call step() then; the next zero_grad() drops the gradients.
    run.zero_grad()
    numpy.testing.assert_array_equal(run.rows(), before)
    run.loss(pairs, targets).backward()
    run.step()
    reference.zero_grad()
    reference.loss(pairs, targets).backward()
    reference.step()
    assert_same_rows(reference, run, 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="torch's GradScaler needs CUDA here")
def test_gradscaler_skips_the_step_of_an_inf_loss_on_cuda(client):
    embedding = ember.torch.Embedding(client, "adagrad_skip", device="cuda")
    optimizer = ember.torch.ServerOptimizer(embedding)
    scaler = torch.cuda.amp.GradScaler(init_scale=1024.0)
    ids = torch.arange(5)
    before = client.pull("adagrad_skip", ids.numpy())
    (embedding(ids).sum() * float("inf")).backward()
    scaler.step(optimizer)
    scaler.update()
    embedding.flush()
    numpy.testing.assert_array_equal(client.pull("adagrad_skip", ids.numpy()), before)
    optimizer.zero_grad()
    scaler.scale(embedding(ids).sum()).backward()
    scaler.step(optimizer)
    embedding.flush()
    assert not numpy.allclose(client.pull("adagrad_skip", ids.numpy()), before)


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_clipping_scales_the_rows_gradients_as_torch_does(client, kind):
    runs = both_runs(client, kind, "clip")
    norms = []
    for step, (pairs, targets) in enumerate(batches(4)):
        for run in runs:
            run.zero_grad()
            (run.loss(pairs, targets) * 10).backward()
            everything = itertools.chain(run.model.dense.parameters(), run.rows_gradients())
            norms.append(float(torch.nn.utils.clip_grad_norm_(everything, max_norm=0.5)))
            run.step()
        assert norms[-1] == pytest.approx(norms[-2], rel=1e-5)
        assert norms[-1] > 0.5  # clipping did act
        assert_same_rows(*runs, step)


def test_zero_grad_between_forward_and_backward_loses_nothing(client):
    runs = both_runs(client, "adagrad", "late_zero_grad")
    for step, (pairs, targets) in enumerate(batches(3)):
        for run in runs:
            loss = run.loss(pairs, targets)
            run.zero_grad()
            loss.backward()
            run.step()
        assert_same_rows(*runs, step)


def test_a_bag_collection_under_the_optimizer_follows_embedding_bag(client):
    name = "sgd_bags"
    initial = torch.from_numpy(client.initial_rows(name, numpy.arange(VOCABULARY)))
    weight = torch.nn.Parameter(initial.clone())
    reference = torch.optim.SGD([weight], lr=SGD["learning_rate"])
    bags = ember.torch.EmbeddingBagCollection(client, [ember.torch.BagConfig(name, ["f"])])
    optimizer = ember.torch.ServerOptimizer(bags)
    schedulers = [torch.optim.lr_scheduler.StepLR(o, 1, gamma=0.5) for o in (reference, optimizer)]
    features = {"f": [[1, 2, 2], [3], [], [1, 5]]}
    jagged = ember.torch.JaggedIds.from_lists(features)
    (ids, _), offsets, _ = jagged.feature("f")
    for step in range(3):
        for micro in range(2):  # accumulated
            torch.nn.functional.embedding_bag(ids, weight, offsets, mode="sum").pow(2).sum().backward()
            bags(jagged).values().pow(2).sum().backward()
        reference.step()
        optimizer.step()
        reference.zero_grad()
        optimizer.zero_grad()
        for scheduler in schedulers:
            scheduler.step()
        bags.flush()
        numpy.testing.assert_allclose(client.pull(name, numpy.arange(VOCABULARY)),
                                      weight.detach().numpy(), rtol=1e-5, atol=1e-6,
                                      err_msg="step {}".format(step))
    assert bags.stats["pushes"] == 3


def test_state_dict_keeps_the_schedule_by_table(client):
    embedding = ember.torch.Embedding(client, "sgd_state")
    optimizer = ember.torch.ServerOptimizer(embedding, lr=0.5)
    assert optimizer.param_groups[0]["lr"] == 0.5
    assert optimizer.param_groups[0]["optimizer"] == "sgd"
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    optimizer.step()  # nothing to push: no forward yet
    scheduler.step()
    saved = optimizer.state_dict()
    other = ember.torch.ServerOptimizer(ember.torch.Embedding(client, "sgd_state"))
    other.load_state_dict(saved)
    assert other.param_groups[0]["lr"] == pytest.approx(0.25)
    with pytest.raises(ember.InvalidArgumentError, match="adagrad_state"):
        ember.torch.ServerOptimizer(ember.torch.Embedding(client, "adagrad_state")).load_state_dict(
            saved)


def test_what_the_optimizer_cannot_serve_is_refused(client, cluster):
    with pytest.raises(ember.InvalidArgumentError, match="no ember module"):
        ember.torch.ServerOptimizer(torch.nn.Linear(2, 2))
    embedding = ember.torch.Embedding(client, "sgd_state")
    ember.torch.ServerOptimizer(embedding)
    with pytest.raises(ember.InvalidArgumentError, match="already has one"):
        ember.torch.ServerOptimizer(embedding)
    with cluster.client() as another:
        two = [ember.torch.Embedding(client, "sgd_state"),
               ember.torch.Embedding(another, "sgd_state")]
        with pytest.raises(ember.InvalidArgumentError, match="2 clients"):
            ember.torch.ServerOptimizer(two)
