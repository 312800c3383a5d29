"""ember.torch.EmbeddingBagCollection: pooled multi-id features (bags) over ember tables, with one
pull per step for all of them.

Input is jagged: each feature has a variable number of ids per sample (JaggedIds, laid out as
TorchRec's KeyedJaggedTensor, which is accepted too). Forward dedups the ids of each table
(several features may share one), pulls every table's rows in one request per server
(Client.pull_tables) and pools each feature's bags by sum or mean, optionally weighted per id,
through torch's embedding_bag: backward is exactly nn.EmbeddingBag's. After backward each table's
gradient rows (duplicate ids summed) are pushed once, and the table's server-side optimizer
applies them.
"""

import collections

import torch

from . import _ember
from ._torch_ids import as_id_tensor, unique_ids
from ._torch_prefetch import PrefetchQueue
from ._torch_state import ServerRowsState

__all__ = ["BagConfig", "EmbeddingBagCollection", "JaggedIds", "PooledEmbeddings"]


class BagConfig(collections.namedtuple("BagConfig", "table features pooling weighted",
                                       defaults=("sum", False))):
    """BagConfig(table, features, pooling="sum", weighted=False): the ember table `table` serves
    the bags of `features` (a list of feature names), pooled by "sum" or "mean" (as TorchRec's
    EmbeddingBagConfig, whose rows live on the servers). `weighted` features weigh each id by the
    input's weights (sum pooling only, as nn.EmbeddingBag's per-id weights); the others ignore
    them."""


def _invalid(message):
    return _ember.InvalidArgumentError(message)


class JaggedIds:
    """JaggedIds(keys, values, lengths=None, offsets=None, weights=None): the ids of several
    features for a batch, each sample having any number of ids per feature.

    Laid out as TorchRec's KeyedJaggedTensor: `keys` names F features; `values` holds every id,
    feature after feature and, within one, sample after sample; `lengths` (F * B counts, feature
    major) or `offsets` (F * B + 1 positions into values) say how many belong to each sample.
    `weights` (optional, one float per id) weighs each id in a sum. Ids follow ember.torch's id
    rules (integers; negative ones only as unsigned bit patterns, see Embedding).
    """

    def __init__(self, keys, values, lengths=None, offsets=None, weights=None):
        """See the class's documentation."""
        self._keys = list(keys)
        if not self._keys or len(set(self._keys)) != len(self._keys):
            raise _invalid("keys: expected distinct feature names, got {}".format(self._keys))
        self._values = as_id_tensor(values)
        count = self._values[0].numel()
        if self._values[0].dim() != 1:
            raise _invalid("values: expected a 1-D tensor of ids, got shape {}".format(
                tuple(self._values[0].shape)))
        if (lengths is None) == (offsets is None):
            raise _invalid("give either lengths or offsets")
        self._lengths = self._checked_lengths(lengths, offsets, count)
        self._weights = None
        if weights is not None:
            self._weights = torch.as_tensor(weights, dtype=torch.float32).reshape(-1)
            if self._weights.numel() != count:
                raise _invalid("weights: {} for {} ids".format(self._weights.numel(), count))

    def _checked_lengths(self, lengths, offsets, count):
        if offsets is not None:
            offsets = torch.as_tensor(offsets, dtype=torch.int64).reshape(-1).cpu()
            if offsets.numel() < 1 or int(offsets[0]) != 0:
                raise _invalid("offsets: expected them to start at 0")
            lengths = offsets[1:] - offsets[:-1]
            if int(offsets[-1]) != count:
                raise _invalid("offsets: the last is {}, but there are {} ids".format(
                    int(offsets[-1]), count))
        lengths = torch.as_tensor(lengths, dtype=torch.int64).reshape(-1).cpu()
        if bool((lengths < 0).any()):
            raise _invalid("lengths: a negative length (or decreasing offsets)")
        if int(lengths.sum()) != count:
            raise _invalid("lengths: they add up to {}, but there are {} ids".format(
                int(lengths.sum()), count))
        if lengths.numel() % len(self._keys):
            raise _invalid("lengths: {} are not a batch of each of {} features".format(
                lengths.numel(), len(self._keys)))
        return lengths.reshape(len(self._keys), -1)

    @classmethod
    def from_lists(cls, features, weights=None):
        """JaggedIds of {feature: [ids of sample 0, ids of sample 1, ...]} (every feature with
        the same number of samples), and optionally {feature: [weights per sample]}."""
        keys = list(features)
        values, lengths, weight_values = [], [], []
        for key in keys:
            for position, bag in enumerate(features[key]):
                bag = list(bag)
                values.extend(bag)
                lengths.append(len(bag))
                if weights is not None:
                    bag_weights = list(weights[key][position])
                    if len(bag_weights) != len(bag):
                        raise _invalid("weights of feature '{}', sample {}: {} for {} ids".format(
                            key, position, len(bag_weights), len(bag)))
                    weight_values.extend(bag_weights)
        return cls(keys, torch.tensor(values, dtype=torch.int64), lengths=lengths,
                   weights=None if weights is None else weight_values)

    def keys(self):
        """The feature names."""
        return list(self._keys)

    @property
    def batch_size(self):
        """The number of samples."""
        return self._lengths.shape[1]

    def feature(self, key):
        """The bags of feature `key`: (ids, offsets of each sample's first id, weights or None),
        ids as as_id_tensor gives them."""
        if key not in self._keys:
            raise _invalid("no feature '{}' in the input (it has {})".format(key, self._keys))
        index = self._keys.index(key)
        start = int(self._lengths[:index].sum())
        lengths = self._lengths[index]
        end = start + int(lengths.sum())
        offsets = torch.zeros(len(lengths), dtype=torch.int64)
        offsets[1:] = torch.cumsum(lengths, 0)[:-1]
        tensor, from_uint64 = self._values
        weights = None if self._weights is None else self._weights[start:end]
        return (tensor[start:end], from_uint64), offsets, weights


