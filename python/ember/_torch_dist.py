"""ember.torch.TrainingRun: Python trainers of one ember run, under torchrun or by hand.

Each process learns its rank and the world size from torch.distributed (or torchrun's RANK and
WORLD_SIZE), and the cluster from the store the ranks share: rank 0 starts a LocalCluster of the
config (with as many trainers as ranks) unless one is given, and publishes its endpoint and keys
there; every rank connects its own Client. The run's synchronisation (asp, bsp or ssp: the
config's train.mode, as the scheduler says) is then the C++ trainer's: each push carries the
step's clock, bsp pushes wait for the clock's apply, and end_step() does what the C++ trainer does
after a step (trainer/step_sync.h): the clock report, the bsp apply and the checkpoint cuts.
"""

import datetime
import os
import tempfile
import time

import torch

from . import _ember
from ._torch_state import _flush_modules_of

__all__ = ["TrainingRun", "rank_and_world_size"]

_PREFIX = "ember/"
_FILE_FORMAT = 1


def rank_and_world_size():
    """(rank, world size): torch.distributed's when it is initialised, else torchrun's RANK and
    WORLD_SIZE, else (0, 1)."""
    distributed = torch.distributed
    if distributed.is_available() and distributed.is_initialized():
        return distributed.get_rank(), distributed.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _shared_store(rank, world_size, timeout):
    """The store the ranks share: torch.distributed's default one, else one at torchrun's
    MASTER_ADDR and MASTER_PORT (rank 0 serves it)."""
    distributed = torch.distributed
    if distributed.is_initialized():
        return distributed.distributed_c10d._get_default_store()
    if "MASTER_ADDR" not in os.environ or "MASTER_PORT" not in os.environ:
        raise _ember.InvalidArgumentError(
            "TrainingRun of {} ranks: no store to meet in (call torch.distributed."
            "init_process_group first, or run under torchrun, which sets MASTER_ADDR and "
            "MASTER_PORT)".format(world_size))
    return distributed.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                                world_size, rank == 0, timeout)


