"""The GitHub Actions workflows: actionlint (with shellcheck on the `run:` scripts) and what the gate must do."""

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from dev_tools import tool

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
GPU = ROOT / ".github" / "workflows" / "gpu-budget.yml"
CPU = ROOT / ".github" / "workflows" / "cpu.yml"


def _actionlint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([tool("actionlint"), "-no-color", "-oneline", "-shellcheck", tool("shellcheck"), *args],
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
    assert download == {"pattern": "gpu-budget-baselines-*", "merge-multiple": True, "path": "proposed-baselines"}
    assert "gh pr create" in _steps(propose)["Open the pull request"]["run"]


def test_cpu_workflow_installs_runs_the_tests_and_the_tiny_gate():
    job = _load(CPU)["jobs"]["tests"]
    assert job["runs-on"] == "ubuntu-latest"
    commands = " ".join(step.get("run", "") for step in job["steps"])
    assert "-c constraints/cpu.txt" in commands and ".[scenarios,s2,dev,plots]" in commands
    assert "pytest tests" in commands and "pytest --gpu-budget memtests" in commands


def _extras(command: str) -> set[str]:
    """The project's extras an install command names: `-e ".[a,b]"`."""
    return {extra.strip() for group in re.findall(r'-e "\.\[([^\]]*)\]"', command) for extra in group.split(",")}


def _tox_extras(env: str) -> set[str]:
    import configparser

    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    return {extra.strip() for extra in tox[f"testenv:{env}"]["extras"].split(",")}


@pytest.mark.parametrize("where", ["cpu.yml", "gpu-budget.yml", "tox cpu", "tox gpu"])
def test_every_gate_installs_the_extras_of_the_ci_gate(where):
    """A memtest whose extra is missing skips (S2 without `s2`: "S2 needs FunASR") and the gate passes without it:
    each gate installs every extra .ci/run's does, so no case with committed baselines goes unchecked."""
    ci = next(line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("step ") and "-e " in line)
    needed = _extras(ci)
    assert {"scenarios", "s2"} <= needed, needed
    if where.startswith("tox"):
        installed = _tox_extras(where.split()[1])
    else:
        workflow = CPU if where == "cpu.yml" else GPU
        installed = set()
        for job in _load(workflow)["jobs"].values():
            installed |= _extras(" ".join(step.get("run", "") for step in job["steps"]))
    assert needed <= installed, needed - installed


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
    keep = names.index("Prepared models and environments, kept outside the workspace")
    assert names.index("actions/checkout@v5") < keep < names.index("Memory gate")
    script = _steps(gate)["Prepared models and environments, kept outside the workspace"]["run"]
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


def test_tox_gpu_is_the_workflows_fail_safe_gate():
    """docs/ci.md: `tox -e gpu` runs the GPU workflow's gate. Without --gpu-budget-require-gpu, a host whose children
    see no GPU would measure on the CPU, judge against the committed cpu-x86_64 baselines and pass."""
    import configparser

    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    command = tox["testenv:gpu"]["commands"]
    assert "--gpu-budget-require-gpu" in _steps(_load(GPU)["jobs"]["gate"])["Memory gate"]["run"]
    assert "pytest --gpu-budget memtests" in command and "--gpu-budget-require-gpu" in command, command


# -- against mode: the pull request's merge base measured beside its head, one comment kept up to date ----------------

LABEL = "gpu-budget-against"
MARKER = "<!-- gpu-budget-against -->"
SCRIPT = ".github/scripts/gpu_budget_against.py"


def _git(cwd: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True, capture_output=True,
                          text=True, env=env, timeout=60).stdout.strip()


def _commit(cwd: Path, name: str) -> str:
    (cwd / name).write_text(name)
    _git(cwd, "add", name)
    _git(cwd, "commit", "-q", "-m", name)
    return _git(cwd, "rev-parse", "HEAD")


def test_against_mode_is_chosen_by_the_label_or_the_manual_input_and_records_nothing():
    wf = _load(GPU)
    assert wf["on"]["pull_request"] is None  # default types: the label is read at each push, never a run of its own
    against = wf["on"]["workflow_dispatch"]["inputs"]["against"]
    assert against["type"] == "string" and against["default"] == ""
    env = _load(GPU)["jobs"]["gate"]["env"]
    assert f"contains(github.event.pull_request.labels.*.name, '{LABEL}')" in env["AGAINST"]
    assert "github.event_name == 'pull_request'" in env["AGAINST"]
    assert "github.event_name == 'workflow_dispatch' && inputs.against != ''" in env["AGAINST"]
    assert env["BASE_REF"] == "${{ github.event_name == 'pull_request' && github.base_ref || inputs.against }}"
    # a manual run with "against" records no baselines (--gpu-budget-against refuses --gpu-budget-update) and opens
    # no pull request of them; with "against" empty both stay as they were
    assert env["UPDATE"].endswith("&& inputs.update-baselines && inputs.against == '' }}")
    assert wf["jobs"]["propose-baselines"]["if"].endswith("inputs.open-pull-request && inputs.against == ''")


def test_against_mode_measures_the_merge_base_instead_of_the_stored_baselines():
    gate = _load(GPU)["jobs"]["gate"]
    assert "permissions" not in gate  # the job that runs the pull request's code can write nothing
    names = [step.get("name") or step.get("uses") for step in gate["steps"]]
    steps = _steps(gate)
    # the whole history only in against mode; depth 1, as before, otherwise
    assert steps["actions/checkout@v5"]["with"] == {"fetch-depth": "${{ env.AGAINST != 'true' && 1 || 0 }}"}
    assert steps["Memory gate"]["if"] == "env.AGAINST != 'true'"
    merge_base = steps["Merge base to compare with"]
    measure = steps["Memory gate against the merge base"]
    assert merge_base["if"] == measure["if"] == "env.AGAINST == 'true'"
    assert 'git merge-base "$base" HEAD' in merge_base["run"] and 'base="origin/$BASE_REF"' in merge_base["run"]
    assert '"AGAINST_SHA=$sha" >> "$GITHUB_ENV"' in merge_base["run"]
    script = measure["run"]
    for flag in ('--gpu-budget-against="$AGAINST_SHA"', '--gpu-budget-json="$OUT/against.json"',
                 "--gpu-budget-require-gpu", '--gpu-budget-scale "$SCALE"', '-n "$WORKERS"'):
        assert flag in script
    assert "--gpu-budget-update" not in script
    assert names.index("Merge base to compare with") < names.index("Memory gate against the merge base") < \
        names.index("Upload the report, plots and memory snapshots")  # both sides' reports go up with $OUT/
    assert f"{SCRIPT} sides" in script


def test_the_merge_base_step_finds_the_base_the_pull_request_was_merged_on(tmp_path):
    """Real git: checkout's merge commit of a pull request, its base moved on since; a tag; a name that is nothing."""
    origin = tmp_path / "origin"
    origin.mkdir()
    _git(origin, "init", "-q")
    _commit(origin, "a")
    fork_point = _commit(origin, "b")
    _git(origin, "switch", "-q", "-c", "feature")
    _commit(origin, "c")
    _git(origin, "switch", "-q", "main")
    base_tip = _commit(origin, "d")
    _git(origin, "tag", "v1", fork_point)
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(origin), str(clone))
    _git(clone, "switch", "-q", "--detach", "origin/main")  # what actions/checkout makes of refs/pull/N/merge
    _git(clone, "merge", "-q", "--no-ff", "-m", "merge", "origin/feature")
    _commit(origin, "e")  # the base branch moves on after the merge ref was made
    _git(clone, "fetch", "-q", "origin")
    script = _steps(_load(GPU)["jobs"]["gate"])["Merge base to compare with"]["run"]

    def step(base_ref: str) -> tuple[subprocess.CompletedProcess, str]:
        env_file = tmp_path / f"github-{base_ref}.env"
        env_file.touch()
        ran = subprocess.run(["bash", "-e", "-c", script], cwd=clone, check=False, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "BASE_REF": base_ref,
                                  "GITHUB_ENV": str(env_file)})
        return ran, env_file.read_text()

    ran, written = step("main")
    assert ran.returncode == 0, ran.stderr
    assert written == f"AGAINST_SHA={base_tip}\n"  # the base the merge was made on, not the newer tip
    assert "merge base of origin/main and HEAD" in ran.stdout
    ran, written = step("v1")  # a manual run's input: a tag (or a commit)
    assert ran.returncode == 0 and written == f"AGAINST_SHA={fork_point}\n"
    ran, written = step("no-such-branch")
    assert ran.returncode == 1 and written == ""
    assert "::error::no merge base of 'no-such-branch' and HEAD" in ran.stdout


