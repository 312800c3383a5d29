"""State dicts of ember.torch modules refer to cuts of the servers' rows; load_state_dict restores
them; ember.torch.save/load keep dense and server state together across server counts."""

import copy
import os

import numpy
import pytest

from conftest import cluster_config, ember, table

torch = pytest.importorskip("torch")
import ember.torch  # noqa: E402  (needs torch)

DIM = 4
PARTITIONS = 16
VOCABULARY = 30
KEYS = numpy.arange(VOCABULARY, dtype=numpy.uint64)
TABLES = [
    table("user", dim=DIM, seed=11, optimizer={"kind": "sgd", "learning_rate": 0.1}),
    table("item", dim=DIM, seed=12,
          optimizer={"kind": "adagrad", "learning_rate": 0.05, "initial_accumulator": 0.0,
                     "epsilon": 1.0e-10}),
]


def config(servers):
    return cluster_config(TABLES, servers=servers, partitions=PARTITIONS)


@pytest.fixture(scope="module")
def cluster():
    with ember.LocalCluster(config(servers=2)) as local:
        yield local


@pytest.fixture
def client(cluster, tmp_path):
    with cluster.client() as connected:
        ember.torch.set_state_dir(connected, tmp_path / "cuts")
        yield connected


class TwoTower(torch.nn.Module):
    """Two ember layers on one client (SGD and Adagrad tables) and a dense scorer."""

    def __init__(self, client, seed=3):
        super().__init__()
        self.users = ember.torch.Embedding(client, "user")
        self.items = ember.torch.Embedding(client, "item")
        torch.manual_seed(seed)
        self.dense = torch.nn.Linear(2 * DIM, 1)

    def forward(self, pairs):
        rows = torch.cat([self.users(pairs[:, 0]), self.items(pairs[:, 1])], dim=1)
        return self.dense(rows).squeeze(-1)


def batches(steps, seed, batch=8):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        yield (torch.randint(0, VOCABULARY, (batch, 2), generator=generator),
               torch.randn(batch, generator=generator))


def train(model, optimizer, steps, seed, flush=True):
    """Trains `steps` steps (waiting for the last pushes if `flush`); returns the losses."""
    losses = []
    for pairs, targets in batches(steps, seed):
        loss = torch.nn.functional.mse_loss(model(pairs), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    if flush:
        model.users.flush()
        model.items.flush()
    return losses


def server_rows(client):
    """The rows of every key the tests train, per table, as the servers hold them."""
    return {name: client.lookup(name, KEYS) for name in ("user", "item")}


def dense_copy(model):
    return {name: tensor.detach().clone() for name, tensor in model.dense.state_dict().items()}


def assert_rows_equal(actual, expected):
    for name in expected:
        numpy.testing.assert_array_equal(actual[name], expected[name], err_msg=name)


def assert_dense_equal(model, expected):
    for name, tensor in model.dense.state_dict().items():
        assert torch.equal(tensor, expected[name]), name


def cut_folders(client):
    folder = ember.torch.state_dir(client)
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_state_dict_refers_to_one_cut_the_servers_wrote(client):
    model = TwoTower(client)
    train(model, torch.optim.SGD(model.dense.parameters(), lr=0.1), steps=2, seed=1)
    state = model.state_dict()
    users, items = state["users._extra_state"], state["items._extra_state"]
    assert users["tables"] == ["user"] and items["tables"] == ["item"]
    assert users["ember_cut"] == items["ember_cut"]  # one cut for both layers
    assert cut_folders(client) == [os.path.basename(users["ember_cut"])]
    assert os.path.dirname(users["ember_cut"]) == ember.torch.state_dir(client)
    assert os.path.isfile(os.path.join(users["ember_cut"], "MANIFEST"))
    assert set(state) == {"users._extra_state", "items._extra_state", "dense.weight",
                          "dense.bias"}
    model.state_dict()  # a second call writes a second cut
    assert len(cut_folders(client)) == 2


def record_calls(events, owner, name, label):
    """Has owner.name (a method) note `label` in `events` on each call; undone by del."""
    method = getattr(owner, name)

    def noted(*args):
        events.append(label)
        return method(*args)
    setattr(owner, name, noted)


def test_pushes_in_flight_are_waited_for_before_a_cut_or_a_restore(client):
    model = TwoTower(client)
    events = []
    for layer in ("users", "items"):
        record_calls(events, getattr(model, layer), "flush", "flush " + layer)
    record_calls(events, client, "checkpoint", "checkpoint")
    record_calls(events, client, "restore", "restore")
    state = model.state_dict()
    assert sorted(events[:2]) == ["flush items", "flush users"] and events[2:] == ["checkpoint"]
    events.clear()
    model.load_state_dict(state)
    assert sorted(events[:2]) == ["flush items", "flush users"] and events[2:] == ["restore"]
    del client.checkpoint, client.restore


def test_load_state_dict_restores_the_rows_at_the_cut_once(client):
    model = TwoTower(client)
    optimizer = torch.optim.SGD(model.dense.parameters(), lr=0.1)
    train(model, optimizer, steps=3, seed=2, flush=False)  # state_dict() waits for the pushes
    state = copy.deepcopy(model.state_dict())
    at_cut = server_rows(client)
    train(model, optimizer, steps=3, seed=3)
    assert not numpy.array_equal(server_rows(client)["item"], at_cut["item"])
    model.items.prefetch(torch.arange(VOCABULARY))  # rows read before the restore
    restores = []
    record_calls(restores, client, "restore", "restore")
    model.load_state_dict(state)
    del client.restore
    assert restores == ["restore"]  # one restore for the two layers
    assert_rows_equal(server_rows(client), at_cut)
    assert_dense_equal(model, {"weight": state["dense.weight"], "bias": state["dense.bias"]})
    with torch.no_grad():  # the prefetch was dropped: forward reads the restored rows
        numpy.testing.assert_array_equal(model.items(torch.arange(VOCABULARY)).numpy(),
                                         at_cut["item"])


def test_torch_save_and_load_of_the_whole_state_dict(client, tmp_path):
    model = TwoTower(client)
    optimizer = torch.optim.SGD(model.dense.parameters(), lr=0.1)
    train(model, optimizer, steps=3, seed=4)
    torch.save(model.state_dict(), tmp_path / "model.pt")
    at_save, dense_at_save = server_rows(client), dense_copy(model)
    train(model, optimizer, steps=3, seed=5)
    assert not torch.equal(model.dense.weight.detach(), dense_at_save["weight"])
    model.load_state_dict(torch.load(tmp_path / "model.pt"))
    assert_rows_equal(server_rows(client), at_save)
    assert_dense_equal(model, dense_at_save)


def test_strict_loading_wants_the_cut_reference(client):
    model = TwoTower(client)
    train(model, torch.optim.SGD(model.dense.parameters(), lr=0.1), steps=2, seed=6)
    state = model.state_dict()
    before = server_rows(client)
    dense_only = {key: value for key, value in state.items() if key.startswith("dense.")}
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: '
                                           r'"users._extra_state", "items._extra_state"'):
        model.load_state_dict(dense_only)
    result = model.load_state_dict(dense_only, strict=False)
    assert result.missing_keys == ["users._extra_state", "items._extra_state"]
    assert_rows_equal(server_rows(client), before)


