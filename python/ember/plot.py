"""ember plot: PNG figures of training runs and benchmarks (matplotlib).

    ember plot RUN.jsonl... [BENCH.json...] --out DIR [--labels A,B,...]
    python3 -m ember.plot ...                       (the same, from Python)

Run logs (`ember train --log-jsonl`, `ember cluster --log-jsonl`) give
  loss.png        loss over steps, one line per run;
  throughput.png  samples/s over steps, one line per run;
  step_time.png   each run's time per step split into pull, compute, push and waiting.
Results of `ember bench --json` give
  bench.png       keys/s of ember's pulls and pushes next to raw ZeroMQ moving the same bytes.
Several runs on one figure compare modes, server counts or machines; labels default to the
files' names.
"""

import argparse
import json
import os
import sys


def read_run(path):
    """The windows and summary of a run log."""
    windows, summary = [], None
    with open(path) as log:
        for number, line in enumerate(log, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError("{}:{}: not a JSON line ({})".format(path, number, error))
            if record.get("kind") == "window":
                windows.append(record)
            elif record.get("kind") == "summary":
                summary = record
    return windows, summary


def read_input(path):
    """("run", (windows, summary)) for a run log, ("bench", figures) for `ember bench --json`."""
    with open(path) as source:
        text = source.read()
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, dict) and "pull" in whole and "push" in whole:
        return "bench", whole
    windows, summary = read_run(path)
    if not windows and summary is None:
        raise ValueError("{}: neither a run log (--log-jsonl) nor `ember bench --json` "
                         "output".format(path))
    return "run", (windows, summary)


def _series(windows, field):
    steps = [w["step"] for w in windows if w.get(field) is not None]
    values = [w[field] for w in windows if w.get(field) is not None]
    return steps, values


def plot_runs(pyplot, runs, out):
    """Writes loss.png, throughput.png and step_time.png into `out` for `runs`, a list of
    (label, (windows, summary)); returns the names written."""
    written = []
    for field, name, ylabel, title in (
            ("loss", "loss.png", "loss", "Training loss"),
            ("samples_per_second", "throughput.png", "samples/s", "Throughput")):
        figure, axes = pyplot.subplots(figsize=(7, 4))
        for label, (windows, _) in runs:
            steps, values = _series(windows, field)
            axes.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3,
                      label=label)
        axes.set_xlabel("step")
        axes.set_ylabel(ylabel)
        axes.set_title(title)
        axes.grid(alpha=0.3)
        axes.legend()
        figure.tight_layout()
        figure.savefig(os.path.join(out, name), dpi=120)
        pyplot.close(figure)
        written.append(name)

    parts = (("pull_ms", "pull"), ("compute_ms", "compute"), ("push_ms", "push"),
             ("wait_ms", "other trainers"))
    figure, all_axes = pyplot.subplots(len(runs), 1, figsize=(7, 2.6 * len(runs)), squeeze=False,
                                       sharex=True)
    for axes, (label, (windows, _)) in zip(all_axes[:, 0], runs):
        steps = [w["step"] for w in windows]
        axes.stackplot(steps, *[[w.get(field) or 0 for w in windows] for field, _ in parts],
                       labels=[part for _, part in parts], alpha=0.85)
        axes.set_ylabel("ms per step")
        axes.set_title("Step time: " + label)
        axes.grid(alpha=0.3)
    all_axes[0, 0].legend(loc="upper right", fontsize="small")
    all_axes[-1, 0].set_xlabel("step")
    figure.tight_layout()
    figure.savefig(os.path.join(out, "step_time.png"), dpi=120)
    pyplot.close(figure)
    written.append("step_time.png")
    return written


def plot_benches(pyplot, benches, out):
    """Writes bench.png into `out`: each of `benches` (label, figures) as keys/s of pull and push
    against raw ZeroMQ's, with the ratio; returns the names written."""
    figure, axes = pyplot.subplots(figsize=(7, 4))
    bars, names = [], []
    for label, figures in benches:
        for operation in ("pull", "push"):
            names.append("{}\n{}".format(label, operation) if len(benches) > 1 else operation)
            bars.append((figures[operation].get("keys_per_second") or 0,
                         figures[operation].get("raw_keys_per_second") or 0,
                         figures[operation].get("ratio_to_raw")))
    positions = range(len(bars))
    width = 0.38
    axes.bar([p - width / 2 for p in positions], [ember for ember, _, _ in bars], width,
             label="ember")
    axes.bar([p + width / 2 for p in positions], [raw for _, raw, _ in bars], width,
             label="raw ZeroMQ, same bytes")
    for position, (ember, raw, ratio) in zip(positions, bars):
        # The bench's own ratio is the median of its rounds' ratios, measured side by side.
        if ratio is None and raw:
            ratio = ember / raw
        if ratio is not None:
            axes.annotate("{:.2f}x".format(ratio), (position - width / 2, ember), ha="center",
                          va="bottom", fontsize="small")
    axes.set_xticks(list(positions))
    axes.set_xticklabels(names)
    axes.set_ylabel("keys/s")
    axes.set_title("ember against raw ZeroMQ")
    axes.grid(axis="y", alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(os.path.join(out, "bench.png"), dpi=120)
    pyplot.close(figure)
    return ["bench.png"]


def main(argv=None):
    """`ember plot`: reads the run logs and bench JSON files named in `argv` and writes PNGs."""
    parser = argparse.ArgumentParser(
        prog="ember plot", description="PNG figures of run logs (--log-jsonl) and of "
        "`ember bench --json` results.")
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the PNGs go")
    parser.add_argument("--labels", help="comma-separated, one per FILE (default: file names)")
    args = parser.parse_args(argv)
    labels = args.labels.split(",") if args.labels else [
        os.path.splitext(os.path.basename(path))[0] for path in args.files]
    if len(labels) != len(args.files):
        parser.error("--labels: {} labels for {} files".format(len(labels), len(args.files)))
    try:
        inputs = [(label, read_input(path)) for label, path in zip(labels, args.files)]
    except (OSError, ValueError) as error:
        print("ember plot: {}".format(error), file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        print("ember plot: needs matplotlib (Debian: python3-matplotlib)", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    runs = [(label, data) for label, (kind, data) in inputs if kind == "run"]
    benches = [(label, data) for label, (kind, data) in inputs if kind == "bench"]
    written = []
    if runs:
        written += plot_runs(pyplot, runs, args.out)
    if benches:
        written += plot_benches(pyplot, benches, args.out)
    for name in written:
        print(os.path.join(args.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