def test_the_against_step_keeps_its_table_for_the_comment_and_fails_as_the_gate_does(tmp_path):
    """A stand-in `python -m pytest` writes the table to $GITHUB_STEP_SUMMARY and fails (a regression): the table lands
    in $OUT/against.md and in the job's own summary, the sides are split out, and the step fails with pytest's code."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        if [ "$1" != "-m" ]; then exec {sys.executable} "$@"; fi
        printf '%s\\n' "$@" > "$ARGS_FILE"
        echo "### GPU budget against: FAILED" >> "$GITHUB_STEP_SUMMARY"
        for arg in "$@"; do case "$arg" in --gpu-budget-json=*) json="${{arg#*=}}";; esac; done
        mkdir -p "$(dirname "$json")"
        echo '{{"kind": "against", "runs": [{{"side": "base", "index": 1, "report": {{}}}},
               {{"side": "head", "index": 1, "report": {{}}}}]}}' > "$json"
        exit 1
        """))
    fake.chmod(0o755)
    work = tmp_path / "work"
    (work / ".github" / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / SCRIPT, work / SCRIPT)
    (tmp_path / "temp").mkdir()
    summary = tmp_path / "summary.md"
    summary.write_text("before\n")
    script = _steps(_load(GPU)["jobs"]["gate"])["Memory gate against the merge base"]["run"]
    ran = subprocess.run(["bash", "-e", "-c", script], cwd=work, check=False, capture_output=True, text=True,
                         env={"PATH": f"{fake.parent}:/usr/bin:/bin", "OUT": "gpu-budget-h100", "SCALE": "real",
                              "GPUS": "2", "GPUS_PER_WORKER": "1", "WORKERS": "2", "AGAINST_SHA": "f" * 40,
                              "RUNNER_TEMP": str(tmp_path / "temp"),
                              "GITHUB_STEP_SUMMARY": str(summary), "ARGS_FILE": str(tmp_path / "args")})
    assert ran.returncode == 1, ran.stdout + ran.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:4] == ["-m", "pytest", "--gpu-budget", "memtests"] and f"--gpu-budget-against={'f' * 40}" in args
    assert "--gpu-budget-json=gpu-budget-h100/against.json" in args
    out = work / "gpu-budget-h100"
    assert (out / "against.md").read_text() == "### GPU budget against: FAILED\n"
    assert summary.read_text() == "before\n### GPU budget against: FAILED\n"
    assert (out / "base" / "run-1.report.json").is_file() and (out / "head" / "run-1.report.json").is_file()


