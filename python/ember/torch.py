"""ember.torch: PyTorch modules whose rows live in ember tables.

Embedding (here) is an embedding layer of one table. Forward dedups the batch's ids, pulls their
rows from the servers and gathers them back to the batch's shape; backward sums the gradients of
duplicate ids (autograd's own index backward) and pushes one gradient row per unique id, which the
table's server-side optimizer applies. The rest of the model trains with any torch optimizer as
usual; the layer has no torch parameters.

Ordering: a pull waits until this layer's earlier pushes were applied, so one process training
with one layer gets exactly what a local nn.Embedding with the same optimizer gets. prefetch()
keeps that exactness: ids that a batch still to be pushed may change are pulled later, at
forward, and only the others ahead of time.

Beside it: EmbeddingBagCollection (_torch_bags.py, pooled multi-id features of several tables in
one pull), ServerOptimizer (_torch_optim.py, the servers' optimizers as a torch optimizer:
schedules, accumulation, loss scaling, clipping) and state dicts with save/load
(_torch_state.py).
"""

import collections
import weakref

import torch

from . import _ember
from ._torch_bags import BagConfig, EmbeddingBagCollection, JaggedIds, PooledEmbeddings
from ._torch_dist import TrainingRun, rank_and_world_size
from ._torch_ids import as_id_tensor as _as_id_tensor
from ._torch_ids import unique_ids as _unique_ids
from ._torch_optim import ServerOptimizer
from ._torch_prefetch import PrefetchQueue, prefetching
from ._torch_state import ServerRowsState, load, save, set_state_dir, state_dir

__all__ = ["BagConfig", "Embedding", "EmbeddingBagCollection", "JaggedIds", "PooledEmbeddings",
           "ServerOptimizer", "ServerRowsState", "TrainingRun", "load", "prefetching",
           "rank_and_world_size", "save", "set_state_dir", "state_dir"]


