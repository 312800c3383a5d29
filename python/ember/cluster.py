"""LocalCluster: a scheduler and N parameter servers on this machine, each its own process, for
notebooks and tests. It runs `ember cluster --serve` and connects clients to it."""

import atexit
import fcntl
import glob
import json
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref

from . import _ember
from ._config import config_path

_live_clusters = weakref.WeakSet()
_SCRATCH_PREFIX = "ember_local_cluster_"
_OWNER_LOCK = "owner.lock"


def _remove_abandoned_scratch():
    """Removes the scratch folders of local clusters whose process died without cleaning up
    (SIGKILL): each live cluster holds an exclusive lock on its folder's owner.lock, which the
    kernel releases when its process dies. Folders without that file, and folders made in the last
    minute (whose cluster may not hold its lock yet), are left alone."""
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), _SCRATCH_PREFIX + "*")):
        try:
            if time.time() - os.stat(folder).st_mtime < 60:
                continue
            lock = os.open(os.path.join(folder, _OWNER_LOCK), os.O_RDONLY)
        except OSError:  # gone meanwhile, or not a cluster's folder
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # held by a live cluster
            pass
        finally:
            os.close(lock)


def _stop_on_sigterm():
    """SIGTERM stops the live clusters (removing their scratch folders) and then ends this
    process as SIGTERM would have; installed once, from the main thread, only where SIGTERM still
    has its default action."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum, frame):
        """Stops the clusters, then ends the process by SIGTERM's default action."""
        _stop_live_clusters()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)


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

    It is a context manager: leaving the block (or stop(), or the interpreter's exit, or SIGTERM
    where nothing else handles it) stops every process by PID and removes the cluster's scratch
    folder. Should the interpreter die instead, the kernel stops them, since each is tied to its
    parent; so start a cluster from a thread that outlives it (the main thread). A scratch folder
    left by a killed interpreter is removed when a later LocalCluster starts, once it is a minute
    old. The processes' output goes to `log_path`.

    The clients made by client() are closed when the cluster stops, or within a fraction of a
    second when its processes exit on their own: their calls then fail at once with EmberError
    ("the client is closed: ...") instead of waiting for their timeout.
    """

    def __init__(self, config, servers=None, data_dir=None, overrides=None, binary=None,
                 start_timeout=60.0):
        self._process = None
        self._dir = None
        self._owner_lock = None
        self._clients = weakref.WeakSet()
        self._stopping = threading.Event()
        self._process_lock = threading.Lock()  # the watcher's look at the process against stop()
        self.info = None
        self._binary = find_binary(binary)
        _remove_abandoned_scratch()
        _stop_on_sigterm()
        self._dir = tempfile.mkdtemp(prefix=_SCRATCH_PREFIX)
        self._owner_lock = open(os.path.join(self._dir, _OWNER_LOCK), "w")
        fcntl.flock(self._owner_lock, fcntl.LOCK_EX)
        try:
            self._start(config, servers, data_dir, overrides or {}, start_timeout)
        except BaseException:
            self.stop()
            raise
        _live_clusters.add(self)
        threading.Thread(target=_watch, args=(weakref.ref(self), self._process), daemon=True,
                         name="ember-cluster-watch").start()

    def _close_clients(self, leave, reason):
        for client in list(self._clients):
            client.close(leave=leave, reason=reason)

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
        """The scheduler's public key, which clients of this cluster check it against."""
        return self.info["scheduler_key"]

    @property
    def pid(self):
        """The PID of `ember cluster` (the scheduler and servers are its children)."""
        return self._process.pid if self._process else None

    def client(self, name=None, **options):
        """A Client of this cluster (the admin key: it may also checkpoint and restore)."""
        from . import Client
        if self._process is None:
            raise _ember.EmberError("the local cluster is stopped")
        client = Client(self.scheduler, key=self.key, scheduler_key=self.scheduler_key, name=name,
                        **options)
        self._clients.add(client)
        return client

    def reader(self, name=None, **options):
        """A read-only Client of this cluster (the reader key: lookups, tables, status only)."""
        from . import Client
        if self._process is None:
            raise _ember.EmberError("the local cluster is stopped")
        client = Client(self.scheduler, key=self.info["reader_key"],
                        scheduler_key=self.scheduler_key, name=name, read_only=True, **options)
        self._clients.add(client)
        return client

    def running(self):
        """Whether the cluster's processes still run."""
        return self._process is not None and self._process.running()

    def log_tail(self, lines=30):
        """The last `lines` lines of the processes' output (empty once the cluster stopped)."""
        try:
            with open(self.log_path, errors="replace") as log:
                return "".join(log.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self, grace=10.0):
        """Stops the scheduler and servers (SIGTERM, then SIGKILL after `grace` s) and removes the
        cluster's keys and scratch folder. Its clients are closed first. Safe to call more than
        once."""
        self._stopping.set()
        if self._process is not None:
            self._close_clients(leave=self._process.running(),
                                reason="its local cluster was stopped")
            with self._process_lock:
                self._process.stop(grace)
            self._process = None
        if self._dir and os.path.isdir(self._dir):
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None
        if self._owner_lock is not None:
            self._owner_lock.close()
            self._owner_lock = None

    def __enter__(self):
        """The cluster itself."""
        return self

    def __exit__(self, *exc):
        """Stops the cluster."""
        self.stop()

    def __del__(self):
        """Stops the cluster if nothing did before."""
        try:
            self.stop()
        except Exception:  # at interpreter shutdown the modules may be gone; atexit stopped it
            pass


def _watch(cluster_ref, process):
    """Closes a cluster's clients (without leaving: nobody is there) as soon as its processes
    exit without stop(); ends when the cluster stops or is gone."""
    while True:
        cluster = cluster_ref()
        if cluster is None:
            return
        stopping, lock = cluster._stopping, cluster._process_lock
        del cluster  # no reference held while waiting: a dropped cluster can be collected
        if stopping.wait(0.1):
            return
        with lock:
            if stopping.is_set():
                return
            exited = not process.running()
        if exited:
            cluster = cluster_ref()
            if cluster is not None:
                cluster._close_clients(leave=False, reason="its local cluster exited (code {}; "
                                       "see {})".format(process.exit_code, cluster.log_path))
            return


@atexit.register
def _stop_live_clusters():
    for cluster in list(_live_clusters):
        cluster.stop()