def test_the_comment_job_alone_may_write_and_edits_one_marked_comment():
    wf = _load(GPU)
    job = wf["jobs"]["comment"]
    assert job["needs"] == "gate" and "ubuntu" in job["runs-on"]
    condition = " ".join(job["if"].split())
    # a failed gate is commented too; a run cancelled by a newer push leaves the comment to that push's run
    assert condition.startswith("!cancelled() && github.event_name == 'pull_request'")
    assert f"contains(github.event.pull_request.labels.*.name, '{LABEL}')" in condition
    assert wf["jobs"]["gate"]["if"].split(" || ")[1] in condition  # no fork: its gate is refused, nothing to say
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert [name for name, j in wf["jobs"].items() if "pull-requests" in j.get("permissions", {})] == [
        "propose-baselines", "comment"]  # the manual baselines pull request, and this
    steps = _steps(job)
    assert steps["actions/download-artifact@v7"]["with"] == {"pattern": "gpu-budget-*", "path": "reports"}
    post = steps["Post or update the comment"]
    assert post["env"]["GH_TOKEN"] == "${{ github.token }}" and post["env"]["GATE"] == "${{ needs.gate.result }}"
    assert post["env"]["PR"] == "${{ github.event.pull_request.number }}"
    assert f"python3 {SCRIPT} comment reports" in post["run"]


def test_the_label_and_marker_agree_across_workflow_script_and_docs():
    text = GPU.read_text()
    assert text.count(f"'{LABEL}'") == 2 and MARKER in text  # the gate's AGAINST and the comment job's if
    source = (ROOT / SCRIPT).read_text()
    assert f'MARKER = "{MARKER}"' in source and f'LABEL = "{LABEL}"' in source
    ci = (ROOT / "docs" / "ci.md").read_text()
    assert f"`{LABEL}`" in ci and MARKER in ci and "against" in ci


