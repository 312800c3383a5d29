"""ember.RunLog: a Python loop's run log has the records of `ember train --log-jsonl` (checked
against a real trainer's log, and read by ember.plot the same way), its metrics endpoint serves
the families of `ember train --metrics-bind` (checked against a real trainer's scrape), bad binds
are refused, close() stops serving, and a torch loop's module counters are logged."""

import json
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import ember
import ember.plot  # noqa: E402  (after conftest's check that ember is built)

# One server, a two-tower on synthetic data: `ember train` runs it in well under a second.
TINY_CONFIG = """
cluster:
  scheduler: "tcp://127.0.0.1:*"
  server_bind: "tcp://127.0.0.1:*"
  servers: 1
  server_threads: 1
  partitions: 8
tables:
  - {name: u0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
model: {embedding_dim: 8, user_slots: 1, item_slots: 1, hidden: [16], output_dim: 8,
        temperature: 0.1, learning_rate: 0.003}
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 200, exponent: 1.05, seed: 3,
              num_clusters: 8, signal: 0.95}
train: {steps: STEPS, batch_size: 16, backend: cpu, log_every: 2, user_tables: [u0],
        item_tables: [i0]}
"""
TIMEOUT_S = 60


def tiny_config(tmp_path, steps, metrics=False):
    text = TINY_CONFIG.replace("STEPS", str(steps))
    if metrics:
        text += "metrics: {trainers: \"127.0.0.1:0\"}\n"
    path = tmp_path / "tiny-{}.yaml".format(steps)
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def cpp_log(tmp_path_factory):
    """The run log of a real `ember train` (started by `ember cluster`): 6 steps, windows of 2."""
    folder = tmp_path_factory.mktemp("cpp_log")
    log = folder / "cpp.jsonl"
    result = subprocess.run([ember.cluster.find_binary(), "cluster", "--config",
                             str(tiny_config(folder, 6)), "--log-jsonl", str(log)],
                            capture_output=True, text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stdout + result.stderr
    return log


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()


def parse_exposition(text):
    """{family: {"type", "help", "samples": {labels text: value}}} of a Prometheus text scrape."""
    families = {}
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            families.setdefault(name, {"samples": {}})["help"] = help_text
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            families.setdefault(name, {"samples": {}})["type"] = kind
        elif line.strip():
            series, _, value = line.rpartition(" ")
            name, _, labels = series.partition("{")
            families[name]["samples"]["{" + labels if labels else ""] = float(value)
    return families


@pytest.fixture(scope="module")
def cpp_scrape(tmp_path_factory):
    """A scrape of a real `ember train`'s metrics endpoint, once it completed a window."""
    folder = tmp_path_factory.mktemp("cpp_scrape")
    process = subprocess.Popen([ember.cluster.find_binary(), "cluster", "--config",
                                str(tiny_config(folder, 1000000, metrics=True))],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout],
                     daemon=True).start()
    try:
        deadline = time.monotonic() + TIMEOUT_S
        url, seen = None, []
        while url is None and time.monotonic() < deadline:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            match = re.search(r"serving Prometheus metrics at (http://\S+/metrics)", seen[-1])
            url = match and match.group(1)
        assert url, "the trainer logged no metrics URL:\n" + "".join(seen)
        families = {}
        while time.monotonic() < deadline:
            families = parse_exposition(scrape(url))
            # The trainer adds its families just after logging the URL: until then, a scrape
            # has ember_process_info alone.
            step = families.get("ember_trainer_step", {"samples": {}})["samples"].get("", 0)
            if step >= 2:
                return families
            time.sleep(0.1)
        pytest.fail("the trainer completed no window within {} s".format(TIMEOUT_S))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def python_run(path, client=None, **options):
    """6 steps of made-up figures, logged as ember train would log them (windows of 2)."""
    with ember.RunLog(path, steps=6, batch_size=16, log_every=2, client=client,
                      **options) as log:
        for step in range(1, 7):
            log.step(step, loss=3.0 - 0.1 * step, pull_ms=2.0, compute_ms=1.0 + step,
                     push_ms=0.5, wait_ms=0.25, device_ms=0.1, rows=30 + step)
            time.sleep(0.002)
    return log


