"""The MovieLens two-tower in Python against ember's C++ trainer, and against plain PyTorch.

Three measurements, each printed as figures (nothing is asserted on a clock):

1. cpp-vs-python: `ember cluster` (the C++ trainer, the config as shipped) against
   python/examples/movielens_torchrun.py under torchrun with 2 ranks in bsp, on the same config,
   data and evaluation, alternated round by round: samples/s, HR@10 and NDCG@10, and CPU seconds
   per sample (every process of the run, servers included, start-up and evaluation too).
2. ember-vs-torch: the example as one process with its rows on ember's servers against the same
   model with local nn.EmbeddingBag tables and torch.optim.Adagrad (--embeddings torch),
   alternated: samples/s, CPU seconds per sample (the whole run's, and the training loop's
   trainer process alone), HR@10. With --profile, one more run of each under cProfile, whose top
   functions say where the time goes.
3. requests: pull and push requests per step that the servers answer, from Client.stats(), for
   one ember.torch.Embedding per table against one EmbeddingBagCollection for all seven tables.

Each figure is the median over --rounds rounds. With the ember package importable (PYTHONPATH)
and `ember` on PATH (or EMBER_BINARY):

    python3 python/benchmarks/torch_vs_cpp.py --data-root /path/to/data            # 20 epochs
    python3 python/benchmarks/torch_vs_cpp.py --data-root /path/to/data --epochs 2 --rounds 1
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

import ember.launch

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, os.pardir, "examples")
EXAMPLE = os.path.normpath(os.path.join(EXAMPLES, "movielens_torchrun.py"))
DEFAULT_CONFIG = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "configs",
                                               "movielens-100k.yaml"))
PARTS = ("cpp-vs-python", "ember-vs-torch", "requests")


def parse_args():
    """The command line (see --help)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", default=os.environ.get("EMBER_DATA_ROOT"),
                        help="folder holding ml-100k/ (default: $EMBER_DATA_ROOT)")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="default: %(default)s")
    parser.add_argument("--epochs", type=int, default=None,
                        help="epochs of cpp-vs-python (default: the config's)")
    parser.add_argument("--bag-epochs", type=int, default=None,
                        help="epochs of ember-vs-torch (default: --epochs)")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds per part")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated, of: " + ", ".join(PARTS))
    parser.add_argument("--profile", action="store_true",
                        help="ember-vs-torch: one more cProfile'd run of each, top functions")
    parser.add_argument("--binary", default=os.environ.get("EMBER_BINARY") or shutil.which(
        "ember"), help="the ember binary (default: $EMBER_BINARY, else ember on PATH)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", default=None, help="also write every run's figures here")
    args = parser.parse_args()
    if not args.data_root:
        parser.error("--data-root (or EMBER_DATA_ROOT) is required")
    return args


