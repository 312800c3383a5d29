"""A PyTorch two-tower model on MovieLens 100K, its embedding rows served by ember.

The model is the one configs/movielens-100k-features.yaml describes for ember's C++ trainer
(without the user history of configs/movielens-100k.yaml, which needs multi-valued slots): each
tower concatenates one embedding row per slot (user: id, occupation, age; item: id, genres, release
date), runs it through Linear+ReLU hidden layers and a final Linear, and L2-normalises the
result; the loss is
the in-batch softmax of the dot products over a temperature, each item's logit less the log of
its frequency among the training pairs (the logQ correction: popular items turn up as in-batch
negatives more often, and would otherwise be pushed down for it).

Here it is written in PyTorch. The rows live in a local ember cluster: ember.torch.Embedding
pulls them at forward, and backward pushes their gradients, which the servers apply with each
table's optimizer (Adagrad). torch.optim.Adam trains the dense layers. The trained towers then
encode every user and item, and ember's leave-one-out evaluation ranks each user's held-out
item: HR@10 and NDCG@10 among 99 sampled negatives next to the most-popular baseline, and
Recall@10 and NDCG@10 over the full catalogue.

The data is not shipped: --data-root is the folder holding ml-100k/ (u.data, u.user, u.item).
From the repository's root, with the Python module built:

    PYTHONPATH=build/python /usr/bin/python3 python/examples/movielens_two_tower.py \
        --data-root /path/to/data

It needs numpy, torch and PyYAML (to read the config's model and train sections).
"""

import argparse
import os
import time

import numpy
import torch
import yaml

import ember
import ember.torch

