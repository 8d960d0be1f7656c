"""The bare-GPU-host kit: the wheels are fetched for a Python version given, never assumed, and installed only there.

What these check runs here: the scripts' refusals and the plan's shape. The kit
itself was proven by installing it into a venv holding only a GPU image's
packages and running the tiny suite there (docs/gpu-validation.md says how).
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST = "{}.{}".format(*sys.version_info[:2])


def _checkout(tmp_path: Path, fetched_for: str | None) -> Path:
    """A copy of the kit scripts and plugin/ with a .whl/ whose wheels were fetched for `fetched_for`."""
    (tmp_path / "benchmarks").mkdir()
    for script in ("gpu_kit.sh", "gpu_wheels.sh", "gpu_validation.sh"):
        shutil.copy(ROOT / "benchmarks" / script, tmp_path / "benchmarks" / script)
    (tmp_path / "plugin").symlink_to(ROOT / "plugin")
    (tmp_path / ".whl").mkdir()
    (tmp_path / ".whl" / "tiny-0.1-py3-none-any.whl").write_bytes(b"not a real wheel")
    if fetched_for is not None:
        (tmp_path / ".whl" / "PYTHON").write_text(fetched_for + "\n")
    return tmp_path


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *args], check=False, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, **env})


@pytest.mark.parametrize("fetched_for", ["2.7", None])
def test_the_kit_refuses_wheels_fetched_for_another_python(tmp_path, fetched_for):
    repo = _checkout(tmp_path, fetched_for)
    done = _run(repo / "benchmarks" / "gpu_kit.sh", str(tmp_path / "kit"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"is Python {HOST}, so its compiled wheels would not import" in done.stderr
    assert f"bash benchmarks/gpu_wheels.sh {HOST}" in done.stderr
    assert not (tmp_path / "kit" / "site-packages" / "gpu_budget").exists()


@pytest.mark.parametrize("args, message", [((), "usage: gpu_wheels.sh PYTHON_VERSION"),
                                           (("cp312",), "'cp312' is not a Python version like 3.12")])
def test_fetching_needs_the_target_python_version(tmp_path, args, message):
    repo = _checkout(tmp_path, HOST)
    done = _run(repo / "benchmarks" / "gpu_wheels.sh", *args)
    assert done.returncode != 0 and message in done.stderr
    assert (repo / ".whl" / "tiny-0.1-py3-none-any.whl").exists()  # nothing was fetched or removed


@pytest.mark.parametrize("part", ["real", "command", "cards", "remedy", "s1-colab", "growth-gpu"])
def test_the_validation_refuses_a_host_without_cuda_before_measuring(tmp_path, part):
    """On this CPU host the validation stops at its preflight, saying why, and measures nothing."""
    repo = _checkout(tmp_path, HOST)
    (repo / ".whl" / "tiny-0.1-py3-none-any.whl").unlink()  # no wheels: the host's packages only
    done = _run(repo / "benchmarks" / "gpu_validation.sh", part, str(tmp_path / "out"), PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "no CUDA GPU visible" in done.stdout + done.stderr
    assert not list((tmp_path / "out").rglob("*.json"))


def test_an_unknown_part_is_named(tmp_path):
    repo = _checkout(tmp_path, HOST)
    done = _run(repo / "benchmarks" / "gpu_validation.sh", "everything", str(tmp_path / "out"))
    assert done.returncode == 2 and "unknown part 'everything'" in done.stderr
    done = _run(repo / "benchmarks" / "gpu_validation.sh", "cards", str(tmp_path / "out"), CARD_CASES="s9")
    assert done.returncode == 2 and "CARD_CASES='s9' is not s3, s4 or s1" in done.stderr
    done = _run(repo / "benchmarks" / "gpu_validation.sh", "remedy", str(tmp_path / "out"), REMEDY_CASES="s2")
    assert done.returncode == 2 and "REMEDY_CASES='s2' is not s3, s5, s4 or s1" in done.stderr
