"""A multi-feature two-tower on MovieLens 100K under torchrun, written as TorchRec code is.

The model is the one configs/movielens-100k.yaml describes for ember's C++ trainer, so the two can
be set side by side on the same data and evaluation:

- features, each a bag of ids (a KeyedJaggedTensor's layout, ember.torch.JaggedIds): user_id,
  occupation, age and history (the user's latest 20 distinct training items; a training sample
  sees only the items its user had before it) for the user tower; item_id, genres (one id per
  genre combination, as the C++ trainer keys it) and release for the item tower;
- one ember.torch.EmbeddingBagCollection over the config's seven tables (BagConfig per table):
  one id per sample for all features but history, whose bag pools by its mean, as the C++
  trainer pools a multi-valued slot. One forward pulls the rows of all seven tables in one
  request per server;
- each tower concatenates its features' pooled rows, runs them through Linear+ReLU hidden layers
  and a final Linear, and L2-normalises the result;
- the loss is the in-batch softmax of the dot products over the temperature, each item's logit
  less the log of its frequency among the training pairs (the logQ correction);
- the rows' optimizer is each table's server-side Adagrad (ember.torch.ServerOptimizer, one
  param group per table), the dense layers' torch.optim.Adam with the config's learning rate.

Under torchrun every rank builds the same global batch of the config's batch size (256) and
trains on its share (128 each with 2 ranks); the config's train.mode is overridden to bsp
(ember.torch.TrainingRun: rank 0 starts the cluster, run.end_step() ends each step). The in-batch
softmax is over the whole global batch, as one process would compute it: the ranks all-gather
their user and item vectors (without gradient), each computes the global loss with its own
vectors as the only ones that carry a gradient, and backpropagates world_size times that loss.
The servers' bsp mean of the ranks' row gradients and DistributedDataParallel's mean of the
dense ones then equal the gradient one process gets on the whole batch. Each epoch drops its
last partial global batch, so every step has exactly 256 samples.

After training, rank 0 encodes every user (with the history of all their training items) and
item, and ember's leave-one-out evaluation ranks each user's held-out item: HR@10 and NDCG@10
among 99 sampled negatives, and Recall@10 over the full catalogue, next to the most-popular
baseline.

With the module built (PYTHONPATH holding the ember package) and --data-root the folder holding
ml-100k/ (u.data, u.user, u.item):

    python3 -m torch.distributed.run --nproc_per_node=2 --master_addr=127.0.0.1 \\
        --master_port=29512 python/examples/movielens_torchrun.py --data-root /path/to/data

(Debian's torch 1.13 under Python 3.11 also needs --redirects=1 --tee=1.) Without torchrun it
trains as one process on the whole batch. --embeddings torch trains the same model with local
nn.EmbeddingBag tables and torch.optim.Adagrad instead (one process), for comparison.

What it reached (20 epochs, 2 ranks in bsp, two servers, on 2 shared cores; medians of 3 runs
alternated with the C++ trainer's, python/benchmarks/torch_vs_cpp.py): HR@10 0.704 and NDCG@10
0.453 among 99 sampled negatives, Recall@10 0.193 over the full catalogue (the C++ trainer on the
same config: HR@10 0.712, NDCG@10 0.441; most-popular: 0.414 / 0.223), at 15,100 samples/s
against the C++ trainer's 78,700, in about 2 min 15 s a run.

It needs numpy, torch and PyYAML.
"""

import argparse
import cProfile
import json
import os
import pstats
import resource
import time

import numpy
import torch
import yaml

import ember
import ember.torch
from ember.torch import BagConfig, EmbeddingBagCollection, JaggedIds, PooledEmbeddings

DEFAULT_CONFIG = os.path.normpath(os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "configs",
    "movielens-100k.yaml"))

# (feature, its table): the tables are the config's user_tables, then its item_tables, in slot
# order; the user's history is the config's last user slot.
USER_FEATURES = ["user_id", "occupation", "age", "history"]
ITEM_FEATURES = ["item_id", "genres", "release"]


