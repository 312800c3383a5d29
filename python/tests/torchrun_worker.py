"""One rank of the torchrun tests in test_torch_dist.py: trains an ember.torch.Embedding under
ember.torch.TrainingRun and writes what the test compares into the output folder.

Usage: torchrun --nproc_per_node=N torchrun_worker.py CONFIG.json OUT_DIR STEPS LOSS
LOSS is "mse" (rows change the gradient: exact only when updates are combined in order, as bsp
does) or "linear" (a constant gradient: any order of updates ends the same).
"""

import json
import os
import sys

import numpy
import torch

import ember.torch

VOCABULARY = 20
BATCH = 8  # the whole step's batch, split evenly over the ranks


def batch(step):
    """The step's whole batch: ids (BATCH, 2) and targets (BATCH,), the same on every rank."""
    generator = torch.Generator().manual_seed(1000 + step)
    return (torch.randint(0, VOCABULARY, (BATCH, 2), generator=generator),
            torch.randn(BATCH, generator=generator))


def main(config_path, out_dir, steps, loss_kind):
    torch.distributed.init_process_group("gloo")
    with open(config_path) as source:
        config = json.load(source)
    with ember.torch.TrainingRun(config) as run:
        layer = ember.torch.Embedding(run.client, "rows")
        share = BATCH // run.world_size
        cuts = []
        for step in range(steps):
            ids, targets = batch(step)
            mine = slice(run.rank * share, (run.rank + 1) * share)
            values = layer(ids[mine]).sum(dim=(1, 2))
            if loss_kind == "mse":
                loss = torch.nn.functional.mse_loss(values, targets[mine])
            else:
                loss = values.mean()
            loss.backward()
            cut = run.end_step(state={"next_step": step + 1})
            if cut is not None:
                cuts.append(cut)
        torch.distributed.barrier()  # every rank's last step applied before the rows are read
        rows = run.client.pull("rows", numpy.arange(VOCABULARY))
        result = {"rank": run.rank, "world_size": run.world_size, "sync": run.sync,
                  "clock": run.client.clock, "cuts": cuts}
        numpy.save(os.path.join(out_dir, "rows-{}.npy".format(run.rank)), rows)
        with open(os.path.join(out_dir, "rank-{}.json".format(run.rank)), "w") as out:
            json.dump(result, out)
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
