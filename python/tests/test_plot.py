"""ember plot: figures of run logs and of `ember bench --json` results, and clear refusals."""

import json
import subprocess

import pytest

from conftest import ember

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def window(step, loss):
    return {"kind": "window", "elapsed_s": step / 10, "first_step": step - 9, "step": step,
            "steps": 50, "loss": loss, "samples_per_second": 1000 + step,
            "pull_ms": 2.0, "compute_ms": 5.0, "push_ms": 1.0, "wait_ms": 0.0,
            "device_busy": 0.5, "rows_per_step": 100, "eta_s": (50 - step) / 10}


def write_run(path, losses):
    lines = [window(10 * (i + 1), loss) for i, loss in enumerate(losses)]
    lines.append({"kind": "summary", "steps": 50, "loss_start": losses[0],
                  "loss_end": losses[-1]})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def plot(*args):
    return subprocess.run([ember.cluster.find_binary(), "plot", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_runs_and_a_bench_result_become_figures(tmp_path):
    write_run(tmp_path / "asp.jsonl", [5.0, 4.0, 3.5, 3.2, 3.0])
    write_run(tmp_path / "bsp.jsonl", [5.0, 4.2, 3.6, None, 3.1])  # a NaN loss logs as null
    bench = {side: {"keys_per_second": 1e6, "raw_keys_per_second": 2e6, "ratio_to_raw": 0.5}
             for side in ("pull", "push")}
    (tmp_path / "bench.json").write_text(json.dumps(bench))
    result = plot(tmp_path / "asp.jsonl", tmp_path / "bsp.jsonl", tmp_path / "bench.json",
                  "--labels", "asp,bsp,bench", "--out", tmp_path / "figures")
    assert result.returncode == 0, result.stderr
    for name in ("loss.png", "throughput.png", "step_time.png", "bench.png"):
        figure = tmp_path / "figures" / name
        assert figure.read_bytes()[:8] == PNG, name
        assert figure.stat().st_size > 5000, name
        assert str(figure) in result.stdout


def test_files_that_are_neither_are_refused_naming_them(tmp_path):
    (tmp_path / "notes.txt").write_text("step 10/50 loss 3.0\n")
    result = plot(tmp_path / "notes.txt", "--out", tmp_path / "figures")
    assert result.returncode == 2
    assert "notes.txt:1: not a JSON line" in result.stderr
    (tmp_path / "empty.jsonl").write_text("\n")
    result = plot(tmp_path / "empty.jsonl", "--out", tmp_path / "figures")
    assert result.returncode == 2 and "neither a run log" in result.stderr
    result = plot(tmp_path / "missing.jsonl", "--out", tmp_path / "figures")
    assert result.returncode == 2 and "missing.jsonl" in result.stderr
    write_run(tmp_path / "run.jsonl", [1.0, 0.5])
    result = plot(tmp_path / "run.jsonl", "--labels", "a,b", "--out", tmp_path / "figures")
    assert result.returncode == 2 and "2 labels for 1 files" in result.stderr
