"""Prefetching for ember.torch's modules: rows of coming batches pulled while the current one
trains, without changing what training computes.

A PrefetchQueue holds the batches a module was told are coming (their unique ids per table) and
their rows, pulled early in one request per server for all tables. A forward takes the entry
with its own ids wherever it is in the queue (entries before it were skipped, and are dropped),
so prefetch(next) may be called before or after forward(current). Exactness: a row read early is
used only if no push of its id was made after the pull was issued; pushes in flight when it is
issued (not yet applied) keep their ids out of the early pull. Every other row is pulled at
forward, after the module's earlier pushes.
"""

import collections

import torch

__all__ = ["PrefetchQueue", "prefetching"]

# Batches a module may hold prefetched; an older one is dropped (and counted a miss).
_MAX_ENTRIES = 8


class _Entry:
    """A prefetched batch: per table its unique ids, which of them were pulled early, their rows,
    and the ids pushed since the pull was issued (stale)."""

    __slots__ = ("ids", "early_masks", "early_rows", "future", "stale")

    def __init__(self, ids):
        self.ids = ids
        self.early_masks, self.early_rows, self.stale = {}, {}, {}
        self.future = None


class PrefetchQueue:
    """The prefetched batches of one module. `dims`: table -> dim; `stats`: the module's Counter
    (prefetched, keys_prefetched, prefetch_misses)."""

    def __init__(self, client, dims, stats, pin_memory=False):
        self._client = client
        self._dims = dims
        self._stats = stats
        self._pin = pin_memory
        self._entries = collections.deque()
        self._pushes = []  # (future, table, ids) of pushes not known to be applied

    def _empty_rows(self, table, count):
        return torch.empty((count, self._dims[table]), dtype=torch.float32, pin_memory=self._pin)

    def issue(self, ids, avoid=None):
        """Starts pulling the rows of a coming batch (`ids`: table -> sorted unique ids), all
        tables in one request per server. Ids of pushes in flight, and those in `avoid` (table ->
        list of id tensors the caller knows will change), are left for forward."""
        if len(self._entries) >= _MAX_ENTRIES:
            self._entries.popleft()
            self._stats["prefetch_misses"] += 1
        self._pushes = [push for push in self._pushes if not push[0].done()]
        entry = _Entry(ids)
        requests, outs = [], []
        for table, unique in ids.items():
            hazards = [pushed for _, name, pushed in self._pushes if name == table]
            # Batches queued before this one will push first (an optimisation: their pushes
            # would mark these rows stale anyway).
            hazards += [queued.ids[table] for queued in self._entries if table in queued.ids]
            hazards += list((avoid or {}).get(table, []))
            mask = (~torch.isin(unique, torch.cat(hazards)) if hazards
                    else torch.ones(len(unique), dtype=torch.bool))
            entry.early_masks[table] = mask
            entry.early_rows[table] = self._empty_rows(table, int(mask.sum()))
            entry.stale[table] = []
            if len(entry.early_rows[table]):
                requests.append((table, unique[mask].numpy()))
                outs.append(entry.early_rows[table].numpy())
        if requests:
            entry.future = self._client.pull_tables_async(requests, out=outs)
        self._entries.append(entry)

    def note_push(self, future, table, ids):
        """A push of `ids` of `table` was made: their early rows are stale."""
        self._pushes.append((future, table, ids))
        for entry in self._entries:
            if table in entry.stale:
                entry.stale[table].append(ids)

    def take(self, ids):
        """The entry prefetched for `ids` (table -> unique ids), or None; entries queued before
        it were skipped and are dropped, counted as misses."""
        for position, entry in enumerate(self._entries):
            if entry.ids.keys() == ids.keys() and all(
                    torch.equal(entry.ids[table], unique) for table, unique in ids.items()):
                for _ in range(position + 1):
                    self._entries.popleft()
                self._stats["prefetch_misses"] += position
                self._stats["prefetched"] += 1
                return entry
        if self._entries:
            self._stats["prefetch_misses"] += 1  # a batch that was not prefetched
        return None

    def clear(self):
        """Drops every prefetched batch (the servers' rows were restored, say)."""
        self._entries.clear()

    def rows(self, entry, pull):
        """table -> the rows of `entry`'s ids: early ones that are still fresh, the others
        pulled now through `pull` (table -> ids to pull) -> (table -> rows)."""
        if entry.future is not None:
            entry.future.result()
        keep, late = {}, {}
        for table, unique in entry.ids.items():
            fresh = entry.early_masks[table].clone()
            if entry.stale[table]:
                fresh &= ~torch.isin(unique, torch.cat(entry.stale[table]))
            keep[table] = fresh
            late[table] = unique[~fresh]
            self._stats["keys_prefetched"] += int(fresh.sum())
        pulled = pull({table: ids for table, ids in late.items() if len(ids)})
        rows = {}
        for table, unique in entry.ids.items():
            early_positions = keep[table][entry.early_masks[table]]
            out = self._empty_rows(table, len(unique))
            out[keep[table]] = entry.early_rows[table][early_positions]
            if len(late[table]):
                out[~keep[table]] = pulled[table]
            rows[table] = out
        return rows


def prefetching(batches, layers, depth=1):
    """Iterates `batches` (a DataLoader or any iterable) with look-ahead: while batch t is
    yielded, batches t+1 .. t+depth were drawn and each layer in `layers` (an ember module ->
    a function from a batch to that layer's ids) was told to prefetch their ids. The layers'
    stats count prefetched batches, keys and misses."""
    if depth < 1:
        raise ValueError("prefetching: depth must be >= 1, got {}".format(depth))
    iterator = iter(batches)
    ahead = collections.deque()

    def draw():
        try:
            batch = next(iterator)
        except StopIteration:
            return
        for layer, ids_of in layers.items():
            layer.prefetch(ids_of(batch))
        ahead.append(batch)

    for _ in range(depth + 1):
        draw()
    while ahead:
        batch = ahead.popleft()
        yield batch
        draw()