def test_a_reference_for_another_table_or_a_removed_cut_is_refused(client, tmp_path):
    users = ember.torch.Embedding(client, "user")
    items = ember.torch.Embedding(client, "item")
    entry = users.state_dict()["_extra_state"]
    with pytest.raises(ember.InvalidArgumentError, match="cut for table.s. user, not to the "
                                                         "module's item"):
        items.load_state_dict({"_extra_state": entry})
    with pytest.raises(ember.InvalidArgumentError, match="not a reference to a cut"):
        users.load_state_dict({"_extra_state": "somewhere"})
    gone = dict(entry, ember_cut=str(tmp_path / "no-such-cut"))
    with pytest.raises(ember.NotFoundError, match="no-such-cut, which is not there"):
        users.load_state_dict({"_extra_state": gone})


def test_state_dict_without_a_state_dir_names_what_to_set(cluster):
    with cluster.client() as unset:
        model = TwoTower(unset)
        with pytest.raises(ember.EmberError, match=r"ember.torch.set_state_dir\(client, folder\)"):
            model.state_dict()
        assert ember.torch.state_dir(unset) is None


def test_save_and_load_into_another_server_count(cluster, tmp_path):
    """Saved from 2 servers, loaded into 3: the rows, the server-side optimizer state, the dense
    weights and Adam's state all come back, so training goes on as if it never stopped."""
    with cluster.client() as client:  # no state dir: save() puts the cut in its own folder
        model = TwoTower(client)
        optimizer = torch.optim.Adam(model.dense.parameters(), lr=0.01)
        train(model, optimizer, steps=3, seed=7)
        saved = ember.torch.save(tmp_path / "save", model, optimizer)
        assert sorted(os.listdir(saved)) == ["dense.pt", "rows"]
        at_save, dense_at_save = server_rows(client), dense_copy(model)
        losses = train(model, optimizer, steps=3, seed=8)
        after, dense_after = server_rows(client), dense_copy(model)
    moved = tmp_path / "moved"
    os.rename(saved, moved)  # the cut is looked up inside the folder
    with ember.LocalCluster(config(servers=3)) as three:
        with three.client() as client:
            assert len(client.status()["servers"]) == 3
            model = TwoTower(client, seed=99)
            optimizer = torch.optim.Adam(model.dense.parameters(), lr=0.01)
            ember.torch.load(moved, model, optimizer)
            assert_rows_equal(server_rows(client), at_save)
            assert_dense_equal(model, dense_at_save)
            assert train(model, optimizer, steps=3, seed=8) == losses
            assert_rows_equal(server_rows(client), after)
            assert_dense_equal(model, dense_after)


def test_save_and_load_refuse_what_they_cannot_do(client, tmp_path):
    model = TwoTower(client)
    saved = ember.torch.save(tmp_path / "save", model)
    with pytest.raises(FileExistsError, match="is not empty"):
        ember.torch.save(saved, model)
    with pytest.raises(ember.InvalidArgumentError, match="saved without an optimizer"):
        ember.torch.load(saved, model, torch.optim.SGD(model.dense.parameters(), lr=0.1))
    with pytest.raises(FileNotFoundError, match="has no dense.pt"):
        ember.torch.load(tmp_path / "elsewhere", model)
