"""LocalCluster: a scheduler and N parameter servers on this machine, each its own process, for
notebooks and tests. It runs `ember cluster --serve` and connects clients to it."""

import atexit
import json
import os
import shutil
import tempfile
import time
import weakref

from . import _ember
from ._config import config_path

_live_clusters = weakref.WeakSet()


def find_binary(binary=None):
    """The `ember` binary: `binary`, else $EMBER_BINARY, else the one this module was built beside
    (when it runs from the build folder), else the one installed with it (PREFIX/bin beside
    PREFIX/lib/python3/dist-packages), else `ember` on PATH."""
    module_dir = os.path.dirname(os.path.abspath(_ember.__file__))
    in_build_tree = module_dir == os.path.join(os.path.dirname(_ember.build_binary), "python",
                                               "ember")
    installed_beside = os.path.normpath(os.path.join(module_dir, *[os.pardir] * 4, "bin", "ember"))
    candidates = [binary, os.environ.get("EMBER_BINARY"),
                  _ember.build_binary if in_build_tree else None, installed_beside,
                  _ember.installed_binary, shutil.which("ember")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("cannot find the ember binary (tried {}); set EMBER_BINARY".format(
        ", ".join(c for c in candidates if c)))


class LocalCluster:
    """A local cluster: `ember cluster --serve` with the scheduler and servers of `config`.

    LocalCluster(config, servers=None, data_dir=None, overrides=None, binary=None,
                 start_timeout=60.0)

    `config` is a YAML path or a dict with the same keys (written to a file for the processes;
    its relative data paths resolve against the current directory). `servers` overrides
    cluster.servers, `overrides` is a dict of further KEY=VALUE settings (as `--set`), and
    `data_dir` gives the servers RocksDB folders (needed with a memory budget).

    It is a context manager: leaving the block (or stop(), or the interpreter's exit) stops every
    process by PID. Should the interpreter die instead, the kernel stops them, since each is
    tied to its parent; so start a cluster from a thread that outlives it (the main thread).
    The processes' output goes to `log_path`.
    """

    def __init__(self, config, servers=None, data_dir=None, overrides=None, binary=None,
                 start_timeout=60.0):
        self._binary = find_binary(binary)
        self._dir = tempfile.mkdtemp(prefix="ember_local_cluster_")
        self._process = None
        self.info = None
        try:
            self._start(config, servers, data_dir, overrides or {}, start_timeout)
        except BaseException:
            self.stop()
            raise
        _live_clusters.add(self)

    def _start(self, config, servers, data_dir, overrides, start_timeout):
        config_file, data_root = config_path(config, self._dir)
        info_path = os.path.join(self._dir, "cluster.json")
        self.log_path = os.path.join(self._dir, "cluster.log")
        argv = [self._binary, "cluster", "--serve", "--config", config_file,
                "--info-file", info_path]
        if data_root:
            argv += ["--data-root", data_root]
        if servers is not None:
            argv += ["--set", "cluster.servers={}".format(int(servers))]
        for key, value in overrides.items():
            if isinstance(value, bool):
                value = "true" if value else "false"
            argv += ["--set", "{}={}".format(key, value)]
        if data_dir is not None:
            argv += ["--data-dir", os.path.abspath(os.fspath(data_dir))]
        self._process = _ember._ChildProcess(argv, self.log_path)
        if not self._process.started:
            raise _ember.EmberError("could not start {}".format(self._binary))
        deadline = time.monotonic() + start_timeout
        while not os.path.exists(info_path):
            code = self._process.wait(timeout=0.05)
            if code is not None:
                raise _ember.EmberError("the local cluster exited with code {} before it "
                                        "served:\n{}".format(code, self.log_tail()))
            if time.monotonic() > deadline:
                raise _ember.DeadlineExceededError(
                    "the local cluster did not serve within {} s:\n{}".format(
                        start_timeout, self.log_tail()))
        with open(info_path) as info:
            self.info = json.load(info)

    @property
    def scheduler(self):
        """The scheduler's endpoint."""
        return self.info["scheduler"]

    @property
    def key(self):
        """The admin key file clients of this cluster connect with."""
        return self.info["key"]

    @property
    def scheduler_key(self):
        return self.info["scheduler_key"]

    @property
    def pid(self):
        """The PID of `ember cluster` (the scheduler and servers are its children)."""
        return self._process.pid if self._process else None

    def client(self, name=None, **options):
        """A Client of this cluster (the admin key: it may also checkpoint and restore)."""
        from . import Client
        return Client(self.scheduler, key=self.key, scheduler_key=self.scheduler_key, name=name,
                      **options)

    def running(self):
        return self._process is not None and self._process.running()

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace=10.0):
        """Stops the scheduler and servers (SIGTERM, then SIGKILL after `grace` s) and removes the
        cluster's keys. Safe to call more than once."""
        if self._process is not None:
            self._process.stop(grace)
            self._process = None
        if self._dir and os.path.isdir(self._dir):
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        try:
            self.stop()
        except Exception:  # at interpreter shutdown the modules may be gone; atexit stopped it
            pass


@atexit.register
def _stop_live_clusters():
    for cluster in list(_live_clusters):
        cluster.stop()
