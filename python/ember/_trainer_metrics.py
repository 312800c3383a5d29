"""The Prometheus side of ember.RunLog: a trainer's metric families, as `ember train
--metrics-bind` serves them (trainer/trainer_metrics.cc), served over HTTP from a daemon thread.

The families and their HELP text are the C++ trainer's: ember_trainer_step, _loss,
_samples_per_second, _unique_keys_per_step and _step_phase_seconds{phase} are the last progress
window's, ember_trainer_samples_total and _phase_seconds_total{phase} sum every completed window,
ember_trainer_rank is the trainer's rank, and ember_process_info{role="trainer"} is always 1. They
change as a window completes, so a scrape is at most `log_every` steps behind.

The HTTP side answers as common/metrics_endpoint does: GET or HEAD of /metrics in Prometheus's
text format (version 0.0.4), 404 for another path, 405 for another method, one request per
connection; each connection is served on a thread of its own, and one that sends nothing for 5 s
is dropped.
"""

import http.server
import math
import socket
import socketserver
import threading

from . import _ember

# (name, type, help) of the families, in the order the C++ trainer serves them.
_PROCESS_INFO = ("ember_process_info", "gauge",
                 "Always 1; the role label says which ember process this is.")
_STEP = ("ember_trainer_step", "gauge",
         "Steps completed (pushed and acknowledged), as of the last progress window.")
_LOSS = ("ember_trainer_loss", "gauge", "Mean training loss over the last progress window.")
_SAMPLES_PER_SECOND = ("ember_trainer_samples_per_second", "gauge",
                       "Training samples per second over the last progress window.")
_SAMPLES_TOTAL = ("ember_trainer_samples_total", "counter",
                  "Training samples of the completed windows.")
_UNIQUE_KEYS = ("ember_trainer_unique_keys_per_step", "gauge",
                "Rows pulled per step (unique keys over all slots), mean of the last progress "
                "window.")
_PHASE_TOTAL = ("ember_trainer_phase_seconds_total", "counter",
                "Seconds spent per phase of the steps: waiting for pulled rows (pull), the "
                "backend's step (compute), waiting for push acknowledgements (push), waiting for "
                "the other trainers (wait).")
_STEP_PHASE = ("ember_trainer_step_phase_seconds", "gauge",
               "Seconds per step spent per phase (as ember_trainer_phase_seconds_total), mean of "
               "the last window.")
_RANK = ("ember_trainer_rank", "gauge", "This trainer's rank in the run.")

PHASES = ("pull", "compute", "push", "wait")
METRICS_PATH = "/metrics"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CLIENT_TIMEOUT_S = 5


def parse_metrics_address(text, what="metrics_bind"):
    """(host, port) of "HOST:PORT": HOST an IPv4 address or localhost (kept as 127.0.0.1), PORT
    0..65535 (0: a free one). InvalidArgumentError naming `what` and the value otherwise."""
    def bad(why):
        return _ember.InvalidArgumentError(
            "{}: {!r} {} (expected HOST:PORT, e.g. 127.0.0.1:9400 or 0.0.0.0:9400; port 0 picks "
            "a free one)".format(what, text, why))

    if not isinstance(text, str):
        raise bad("is not a string")
    host, colon, port = text.rpartition(":")
    if not colon:
        raise bad("has no port")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        socket.inet_pton(socket.AF_INET, host)
    except OSError:
        raise bad("has no IPv4 address (or localhost) as its host") from None
    if not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise bad("has no port in 0..65535")
    return host, int(port)


def offset_address(address, offset):
    """`address` (host, port) with the port `offset` further on, as `ember train` moves the
    config's metrics.trainers by its rank; port 0 stays 0. InvalidArgumentError past 65535."""
    host, port = address
    if port == 0 or offset == 0:
        return address
    if port + offset > 65535:
        raise _ember.InvalidArgumentError(
            "metrics port {} + {} is past 65535".format(port, offset))
    return host, port + offset


def _number(value):
    """A sample's value as the text format writes it (NaN for an unknown one)."""
    value = math.nan if value is None else float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2 ** 53:
        return str(int(value))
    return repr(value)