def test_the_comment_in_docs_ci_is_the_scripts_layout(tmp_path):
    """docs/ci.md's example comment opens as the script composes it, up to the first runner's name."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_budget_against", ROOT / SCRIPT)
    against = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(against)
    ci = (ROOT / "docs" / "ci.md").read_text()
    example = re.search(r"```markdown\n(<!-- gpu-budget-against -->\n.*?)\n```", ci, flags=re.DOTALL).group(1)
    (tmp_path / "gpu-budget-h100").mkdir()
    (tmp_path / "gpu-budget-h100" / "against.md").write_text(example.split("**Runner `h100`**\n\n", 1)[1])
    composed = against.compose(tmp_path, "failure", "https://github.com/OWNER/REPO/actions/runs/RUN_ID")
    assert composed.strip() == example.strip()


CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


def _cpu_pins() -> list[str]:
    """The packages constraints/cpu.txt pins to a +cpu build (PyPI has none: PyTorch's CPU index does)."""
    lines = (ROOT / "constraints" / "cpu.txt").read_text().splitlines()
    return [line.split("==")[0] for line in lines if "==" in line and "+cpu" in line.split("#")[0]]


def _install_steps(command: str) -> list[str]:
    return [part.strip() for part in re.split(r"&&", command) if "pip install" in part]


@pytest.mark.parametrize("where", ["README.md", ".ci/run", "cpu.yml"])
def test_every_cpu_pin_is_installed_from_pytorchs_cpu_index(where):
    """A fresh machine has PyPI and PyTorch's CPU index only: each +cpu pin is installed by a pip step naming that
    index, before the step that installs the project (which then finds it in place and looks nothing up there)."""
    if where == "cpu.yml":
        command = " ".join(step.get("run", "") for step in _load(CPU)["jobs"]["tests"]["steps"])
    else:
        text = (ROOT / where).read_text()
        command = next(line for line in text.splitlines() if "pip install" in line and "venv" in line)
    steps = _install_steps(command)
    pins = _cpu_pins()
    assert pins == ["torch"], pins
    first = next(i for i, step in enumerate(steps) if CPU_INDEX in step)
    assert all(f" {pin}" in steps[first] and "-c constraints/cpu.txt" in steps[first] for pin in pins), steps[first]
    project = next(i for i, step in enumerate(steps) if "-e " in step)
    assert first < project and CPU_INDEX not in steps[project], steps


def test_the_baselines_pull_request_carries_each_runners_folder_whole(tmp_path):
    """Real git, a stand-in `gh`: an update that changed one file and removed another (its test module deleted: the
    update prunes a file it leaves empty) opens a pull request with both, and touches no other folder or file."""
    origin = tmp_path / "origin.git"
    _git(tmp_path, "init", "-q", "--bare", str(origin))
    work = tmp_path / "work"
    _git(tmp_path, "clone", "-q", str(origin), str(work))
    for name, text in (("baselines/h100/test_a.json", "old"), ("baselines/h100/test_gone.json", "gone"),
                       ("baselines/a10g/test_a.json", "a10g"), ("README.md", "readme")):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "start")
    _git(work, "push", "-q", "origin", "HEAD:main")
    propose = _load(GPU)["jobs"]["propose-baselines"]
    steps = _steps(propose)
    # the artifact gpu-budget-baselines-h100 as download-artifact lays it: the runner's folder under its key
    download = steps["actions/download-artifact@v7"]["with"]["path"]
    (work / download / "h100").mkdir(parents=True, exist_ok=True)
    (work / download / "h100" / "test_a.json").write_text("new")
    gh = tmp_path / "bin" / "gh"
    gh.parent.mkdir()
    gh.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$GH_ARGS"\n')
    gh.chmod(0o755)
    step = steps["Open the pull request"]
    env = {"PATH": f"{gh.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "GH_ARGS": str(tmp_path / "gh-args"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           "GITHUB_RUN_ID": "7", "BASE": "main", "BRANCH": "gpu-budget/baselines-7", "RUN_URL": "https://run"}
    ran = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env, check=False, capture_output=True,
                         text=True, timeout=60)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    changed = _git(origin, "diff", "--name-status", "main", "gpu-budget/baselines-7").splitlines()
    assert sorted(changed) == ["D\tbaselines/h100/test_gone.json", "M\tbaselines/h100/test_a.json"], changed
    assert "--head\ngpu-budget/baselines-7\n" in (tmp_path / "gh-args").read_text()