class TrainingRun:
    """TrainingRun(config=None, scheduler=None, key="", scheduler_key="", servers=None,
                   overrides=None, store=None, timeout=120.0, **client_options)

    One trainer process of a run of world-size trainers. Rank 0 starts a LocalCluster of `config`
    (a YAML path or a dict; cluster.trainers set to the world size, `servers` and `overrides` as
    LocalCluster's) unless `scheduler` (an endpoint, with `key` and `scheduler_key` files) names
    a cluster started elsewhere; the endpoint and keys travel to the other ranks through `store`
    (default: torch.distributed's, else one at MASTER_ADDR:MASTER_PORT). `client` is this rank's
    Client (rank-named), `cluster` rank 0's LocalCluster (None elsewhere).

    Step by step: forward, backward (and ServerOptimizer.step()), then end_step(model, optimizer).
    close() (or leaving the `with` block) leaves the run; rank 0 stops its cluster once every
    rank has closed.
    """

    def __init__(self, config=None, scheduler=None, key="", scheduler_key="", servers=None,
                 overrides=None, store=None, timeout=120.0, **client_options):
        """See the class's documentation."""
        self.rank, self.world_size = rank_and_world_size()
        self._timeout = float(timeout)
        self.cluster = None
        self.client = None
        self._key_files = []
        delta = datetime.timedelta(seconds=timeout)
        self._store = store if store is not None else (
            _shared_store(self.rank, self.world_size, delta) if self.world_size > 1 else None)
        if self.rank == 0:
            scheduler, key, scheduler_key = self._start_or_name(
                config, scheduler, key, scheduler_key, servers, overrides)
        else:
            scheduler, key, scheduler_key = self._learn_cluster(delta)
        from . import Client
        self.client = Client(scheduler, key=key, scheduler_key=scheduler_key,
                             name="rank-{}".format(self.rank), rank=self.rank, **client_options)
        if self.cluster is not None:
            self.cluster._clients.add(self.client)

    def _start_or_name(self, config, scheduler, key, scheduler_key, servers, overrides):
        if scheduler is None:
            if config is None:
                raise _ember.InvalidArgumentError("TrainingRun: give a config to start a "
                                                  "cluster from, or the scheduler of one")
            from .cluster import LocalCluster
            settings = dict(overrides or {})
            settings["cluster.trainers"] = self.world_size
            self.cluster = LocalCluster(config, servers=servers, overrides=settings)
            scheduler, key, scheduler_key = (self.cluster.scheduler, self.cluster.key,
                                             self.cluster.scheduler_key)
        if self._store is not None:
            self._store.set(_PREFIX + "scheduler", scheduler)
            self._store.set(_PREFIX + "key", _key_bytes(key))
            self._store.set(_PREFIX + "scheduler_key", _key_bytes(scheduler_key, text=True))
        return scheduler, key, scheduler_key

    def _learn_cluster(self, timeout):
        self._store.wait([_PREFIX + "scheduler"], timeout)
        scheduler = self._store.get(_PREFIX + "scheduler").decode()
        return scheduler, self._private_file("key"), self._private_file("scheduler_key")

    def _private_file(self, name):
        """The key `name` from the store in a file of this process ("" when there is none)."""
        content = self._store.get(_PREFIX + name)
        if not content:
            return ""
        handle, path = tempfile.mkstemp(prefix="ember-rank-{}-".format(name))
        with os.fdopen(handle, "wb") as out:  # mkstemp: readable by this user alone
            out.write(content)
        self._key_files.append(path)
        return path

    @property
    def sync(self):
        """The run's synchronisation, as the scheduler said (Client.sync)."""
        return self.client.sync

    def end_step(self, model=None, optimizer=None, state=None):
        """Ends the step under way, as the C++ trainer does: waits for the pushes of every ember
        module on this client, reports the clock (bsp and ssp wait for the other ranks), and in
        bsp has the servers apply the step's pushes. When the scheduler cut a checkpoint after
        this step, writes this rank's file into it (`model`'s parameters and buffers, which
        are the dense state, `optimizer`'s state_dict and `state`, any picklable value, e.g. the
        data position) and takes part in the cut. Returns the folder of the cut written after
        this step, or None (no cut, or a failed one: it is logged, and training goes on)."""
        _flush_modules_of(self.client)
        cut = self.client.end_step()
        if cut is None:
            return None
        error = ""
        try:
            os.makedirs(cut["dir"], exist_ok=True)
            torch.save(_rank_file(cut["clock"], self.rank, model, optimizer, state), cut["file"])
        except Exception as failure:  # the cut fails for all, but training goes on
            error = "rank {} could not write {}: {}".format(self.rank, cut["file"], failure)
        return cut["dir"] if self.client.take_cut(error) else None

    def close(self):
        """Leaves the run: closes this rank's client; rank 0 stops its cluster once every rank
        closed (they count themselves in the store; rank 0 waits up to the store's timeout)."""
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._store is not None:
            self._store.add(_PREFIX + "closed", 1)
            deadline = time.monotonic() + self._timeout
            while self.rank == 0 and self._store.add(_PREFIX + "closed", 0) < self.world_size:
                if time.monotonic() > deadline:
                    break  # a rank died: its cluster goes anyway
                time.sleep(0.05)
            self._store = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        for path in self._key_files:
            os.unlink(path)
        self._key_files = []

    def __enter__(self):
        """The run itself."""
        return self

    def __exit__(self, *exc):
        """close()."""
        self.close()


def _key_bytes(key, text=False):
    """A key as the store carries it: the key file's bytes (empty without a key), or for a
    public key (`text`) its 40 characters when it is given as such."""
    if not key:
        return b""
    if os.path.isfile(key):
        with open(key, "rb") as source:
            return source.read()
    if text:
        return key.encode()
    raise FileNotFoundError("TrainingRun: key file {} does not exist".format(key))


def _rank_file(step, rank, model, optimizer, state):
    """What a rank writes into a cut: its dense state (parameters and buffers: ember modules'
    rows are the servers' part), its optimizer's, and the caller's."""
    dense = {}
    if model is not None:
        dense = {name: tensor.detach().cpu() for name, tensor in
                 list(model.named_parameters()) + list(model.named_buffers())}
    return {"format": _FILE_FORMAT, "step": step, "rank": rank, "model": dense,
            "optimizer": optimizer.state_dict() if optimizer is not None else None,
            "state": state}