DEFAULT_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                              "configs", "movielens-100k-features.yaml")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=os.path.normpath(DEFAULT_CONFIG),
                        help="ember config with the tables, model and data (default: %(default)s)")
    parser.add_argument("--data-root", required=True,
                        help="folder holding ml-100k/ (the config's data paths resolve here)")
    parser.add_argument("--servers", type=int, default=2, help="parameter servers to start")
    parser.add_argument("--epochs", type=int, default=None,
                        help="passes over the training pairs (default: the config's)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="training pairs per step (default: the config's)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="where the dense layers run (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=None,
                        help="dense weights and batch order (default: the config's model.seed)")
    parser.add_argument("--prefetch", action=argparse.BooleanOptionalAction, default=True,
                        help="pull the next batch's rows while the current one trains")
    parser.add_argument("--sampling-correction", action=argparse.BooleanOptionalAction,
                        default=None, help="the logQ correction of the in-batch softmax "
                        "(default: the config's train.sampling_correction, else on)")
    return parser.parse_args()


def slot_ids(keys):
    """A slot's keys (uint64, by dense index) as torch ids: int64 tensors carry uint64 keys as
    their bit pattern, which is how ember.torch.Embedding reads them. These are the keys `ember
    train` uses, so either can resume the other's tables."""
    return torch.from_numpy(keys.view(numpy.int64))


class Tower(torch.nn.Module):
    """One tower: the rows of its slots, concatenated, through an MLP, L2-normalised."""

    def __init__(self, client, tables, hidden, output_dim, device):
        super().__init__()
        self.embeddings = torch.nn.ModuleList(
            # ember's keys are hashed uint64s, handed to torch as their int64 bit patterns.
            ember.torch.Embedding(client, table, device=device, unsigned_ids=True)
            for table in tables)
        layers = []
        width = sum(embedding.dim for embedding in self.embeddings)
        for size in hidden:
            layers += [torch.nn.Linear(width, size), torch.nn.ReLU()]
            width = size
        layers.append(torch.nn.Linear(width, output_dim))
        self.mlp = torch.nn.Sequential(*layers)

    def forward(self, ids):
        """ids: (batch, slots) int64, one id per slot. Returns (batch, output_dim) unit vectors."""
        rows = [embedding(ids[:, slot]) for slot, embedding in enumerate(self.embeddings)]
        return torch.nn.functional.normalize(self.mlp(torch.cat(rows, dim=1)), dim=1)

    def prefetch(self, ids):
        for slot, embedding in enumerate(self.embeddings):
            embedding.prefetch(ids[:, slot])

    def flush(self):
        for embedding in self.embeddings:
            embedding.flush()


def encode(tower, ids, batch_size=1024):
    """Every entity's vector (numpy, by dense index), in batches, without gradients."""
    with torch.no_grad():
        return torch.cat([tower(ids[start:start + batch_size]).cpu()
                          for start in range(0, len(ids), batch_size)]).numpy()


def epoch_batches(rng, pairs, user_ids, item_ids, log_frequency, batch_size):
    """The training pairs in a fresh random order, as batches of (user ids, item ids, each
    item's logit offset or None)."""
    users, items = pairs
    order = torch.from_numpy(rng.permutation(len(users)))
    batches = []
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        offset = None if log_frequency is None else log_frequency[items[batch]]
        batches.append((user_ids[users[batch]], item_ids[items[batch]], offset))
    return batches


def train_epoch(user_tower, item_tower, batches, optimizer, temperature, prefetch):
    """One pass over `batches`. Returns the mean loss."""
    if prefetch:
        user_tower.prefetch(batches[0][0])
        item_tower.prefetch(batches[0][1])
    total_loss, samples = 0.0, 0
    for step, (users, items, offset) in enumerate(batches):
        if prefetch and step + 1 < len(batches):
            user_tower.prefetch(batches[step + 1][0])
            item_tower.prefetch(batches[step + 1][1])
        # In-batch softmax: each user's own item is the positive among all the batch's items.
        logits = user_tower(users) @ item_tower(items).T / temperature
        if offset is not None:
            logits = logits - offset.to(logits.device)
        labels = torch.arange(len(users), device=logits.device)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        optimizer.zero_grad()
        loss.backward()  # the rows' gradients go to the servers; the dense ones stay here
        optimizer.step()
        total_loss += loss.item() * len(users)
        samples += len(users)
    user_tower.flush()
    item_tower.flush()
    return total_loss / samples


def print_figures(name, figures):
    """One line of evaluate()'s or popularity()'s figures, each ± its standard error."""
    hits = "recall@10" if "recall@10" in figures else "hit_rate@10"
    label = "Recall@10" if hits == "recall@10" else "HR@10"
    print("  {:<11} {} {:.4f} ± {:.4f}   NDCG@10 {:.4f} ± {:.4f}".format(
        name, label, figures[hits], figures[hits + "_se"], figures["ndcg@10"],
        figures["ndcg@10_se"]))


def main():
    args = parse_args()
    with open(args.config) as config_file:
        config = yaml.safe_load(config_file)
    model = config["model"]
    train = config.get("train", {})
    epochs = args.epochs or train.get("epochs", 20)
    batch_size = args.batch_size or train.get("batch_size", 256)
    seed = model.get("seed", 1) if args.seed is None else args.seed
    rng = numpy.random.default_rng(seed)  # the batch order
    torch.manual_seed(seed)  # the dense weights
    device = torch.device(args.device)

    data = ember.InteractionData(args.config, data_root=args.data_root)
    print(data.describe())
    # Each entity's id in each slot, by dense index: (entities, slots).
    user_ids = torch.stack([slot_ids(data.user_keys(s)) for s in range(data.user_slots)], 1)
    item_ids = torch.stack([slot_ids(data.item_keys(s)) for s in range(data.item_slots)], 1)
    pairs = tuple(torch.from_numpy(dense.astype(numpy.int64)) for dense in data.train_pairs())
    # Each item's log-probability of being a batch's positive, for the logQ correction.
    log_frequency = None
    if (train.get("sampling_correction", True) if args.sampling_correction is None
            else args.sampling_correction):
        counts = torch.from_numpy(data.item_train_counts().astype(numpy.float32))
        log_frequency = (counts.clamp(min=1) / data.num_train).log()

    with ember.LocalCluster(args.config, servers=args.servers) as cluster, \
            cluster.client() as client:
        towers = [Tower(client, train[tables], model["hidden"], model["output_dim"], device)
                  for tables in ("user_tables", "item_tables")]
        user_tower, item_tower = (tower.to(device) for tower in towers)
        optimizer = torch.optim.Adam(list(user_tower.parameters()) +
                                     list(item_tower.parameters()),
                                     lr=model.get("learning_rate", 1e-3))
        print("{} servers, device {}, {} epochs of batch {}, prefetch {}, logQ correction "
              "{}".format(args.servers, device, epochs, batch_size,
                          "on" if args.prefetch else "off",
                          "on" if log_frequency is not None else "off"))

        started = time.perf_counter()
        for epoch in range(1, epochs + 1):
            batches = epoch_batches(rng, pairs, user_ids, item_ids, log_frequency, batch_size)
            epoch_start = time.perf_counter()
            loss = train_epoch(user_tower, item_tower, batches, optimizer, model["temperature"],
                               args.prefetch)
            seconds = time.perf_counter() - epoch_start
            print("epoch {:3d}  loss {:.4f}  {:8.0f} samples/s".format(
                epoch, loss, len(pairs[0]) / seconds))
        print("trained in {:.1f} s".format(time.perf_counter() - started))

        user_vectors = encode(user_tower, user_ids)
        item_vectors = encode(item_tower, item_ids)

    print("leave-one-out, held-out item among {} sampled negatives:".format(
        config["data"]["interactions"].get("negatives", 99)))
    print_figures("two-tower", data.evaluate(user_vectors, item_vectors, k=10))
    print_figures("popularity", data.popularity(k=10))
    print("full catalogue ({} items):".format(data.num_items))
    print_figures("two-tower", data.evaluate(user_vectors, item_vectors, k=10, protocol="full"))
    print_figures("popularity", data.popularity(k=10, protocol="full"))


if __name__ == "__main__":
    main()