@pytest.mark.parametrize("step_name", ["Memory gate", "Memory gate against the merge base"])
@pytest.mark.parametrize(("gpus", "per_worker", "workers"), [("2", "1", "2"), ("4", "2", "2"), ("2", "2", "1")])
def test_each_gate_step_gives_each_worker_its_block_of_gpus(tmp_path, step_name, gpus, per_worker, workers):
    """A matrix entry's `gpus_per_worker` (a case launching N ranks needs N GPUs on its worker, else the GPU gate fails
    it) becomes --gpu-budget-gpus-per-worker, and the runner's GPUs are shared out in blocks: -n gpus / gpus_per_worker.
    A stand-in `python` records the arguments each gate step gives pytest."""
    gate = _load(GPU)["jobs"]["gate"]
    assert gate["env"]["GPUS_PER_WORKER"] == "${{ matrix.runner.gpus_per_worker }}"  # checked by "Workers"
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text('#!/bin/bash\nif [ "$1" = "-m" ]; then printf "%s\\n" "$@" > "$ARGS_FILE"; fi\n')
    fake.chmod(0o755)
    (tmp_path / "temp").mkdir()
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "OUT": "out", "SCALE": "real", "GPUS": gpus,
           "GPUS_PER_WORKER": per_worker, "UPDATE": "false", "AGAINST_SHA": "f" * 40, "ARGS_FILE": str(tmp_path / "args"),
           "RUNNER_TEMP": str(tmp_path / "temp"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
           "GITHUB_ENV": str(tmp_path / "github.env")}
    (tmp_path / "github.env").touch()
    ran = _run_steps(["Workers", step_name], env, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[args.index("-n") + 1] == workers, args
    assert "--gpu-budget-gpus-per-worker" in args and args[args.index("--gpu-budget-gpus-per-worker") + 1] == per_worker


def test_the_cpu_workflows_pip_cache_is_keyed_on_what_it_installs():
    """setup-python keys `cache: pip` on **/requirements.txt and **/pyproject.toml by default; the CPU job installs at
    constraints/cpu.txt's pins, so a bumped pin kept the old key: the old cache restored, never saved again, and every
    run downloaded the new wheels. Every file the install step reads (-c, -e) keys the cache."""
    steps = _steps(_load(CPU)["jobs"]["tests"])
    setup = steps["actions/setup-python@v6"]["with"]
    assert setup["cache"] == "pip"
    keyed = set(setup.get("cache-dependency-path", "").split())
    read = set(re.findall(r"-c (\S+)", steps["Install"]["run"])) | {"pyproject.toml"}
    assert read == {"constraints/cpu.txt", "pyproject.toml"} and read <= keyed, (read, keyed)
    assert all((ROOT / path).is_file() for path in keyed), keyed


def _runner_fields() -> set[str]:
    """The fields of a GPU_BUDGET_RUNNERS entry the GPU workflow reads: `matrix.runner.<field>`."""
    return set(re.findall(r"matrix\.runner\.([A-Za-z_][A-Za-z0-9_-]*)", GPU.read_text()))


def test_the_runner_entries_shown_use_the_fields_the_workflow_reads():
    """docs/ci.md's and the workflow's GPU_BUDGET_RUNNERS examples: a field misspelt there (`gpus-per-worker`) is
    silently ignored by the matrix, and a field the workflow reads is one docs/ci.md explains."""
    fields = _runner_fields()
    assert {"name", "labels", "gpus", "gpus_per_worker", "scale"} <= fields, fields
    ci = (ROOT / "docs" / "ci.md").read_text()
    shown = [json.loads(block) for block in re.findall(r"```json\n(\[.*?\])\n```", ci, flags=re.DOTALL)]
    comment = "\n".join(line[1:] for line in GPU.read_text().splitlines() if line.startswith("#"))
    shown.append(json.loads(re.search(r"^\s*(\[\{.*?\}\])", comment, flags=re.MULTILINE | re.DOTALL).group(1)))
    assert len(shown) == 2, shown
    for entry in (entry for entries in shown for entry in entries):
        assert set(entry) <= fields, set(entry) - fields
        assert entry["scale"] in ("tiny", "real") and isinstance(entry["gpus"], int) and entry["gpus"] >= 1, entry
    unexplained = sorted(field for field in fields if f"`{field}`" not in ci and f'"{field}"' not in ci)
    assert not unexplained, f"docs/ci.md never names these runner fields the workflow reads: {unexplained}"


def test_the_gpu_runner_installs_the_cpu_locks_versions_with_the_cuda_torch(tmp_path):
    """A self-hosted runner installed whatever pip picked that day, so a GPU baseline could be judged against another
    package set than it was recorded with. Its install takes constraints/cpu.txt with the `+cpu` label dropped: the
    same versions, torch's included, and torch's CUDA build from PyPI (whose own nvidia-* and triton pins it keeps).
    A stand-in `python` keeps the constraints file the Install step gives pip."""
    from packaging.requirements import Requirement

    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text('#!/bin/bash\nprintf "%s\\n" "$@" > "$ARGS_FILE"\n'
                    'while [ $# -gt 0 ]; do [ "$1" = -c ] && cp "$2" "$KEPT"; shift; done\n')
    fake.chmod(0o755)
    (tmp_path / "temp").mkdir()
    (tmp_path / "constraints").mkdir()
    shutil.copy(ROOT / "constraints" / "cpu.txt", tmp_path / "constraints")
    kept = tmp_path / "kept.txt"
    ran = subprocess.run(["bash", "-e", "-c", _steps(_load(GPU)["jobs"]["gate"])["Install"]["run"]], cwd=tmp_path,
                         env={"PATH": f"{fake.parent}:/usr/bin:/bin", "RUNNER_TEMP": str(tmp_path / "temp"),
                              "ARGS_FILE": str(tmp_path / "args"), "KEPT": str(kept)},
                         check=False, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert "-c" in args and kept.is_file(), f"the GPU install takes no constraints file: {args}"

    def pins(path: Path) -> dict[str, str]:
        requirements = (Requirement(line.split("#")[0]) for line in path.read_text().splitlines()
                        if line.split("#")[0].strip())
        return {r.name: str(r.specifier) for r in requirements}

    cpu, gpu = pins(ROOT / "constraints" / "cpu.txt"), pins(kept)
    assert cpu["torch"].endswith("+cpu") and gpu["torch"] == cpu["torch"].removesuffix("+cpu"), gpu["torch"]
    assert {name: pin for name, pin in gpu.items() if name != "torch"} == \
        {name: pin for name, pin in cpu.items() if name != "torch"}
    version = cpu["torch"].removeprefix("==").removesuffix("+cpu")
    assert Requirement(f"torch{gpu['torch']}").specifier.contains(f"{version}+cu128")  # any CUDA build of that version


def test_gpu_gate_keeps_declared_environments_outside_the_workspace(tmp_path):
    """With -p no:cacheprovider the environments cases declare (requires=) and sweeps make default to .gpu-budget-envs in
    the rootdir, which the next job's checkout (`git clean -ffdx`) wipes, and in against mode the base side's rootdir is
    a worktree removed after the run: each run would make them again. The keep step chooses a runner folder (the
    repository variable GPU_BUDGET_ENVS, default the tool cache) and both gate steps pass it as --gpu-budget-envs."""
    gate = _load(GPU)["jobs"]["gate"]
    steps = _steps(gate)
    keep = next(step for name, step in steps.items() if name.startswith("Prepared models"))
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text('#!/bin/bash\nif [ "$1" = "-m" ]; then printf "%s\\n" "$@" > "$ARGS_FILE"; fi\n')
    fake.chmod(0o755)
    (tmp_path / "temp").mkdir()
    env_file = tmp_path / "github.env"
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "GPU_BUDGET_ASSETS": "", "GPU_BUDGET_ENVS": "",
           "RUNNER_TOOL_CACHE": str(tmp_path / "tools"), "GITHUB_ENV": str(env_file)}
    subprocess.run(["bash", "-e", "-c", keep["run"]], cwd=tmp_path, env=env, check=True, capture_output=True, text=True)
    kept = tmp_path / "tools" / "gpu-budget-envs"
    assert f"GPU_BUDGET_ENVS={kept}" in env_file.read_text().splitlines() and kept.is_dir(), env_file.read_text()
    env |= {"GPU_BUDGET_ENVS": str(kept), "OUT": "out", "SCALE": "real", "GPUS": "1", "GPUS_PER_WORKER": "1",
            "UPDATE": "false", "AGAINST_SHA": "f" * 40, "ARGS_FILE": str(tmp_path / "args"),
            "RUNNER_TEMP": str(tmp_path / "temp"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    for name in ("Memory gate", "Memory gate against the merge base"):
        ran = subprocess.run(["bash", "-e", "-c", steps[name]["run"]], cwd=tmp_path, env=env, check=False,
                             capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        args = (tmp_path / "args").read_text().splitlines()
        assert "--gpu-budget-envs" in args and args[args.index("--gpu-budget-envs") + 1] == str(kept), (name, args)
    assert "vars.GPU_BUDGET_ENVS" in gate["env"]["GPU_BUDGET_ENVS"]  # a runner's own folder, set without editing this


def _run_steps(names: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """These `run:` steps of the gate job, in order, as the runner does (bash -e, what one step writes to $GITHUB_ENV
    set for the next), up to the first that fails."""
    env = dict(env)
    steps = _steps(_load(GPU)["jobs"]["gate"])
    ran = None
    for name in names:
        ran = subprocess.run(["bash", "-e", "-c", steps[name]["run"]], cwd=cwd, env=env, check=False,
                             capture_output=True, text=True, timeout=60)
        if ran.returncode:
            return ran
        env |= dict(line.split("=", 1) for line in Path(env["GITHUB_ENV"]).read_text().splitlines() if "=" in line)
    return ran


def _run_steps_reading(field: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """Each `run:` step of the gate job that reads $field, in order (`_run_steps`)."""
    return _run_steps([step["name"] for step in _load(GPU)["jobs"]["gate"]["steps"] if field in step.get("run", "")],
                      env, cwd)


@pytest.mark.parametrize(("field", "gpus", "per_worker", "bad"), [
    ("gpus_per_worker", "2", "0", "0"), ("gpus_per_worker", "2", "two", "two"), ("gpus_per_worker", "2", "1.5", "1.5"),
    ("gpus_per_worker", "2", "-1", "-1"), ("gpus", "0", "1", "0")])
def test_a_runner_entrys_gpu_counts_are_refused_before_pytest_naming_the_value(tmp_path, field, gpus, per_worker, bad):
    """`"gpus_per_worker": 0` (or "two") made the gate step's $(( GPUS / GPUS_PER_WORKER )) a division by zero: bash
    said so and went on with `-n` empty, and pytest read `-n -p` ("argument -n/--numprocesses: expected one argument"),
    never reaching the plugin's own check. The counts are checked once, before any gate step, naming the field and
    the value. A stand-in `python` records whether pytest ran."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text('#!/bin/bash\nif [ "$1" = "-m" ]; then printf "%s\\n" "$@" > "$ARGS_FILE"; fi\n')
    fake.chmod(0o755)
    (tmp_path / "temp").mkdir()
    (tmp_path / "github.env").touch()
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "OUT": "out", "SCALE": "real", "GPUS": gpus,
           "GPUS_PER_WORKER": per_worker, "UPDATE": "false", "AGAINST_SHA": "f" * 40, "GPU_BUDGET_ENVS": "envs",
           "ARGS_FILE": str(tmp_path / "args"), "RUNNER_TEMP": str(tmp_path / "temp"),
           "GITHUB_ENV": str(tmp_path / "github.env"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    ran = _run_steps_reading("GPUS_PER_WORKER", env, tmp_path)
    said = ran.stdout + ran.stderr
    assert not (tmp_path / "args").exists(), f"pytest ran: {(tmp_path / 'args').read_text().split()}; {said}"
    assert ran.returncode == 1, said
    assert f"::error::GPU_BUDGET_RUNNERS: this runner's {field} is '{bad}': expected a whole number >= 1" in said, said
    assert "division" not in said, said


def test_a_runner_entry_without_gpu_counts_runs_one_worker(tmp_path):
    """Left out of the entry, gpus and gpus_per_worker are 1 each (the matrix renders an absent field empty)."""
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text('#!/bin/bash\nif [ "$1" = "-m" ]; then printf "%s\\n" "$@" > "$ARGS_FILE"; fi\n')
    fake.chmod(0o755)
    (tmp_path / "github.env").touch()
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "OUT": "out", "SCALE": "real", "GPUS": "", "GPUS_PER_WORKER": "",
           "UPDATE": "false", "GPU_BUDGET_ENVS": "envs", "ARGS_FILE": str(tmp_path / "args"),
           "GITHUB_ENV": str(tmp_path / "github.env")}
    ran = _run_steps_reading("GPUS_PER_WORKER", env, tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[args.index("-n") + 1] == "1" and args[args.index("--gpu-budget-gpus-per-worker") + 1] == "1", args
