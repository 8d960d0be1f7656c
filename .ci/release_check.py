#!/usr/bin/env python3
"""Build the sdist and wheel and prove the sdist installs and gates a command, as a user's project would.

One script for the release workflow (.github/workflows/release.yml) and tests/integration/test_release.py, so the
check that guards a release and the one the test suite runs cannot drift apart:

0. CHANGELOG.md has a section for pyproject.toml's version (dated, where a tag is being released);
1. `python -m build`: the sdist, then the wheel built from that sdist (a file missing from the sdist fails here);
2. `twine check --strict`: the metadata and the README PyPI will render;
3. a fresh venv (no system site-packages) installs the sdist with the lock's pins: the plugin's own requirements
   (pytest, psutil, tabulate) from the package index, no torch;
4. in a project of its own outside this checkout, `pytest --gpu-budget` gates a script as a command case twice:
   the first run records its baseline, the second, under CI, is judged against it. The script marks its phases
   and steps, so the marks arriving proves the gate's hook (package data) is in the installed package.

Exit 0 on success, 1 on a failed check, 3 when the package index cannot be reached (nothing of this project's).
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTION = "pytest-gpu-budget"
CONSTRAINTS = ROOT / "constraints" / "cpu.txt"
UNREACHABLE = 3
# pip's words when the index is out of reach (name resolution, refused connection, proxy): not this project's fault
OFFLINE = ("Failed to establish a new connection", "Temporary failure in name resolution", "Network is unreachable",
           "No route to host", "ProxyError", "Max retries exceeded")
# what the outer run leaves in the environment that the user's own session must not inherit: CI (set only for the
# second run), a PYTHONPATH naming this checkout, pytest options and plugins, an xdist worker's variables
OUTER = ("CI", "PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "CUDA_VISIBLE_DEVICES", "PYTEST_XDIST_WORKER",
         "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID", "VIRTUAL_ENV", "PYTHONHOME")

SCRIPT = '''\
import gpu_budget

gpu_budget.phase("load")
held = [bytearray(1 << 20) for _ in range(4)]
for _ in range(3):
    gpu_budget.step()
    held.append(bytearray(1 << 20))
'''

TEST = '''\
import sys
from pathlib import Path

import pytest
from gpu_budget import Scenario

SCRIPT = Scenario(name="script", command=[sys.executable, str(Path(__file__).parent / "train.py")])


@pytest.mark.gpu_budget(ram="1 GiB")
def test_script(gpu_budget):
    row = gpu_budget.measure(SCRIPT)
    assert [s.step for s in row.steps] == [1, 2, 3]
'''


class CheckFailed(Exception):
    """A check that failed, with what to read to see why."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


def say(message: str) -> None:
    print(f"release-check: {message}", flush=True)


def run(args: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run one step; its output is printed, and a failure ends the check with it (exit 3 where pip was offline)."""
    say("$ " + " ".join(args))
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600)
    out = done.stdout + done.stderr
    print(out, end="" if out.endswith("\n") or not out else "\n", flush=True)
    if done.returncode != 0:
        offline = "pip" in " ".join(args) and any(words in out for words in OFFLINE)
        raise CheckFailed(f"exited with {done.returncode}: {' '.join(args)}" + (" (the package index is unreachable)"
                          if offline else ""), UNREACHABLE if offline else 1)
    return done.stdout


def declared_version() -> str:
    """pyproject.toml's version: the one source (`python -m gpu_budget --version` reads it from the metadata)."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def changelog(version: str, tagged: bool) -> None:
    """CHANGELOG.md has a section for this version; a tagged release's is dated (YYYY-MM-DD), no longer Unreleased."""
    heading = re.search(rf"^## \[{re.escape(version)}\] - (.+)$", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    if heading is None:
        raise CheckFailed(f"CHANGELOG.md has no section '## [{version}] - <date>' for pyproject.toml's version")
    if tagged and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", heading.group(1).strip()):
        raise CheckFailed(f"CHANGELOG.md's section for {version} is dated {heading.group(1).strip()!r}: give it the "
                          "release's date (YYYY-MM-DD) before tagging")


def build(dist: Path, version: str) -> tuple[Path, Path]:
    """The sdist and the wheel built from it, checked by twine."""
    if dist.exists():
        shutil.rmtree(dist)
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)])
    stem = DISTRIBUTION.replace("-", "_") + f"-{version}"
    sdist, wheels = dist / f"{stem}.tar.gz", sorted(dist.glob(f"{stem}-*.whl"))
    if not sdist.is_file() or len(wheels) != 1:
        raise CheckFailed(f"expected {sdist.name} and one {stem}-*.whl in {dist}, found {sorted(p.name for p in dist.iterdir())}")
    run([sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheels[0])])
    return sdist, wheels[0]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OUTER}
    return {**env, **extra}


