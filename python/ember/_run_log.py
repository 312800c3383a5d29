"""ember.RunLog: the run log and the trainer metrics of `ember train` for a Python training loop.

    with ember.RunLog("run.jsonl", metrics_bind="127.0.0.1:9410", steps=1000, batch_size=256,
                      client=client, modules=[model]) as log:
        for step, batch in enumerate(loader, 1):
            with log.phase("compute"):
                loss = train_step(batch)
            log.step(step, loss=loss.item())

The file holds the records `ember train --log-jsonl` writes, with the same field names and units,
one JSON object a line, each flushed as written: {"kind": "window", ...} as each progress window
ends (every `log_every` steps, at step `steps`, and the partial one close() finds), then
{"kind": "summary", ...} at close(). So `ember plot` draws a Python run beside a C++ one. With
`metrics_bind`, the C++ trainer's Prometheus families are served at http://HOST:PORT/metrics
(ember._trainer_metrics).
"""

import collections
import contextlib
import json
import math
import numbers
import os
import sys
import time
import weakref

from . import _ember
from ._trainer_metrics import (PHASES, MetricsServer, TrainerMetrics, offset_address,
                               parse_metrics_address)

__all__ = ["RunLog"]

_DEFAULT_LOG_EVERY = 20  # train.log_every's default in ember train
_FIGURES = ("loss", "pull_ms", "compute_ms", "push_ms", "wait_ms", "device_ms", "rows")
_STAT = "stat:"  # prefix of the module counters among a window's sums
# Server figures of the summary that the Python client's stats() has, in the C++ record's order.
_TABLE_FIGURES = ("rows", "bytes", "resident_rows", "disk_bytes")
_SERVER_FIGURES = ("keys_pulled", "keys_pushed", "errors")
# The summary's own fields, which close()'s keyword arguments may not replace.
_SUMMARY_FIELDS = ("kind", "steps", "samples", "seconds", "samples_per_second",
                   "wait_ms_per_step", "backend", "loss_start", "loss_end", "servers", "modules",
                   "eval")


def _load_config(config):
    """(train section, metrics.trainers) of a config given as a YAML path or a dict."""
    if config is None:
        return {}, None
    if isinstance(config, (str, os.PathLike)):
        try:
            import yaml
        except ImportError:
            raise ImportError("RunLog(config=<path>) reads YAML with PyYAML (Debian: "
                              "python3-yaml); pass the config as a dict instead") from None
        with open(config) as source:
            config = yaml.safe_load(source) or {}
    if not isinstance(config, dict):
        raise TypeError("RunLog: config must be a YAML path or a dict, got {}".format(
            type(config).__name__))
    train = config.get("train") or {}
    metrics = config.get("metrics") or {}
    if not isinstance(train, dict) or not isinstance(metrics, dict):
        raise _ember.InvalidArgumentError("RunLog: the config's train and metrics sections must "
                                          "be mappings")
    return train, metrics.get("trainers")


def _count(value, what, minimum=0):
    """`value` as an int >= minimum, or None for None; InvalidArgumentError naming `what`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _ember.InvalidArgumentError("RunLog: {} must be an integer >= {}, got {!r}".format(
            what, minimum, value))
    return int(value)


def _figure(value, what):
    """`value` (a number, a numpy scalar or a one-element tensor) as a float, None for None."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError("RunLog.step: {} must be a number, got {!r}".format(what, value)) from None