def children_cpu():
    """CPU seconds of every child process waited for so far (and of their waited children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_measured(argv, timeout, log_path):
    """Runs argv in its own process group (killed on timeout); (wall s, CPU s of the tree)."""
    cpu, started = children_cpu(), time.perf_counter()
    code = ember.launch.run_bounded(argv, log_path, timeout)
    if code != 0:
        with open(log_path) as log:
            tail = log.read()[-3000:]
        raise RuntimeError("{} ended with {}:\n{}".format(" ".join(argv[:4]), code, tail))
    return time.perf_counter() - started, children_cpu() - cpu


def run_cpp(args, epochs, work):
    """One `ember cluster` run of the config; its figures."""
    summary = os.path.join(work, "cpp.json")
    argv = [args.binary, "cluster", "--config", args.config, "--data-root", args.data_root,
            "--epochs", str(epochs), "--summary-json", summary]
    wall, cpu = run_measured(argv, args.timeout, os.path.join(work, "cpp.log"))
    with open(summary) as source:
        figures = json.load(source)
    return {"samples_per_second": figures["samples_per_second"],
            "hr@10": figures["eval"]["hit_rate"], "ndcg@10": figures["eval"]["ndcg"],
            "cpu_per_sample": cpu / figures["samples"], "wall_seconds": wall,
            "samples": figures["samples"]}


def run_python(args, epochs, work, ranks=2, embeddings="ember", profile=None):
    """One run of the example (under torchrun with `ranks` ranks, else as one process)."""
    results = os.path.join(work, "python.json")
    example = [EXAMPLE, "--config", args.config, "--data-root", args.data_root, "--epochs",
               str(epochs), "--results", results, "--embeddings", embeddings]
    if profile:
        example += ["--profile", profile]
    if ranks > 1:
        argv = ember.launch.torchrun_argv(example[0], example[1:], ranks=ranks)
    else:
        argv = [sys.executable] + example
    wall, cpu = run_measured(argv, args.timeout, os.path.join(work, "python.log"))
    with open(results) as source:
        figures = json.load(source)
    figures.update({"cpu_per_sample": cpu / figures["samples"], "wall_seconds": wall,
                    "loop_cpu_per_sample": figures["trainer_cpu_seconds"] / figures["samples"]})
    return figures


def median(runs, key):
    """The median of one figure over runs."""
    return statistics.median(run[key] for run in runs)


def report(title, sides, keys):
    """Prints each side's medians of `keys` and the first two sides' ratio."""
    print("\n" + title)
    names = list(sides)
    for key in keys:
        values = [median(sides[name], key) for name in names]
        line = "  {:<22}".format(key) + "".join(
            "  {:>10}: {:<12.6g}".format(name, value) for name, value in zip(names, values))
        if len(values) == 2 and values[1]:
            line += "  ratio {:.3g}".format(values[0] / values[1])
        print(line, flush=True)


def cpp_vs_python(args, work, record):
    """Part 1, alternated: C++ trainer, then the example under torchrun."""
    sides = {"cpp": [], "python": []}
    for round_number in range(1, args.rounds + 1):
        sides["cpp"].append(run_cpp(args, args.epochs, work))
        sides["python"].append(run_python(args, args.epochs, work))
        print("round {}: cpp {:.0f} samples/s HR@10 {:.4f}; python {:.0f} samples/s HR@10 "
              "{:.4f}".format(round_number, sides["cpp"][-1]["samples_per_second"],
                              sides["cpp"][-1]["hr@10"],
                              sides["python"][-1]["samples_per_second"],
                              sides["python"][-1]["hr@10"]), flush=True)
    record["cpp-vs-python"] = sides
    report("C++ trainer vs Python (torchrun, 2 ranks, bsp), {} epochs, medians of {}".format(
        args.epochs, args.rounds), sides,
        ["samples_per_second", "hr@10", "ndcg@10", "cpu_per_sample", "wall_seconds"])


def ember_vs_torch(args, work, record):
    """Part 2, alternated: the example in one process, ember rows then local EmbeddingBags."""
    sides = {"ember": [], "torch": []}
    for round_number in range(1, args.rounds + 1):
        for name in sides:
            sides[name].append(run_python(args, args.bag_epochs, work, ranks=1, embeddings=name))
        print("round {}: ember {:.0f} samples/s, torch {:.0f} samples/s".format(
            round_number, sides["ember"][-1]["samples_per_second"],
            sides["torch"][-1]["samples_per_second"]), flush=True)
    record["ember-vs-torch"] = sides
    report("ember EmbeddingBagCollection vs nn.EmbeddingBag (one process), {} epochs, medians "
           "of {}".format(args.bag_epochs, args.rounds), sides,
           ["samples_per_second", "cpu_per_sample", "loop_cpu_per_sample", "hr@10",
            "wall_seconds"])
    if args.profile:
        for name in sides:
            path = os.path.join(work, "profile-{}.txt".format(name))
            run_python(args, min(args.bag_epochs, 2), work, ranks=1, embeddings=name,
                       profile=path)
            with open(path) as source:
                text = source.read()
            print("\ncProfile of the training loop, {} (top by cumulative time):".format(name))
            print("\n".join(text.splitlines()[:45]))
            record.setdefault("profiles", {})[name] = text


def load_example():
    """The example's module (its features, model and loss)."""
    sys.path.insert(0, os.path.normpath(EXAMPLES))
    import movielens_torchrun
    return movielens_torchrun