def parse_args(argv=None):
    """The command line (see --help)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=DEFAULT_CONFIG,
                        help="ember config with the tables, model and data (default: %(default)s)")
    parser.add_argument("--data-root", required=True,
                        help="folder holding ml-100k/ (the config's data paths resolve here)")
    parser.add_argument("--servers", type=int, default=None,
                        help="parameter servers to start (default: the config's)")
    parser.add_argument("--epochs", type=int, default=None,
                        help="passes over the training pairs (default: the config's)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="the global batch, shared by the ranks (default: the config's)")
    parser.add_argument("--mode", default="bsp", choices=["asp", "bsp", "ssp"],
                        help="the run's synchronisation (default: %(default)s)")
    parser.add_argument("--embeddings", default="ember", choices=["ember", "torch"],
                        help="rows in ember tables, or local nn.EmbeddingBag (one process)")
    parser.add_argument("--seed", type=int, default=None,
                        help="dense weights and batch order (default: the config's model.seed)")
    parser.add_argument("--results", default=None,
                        help="write rank 0's figures here as JSON")
    parser.add_argument("--profile", default=None,
                        help="profile rank 0's training loop (cProfile) and write the top "
                        "functions here")
    return parser.parse_args(argv)


# ---- the data, as jagged features ----

def take_bags(values, offsets, index):
    """The bags of `index` (entities or training pairs) from (values, offsets): their ids one
    after another, and each one's length."""
    starts = offsets[index]
    lengths = offsets[index + 1] - starts
    ends = numpy.cumsum(lengths)
    positions = numpy.repeat(starts - ends + lengths, lengths) + numpy.arange(ends[-1] if len(
        ends) else 0)
    return values[positions], lengths


class MovieLensFeatures:
    """ember.InteractionData's keys as bags: every user's and item's keys per slot, and each
    training pair's causal history. Keys are ember's uint64s as int64 bit patterns."""

    def __init__(self, data):
        """`data`: an ember.InteractionData of a config with user_history (causal)."""
        if data.history_slot != len(USER_FEATURES) - 1 or data.item_slots != len(ITEM_FEATURES):
            raise ValueError("expected the user slots {} (history last) and the item slots {}"
                             .format(USER_FEATURES, ITEM_FEATURES))
        self.data = data
        as_int64 = lambda bags: (bags[0].view(numpy.int64), bags[1])  # noqa: E731
        self.user_bags = [as_int64(data.user_bags(s)) for s in range(data.user_slots)]
        self.item_bags = [as_int64(data.item_bags(s)) for s in range(data.item_slots)]
        self.train_histories = as_int64(data.train_histories())
        users, items = data.train_pairs()
        self.users, self.items = users.astype(numpy.int64), items.astype(numpy.int64)
        counts = data.item_train_counts().astype(numpy.float64)
        self.log_frequency = numpy.log(numpy.maximum(counts, 1) / data.num_train).astype(
            numpy.float32)

    @property
    def num_train(self):
        """Training pairs."""
        return len(self.users)

    def _jagged(self, bags):
        """JaggedIds of [(feature, (values, lengths))]."""
        return JaggedIds([name for name, _ in bags],
                         torch.from_numpy(numpy.concatenate([bag[0] for _, bag in bags])),
                         lengths=torch.from_numpy(numpy.concatenate([bag[1] for _, bag in bags])))

    def train_batch(self, pairs):
        """The features of training pairs `pairs` (indices), and each one's logQ offset."""
        users, items = self.users[pairs], self.items[pairs]
        bags = [(name, take_bags(*self.user_bags[slot], users))
                for slot, name in enumerate(USER_FEATURES[:-1])]
        bags.append((USER_FEATURES[-1], take_bags(*self.train_histories, pairs)))
        bags += [(name, take_bags(*self.item_bags[slot], items))
                 for slot, name in enumerate(ITEM_FEATURES)]
        return self._jagged(bags), torch.from_numpy(self.log_frequency[items])

    def entity_batch(self, users=None, items=None):
        """The features of users (their whole history) or of items; the other tower's features
        are empty bags (one collection serves both towers: it pulls nothing for them)."""
        none = (numpy.zeros(0, numpy.int64), numpy.zeros(len(users if users is not None
                                                             else items), numpy.int64))
        bags = [(name, take_bags(*self.user_bags[slot], users) if users is not None else none)
                for slot, name in enumerate(USER_FEATURES)]
        bags += [(name, take_bags(*self.item_bags[slot], items) if items is not None else none)
                 for slot, name in enumerate(ITEM_FEATURES)]
        return self._jagged(bags)