def _escape(text, quote):
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def _family(family, samples):
    """The text of one family: `samples` is a list of (labels dict, value)."""
    name, kind, help_text = family
    lines = ["# HELP {} {}".format(name, _escape(help_text, False)),
             "# TYPE {} {}".format(name, kind)]
    for labels, value in samples:
        label_text = ",".join('{}="{}"'.format(key, _escape(str(label), True))
                              for key, label in labels.items())
        series = "{}{{{}}}".format(name, label_text) if label_text else name
        lines.append("{} {}".format(series, _number(value)))
    return "\n".join(lines) + "\n"


class TrainerMetrics:
    """A trainer's figures as the C++ trainer's Prometheus collector keeps them: the last window's
    and the totals of every completed window. observe() from the training thread, text() from the
    HTTP threads."""

    def __init__(self, rank=0):
        """`rank`: the trainer's rank, served as ember_trainer_rank."""
        self.rank = rank
        self._lock = threading.Lock()
        self._last = {}  # the last window record
        self._samples = 0
        self._phase_seconds = dict.fromkeys(PHASES, 0.0)

    def observe(self, window, samples, phase_seconds):
        """One more window completed: `window` its record (as the run log writes it), `samples`
        its samples (None: unknown), `phase_seconds` {phase: seconds spent in that window}."""
        with self._lock:
            self._last = dict(window)
            self._samples += samples or 0
            for phase in PHASES:
                self._phase_seconds[phase] += phase_seconds.get(phase) or 0.0

    def text(self):
        """The scrape: every family in Prometheus's text format."""
        with self._lock:
            last, samples, totals = dict(self._last), self._samples, dict(self._phase_seconds)

        def latest(field):  # 0 before the first window, as the C++ trainer's; NaN when unknown
            return last.get(field) if last else 0

        def step_seconds(phase):
            ms = latest(phase + "_ms")
            return None if ms is None else ms / 1e3

        parts = [
            _family(_PROCESS_INFO, [({"role": "trainer"}, 1)]),
            _family(_STEP, [({}, latest("step"))]),
            _family(_LOSS, [({}, latest("loss"))]),
            _family(_SAMPLES_PER_SECOND, [({}, latest("samples_per_second"))]),
            _family(_SAMPLES_TOTAL, [({}, samples)]),
            _family(_UNIQUE_KEYS, [({}, latest("rows_per_step"))]),
            _family(_PHASE_TOTAL, [({"phase": p}, totals[p]) for p in PHASES]),
            _family(_STEP_PHASE, [({"phase": p}, step_seconds(p)) for p in PHASES]),
            _family(_RANK, [({}, self.rank)]),
        ]
        return "".join(parts)


class _Handler(http.server.BaseHTTPRequestHandler):
    """GET or HEAD of /metrics; 404 for another path, 405 for another method."""

    timeout = CLIENT_TIMEOUT_S
    server_version = "ember-metrics"

    def do_GET(self):
        """The metrics, or 404 for another path."""
        self._answer(with_body=True)

    def do_HEAD(self):
        """The headers GET would answer with."""
        self._answer(with_body=False)

    def _refuse(self):
        self._send(405, "only GET and HEAD\n", with_body=True)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse

    def _answer(self, with_body):
        path = self.path.split("?", 1)[0]
        if path != METRICS_PATH:
            self._send(404, "metrics are at /metrics\n", with_body)
        else:
            self._send(200, self.server.metrics.text(), with_body)

    def _send(self, code, body, with_body):
        data = body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def log_message(self, format, *args):
        """Quiet: scrapes are not logged."""


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restart reuses the port, as the C++ endpoint's

    def server_bind(self):
        """Binds without HTTPServer's name lookup of the host (which may wait on DNS)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class MetricsServer:
    """Serves `metrics` (a TrainerMetrics) at http://HOST:PORT/metrics from a daemon thread until
    close(). UnavailableError naming the address when it cannot be bound."""

    def __init__(self, address, metrics):
        """`address`: (host, port) from parse_metrics_address; port 0 picks a free one."""
        try:
            self._server = _Server(address, _Handler)
        except OSError as error:
            raise _ember.UnavailableError("cannot serve metrics on {}:{}: bind: {}".format(
                address[0], address[1], error.strerror or error)) from None
        self._server.metrics = metrics
        self.host = address[0]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,),
                                        name="ember-metrics-http", daemon=True)
        self._thread.start()

    @property
    def url(self):
        """http://HOST:PORT/metrics"""
        return "http://{}:{}{}".format(self.host, self.port, METRICS_PATH)

    def close(self):
        """Stops serving and closes the listening socket; idempotent."""
        if self._thread is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._thread = None