def _json_ready(value):
    """`value` with non-finite numbers as null (as ember train writes them) and numpy numbers as
    Python's, so that every line parses as JSON."""
    if isinstance(value, dict):
        return {str(key): _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    return value


def _stat_sources(modules):
    """The objects among `modules` (and their submodules, for torch modules) that keep an ember
    `stats` Counter; TypeError naming an entry that has none."""
    if modules is None:
        return []
    if not isinstance(modules, (list, tuple)):
        modules = [modules]
    sources = []
    for entry in modules:
        found = [entry] if isinstance(getattr(entry, "stats", None), collections.Counter) else []
        if callable(getattr(entry, "modules", None)):
            found = [module for module in entry.modules()
                     if isinstance(getattr(module, "stats", None), collections.Counter)]
        if not found:
            raise TypeError("RunLog: modules: {} keeps no ember stats (expected ember.torch "
                            "modules, a model holding some, or a ServerOptimizer)".format(
                                type(entry).__name__))
        sources.extend(found)
    return sources


class _Window:
    """The figures of the steps of one progress window so far."""

    def __init__(self, start):
        self.start = start
        self.first_step = None
        self.last_step = None
        self.steps = 0
        self.sums = collections.Counter()   # figure -> sum over the steps that gave it
        self.given = collections.Counter()  # figure -> steps that gave it

    def add(self, step, figures):
        """One more step: `figures` maps a figure to its value (None: not given)."""
        if self.first_step is None:
            self.first_step = step
        self.last_step = step
        self.steps += 1
        for name, value in figures.items():
            if value is not None:
                self.sums[name] += value
                self.given[name] += 1

    def mean(self, name):
        """The mean over the steps that gave `name`; None when none did."""
        return self.sums[name] / self.given[name] if self.given[name] else None

    def total(self, name):
        """The sum over the steps that gave `name`; None when none did."""
        return self.sums[name] if self.given[name] else None


class RunLog:
    """RunLog(path=None, metrics_bind=None, config=None, *, steps=None, batch_size=None,
              log_every=None, rank=0, backend="python", client=None, modules=None)

    The run log and trainer metrics of `ember train` (--log-jsonl, --metrics-bind) for a Python
    training loop, which calls step() once per step and close() at the end (or uses the log as a
    context manager).

    - `path`: the JSON-lines file, created or truncated (None: records are only kept in
      `windows` and `summary`).
    - `metrics_bind`: "HOST:PORT" to serve the trainer's Prometheus metrics on (port 0: a free
      one; `port` and `url` say which). Anything else is an InvalidArgumentError naming it; an
      address that cannot be bound, UnavailableError.
    - `config`: a job config (YAML path or dict) as `ember train` reads it: train.steps,
      train.batch_size and train.log_every give the defaults of `steps`, `batch_size` and
      `log_every`, and metrics.trainers, moved on by `rank` ports, that of `metrics_bind`.
    - `steps`: the run's steps, for the records' "steps" and "eta_s" (None: unknown, null).
    - `batch_size`: samples a step when step() gets no `samples`.
    - `log_every`: steps a progress window (default 20, as ember train; 0: one window at the end).
    - `rank`: the trainer's rank (ember_trainer_rank); `backend`: the summary's "backend".
    - `client`: an ember.Client whose servers' figures close() writes into the summary.
    - `modules`: ember.torch modules (or a model holding some, or a ServerOptimizer) whose
      `stats` counters are logged at every step from now on (see step()).

    The clock of the first window and of the summary's "seconds" starts when the log is made.
    """

    def __init__(self, path=None, metrics_bind=None, config=None, *, steps=None,
                 batch_size=None, log_every=None, rank=0, backend="python", client=None,
                 modules=None):
        """See the class's documentation."""
        train, configured_bind = _load_config(config)
        self.steps = _count(steps if steps is not None else train.get("steps"), "steps", 1)
        self.batch_size = _count(batch_size if batch_size is not None
                                 else train.get("batch_size"), "batch_size", 1)
        self.log_every = _count(log_every if log_every is not None
                                else train.get("log_every", _DEFAULT_LOG_EVERY), "log_every")
        self.rank = _count(rank, "rank")
        self.backend = str(backend)
        self.client = client
        self.windows = []
        self.summary = None
        self._sources = {}  # id -> (object, its counters as last seen)
        self._track(_stat_sources(modules), from_now=True)
        self._stat_keys = set()
        self._stat_totals = collections.Counter()
        self._pending = {}  # phase -> ms that phase() measured for the coming step
        self._write_failed = False
        self._file = None
        self._server = None
        self._metrics = TrainerMetrics(self.rank)
        address = self._metrics_address(metrics_bind, configured_bind)
        if address is not None:
            self._server = MetricsServer(address, self._metrics)
            # A log dropped without close() stops serving when it is collected.
            weakref.finalize(self, self._server.close)
        if path is not None:
            try:
                self._file = open(path, "w")
            except OSError as error:
                self._stop_server()
                raise type(error)(error.errno, "RunLog: cannot write the run log {!r}: {}".format(
                    os.fspath(path), error.strerror)) from None
        self.path = path
        self._start = time.monotonic()
        self._window = _Window(self._start)
        self._run = _Window(self._start)  # the whole run's figures, for the summary
        self._last_time = self._start
        self._closed = False

    def _metrics_address(self, metrics_bind, configured_bind):
        if metrics_bind is not None:
            return parse_metrics_address(metrics_bind, "metrics_bind")
        if configured_bind is not None:
            address = parse_metrics_address(configured_bind, "the config's metrics.trainers")
            return offset_address(address, self.rank)
        return None

    @property
    def port(self):
        """The port metrics are served on (the one picked for port 0); None without metrics."""
        return self._server.port if self._server else None

    @property
    def url(self):
        """http://HOST:PORT/metrics, where the metrics are served; None without metrics."""
        return self._server.url if self._server else None

    def _track(self, sources, from_now):
        """Logs the counters of `sources` (those already tracked are left as they are): counted
        from their present values when `from_now`, else from zero."""
        for source in sources:
            if id(source) not in self._sources:
                base = collections.Counter(source.stats) if from_now else collections.Counter()
                self._sources[id(source)] = (source, base)

    def _stat_deltas(self):
        """What each tracked counter counted since the last step (summed over the modules)."""
        deltas = collections.Counter()
        for key, (source, seen) in list(self._sources.items()):
            now = collections.Counter(source.stats)
            for name, value in now.items():
                deltas[name] += value - seen.get(name, 0)
            self._sources[key] = (source, now)
        return deltas

    @contextlib.contextmanager
    def phase(self, name):
        """Times the block as part of the coming step's `name` phase ("pull", "compute", "push"
        or "wait"): step() logs the milliseconds measured since the last step, unless it is given
        that phase's figure itself."""
        if name not in PHASES:
            raise ValueError("RunLog.phase: unknown phase {!r} (one of {})".format(
                name, ", ".join(PHASES)))
        start = time.monotonic()
        try:
            yield
        finally:
            self._pending[name] = self._pending.get(name, 0.0) + (time.monotonic() - start) * 1e3

    def step(self, step=None, loss=None, samples=None, *, modules=None, rows=None, pull_ms=None,
             compute_ms=None, push_ms=None, wait_ms=None, device_ms=None):
        """Step `step` is done (1-based: the steps completed so far, as in ember train's log;
        None: the last one + 1). Ends a progress window every `log_every` steps and at `steps`.

        `samples` (default: `batch_size`) make the window's samples/s. `loss` (a number or a
        one-element tensor, which this syncs) and the step's milliseconds per phase are averaged
        per window as ember train does: `pull_ms` waiting for rows, `compute_ms` the model's
        step, `push_ms` waiting for pushes, `wait_ms` waiting for other trainers (default: what
        phase() measured, else not logged: null), and `device_ms` the device's busy time, logged
        as the window's "device_busy" share of wall time. `rows` is the step's unique rows
        pulled ("rows_per_step"); by default the modules' keys pulled and prefetched. A figure
        given at only some steps of a window is averaged over those.

        `modules` adds ember modules whose `stats` are logged, counted from zero (those given to
        the constructor count from then): each window gets "<counter>_per_step", the mean per
        step of what the counter counted during the window, and the summary "modules", each
        counter's total over the logged steps.
        """
        if self._closed:
            raise _ember.EmberError("RunLog.step: the run log is closed")
        step = self._next_step(step)
        self._track(_stat_sources(modules), from_now=False)
        figures = {"loss": _figure(loss, "loss"), "device_ms": _figure(device_ms, "device_ms"),
                   "rows": _figure(rows, "rows")}
        given = {"pull": pull_ms, "compute": compute_ms, "push": push_ms, "wait": wait_ms}
        for phase in PHASES:
            value = given[phase] if given[phase] is not None else self._pending.get(phase)
            figures[phase + "_ms"] = _figure(value, phase + "_ms")
        self._pending = {}
        figures["samples"] = _figure(samples if samples is not None else self.batch_size,
                                     "samples")
        if self._sources:
            deltas = self._stat_deltas()
            self._stat_keys.update(deltas)
            self._stat_totals.update(deltas)
            for name in self._stat_keys:
                figures[_STAT + name] = deltas.get(name, 0)
            if figures["rows"] is None:
                figures["rows"] = deltas.get("keys_pulled", 0) + deltas.get("keys_prefetched", 0)
        self._window.add(step, figures)
        self._run.add(step, figures)
        self._last_time = time.monotonic()
        if (self.log_every and step % self.log_every == 0) or step == self.steps:
            self._end_window()

    def _next_step(self, step):
        last = self._run.last_step
        if step is None:
            return (last or 0) + 1
        step = _count(step, "step", 1)
        if last is not None and step <= last:
            raise _ember.InvalidArgumentError(
                "RunLog.step: step {} after step {}: steps must increase".format(step, last))
        return step

    def _end_window(self):
        """Writes the window so far (if it has steps) and starts the next one."""
        window, now = self._window, time.monotonic()
        self._window = _Window(now)
        if window.steps == 0:
            return
        record = self._window_record(window, now)
        self.windows.append(record)
        phase_seconds = {phase: (window.total(phase + "_ms") or 0.0) / 1e3 for phase in PHASES}
        self._metrics.observe(record, window.total("samples"), phase_seconds)
        self._write(record)

    def _window_record(self, window, now):
        """The window's record, with ember train's fields in its order, then the modules'."""
        seconds = now - window.start
        samples = window.total("samples")
        rate = None if samples is None else (samples / seconds if seconds > 0 else 0.0)
        device = window.total("device_ms")
        eta = None
        if self.steps is not None and window.last_step <= self.steps and seconds > 0:
            eta = (self.steps - window.last_step) * seconds / window.steps
        record = {"kind": "window", "elapsed_s": now - self._start,
                  "first_step": window.first_step, "step": window.last_step,
                  "steps": self.steps, "loss": window.mean("loss"), "samples_per_second": rate,
                  "pull_ms": window.mean("pull_ms"), "compute_ms": window.mean("compute_ms"),
                  "push_ms": window.mean("push_ms"), "wait_ms": window.mean("wait_ms"),
                  "device_busy": None if device is None or seconds <= 0 else
                  device / (seconds * 1e3),
                  "rows_per_step": window.mean("rows"), "eta_s": eta}
        for name in sorted(self._stat_keys):
            record[name + "_per_step"] = window.mean(_STAT + name)
        return _json_ready(record)

    def _write(self, record):
        """One line, flushed; a file that cannot be written is reported once and left alone,
        as ember train does."""
        if self._file is None or self._write_failed:
            return
        try:
            self._file.write(json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n")
            self._file.flush()
        except OSError as error:
            self._write_failed = True
            print("ember RunLog: writing {!r}: {}".format(os.fspath(self.path), error),
                  file=sys.stderr)

    def _server_figures(self):
        """The summary's "servers": each server's figures that the client's stats() has, its
        tables summed; none when there is no client or it has no answer."""
        if self.client is None:
            return []
        try:
            stats = self.client.stats()
        except _ember.EmberError as error:
            print("ember RunLog: no server figures: {}".format(error), file=sys.stderr)
            return []
        servers = []
        for server in stats:
            entry = {"id": server["server"]}
            for name in _TABLE_FIGURES:
                entry[name] = sum(table.get(name, 0) for table in server["tables"].values())
            for name in _SERVER_FIGURES:
                entry[name] = server[name]
            servers.append(entry)
        return servers

    def _summary_record(self, eval, fields):
        """The summary's record, with ember train's fields in its order."""
        run = self._run
        seconds = self._last_time - self._start
        samples = run.total("samples")
        wait = run.total("wait_ms")
        record = {"kind": "summary", "steps": run.steps,
                  "samples": None if samples is None else int(samples), "seconds": seconds,
                  "samples_per_second": None if samples is None else
                  (samples / seconds if seconds > 0 else 0.0),
                  "wait_ms_per_step": None if wait is None else wait / max(run.steps, 1),
                  "backend": self.backend,
                  "loss_start": self.windows[0]["loss"] if self.windows else None,
                  "loss_end": self.windows[-1]["loss"] if self.windows else None,
                  "servers": self._server_figures()}
        if self._stat_keys:
            record["modules"] = {name: self._stat_totals.get(name, 0)
                                 for name in sorted(self._stat_keys)}
        if eval is not None:
            record["eval"] = eval
        record.update(fields)
        return _json_ready(record)

    def close(self, eval=None, **fields):
        """Ends the run: writes the partial window left (if any) and the summary record, and
        stops serving metrics. `eval` (a dict, e.g. InteractionData.evaluate's figures) is
        written as the summary's "eval", and further keyword arguments as fields of their own.
        Returns the summary record; a second call does nothing and returns None."""
        if self._closed:
            return None
        clashes = sorted(set(fields) & set(_SUMMARY_FIELDS))
        if clashes:
            raise _ember.InvalidArgumentError("RunLog.close: {} would replace the summary's own "
                                              "fields".format(", ".join(clashes)))
        if eval is not None and not isinstance(eval, dict):
            raise TypeError("RunLog.close: eval must be a dict of figures, got {}".format(
                type(eval).__name__))
        try:
            self._end_window()
            summary = self._summary_record(eval, fields)
            self.summary = summary
            self._write(summary)
        finally:
            self._finish()
        return summary

    def _finish(self):
        self._closed = True
        self._stop_server()
        if self._file is not None:
            self._file.close()
            self._file = None

    def _stop_server(self):
        if self._server is not None:
            self._server.close()
            self._server = None

    def __enter__(self):
        """The log itself."""
        return self

    def __exit__(self, exc_type, exc, traceback):
        """close(); after an exception, only the partial window is written (no summary), as
        ember train leaves no summary for a run that failed."""
        if exc_type is None:
            self.close()
            return
        if not self._closed:
            try:
                self._end_window()
            finally:
                self._finish()
