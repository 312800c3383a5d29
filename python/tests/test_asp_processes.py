"""Two Python trainer processes push into one cluster at once (asp): no update is lost."""

import os
import subprocess
import sys
import textwrap

import numpy

from conftest import cluster_config, ember, table

PUSHES = 200
KEYS = 500


def test_two_trainer_processes_lose_no_update():
    # SGD with learning rate 1 on zero rows: every push of -1 adds exactly 1 to its rows.
    config = cluster_config([table("counts", dim=4, initializer={"kind": "zeros"},
                                   optimizer={"kind": "sgd", "learning_rate": 1.0})])  # asp is the default mode
    with ember.LocalCluster(config) as local:
        script = textwrap.dedent("""
            import sys
            import numpy, ember
            scheduler, key, scheduler_key, rank = sys.argv[1:5]
            rank = int(rank)
            with ember.Client(scheduler, key=key, scheduler_key=scheduler_key) as client:
                client.barrier("start", 2)
                keys = numpy.arange({keys}, dtype=numpy.uint64)
                minus_one = numpy.full(({keys}, 4), -1.0, numpy.float32)
                futures = []
                for step in range({pushes}):
                    # Half the pushes wait, half overlap (at most 8 in flight).
                    if step % 2:
                        client.push("counts", keys, minus_one)
                    else:
                        futures.append(client.push_async("counts", keys, minus_one))
                    if len(futures) == 8:
                        [future.result() for future in futures]
                        futures = []
                [future.result() for future in futures]
                client.barrier("done", 2)
        """).format(keys=KEYS, pushes=PUSHES)
        trainers = [subprocess.Popen([sys.executable, "-c", script, local.scheduler, local.key,
                                      local.scheduler_key, str(rank)], env=dict(os.environ))
                    for rank in range(2)]
        try:
            codes = [trainer.wait(timeout=300) for trainer in trainers]
        finally:
            for trainer in trainers:
                trainer.kill()
                trainer.wait()
        assert codes == [0, 0]
        with local.client() as client:
            rows = client.pull("counts", numpy.arange(KEYS))
        numpy.testing.assert_array_equal(rows, numpy.full((KEYS, 4), 2.0 * PUSHES, numpy.float32))
