"""ember from Python: a client of ember's parameter servers, a local cluster for notebooks and
tests, ember's interaction data and ranking evaluation, and (in ember.torch) an embedding layer
that trains any PyTorch model against ember's tables.

    import ember
    with ember.LocalCluster("configs/movielens-100k.yaml", servers=2) as cluster:
        client = cluster.client()
        rows = client.pull("user_id", numpy.array([1, 2, 3], dtype=numpy.uint64))
        client.push("user_id", keys, gradients)   # the table's server-side optimizer applies them

Errors are ember's, as exceptions: EmberError and its subclasses InvalidArgumentError (also a
ValueError), NotFoundError (LookupError), DeadlineExceededError (TimeoutError), UnavailableError
(ConnectionError) and PermissionDeniedError (PermissionError).
"""

import itertools
import os
import socket

from . import _ember
from ._ember import (DeadlineExceededError, EmberError, Future, InvalidArgumentError,
                     NotFoundError, PermissionDeniedError, UnavailableError)
from ._config import config_file
from .cluster import LocalCluster
from ._recommend import evaluate_retrieval, recommend
from ._run_log import RunLog

__all__ = [
    "Client", "Future", "InteractionData", "LocalCluster", "EmberError", "InvalidArgumentError",
    "NotFoundError", "DeadlineExceededError", "UnavailableError", "PermissionDeniedError",
    "RunLog", "recommend", "evaluate_retrieval",
]

_client_numbers = itertools.count()


def _default_name():
    # A name of its own per client: the scheduler gives the same name the same trainer id.
    return "python-{}-{}-{}".format(socket.gethostname(), os.getpid(), next(_client_numbers))


class Client(_ember.Client):
    """A trainer's connection to an ember cluster (a thin binding of ember's C++ client).

    Client(scheduler, key="", scheduler_key="", name=None, timeout=30.0, register_timeout=60.0,
           heartbeat_interval=1.0, max_keys_per_message=4096, rank=0, wire_fp16=False,
           read_only=False)

    `scheduler` is the scheduler's endpoint (tcp://host:port). On an authenticated cluster, `key`
    is this client's key file (ember keygen) and `scheduler_key` the scheduler's public key (a
    .pub file or its 40 characters). A pull or push not answered within `timeout` seconds fails
    with DeadlineExceededError. `wire_fp16` sends rows and gradients as float16 on the wire (half
    the bytes; the servers keep float32, values round to fp16's 11 significant bits), as the C++
    trainer's train.wire_fp16. `read_only` registers a reader (serving): it may only lookup(),
    read tables(), status() and stats(); it takes no trainer slot and sends no heartbeats, and
    pulls, pushes and steps raise PermissionDeniedError. A reader key (role reader) needs it.

    pull(table, keys, out=None) -> float32 array (n, dim); push(table, keys, gradients);
    pull_async / push_async return a Future (result(timeout=None), done()); tables(), status(),
    stats(), checkpoint(dir, step=0), restore(dir), barrier(name, count),
    close(leave=True, reason=""), initial_rows(table, keys), lookup(table, keys),
    pull_tables([(table, keys), ...]) (one request per server for several tables), and for
    synchronised runs sync, clock, end_step() and take_cut() (see ember.torch.TrainingRun; `rank`
    names this trainer's file in checkpoint cuts). Keys are uint64 arrays, or int64 ones read as
    their unsigned bit pattern (torch has no uint64), or anything numpy turns into one (a CPU
    torch tensor too).
    Waits release the GIL, and Ctrl-C interrupts them within 0.1 s.
    """

    def __init__(self, scheduler, key="", scheduler_key="", name=None, **options):
        """Registers with the scheduler (waiting up to `register_timeout`) and connects."""
        super().__init__(scheduler, key=key, scheduler_key=scheduler_key,
                         name=name or _default_name(), **options)

    def __enter__(self):
        """The client itself."""
        return self

    def __exit__(self, *exc):
        """Closes the client (close())."""
        self.close()


class InteractionData(_ember.InteractionData):
    """A config's interaction data, split as ember's trainer splits it (leave-one-out test item,
    optional validation item, sampled negatives), with ember's ranking evaluation.

    InteractionData(config, data_root=None): `config` is a YAML path or a dict with the same keys;
    relative data paths resolve against `data_root`, else the config's folder (a dict: the current
    directory).

    num_users, num_items, num_train, user_slots, item_slots, users_without_validation;
    train_pairs() -> (users, items) dense indices; user_keys(slot=0), item_keys(slot=0) -> uint64
    keys by dense index (the keys ember's trainer uses; .view(numpy.int64) for torch);
    user_bags(slot), item_bags(slot) -> (values, offsets) of any slot, multi-valued ones (genres,
    a history) included; history_slot and train_histories() (each training pair's causal
    history, as the trainer feeds it); item_train_counts(); user_id(i), item_id(i), describe(); cases(split="test");
    evaluate(user_vectors, item_vectors, k=10, protocol="sampled" | "full", split="test" |
    "validation") -> dict of figures; popularity(k=10, protocol).
    """

    def __init__(self, config, data_root=None):
        with config_file(config, data_root) as (path, root):
            super().__init__(path, root)