# ---- the model ----

def bag_configs(config):
    """BagConfig per table: the features of the config's user_tables and item_tables."""
    train = config["train"]
    pairs = list(zip(train["user_tables"], USER_FEATURES)) + list(zip(train["item_tables"],
                                                                      ITEM_FEATURES))
    return [BagConfig(table, [feature], pooling="mean" if feature == "history" else "sum")
            for table, feature in pairs]


class LocalBags(torch.nn.Module):
    """The same bags in local nn.EmbeddingBag tables (sparse gradients), for comparison: each
    table holds the keys its features can take, initialised as the config's tables are."""

    def __init__(self, features, bags, config):
        """`features`: MovieLensFeatures (for each table's keys), `bags`: bag_configs()."""
        super().__init__()
        specs = {table["name"]: table for table in config["tables"]}
        keys = {}
        for slot, name in enumerate(USER_FEATURES):
            keys[name] = numpy.unique(features.user_bags[slot][0])
        for slot, name in enumerate(ITEM_FEATURES):
            keys[name] = numpy.unique(features.item_bags[slot][0])
        self.bags = bags
        self.vocabulary = {bag.features[0]: torch.from_numpy(keys[bag.features[0]])
                           for bag in bags}
        self.tables = torch.nn.ModuleDict()
        for bag in bags:
            spec = specs[bag.table]
            table = torch.nn.EmbeddingBag(len(keys[bag.features[0]]), spec["dim"],
                                          mode=bag.pooling, sparse=True)
            init = spec.get("initializer", {})
            torch.nn.init.normal_(table.weight, init.get("mean", 0.0), init.get("stddev", 0.01))
            self.tables[bag.table] = table

    def forward(self, jagged):
        """PooledEmbeddings of the features' bags, as EmbeddingBagCollection's."""
        pooled, names = [], []
        for bag in self.bags:
            name = bag.features[0]
            (ids, _), offsets, _ = jagged.feature(name)
            rows = torch.searchsorted(self.vocabulary[name], ids)
            pooled.append(self.tables[bag.table](rows, offsets))
            names.append(name)
        return PooledEmbeddings(names, [p.shape[1] for p in pooled], torch.cat(pooled, dim=1))


def mlp(width, hidden, output_dim):
    """Linear+ReLU per hidden size, then a Linear to output_dim."""
    layers = []
    for size in hidden:
        layers += [torch.nn.Linear(width, size), torch.nn.ReLU()]
        width = size
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, output_dim))


class TwoTower(torch.nn.Module):
    """The bags, then per tower its features' pooled rows side by side through an MLP,
    L2-normalised."""

    def __init__(self, bags, dim, hidden, output_dim):
        """`bags`: an EmbeddingBagCollection (or LocalBags) serving every feature."""
        super().__init__()
        self.bags = bags
        self.user_tower = mlp(dim * len(USER_FEATURES), hidden, output_dim)
        self.item_tower = mlp(dim * len(ITEM_FEATURES), hidden, output_dim)

    def forward(self, features):
        """(user vectors, item vectors) of a batch of features, each (batch, output_dim)."""
        pooled = self.bags(features).to_dict()
        user = torch.cat([pooled[name] for name in USER_FEATURES], dim=1)
        item = torch.cat([pooled[name] for name in ITEM_FEATURES], dim=1)
        normalize = torch.nn.functional.normalize
        return normalize(self.user_tower(user), dim=1), normalize(self.item_tower(item), dim=1)


def global_in_batch_loss(users, items, log_frequency, temperature, rank, world_size):
    """The in-batch softmax loss of the whole global batch (every rank's share, gathered), with
    the gradient flowing to this rank's vectors only."""
    if world_size > 1:
        gathered = []
        for local in (users, items, log_frequency):
            parts = [torch.empty_like(local) for _ in range(world_size)]
            torch.distributed.all_gather(parts, local.detach())
            parts[rank] = local
            gathered.append(torch.cat(parts))
        users, items, log_frequency = gathered
    logits = users @ items.T / temperature - log_frequency
    labels = torch.arange(len(users))
    return torch.nn.functional.cross_entropy(logits, labels)


