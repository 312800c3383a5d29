"""ember.launch: starting trainer processes from Python: a torchrun command line that works with
every torch ember supports, and a bounded run of a command in a process group of its own (for
tests, benchmarks and scripts that start training processes)."""

import os
import signal
import socket
import subprocess
import sys

__all__ = ["free_port", "run_bounded", "torchrun_argv"]


def free_port(host="127.0.0.1"):
    """A TCP port free on `host` now (for torchrun's --master_port)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def torchrun_argv(script, args=(), ranks=2, port=None, host="127.0.0.1"):
    """The command that runs `script` with `args` on `ranks` local ranks under torchrun (one
    node, rendezvous at host:port, a free port by default). --redirects/--tee 1: torchrun's
    default of 0 fails under Python 3.11 with torch 1.13, whose Std flag enum has no member 0 to
    iterate there."""
    return [sys.executable, "-m", "torch.distributed.run", "--redirects=1", "--tee=1",
            "--nproc_per_node={}".format(int(ranks)), "--master_addr={}".format(host),
            "--master_port={}".format(port or free_port(host)), str(script)] + [str(a)
                                                                                 for a in args]


def run_bounded(argv, log_path, timeout, env=None, cwd=None):
    """Runs `argv` in a process group of its own with its output in `log_path`; past `timeout`
    seconds the whole group is killed. Returns the exit code, or a text saying it was killed."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                   start_new_session=True)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return "killed after {} s".format(timeout)