def install(sdist: Path, venv: Path) -> Path:
    """A fresh venv holding the sdist and its own requirements alone; its python."""
    run([sys.executable, "-m", "venv", str(venv)], env=clean_env())
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", "-c", str(CONSTRAINTS), str(sdist)], cwd=venv, env=clean_env())
    run([str(python), "-m", "pip", "list", "--format=freeze"], cwd=venv, env=clean_env())
    return python


def gate(python: Path, project: Path, version: str) -> None:
    """The installed plugin, in a project of its own: version, import path, a command case recorded then judged."""
    project.mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")  # the rootdir, and so the baselines folder, is this project
    (project / "train.py").write_text(SCRIPT)
    (project / "test_release_case.py").write_text(TEST)
    said = run([str(python), "-m", "gpu_budget", "--version"], cwd=project, env=clean_env()).strip()
    if said != f"{DISTRIBUTION} {version}":
        raise CheckFailed(f"python -m gpu_budget --version said {said!r}, pyproject.toml declares {version}")
    probe = "import gpu_budget, importlib.util; print(gpu_budget.__file__); print(importlib.util.find_spec('torch') is not None)"
    where = run([str(python), "-c", probe], cwd=project, env=clean_env()).split()
    if not Path(where[0]).resolve().is_relative_to(python.parent.parent.resolve()) or where[1] != "False":
        raise CheckFailed(f"gpu_budget imported from {where[0]} (torch importable: {where[1]}), not the fresh venv alone")
    for verdict, env in (("no-baseline", clean_env()), ("pass", clean_env(CI="true"))):
        run([str(python), "-m", "pytest", "--gpu-budget", "-p", "no:cacheprovider", "--gpu-budget-json=r.json"],
            cwd=project, env=env)
        (row,) = json.loads((project / "r.json").read_text())["results"]
        if row["verdict"] != verdict:
            raise CheckFailed(f"verdict {row['verdict']!r} where {verdict!r} was due: {row.get('message')}")
        say(f"command case: {verdict}, RAM tree {row['peaks']['ram_tree']} B")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, required=True, help="where the sdist and wheel go (emptied first)")
    parser.add_argument("--work", type=Path, help="where the venv and the project go (default: a temporary folder)")
    parser.add_argument("--tag", help="the release tag (vX.Y.Z): must name pyproject.toml's version")
    args = parser.parse_args(argv)
    version = declared_version()
    try:
        if args.tag is not None and args.tag != f"v{version}":
            raise CheckFailed(f"tag {args.tag} does not name pyproject.toml's version {version} (v{version})")
        changelog(version, tagged=args.tag is not None)
        with tempfile.TemporaryDirectory(prefix="release-check-") as temp:
            work = args.work or Path(temp)
            sdist, wheel = build(args.dist.resolve(), version)
            gate(install(sdist, work / "venv"), work / "project", version)
    except CheckFailed as failed:
        say(f"FAILED: {failed}")
        return failed.code
    say(f"ok: {sdist.name} and {wheel.name} in {args.dist}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
