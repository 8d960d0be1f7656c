"""S3's LLaMA-Factory part takes its own wheels to the GPU host: gpu_kit.sh installs the folder KIT_WHEELS names and
nothing from the main kit's .whl/ (whose datasets 5 would sit on PYTHONPATH ahead of the environment's 3.6), refusing a
folder fetched for another Python with the script that fetches it; llamafactory_wheels.sh needs the target version.
The wheels and the case themselves were proven on this CPU (benchmarks/results/llamafactory-kit-on-cpu.report.json)."""

import shutil
import subprocess
import sys
from pathlib import Path

from local_wheels import write_wheel

ROOT = Path(__file__).resolve().parents[2]
HOST = "{}.{}".format(*sys.version_info[:2])


def _checkout(tmp_path: Path) -> Path:
    (tmp_path / "benchmarks").mkdir()
    for script in ("gpu_kit.sh", "llamafactory_wheels.sh"):
        shutil.copy(ROOT / "benchmarks" / script, tmp_path / "benchmarks" / script)
    (tmp_path / "plugin").symlink_to(ROOT / "plugin")
    write_wheel(tmp_path / ".whl", "1.0", name="mainkit")  # the main kit's: never installed by this part
    (tmp_path / ".whl" / "PYTHON").write_text(HOST + "\n")
    return tmp_path


def _run(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *args], check=False, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, **env})


def test_the_kit_installs_the_named_folder_alone(tmp_path):
    repo = _checkout(tmp_path)
    kit = tmp_path / "lf" / "kit"
    write_wheel(kit, "1.0", name="lfkit")
    (kit / "PYTHON").write_text(HOST + "\n")
    done = _run(repo / "benchmarks" / "gpu_kit.sh", str(tmp_path / "root"), KIT_WHEELS=str(kit))
    assert done.returncode == 0, done.stdout + done.stderr
    site = tmp_path / "root" / "site-packages"
    assert (site / "lfkit").is_dir() and not (site / "mainkit").exists()
    assert (site / "gpu_budget").resolve() == (ROOT / "plugin" / "gpu_budget").resolve()


def test_the_kit_refuses_a_folder_fetched_for_another_python_naming_its_fetcher(tmp_path):
    repo = _checkout(tmp_path)
    kit = tmp_path / "lf" / "kit"
    write_wheel(kit, "1.0", name="lfkit")
    (kit / "PYTHON").write_text("2.7\n")
    done = _run(repo / "benchmarks" / "gpu_kit.sh", str(tmp_path / "root"), KIT_WHEELS=str(kit),
                KIT_FETCHER="llamafactory_wheels.sh")
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"the wheels in {kit}/ were fetched for Python 2.7" in done.stderr
    assert f"bash benchmarks/llamafactory_wheels.sh {HOST}" in done.stderr
    assert not (tmp_path / "root" / "site-packages" / "lfkit").exists()


def test_fetching_needs_the_target_python_version(tmp_path):
    repo = _checkout(tmp_path)
    for args, said in (((), "usage: llamafactory_wheels.sh PYTHON_VERSION"),
                       (("cp312",), "'cp312' is not a Python version like 3.12")):
        done = _run(repo / "benchmarks" / "llamafactory_wheels.sh", *args, WHL_DIR=str(tmp_path / "lf"))
        assert done.returncode != 0 and said in done.stderr, done.stderr
        assert not (tmp_path / "lf").exists()  # nothing fetched or removed