# ---- training and evaluation ----

def build(args, config, features, run):
    """The model (DDP-wrapped under several ranks), the sparse and dense optimizers."""
    model_config = config["model"]
    bags_config = bag_configs(config)
    if run is None:
        bags = LocalBags(features, bags_config, config)
    else:
        bags = EmbeddingBagCollection(run.client, bags_config, unsigned_ids=True)
    model = TwoTower(bags, model_config["embedding_dim"], model_config["hidden"],
                     model_config["output_dim"])
    if run is None:
        adagrad = next(t["optimizer"] for t in config["tables"])
        sparse = torch.optim.Adagrad(bags.parameters(), lr=adagrad["learning_rate"],
                                     initial_accumulator_value=adagrad.get(
                                         "initial_accumulator", 0.0),
                                     eps=adagrad.get("epsilon", 1e-10))
        dense_parameters = list(model.user_tower.parameters()) + list(
            model.item_tower.parameters())
    else:
        sparse = ember.torch.ServerOptimizer(model)
        dense_parameters = list(model.parameters())  # the ember bags have none
    dense = torch.optim.Adam(dense_parameters, lr=model_config.get("learning_rate", 1e-3),
                             betas=(model_config.get("beta1", 0.9),
                                    model_config.get("beta2", 0.999)),
                             eps=model_config.get("epsilon", 1e-8))
    trained = model
    if run is not None and run.world_size > 1:
        trained = torch.nn.parallel.DistributedDataParallel(model)
    return model, trained, sparse, dense


def train_epoch(args, state, order, epoch):
    """One pass over the full global batches of `order`; returns (mean loss, steps)."""
    model, trained, sparse, dense, features, run, rank, world, temperature = state
    batch_size = args.batch_size
    share = batch_size // world
    total, steps = 0.0, 0
    for start in range(0, len(order) - batch_size + 1, batch_size):
        mine = order[start + rank * share:start + (rank + 1) * share]
        batch, log_frequency = features.train_batch(mine)
        users, items = trained(batch)
        loss = global_in_batch_loss(users, items, log_frequency, temperature, rank, world)
        sparse.zero_grad()
        dense.zero_grad()
        (loss * world).backward()  # the ranks' gradients are averaged: each adds its share
        sparse.step()  # ember: pushes each table's rows; torch: local Adagrad
        dense.step()
        if run is not None:
            run.end_step(model, dense, state={"epoch": epoch, "position": start + batch_size})
        total += loss.item()
        steps += 1
    return total / max(steps, 1), steps


def encode(model, features, entities, users, batch_size=1024):
    """Every user's (or item's) vector, numpy, by dense index."""
    vectors = []
    with torch.no_grad():
        for start in range(0, entities, batch_size):
            index = numpy.arange(start, min(start + batch_size, entities))
            batch = features.entity_batch(users=index) if users else features.entity_batch(
                items=index)
            vectors.append(model(batch)[0 if users else 1])
    return torch.cat(vectors).numpy()


def evaluate(model, features):
    """HR@10, NDCG@10 (sampled) and Recall@10 (full catalogue) of the model and most-popular."""
    data = features.data
    user_vectors = encode(model, features, data.num_users, users=True)
    item_vectors = encode(model, features, data.num_items, users=False)
    sampled = data.evaluate(user_vectors, item_vectors, k=10)
    full = data.evaluate(user_vectors, item_vectors, k=10, protocol="full")
    popular = data.popularity(k=10)
    return {"hr@10": sampled["hit_rate@10"], "hr@10_se": sampled["hit_rate@10_se"],
            "ndcg@10": sampled["ndcg@10"], "recall@10_full": full["recall@10"],
            "ndcg@10_full": full["ndcg@10"], "popularity_hr@10": popular["hit_rate@10"],
            "popularity_ndcg@10": popular["ndcg@10"]}


