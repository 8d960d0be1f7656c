"""S1's truncate case fails when the runner does not apply the cap its params declare, with no baseline to catch it.

test_fixed_truncate asserted `train_input_seconds_max == 5`, a figure the
runner computes from the params (min(clip, max_seconds)), so it held whatever
the runner fed the model. A cap computed wrong (twice the declared seconds)
stays under the tiny budget (the row of this run says by how much), so on a host
with no baseline yet, a fresh hardware key whose first run records, the case
passed and would have recorded the wrong run as its baseline. The case now
also asserts the longest input the extractor returned (`input_samples_fed_max`,
read in the run). This runs the case on a scratch copy of memtests/ whose
runner doubles the cap, against an empty baselines folder, outside CI.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASE = "memtests/test_s1_wav2vec2.py::test_fixed_truncate"
CAP = '"max_length": int(sr * p["max_seconds"])'


@pytest.mark.skipif(any(importlib.util.find_spec(m) is None for m in ("transformers", "datasets", "soundfile")),
                    reason="needs the scenarios extra")
def test_a_cap_the_runner_does_not_apply_fails_the_truncate_case(tmp_path):
    shutil.copytree(ROOT / "memtests", tmp_path / "memtests", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "conftest.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    runner = tmp_path / "memtests" / "s1_wav2vec2" / "runner.py"
    source = runner.read_text()
    assert source.count(CAP) == 1, "the runner's cap moved: update CAP"
    runner.write_text(source.replace(CAP, CAP[:-1] + " * 2)"))  # the planted regression
    report = tmp_path / "planted.json"
    cmd = [sys.executable, "-m", "pytest", "--gpu-budget", CASE, "-p", "no:cacheprovider", "-p", "no:randomly",
           "-p", "no:xdist", "--gpu-budget-json", str(report), "--gpu-budget-baselines", str(tmp_path / "baselines")]
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}  # a first run records
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert report.exists(), out[-6000:]
    (row,) = json.loads(report.read_text())["results"]
    assert row["verdict"] == "no-baseline", row["message"]  # the gate had nothing to compare with
    assert row["test_outcome"] == "failed", out[-6000:]
    assert "input_samples_fed_max" in out and "160000" in out, out[-6000:]  # 10 s at 16 kHz fed, 5 s declared
    assert proc.returncode == 1, out[-6000:]
    assert not list((tmp_path / "baselines").rglob("*.json")), "a failed test recorded its baseline"