def as_jagged(features):
    """JaggedIds of `features`: JaggedIds, a TorchRec KeyedJaggedTensor, or a dict of lists."""
    if isinstance(features, JaggedIds):
        return features
    if isinstance(features, dict):
        return JaggedIds.from_lists(features)
    if all(hasattr(features, name) for name in ("keys", "values", "lengths")):
        weights = getattr(features, "weights_or_none", lambda: None)()
        return JaggedIds(features.keys(), features.values(), lengths=features.lengths(),
                         weights=weights)
    raise TypeError("features: expected JaggedIds, a KeyedJaggedTensor or a dict of lists, got "
                    "{}".format(type(features).__name__))


class PooledEmbeddings:
    """The pooled rows of a batch (as TorchRec's KeyedTensor): values() is (B, sum of dims), the
    features side by side in keys() order; to_dict() and [feature] give each one's (B, dim)."""

    def __init__(self, keys, length_per_key, values):
        """See the class's documentation."""
        self._keys = list(keys)
        self._length_per_key = list(length_per_key)
        self._values = values

    def keys(self):
        """The feature names, in the order of values()' columns."""
        return list(self._keys)

    def values(self):
        """All features' pooled rows side by side: (batch, sum of dims)."""
        return self._values

    def length_per_key(self):
        """Each feature's dim."""
        return list(self._length_per_key)

    def to_dict(self):
        """{feature: its (batch, dim) pooled rows}, views of values()."""
        return dict(zip(self._keys, torch.split(self._values, self._length_per_key, dim=1)))

    def __getitem__(self, key):
        """The (batch, dim) pooled rows of feature `key`."""
        return self.to_dict()[key]


_Feature = collections.namedtuple("_Feature", "name table dim pooling weighted")