def train(args, config, features, run, rank, world):
    """The training loop; returns rank 0's figures of it."""
    model, trained, sparse, dense = build(args, config, features, run)
    if rank == 0:
        print(model)
    state = (model, trained, sparse, dense, features, run, rank, world,
             config["model"]["temperature"])
    rng = numpy.random.default_rng(args.seed)  # the same batches on every rank
    requests_before = pull_requests(run)
    wait_for_every_rank(world)  # no rank pulls before every rank has counted
    profile = cProfile.Profile() if args.profile and rank == 0 else None
    started, cpu_started = time.perf_counter(), time.process_time()
    steps, loss = 0, float("nan")
    for epoch in range(1, args.epochs + 1):
        epoch_start = time.perf_counter()
        order = rng.permutation(features.num_train)
        if profile is not None:
            profile.enable()
        loss, epoch_steps = train_epoch(args, state, order, epoch)
        if profile is not None:
            profile.disable()
        steps += epoch_steps
        if rank == 0:
            print("epoch {:3d}  loss {:.4f}  {:8.0f} samples/s".format(
                epoch, loss, epoch_steps * args.batch_size / (time.perf_counter() - epoch_start)),
                flush=True)
    seconds = time.perf_counter() - started
    figures = {"steps": steps, "samples": steps * args.batch_size, "train_seconds": seconds,
               "samples_per_second": steps * args.batch_size / seconds, "loss_end": loss,
               "trainer_cpu_seconds": time.process_time() - cpu_started}
    if run is not None:
        wait_for_every_rank(world)  # every rank's last pull is answered and counted
        figures["pull_requests_per_step"] = (pull_requests(run) - requests_before) / max(steps, 1)
        figures["module_stats"] = dict(model.bags.stats)
    if profile is not None:
        with open(args.profile, "w") as out:
            for order_by in ("cumulative", "tottime"):
                pstats.Stats(profile, stream=out).sort_stats(order_by).print_stats(30)
    if rank == 0:
        figures.update(evaluate(model, features))
    return figures


def wait_for_every_rank(world):
    """A barrier of the torchrun ranks (none as one process)."""
    if world > 1:
        torch.distributed.barrier()


def pull_requests(run):
    """The pull requests the servers have answered, all servers together (0 without ember)."""
    if run is None:
        return 0
    return sum(server["pull_requests"] for server in run.client.stats())


def main(argv=None):
    """Trains, evaluates on rank 0 and prints (and with --results writes) its figures."""
    args = parse_args(argv)
    with open(args.config) as source:
        config = yaml.safe_load(source)
    args.epochs = args.epochs or config["train"].get("epochs", 20)
    args.batch_size = args.batch_size or config["train"].get("batch_size", 256)
    args.seed = config["model"].get("seed", 1) if args.seed is None else args.seed
    torch.manual_seed(args.seed)  # the dense weights (DDP also copies rank 0's to the others)
    torch.set_num_threads(1)  # small GEMMs: threads cost more than they give on shared cores
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if distributed:
        torch.distributed.init_process_group("gloo")
    features = MovieLensFeatures(ember.InteractionData(args.config, data_root=args.data_root))
    if args.embeddings == "torch":
        if distributed:
            raise SystemExit("--embeddings torch trains as one process")
        figures = train(args, config, features, None, 0, 1)
        rank = 0
    else:
        overrides = {"train.mode": args.mode}
        with ember.torch.TrainingRun(args.config, servers=args.servers,
                                     overrides=overrides) as run:
            rank = run.rank
            if args.batch_size % run.world_size:
                raise SystemExit("--batch-size must divide among {} ranks".format(
                    run.world_size))
            figures = train(args, config, features, run, run.rank, run.world_size)
    if rank == 0:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        figures.update({"embeddings": args.embeddings, "mode": args.mode,
                        "world_size": int(os.environ.get("WORLD_SIZE", 1)),
                        "epochs": args.epochs, "batch_size": args.batch_size,
                        "rank0_cpu_seconds": usage.ru_utime + usage.ru_stime})
        print(json.dumps(figures, indent=1))
        if args.results:
            with open(args.results, "w") as out:
                json.dump(figures, out, indent=1)
    if distributed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