def test_records_have_the_fields_of_ember_trains_log(tmp_path, cpp_log, client):
    cpp_windows, cpp_summary = ember.plot.read_run(cpp_log)
    log = python_run(tmp_path / "python.jsonl", client=client)
    windows, summary = ember.plot.read_run(tmp_path / "python.jsonl")
    assert windows == log.windows and summary == log.summary

    assert len(windows) == len(cpp_windows) == 3
    for window, cpp_window in zip(windows, cpp_windows):
        assert list(window) == list(cpp_window)  # the same fields, in the same order
        for field in ("first_step", "step", "steps"):
            assert window[field] == cpp_window[field], field
        for field, value in window.items():
            if field != "kind":
                assert is_number(value) and is_number(cpp_window[field]), (field, value)
    assert [w["loss"] for w in windows] == pytest.approx([2.85, 2.65, 2.45])
    assert [w["compute_ms"] for w in windows] == pytest.approx([2.5, 4.5, 6.5])
    assert [w["rows_per_step"] for w in windows] == pytest.approx([31.5, 33.5, 35.5])
    assert windows[-1]["eta_s"] == 0
    assert all(w["samples_per_second"] > 0 and 0 < w["device_busy"] < 1 for w in windows)
    assert [w["elapsed_s"] for w in windows] == sorted(w["elapsed_s"] for w in windows)

    assert list(summary) == list(cpp_summary)
    assert summary["steps"] == cpp_summary["steps"] == 6
    assert summary["samples"] == cpp_summary["samples"] == 96
    assert summary["wait_ms_per_step"] == pytest.approx(0.25)
    assert (summary["loss_start"], summary["loss_end"]) == (windows[0]["loss"], windows[-1]["loss"])
    assert summary["backend"] == "python"
    assert len(summary["servers"]) == 2
    cpp_server_fields = list(cpp_summary["servers"][0])
    for server in summary["servers"]:
        fields = list(server)
        assert fields == [f for f in cpp_server_fields if f in fields]  # a subset, in order
        assert {"id", "rows", "keys_pulled", "keys_pushed", "errors"} <= set(fields)


def test_ember_plot_draws_a_python_log_beside_ember_trains(tmp_path, cpp_log, capsys):
    pytest.importorskip("matplotlib")
    python_run(tmp_path / "python.jsonl")
    figures = tmp_path / "figures"
    code = ember.plot.main([str(cpp_log), str(tmp_path / "python.jsonl"), "--labels",
                            "ember train,python", "--out", str(figures)])
    assert code == 0, capsys.readouterr().err
    for name in ("loss.png", "throughput.png", "step_time.png"):
        assert (figures / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


def test_figures_not_given_are_null_and_windows_end_as_ember_trains(tmp_path):
    path = tmp_path / "run.jsonl"
    with ember.RunLog(path, log_every=3) as log:
        for step in range(1, 8):  # no `steps`: windows at 3 and 6, the partial one at close
            log.step(step, loss=float("nan") if step == 7 else 1.0, samples=10)
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert kinds == ["window", "window", "window", "summary"]
    first, _, last = log.windows
    assert (first["first_step"], first["step"], last["first_step"], last["step"]) == (1, 3, 7, 7)
    assert first["steps"] is None and first["eta_s"] is None
    assert last["loss"] is None  # not finite: null, as ember train writes it
    for field in ("pull_ms", "compute_ms", "push_ms", "wait_ms", "device_busy", "rows_per_step"):
        assert first[field] is None, field
    assert log.summary["samples"] == 70 and log.summary["wait_ms_per_step"] is None
    assert log.summary["servers"] == []

    with ember.RunLog(None, log_every=0, batch_size=4) as log:  # 0: one window at the end
        for _ in range(5):
            with log.phase("pull"):
                time.sleep(0.002)
            log.step()  # numbered 1, 2, ...
    (window,) = log.windows
    assert (window["first_step"], window["step"], log.summary["samples"]) == (1, 5, 20)
    assert 2 <= window["pull_ms"] < 1000 and window["compute_ms"] is None


def test_bad_steps_and_figures_are_refused_naming_them(tmp_path):
    with ember.RunLog(None) as log:
        with pytest.raises(ember.InvalidArgumentError, match="step must be an integer >= 1"):
            log.step(0)
        log.step(5)
        with pytest.raises(ember.InvalidArgumentError, match="step 5 after step 5"):
            log.step(5)
        with pytest.raises(TypeError, match="loss must be a number, got 'low'"):
            log.step(6, loss="low")
        with pytest.raises(ValueError, match="unknown phase 'forward'"):
            with log.phase("forward"):
                pass
        with pytest.raises(TypeError, match="modules: object keeps no ember stats"):
            log.step(7, modules=[object()])
    with pytest.raises(ember.EmberError, match="closed"):
        log.step(8)
    with pytest.raises(ember.InvalidArgumentError, match="log_every must be an integer >= 0"):
        ember.RunLog(None, log_every=-1)
    with pytest.raises(FileNotFoundError, match="cannot write the run log .*missing"):
        ember.RunLog(tmp_path / "missing" / "run.jsonl")
    log = ember.RunLog(None)
    with pytest.raises(ember.InvalidArgumentError, match="steps would replace"):
        log.close(steps=3)
    assert log.close(note="done")["note"] == "done"


def test_a_failed_run_leaves_its_windows_and_no_summary(tmp_path):
    path = tmp_path / "run.jsonl"
    with pytest.raises(RuntimeError, match="diverged"):
        with ember.RunLog(path, log_every=2, metrics_bind="127.0.0.1:0") as log:
            for step in range(1, 4):
                log.step(step, loss=1.0)
            raise RuntimeError("diverged")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["kind"], r["step"]) for r in records] == [("window", 2), ("window", 3)]
    assert log.summary is None and log.port is None  # no longer served


