"""The release workflow (.github/workflows/release.yml): on a tag, the same check as tests/integration/test_release.py,
then trusted publishing from the one job allowed an OIDC token. actionlint checks it with every workflow in
test_workflows.py."""

import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
CHECK = ".ci/release_check.py"


def _load() -> dict:
    data = yaml.safe_load(RELEASE.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _runs(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_it_runs_on_version_tags_alone():
    wf = _load()
    assert wf["on"] == {"push": {"tags": ["v*"]}}
    assert wf["permissions"] == {"contents": "read"}


def test_the_build_job_runs_the_check_the_test_suite_runs():
    build = _load()["jobs"]["build"]
    assert "permissions" not in build  # contents: read, from the top
    runs = _runs(build)
    assert f'python {CHECK} --dist dist --tag "$GITHUB_REF_NAME"' in runs
    assert '".ci" / "release_check.py"' in (ROOT / "tests" / "integration" / "test_release.py").read_text()
    assert "python -m pip install -c constraints/cpu.txt build twine" in runs
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert {"build", "twine"} <= {req.split(">")[0].split("=")[0] for req in dev}  # the README's install has them too
    (upload,) = [step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["with"]["name"] == "dist" and upload["with"]["path"] == "dist/"


def test_only_the_publish_job_gets_an_oidc_token_in_the_pypi_environment():
    jobs = _load()["jobs"]
    publish = jobs["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert [name for name, job in jobs.items() if "id-token" in job.get("permissions", {})] == ["publish"]
    download, upload = publish["steps"]
    assert download["uses"].startswith("actions/download-artifact@") and download["with"] == {"name": "dist", "path": "dist"}
    assert upload["uses"] == "pypa/gh-action-pypi-publish@release/v1" and "with" not in upload  # no token: trusted
    assert not _runs(publish).strip()  # nothing of the checkout runs where the token is


def test_the_check_step_refuses_a_tag_that_is_not_the_version():
    """The step's own command, run here: a tag naming another version fails before anything is built."""
    (step,) = [s for s in _load()["jobs"]["build"]["steps"] if CHECK in s.get("run", "")]
    had_dist = (ROOT / "dist").exists()
    ran = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ROOT, check=False, capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "GITHUB_REF_NAME": "v0.0.0-not-this"})
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "tag v0.0.0-not-this does not name pyproject.toml's version" in ran.stdout
    assert (ROOT / "dist").exists() == had_dist