class EmbeddingBagCollection(ServerRowsState, torch.nn.Module):
    """EmbeddingBagCollection(client, tables, device=None, unsigned_ids=False)

    `tables` is a list of BagConfig: which ember table serves which features, and how their bags
    pool. forward(features) takes JaggedIds (or a TorchRec KeyedJaggedTensor, or a dict of
    lists) holding at least those features, and returns PooledEmbeddings on `device` (default:
    the CPU). One forward pulls the rows of all of its tables in one request per server; backward
    pushes each table's gradient rows once. As with Embedding, a pull waits for this module's
    earlier pushes, so one process trains exactly as with local nn.EmbeddingBags under the same
    optimizer. stats counts pulls, keys pulled and pushes. state_dict() refers to a cut of the
    servers' rows, as Embedding's (ember.torch.set_state_dir).
    """

    def __init__(self, client, tables, device=None, unsigned_ids=False):
        """See the class's documentation."""
        super().__init__()
        specs = {spec["name"]: spec for spec in client.tables()}
        self.client = client
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.unsigned_ids = bool(unsigned_ids)
        self._features = []
        for config in tables:
            config = BagConfig(*config) if not isinstance(config, BagConfig) else config
            if config.table not in specs:
                raise _ember.NotFoundError("unknown table '{}' (the cluster has {})".format(
                    config.table, ", ".join(sorted(specs)) or "none"))
            if config.pooling not in ("sum", "mean"):
                raise _invalid("table '{}': pooling must be 'sum' or 'mean', not '{}'".format(
                    config.table, config.pooling))
            if config.weighted and config.pooling != "sum":
                raise _invalid("table '{}': weighted features need pooling 'sum' (as "
                               "nn.EmbeddingBag's per-id weights)".format(config.table))
            features = [config.features] if isinstance(config.features, str) else config.features
            for name in features:
                if any(name == feature.name for feature in self._features):
                    raise _invalid("feature '{}' is in more than one BagConfig".format(name))
                self._features.append(_Feature(name, config.table, specs[config.table]["dim"],
                                               config.pooling, bool(config.weighted)))
        if not self._features:
            raise _invalid("tables: no feature to pool")
        self.tables = list(dict.fromkeys(feature.table for feature in self._features))
        self._pushes = []  # futures of pushes not known to be applied
        self.stats = collections.Counter()
        self._prefetched = PrefetchQueue(client, {t: self._dim(t) for t in self.tables}, self.stats,
                                         pin_memory=self.device.type == "cuda")
        self._server_optimizer = None  # a ServerOptimizer pushes the gradients, when attached

    def extra_repr(self):
        """Each feature with its table, dim and pooling."""
        return ", ".join("{}: {}[{}] {}{}".format(f.name, f.table, f.dim, f.pooling,
                                                  " weighted" if f.weighted else "")
                         for f in self._features)

    def _ember_tables(self):
        """The tables this module uses (ServerRowsState: state_dict() refers to their rows)."""
        return list(self.tables)

    def _ember_rows_restored(self):
        """Drops the prefetched rows: the servers' rows were restored since."""
        self._prefetched.clear()

    def feature_names(self):
        """The features, in the order of the output's columns."""
        return [feature.name for feature in self._features]

    def forward(self, features):
        """The pooled rows of each feature's bags: PooledEmbeddings of (batch, sum of dims)."""
        jagged = as_jagged(features)
        bags = {f.name: jagged.feature(f.name) for f in self._features}
        unique, inverse = self._unique_ids(bags)
        rows = self._rows_of(unique)
        pooled = [self._pool(f, rows.get(f.table), inverse[f.name], bags[f.name], jagged.batch_size)
                  for f in self._features]
        return PooledEmbeddings([f.name for f in self._features], [f.dim for f in self._features],
                                torch.cat(pooled, dim=1))

    def prefetch(self, features):
        """Starts pulling the rows of a batch to be forwarded soon (all tables in one request per
        server; see Embedding.prefetch: results stay exact whatever the order of calls)."""
        jagged = as_jagged(features)
        unique, _ = self._unique_ids({f.name: jagged.feature(f.name) for f in self._features})
        self._prefetched.issue(unique)

    def _unique_ids(self, bags):
        """Per table with ids in `bags`: its unique ids over all of its features; per feature:
        where its ids are among its table's."""
        unique, inverse = {}, {}
        for table in self.tables:
            names = [f.name for f in self._features if f.table == table]
            ids = [bags[name][0] for name in names]
            from_uint64 = any(flag for _, flag in ids)
            flat = torch.cat([tensor.reshape(-1).to("cpu", torch.int64) for tensor, _ in ids])
            table_unique, positions = unique_ids(flat, self.unsigned_ids or from_uint64)
            if len(table_unique):
                unique[table] = table_unique
            inverse.update(zip(names, torch.split(positions, [len(t) for t, _ in ids])))
        return unique, inverse

    def _rows_of(self, unique):
        """Each table's rows of its unique ids (prefetched, or all tables in one pull), on the
        module's device; with grad enabled, each pushes its gradient rows after backward."""
        entry = self._prefetched.take(unique)
        self.flush()  # earlier pushes first: a pull sees them
        pulled = (self._pull_tables(unique) if entry is None
                  else self._prefetched.rows(entry, self._pull_tables))
        rows = {}
        for table, out in pulled.items():
            table_rows = out.to(self.device, non_blocking=True)
            if torch.is_grad_enabled():
                table_rows.requires_grad_(True)
                ids = unique[table]
                if self._server_optimizer is not None:  # its step() pushes the gradient
                    self._server_optimizer.track(self, table, ids, table_rows)
                else:
                    table_rows.register_hook(
                        lambda grad, table=table, ids=ids: self._push(table, ids, grad))
            rows[table] = table_rows
        return rows

    def _pull_tables(self, ids):
        """table -> the rows of `ids` (table -> unique ids), all tables in one pull."""
        if not ids:
            return {}
        pin = self.device.type == "cuda"
        outs = {table: torch.empty((len(keys), self._dim(table)), dtype=torch.float32,
                                   pin_memory=pin) for table, keys in ids.items()}
        self.client.pull_tables([(table, keys.numpy()) for table, keys in ids.items()],
                                out=[outs[table].numpy() for table in ids])
        self.stats["pulls"] += 1
        self.stats["keys_pulled"] += sum(len(keys) for keys in ids.values())
        return outs

    def _dim(self, table):
        return next(f.dim for f in self._features if f.table == table)

    def _pool(self, feature, table_rows, positions, bag, batch_size):
        """The (batch, dim) pooled rows of one feature: its ids' rows (at `positions` in the
        table's rows), bag by bag."""
        _, offsets, weights = bag
        if feature.weighted and weights is None:
            raise _invalid("feature '{}' is weighted, but the input has no weights".format(
                feature.name))
        if table_rows is None or len(positions) == 0:  # no id in any bag: zeros, as torch's
            return torch.zeros((batch_size, feature.dim), device=self.device)
        return torch.nn.functional.embedding_bag(
            positions.to(self.device), table_rows, offsets.to(self.device), mode=feature.pooling,
            per_sample_weights=weights.to(self.device) if feature.weighted else None)

    def _push(self, table, ids, grad):
        gradients = grad.detach().to("cpu", torch.float32).contiguous().numpy()
        self._note_push(self.client.push_async(table, ids.numpy(), gradients), table, ids)

    def _note_push(self, future, table, unique):
        """A push of this module's rows of `unique` in `table` is in flight (its own, or its
        optimizer's)."""
        self._pushes.append(future)
        self._prefetched.note_push(future, table, unique)
        self.stats["pushes"] += 1

    def flush(self):
        """Waits until every push of this module was applied; raises the first one's error."""
        pushes, self._pushes = self._pushes, []
        for future in pushes:
            future.result()