def test_metrics_serve_ember_trains_families_with_the_windows_figures(cpp_scrape):
    with ember.RunLog(None, metrics_bind="127.0.0.1:0", steps=10, batch_size=16, log_every=2,
                      rank=3) as log:
        assert log.url == "http://127.0.0.1:{}/metrics".format(log.port) and log.port > 0
        before = parse_exposition(scrape(log.url))
        assert before["ember_trainer_step"]["samples"][""] == 0
        for step in range(1, 6):  # windows end at 2 and 4; step 5 is not scraped yet
            log.step(step, loss=float(step), pull_ms=2.0, compute_ms=4.0, push_ms=1.0,
                     rows=10 * step)
        text = scrape(log.url)
    families = parse_exposition(text)
    if shutil.which("promtool"):  # Debian package prometheus
        checked = subprocess.run(["promtool", "check", "metrics"], input=text,
                                 capture_output=True, text=True, timeout=TIMEOUT_S)
        assert checked.returncode == 0, checked.stdout + checked.stderr

    assert set(families) == set(cpp_scrape)
    for name, family in cpp_scrape.items():
        assert (families[name]["type"], families[name]["help"]) == (family["type"],
                                                                     family["help"]), name
        assert set(families[name]["samples"]) == set(family["samples"]), name

    def value(name, labels=""):
        return families[name]["samples"][labels]

    assert value("ember_process_info", '{role="trainer"}') == 1
    assert value("ember_trainer_step") == 4
    assert value("ember_trainer_loss") == pytest.approx(3.5)
    assert value("ember_trainer_samples_total") == 64
    assert value("ember_trainer_samples_per_second") > 0
    assert value("ember_trainer_unique_keys_per_step") == pytest.approx(35)
    assert value("ember_trainer_rank") == 3
    for phase, ms in (("pull", 2.0), ("compute", 4.0), ("push", 1.0)):
        labels = '{{phase="{}"}}'.format(phase)
        assert value("ember_trainer_phase_seconds_total", labels) == pytest.approx(4 * ms / 1e3)
        assert value("ember_trainer_step_phase_seconds", labels) == pytest.approx(ms / 1e3)
    assert value("ember_trainer_phase_seconds_total", '{phase="wait"}') == 0


def request(port, method, path):
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    with connection:
        connection.sendall("{} {} HTTP/1.0\r\n\r\n".format(method, path).encode())
        answer = b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                return answer.decode()
            answer += chunk


def test_only_get_and_head_of_metrics_are_answered_and_close_stops_serving():
    log = ember.RunLog(None, metrics_bind="localhost:0")
    port = log.port
    assert request(port, "GET", "/metrics?x=1").startswith("HTTP/1.0 200")
    head = request(port, "HEAD", "/metrics")
    assert head.startswith("HTTP/1.0 200") and head.endswith("\r\n\r\n")
    assert "text/plain; version=0.0.4" in head
    assert request(port, "GET", "/").startswith("HTTP/1.0 404")
    assert request(port, "POST", "/metrics").startswith("HTTP/1.0 405")
    log.close()
    assert log.port is None and log.url is None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=10).close()


