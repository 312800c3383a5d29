"""The MovieLens example runs end to end (two epochs) and beats the most-popular baseline."""

import os
import re
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

pytest.importorskip("torch")
pytest.importorskip("yaml")

DATA_ROOT = os.environ.get("EMBER_DATA_ROOT", str(SOURCE_DIR.parent / "shared" / "data"))


@pytest.mark.skipif(not os.path.isfile(os.path.join(DATA_ROOT, "ml-100k", "u.data")),
                    reason="MovieLens 100K is not there (set EMBER_DATA_ROOT)")
def test_movielens_example_beats_most_popular():
    result = subprocess.run(
        [sys.executable, str(SOURCE_DIR / "python" / "examples" / "movielens_two_tower.py"),
         "--data-root", DATA_ROOT, "--epochs", "2", "--device", "cpu"],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    hit_rates = re.findall(r"HR@10 ([0-9.]+)", result.stdout)
    assert len(hit_rates) == 2, result.stdout  # the model's, then most-popular's
    model, popularity = map(float, hit_rates)
    assert model > popularity, result.stdout
