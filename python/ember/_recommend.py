"""Two-tower retrieval from Python: `ember recommend` (the C++ command, whose index is FAISS's HNSW
over the item tower's outputs) run for a config, a checkpoint and optionally a cluster or replica
to read rows from; its JSON answer returned as Python values."""

import json
import os
import subprocess
import tempfile

from ._config import config_file
from ._ember import EmberError
from .cluster import find_binary


def _run(config, checkpoint, extra, data_root, scheduler, key, scheduler_key, ef_search, binary,
         timeout):
    with config_file(config, data_root) as (path, root), tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "answer.json")
        argv = [find_binary(binary), "recommend", "--config", path, "--checkpoint",
                str(checkpoint), "--ef-search", str(int(ef_search)), "--json", out]
        if root:
            argv += ["--data-root", str(root)]
        if scheduler:
            argv += ["--scheduler", scheduler]
        if key:
            argv += ["--key", str(key)]
        if scheduler_key:
            argv += ["--scheduler-key", str(scheduler_key)]
        done = subprocess.run(argv + extra, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
        if done.returncode != 0:
            raise EmberError("ember recommend failed ({}): {}".format(
                done.returncode, done.stderr.strip().splitlines()[-1:] or ""))
        with open(out) as f:
            return json.load(f)


def recommend(config, checkpoint, users, k=10, data_root=None, scheduler=None, key=None,
              scheduler_key=None, ef_search=128, binary=None, timeout=600):
    """The `k` best items for each of `users` (raw ids of the config's interaction data), the items
    a user trained on left out: {user: [(item, score), ...], ...}, best first.

    The dense towers come from `checkpoint`'s trainer file; rows from the checkpoint too, or with
    `scheduler` from that cluster or serving replica, read-only (`key` a reader key there and
    `scheduler_key` its public key)."""
    extra = ["--k", str(int(k))]
    for user in users:
        extra += ["--user", str(user)]
    answer = _run(config, checkpoint, extra, data_root, scheduler, key, scheduler_key, ef_search,
                  binary, timeout)
    return {entry["user"]: [(hit["item"], hit["score"]) for hit in entry["items"]]
            for entry in answer["recommendations"]}


def evaluate_retrieval(config, checkpoint, k=10, queries=2000, data_root=None, scheduler=None,
                       key=None, scheduler_key=None, ef_search=128, binary=None, timeout=600):
    """`ember recommend --evaluate`: the index's recall@k against exact search, the served
    full-catalogue Recall@k beside the exact one and the trainer's, and the speed of queries
    (dict of figures; see docs/serving.md)."""
    extra = ["--evaluate", "--k", str(int(k)), "--queries", str(int(queries))]
    return _run(config, checkpoint, extra, data_root, scheduler, key, scheduler_key, ef_search,
                binary, timeout)
