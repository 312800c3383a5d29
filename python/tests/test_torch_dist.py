"""ember.torch.TrainingRun under torchrun: two ranks in bsp end with the rows of one process
training on the whole batch (the servers combine the ranks' pushes of a step by their mean), ssp
runs to the end with every update applied once, and the scheduler's checkpoint cuts hold every
rank's file. Every torchrun is bounded and its process group killed if it overruns."""

import json
import os
import pathlib

import numpy
import pytest

from conftest import cluster_config, ember, table

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed.run")
import ember.launch  # noqa: E402
import ember.torch  # noqa: E402  (needs torch)
import torchrun_worker  # noqa: E402

WORKER = pathlib.Path(__file__).with_name("torchrun_worker.py")
LEARNING_RATE = 0.1
STEPS = 6


def torchrun(tmp_path, config, steps, loss, ranks=2, timeout=240):
    """Runs the worker on `ranks` ranks; their results, by rank."""
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    out = tmp_path / "out"
    out.mkdir()
    argv = ember.launch.torchrun_argv(WORKER, [config_path, out, steps, loss], ranks=ranks)
    # The ranks import the ember package this test imported, wherever they run.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(pathlib.Path(ember.__file__).resolve().parents[1]), str(WORKER.parent)]))
    code = ember.launch.run_bounded(argv, tmp_path / "torchrun.log", timeout, env=env,
                                    cwd=tmp_path)
    if code != 0:
        pytest.fail("torchrun ended with {}:\n{}".format(
            code, (tmp_path / "torchrun.log").read_text()[-4000:]))
    return [(json.loads((out / "rank-{}.json".format(r)).read_text()),
             numpy.load(out / "rows-{}.npy".format(r))) for r in range(ranks)]


def config_of(mode, optimizer, **cluster):
    config = cluster_config([table("rows", dim=3, seed=9, optimizer=optimizer)], servers=2,
                            partitions=16)
    config["train"] = {"mode": mode}
    config["cluster"].update(cluster)
    return config


def one_process_rows(initial, optimizer_kind, steps):
    """One process on the whole batch of every step, with torch's own optimizer."""
    weights = torch.nn.Embedding(len(initial), initial.shape[1])
    with torch.no_grad():
        weights.weight.copy_(torch.from_numpy(initial))
    if optimizer_kind == "sgd":
        optimizer = torch.optim.SGD(weights.parameters(), lr=LEARNING_RATE)
    else:
        optimizer = torch.optim.Adagrad(weights.parameters(), lr=LEARNING_RATE,
                                        initial_accumulator_value=0.0, eps=1e-10)
    for step in range(steps):
        ids, targets = torchrun_worker.batch(step)
        loss = torch.nn.functional.mse_loss(weights(ids).sum(dim=(1, 2)), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return weights.weight.detach().numpy()


@pytest.mark.parametrize("kind", ["sgd", "adagrad"])
def test_two_ranks_in_bsp_train_as_one_process_on_the_whole_batch(tmp_path, kind):
    optimizer = {"kind": kind, "learning_rate": LEARNING_RATE}
    if kind == "adagrad":
        optimizer.update({"initial_accumulator": 0.0, "epsilon": 1.0e-10})
    results = torchrun(tmp_path, config_of("bsp", optimizer), STEPS, "mse")
    for info, _ in results:
        assert info["sync"]["mode"] == "bsp" and info["sync"]["trainers"] == 2
        assert info["clock"] == STEPS
    rows = results[0][1]
    numpy.testing.assert_array_equal(results[1][1], rows)
    with ember.LocalCluster(config_of("asp", optimizer)) as local, local.client() as client:
        initial = client.initial_rows("rows", numpy.arange(torchrun_worker.VOCABULARY))
    expected = one_process_rows(initial, kind, STEPS)
    assert not numpy.allclose(rows, initial)
    numpy.testing.assert_allclose(rows, expected, rtol=1e-5, atol=1e-6)


def test_two_ranks_in_ssp_apply_every_update_once(tmp_path):
    optimizer = {"kind": "sgd", "learning_rate": LEARNING_RATE}
    config = config_of("ssp", optimizer)
    config["train"]["staleness"] = 1
    results = torchrun(tmp_path, config, STEPS, "linear")
    assert [info["clock"] for info, _ in results] == [STEPS, STEPS]
    assert results[0][0]["sync"]["staleness"] == 1
    with ember.LocalCluster(config_of("asp", optimizer)) as local, local.client() as client:
        initial = client.initial_rows("rows", numpy.arange(torchrun_worker.VOCABULARY))
    # loss = mean over a rank's share of (row sums): each id's gradient is 1 / share per use.
    uses = numpy.zeros(torchrun_worker.VOCABULARY)
    for step in range(STEPS):
        ids, _ = torchrun_worker.batch(step)
        numpy.add.at(uses, ids.reshape(-1).numpy(), 1.0)
    share = torchrun_worker.BATCH // 2
    expected = initial - LEARNING_RATE * (uses / share)[:, None]
    numpy.testing.assert_allclose(results[0][1], expected, rtol=1e-5, atol=1e-6)


def test_checkpoint_cuts_hold_every_ranks_file(tmp_path):
    optimizer = {"kind": "sgd", "learning_rate": LEARNING_RATE}
    config = config_of("bsp", optimizer, checkpoint_every=2, checkpoint_keep=2,
                       checkpoint_dir=str(tmp_path / "cuts"))
    results = torchrun(tmp_path, config, STEPS, "mse")
    cuts = results[0][0]["cuts"]
    assert cuts == results[1][0]["cuts"]
    assert [int(pathlib.Path(cut).name.split("-")[1]) for cut in cuts] == [2, 4, 6]
    assert not pathlib.Path(cuts[0]).exists()  # the newest two are kept
    for cut in cuts[1:]:
        assert (pathlib.Path(cut) / "MANIFEST").exists(), sorted(os.listdir(cut))
        for rank in range(2):
            saved = torch.load(pathlib.Path(cut) / "trainer-{}.bin".format(rank))
            assert saved["rank"] == rank
            assert saved["state"] == {"next_step": saved["step"]}
    # The cut after step 6 restores the rows the run ended with.
    with ember.LocalCluster(config_of("asp", optimizer)) as local, local.client() as client:
        assert client.restore(cuts[-1]) == STEPS
        numpy.testing.assert_array_equal(
            client.pull("rows", numpy.arange(torchrun_worker.VOCABULARY)), results[0][1])