@pytest.mark.parametrize("bind, why", [
    ("127.0.0.1", "has no port"),
    ("9400", "has no port"),
    (":9400", "has no IPv4 address"),
    ("example.com:9400", "has no IPv4 address"),
    ("[::1]:9400", "has no IPv4 address"),
    ("http://127.0.0.1:9400", "has no IPv4 address"),
    ("127.0.0.1:", "has no port in 0..65535"),
    ("127.0.0.1:65536", "has no port in 0..65535"),
    ("127.0.0.1:-1", "has no port in 0..65535"),
    ("127.0.0.1:94a0", "has no port in 0..65535"),
    (9400, "is not a string"),
])
def test_bad_binds_are_refused_naming_them(bind, why):
    with pytest.raises(ember.InvalidArgumentError) as refused:
        ember.RunLog(None, metrics_bind=bind)
    assert str(refused.value).startswith("metrics_bind: {!r} {}".format(bind, why))
    assert "expected HOST:PORT" in str(refused.value)


def test_a_port_in_use_is_refused_naming_it(tmp_path):
    with ember.RunLog(None, metrics_bind="127.0.0.1:0") as first:
        with pytest.raises(ember.UnavailableError,
                           match=r"cannot serve metrics on 127\.0\.0\.1:{}: bind".format(
                               first.port)):
            ember.RunLog(tmp_path / "run.jsonl", metrics_bind="127.0.0.1:{}".format(first.port))


def test_the_config_gives_the_defaults_as_ember_train_reads_them(tmp_path):
    config = {"train": {"steps": 4, "batch_size": 8, "log_every": 2},
              "metrics": {"trainers": "127.0.0.1:0"}}
    with ember.RunLog(None, config=config, rank=2) as log:
        assert (log.steps, log.batch_size, log.log_every) == (4, 8, 2)
        assert log.port > 0  # port 0 stays 0 whatever the rank
        for step in range(1, 5):
            log.step(step)
    assert [w["step"] for w in log.windows] == [2, 4] and log.summary["samples"] == 32
    with ember.RunLog(None, config=dict(config, metrics={"trainers": "127.0.0.1:65535"}),
                      metrics_bind="127.0.0.1:0") as log:  # the argument wins
        assert log.port != 65535
    with pytest.raises(ember.InvalidArgumentError, match=r"65535 \+ 1 is past 65535"):
        ember.RunLog(None, config={"metrics": {"trainers": "127.0.0.1:65535"}}, rank=1)
    with pytest.raises(ember.InvalidArgumentError, match="config's metrics.trainers: 'nowhere'"):
        ember.RunLog(None, config={"metrics": {"trainers": "nowhere"}})
    pytest.importorskip("yaml")
    path = tmp_path / "job.yaml"
    path.write_text("train: {steps: 3, batch_size: 5, log_every: 1}\n")
    with ember.RunLog(None, config=path) as log:
        assert (log.steps, log.batch_size, log.log_every) == (3, 5, 1)


def test_a_torch_loop_logs_its_modules_stats(tmp_path, client):
    torch = pytest.importorskip("torch")
    import ember.torch  # noqa: F401  (needs torch)

    users = ember.torch.Embedding(client, "user")
    model = torch.nn.Sequential(users, torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model[1].parameters(), lr=0.1)
    batches = [torch.tensor([1, 2, 2, 3]), torch.tensor([3, 4]), torch.tensor([5, 5, 5]),
               torch.tensor([6, 7, 8, 9, 10])]
    path = tmp_path / "torch.jsonl"
    with ember.RunLog(path, steps=4, log_every=2, client=client) as log:
        for step, ids in enumerate(batches, 1):
            optimizer.zero_grad()
            loss = model(ids).pow(2).mean()
            loss.backward()
            optimizer.step()
            log.step(step, loss=loss, samples=len(ids), modules=[model])
    windows, summary = ember.plot.read_run(path)
    assert [w["rows_per_step"] for w in windows] == [(3 + 2) / 2, (1 + 5) / 2]
    assert [w["keys_pulled_per_step"] for w in windows] == [2.5, 3.0]
    assert all(w["pulls_per_step"] == 1 and w["pushes_per_step"] == 1 for w in windows)
    assert summary["modules"] == dict(users.stats)
    assert summary["modules"]["keys_pulled"] == 11 and summary["samples"] == 14
    assert sum(server["keys_pulled"] for server in summary["servers"]) >= 11
    assert all(isinstance(w["loss"], float) for w in windows)

    # Given to the constructor, a module counts from then: the earlier pulls are left out.
    users.stats.clear()
    users(torch.tensor([1, 2, 3])).sum().backward()
    with ember.RunLog(None, modules=users, log_every=1) as log:
        users(torch.tensor([4])).sum().backward()
        log.step(1, samples=1)
    (window,) = log.windows
    assert window["keys_pulled_per_step"] == 1 and window["rows_per_step"] == 1
    assert log.summary["modules"]["keys_pulled"] == 1