def per_table_bags(client, bag_configs):
    """The bags of `bag_configs` with one ember.torch.Embedding per table (one pull each per
    step), pooled by torch's embedding_bag: what the collection replaces."""
    import torch

    import ember.torch

    class PerTableBags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.configs = bag_configs
            self.tables = torch.nn.ModuleList(
                ember.torch.Embedding(client, bag.table, unsigned_ids=True) for bag in bag_configs)

        def forward(self, jagged):
            pooled = []
            for bag, table in zip(self.configs, self.tables):
                (ids, _), offsets, _ = jagged.feature(bag.features[0])
                rows = table(ids)
                pooled.append(torch.nn.functional.embedding_bag(
                    torch.arange(len(ids)), rows, offsets, mode=bag.pooling))
            return ember.torch.PooledEmbeddings([bag.features[0] for bag in self.configs],
                                                [p.shape[1] for p in pooled],
                                                torch.cat(pooled, dim=1))

        def flush(self):
            for table in self.tables:
                table.flush()

    return PerTableBags()


def requests_per_step(args, record, steps=20):
    """Part 3: pull and push requests per step, per-table Embeddings against one collection."""
    import numpy
    import yaml

    import ember
    example = load_example()

    with open(args.config) as source:
        config = yaml.safe_load(source)
    features = example.MovieLensFeatures(ember.InteractionData(args.config, args.data_root))
    order = numpy.random.default_rng(1).permutation(features.num_train)
    counts = {}
    with ember.LocalCluster(args.config) as cluster, cluster.client() as client:
        bags = {"Embedding per table": per_table_bags(client, example.bag_configs(config)),
                "EmbeddingBagCollection": example.EmbeddingBagCollection(
                    client, example.bag_configs(config), unsigned_ids=True)}
        for name, module in bags.items():
            model = example.TwoTower(module, config["model"]["embedding_dim"],
                                     config["model"]["hidden"], config["model"]["output_dim"])
            before = client.stats()
            started = time.perf_counter()
            for step in range(steps):
                batch, log_frequency = features.train_batch(order[step * 256:(step + 1) * 256])
                users, items = model(batch)
                example.global_in_batch_loss(users, items, log_frequency,
                                             config["model"]["temperature"], 0, 1).backward()
            module.flush()
            seconds = time.perf_counter() - started
            after = client.stats()
            counts[name] = {kind: sum(a[kind] - b[kind] for a, b in zip(after, before)) / steps
                            for kind in ("pull_requests", "push_requests")}
            counts[name]["servers"] = len(after)
            counts[name]["steps_per_second"] = steps / seconds
    record["requests"] = counts
    print("\nRequests per step the servers answered ({} steps of 256, {} servers, 7 tables):"
          .format(steps, counts["EmbeddingBagCollection"]["servers"]))
    for name, figures in counts.items():
        print("  {:<24} pull {:5.1f}  push {:5.1f}  ({:.1f} steps/s)".format(
            name, figures["pull_requests"], figures["push_requests"],
            figures["steps_per_second"]))


def main():
    """Runs the chosen parts and prints their figures."""
    args = parse_args()
    args.epochs = args.epochs or 20
    args.bag_epochs = args.bag_epochs or args.epochs
    parts = args.parts.split(",")
    record = {"args": vars(args)}
    with tempfile.TemporaryDirectory(prefix="torch-vs-cpp-") as work:
        if "cpp-vs-python" in parts:
            cpp_vs_python(args, work, record)
        if "ember-vs-torch" in parts:
            ember_vs_torch(args, work, record)
        if "requests" in parts:
            requests_per_step(args, record)
    if args.json:
        with open(args.json, "w") as out:
            json.dump(record, out, indent=1)


if __name__ == "__main__":
    main()