class Embedding(ServerRowsState, torch.nn.Module):
    """Embedding(client, table, device=None, padding_idx=None, unsigned_ids=False)

    `client` is an ember.Client, `table` the name of one of its tables (NotFoundError if the
    cluster has none of that name). forward(ids) takes integer ids of any shape (a tensor, a numpy
    array or a list) and returns (*ids.shape, dim) rows on `device` (default: the CPU). Ids are
    the table's keys, and must not be negative, except:
    - `padding_idx`: that id (say -1 or 0) reads a row of zeros and is never pulled or pushed, as
      nn.Embedding's padding row that stays zero;
    - `unsigned_ids=True`: an int64 id is read as its unsigned bit pattern, so that every uint64
      key has an id (hashed 64-bit features; numpy: keys.view(numpy.int64)).

    prefetch(next_ids) pulls a coming batch's rows while the current one trains (call it with the
    batches in the order they will be forwarded). flush() waits for the pushes in flight (before a
    checkpoint, say). stats counts pulls, prefetch hits and pushes.
    """

    def __init__(self, client, table, device=None, padding_idx=None, unsigned_ids=False):
        """See the class's documentation."""
        super().__init__()
        specs = {spec["name"]: spec for spec in client.tables()}
        if table not in specs:
            raise _ember.NotFoundError("unknown table '{}' (the cluster has {})".format(
                table, ", ".join(sorted(specs)) or "none"))
        self.padding_idx = None if padding_idx is None else int(padding_idx)
        self.unsigned_ids = bool(unsigned_ids)
        self.client = client
        self.table = table
        self.dim = specs[table]["dim"]
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self._pushes = []  # (future, ids) of pushes not known to be applied
        self._unpushed = {}  # token -> ids of forwards whose gradient is still to come
        self._tokens = 0
        self.stats = collections.Counter()
        self._prefetched = PrefetchQueue(client, {table: self.dim}, self.stats,
                                         pin_memory=self.device.type == "cuda")
        self._server_optimizer = None  # a ServerOptimizer pushes the gradients, when attached

    def extra_repr(self):
        """The table, its dim, the device of the rows (and padding_idx, unsigned_ids if set)."""
        text = "table={}, dim={}, device={}".format(self.table, self.dim, self.device)
        if self.padding_idx is not None:
            text += ", padding_idx={}".format(self.padding_idx)
        return text + (", unsigned_ids=True" if self.unsigned_ids else "")

    def _ember_tables(self):
        """The table this layer uses (ServerRowsState: state_dict() refers to its rows)."""
        return [self.table]

    def _ember_rows_restored(self):
        """Drops the prefetched rows: the servers' rows were restored since."""
        self._prefetched.clear()

    # ---- forward and backward ----

    def forward(self, ids):
        """The rows of `ids` (integer, any shape): (*ids.shape, dim) float32 on the layer's
        device. With grad enabled, backward pushes one summed gradient row per unique id."""
        ids = _as_id_tensor(ids)
        unique, inverse = self._unique(ids)
        served = unique if self.padding_idx is None else unique[unique != self.padding_idx]
        rows = self._rows_of(served)
        if len(served) != len(unique):  # the padding id reads zeros
            padded = torch.zeros((len(unique), self.dim), dtype=torch.float32)
            padded[unique != self.padding_idx] = rows
            rows = padded
        rows = rows.to(self.device, non_blocking=True)
        if torch.is_grad_enabled():
            rows.requires_grad_(True)
            token = self._note_unpushed(served, rows)
            keep = None if len(served) == len(unique) else (unique != self.padding_idx)
            if self._server_optimizer is not None:  # its step() pushes the gradient
                self._server_optimizer.track(self, self.table, served, rows, keep)
            else:
                rows.register_hook(lambda grad: self._push(token, served, grad, keep))
        inverse = inverse.to(self.device, non_blocking=True)
        return rows[inverse].reshape(*ids[0].shape, self.dim)

    def _unique(self, ids):
        """_unique_ids of `ids` (an _as_id_tensor pair) under the layer's id rules."""
        tensor, from_uint64 = ids
        return _unique_ids(tensor, self.unsigned_ids or from_uint64, self.padding_idx)

    def _note_unpushed(self, unique, rows):
        # Until its gradient is pushed (or its graph is gone), this batch may still change these
        # ids: a prefetch must not read them early.
        self._tokens += 1
        token = self._tokens
        self._unpushed[token] = unique
        weakref.finalize(rows, self._unpushed.pop, token, None)
        return token

    def _push(self, token, unique, grad, keep=None):
        self._unpushed.pop(token, None)
        if keep is not None:  # no gradient for the padding id
            grad = grad[keep.to(grad.device)]
        if len(unique) == 0:
            return None
        gradients = grad.detach().to("cpu", torch.float32).contiguous().numpy()
        self._note_push(self.client.push_async(self.table, unique.numpy(), gradients), self.table,
                        unique)
        return None

    def _note_push(self, future, table, unique):
        """A push of this layer's rows of `unique` is in flight (its own, or its optimizer's)."""
        self._pushes.append((future, unique))
        self._prefetched.note_push(future, self.table, unique)
        self.stats["pushes"] += 1

    # ---- pulls ----

    def flush(self):
        """Waits until every push of this layer was applied; raises the first one's error."""
        pushes, self._pushes = self._pushes, []
        for future, _ in pushes:
            future.result()

    def _empty_rows(self, n):
        """Room for n rows on the CPU, pinned when they go on to a CUDA device."""
        return torch.empty((n, self.dim), dtype=torch.float32,
                           pin_memory=self.device.type == "cuda")

    def _pull(self, ids):
        rows = self._empty_rows(len(ids))
        if len(ids):
            self.client.pull(self.table, ids.numpy(), out=rows.numpy())
        self.stats["keys_pulled"] += len(ids)
        return rows

    def _rows_of(self, unique):
        entry = self._prefetched.take({self.table: unique})
        self.flush()  # earlier pushes first: a pull sees them
        if entry is None:
            self.stats["pulls"] += 1
            return self._pull(unique)
        return self._prefetched.rows(entry, self._pull_late)[self.table]

    def _pull_late(self, late):
        """The rows of what a prefetch left for forward (`late`: table -> ids)."""
        if not late:
            return {}
        self.stats["pulls"] += 1
        return {self.table: self._pull(late[self.table])}

    def prefetch(self, next_ids):
        """Starts pulling the rows of a batch to be forwarded soon (before or after the current
        one's forward: a forward finds its batch anywhere in the queue). Rows that a push may
        change before that batch's forward are read again then, so results stay exact."""
        unique, _ = self._unique(_as_id_tensor(next_ids))
        if self.padding_idx is not None:
            unique = unique[unique != self.padding_idx]
        # Forwarded batches still to push will change their ids: not worth reading early.
        self._prefetched.issue({self.table: unique},
                               avoid={self.table: list(self._unpushed.values())})
