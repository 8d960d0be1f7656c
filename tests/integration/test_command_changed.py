"""A command case whose arguments changed since its baseline entry was recorded says so in its row, as a function
case's params change does (judge/compare.py command_note). Before, a command's literal arguments (`--batch 16` raised
to `--batch 64`, as the README's example writes its `--max_steps`) were not kept in the entry: the regression they
brought was reported with nothing to say the command was not the one recorded."""

import json
import shutil
import sys
from pathlib import Path

CHANGED = '''
import os
import sys

SCRIPT = "import sys; b = bytearray(int(sys.argv[-1]) << 20)"


@pytest.mark.gpu_budget(ram="1 GiB")
def test_train(gpu_budget):
    gpu_budget.measure(Scenario(name="cmd", command=[sys.executable, "-c", SCRIPT, "--batch", os.environ["BATCH"]]))
'''


def run(pytester):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=report.json")


def row(pytester):
    (only,) = json.loads((pytester.path / "report.json").read_text())["results"]
    return only


def test_a_command_judged_against_another_commands_entry_names_the_changed_argument(project, monkeypatch):
    pytester = project(CHANGED)
    monkeypatch.setenv("BATCH", "8")
    run(pytester).assert_outcomes(passed=1)
    run(pytester).assert_outcomes(passed=1)
    assert "command" not in row(pytester)["message"]
    monkeypatch.setenv("BATCH", "64")
    result = run(pytester)
    result.assert_outcomes(failed=1)
    assert row(pytester)["verdict"] == "regression"
    assert row(pytester)["message"].startswith("command differs from the baseline's: argument 4 (after '--batch'): '8' -> '64'"), \
        row(pytester)["message"]
    result.stdout.fnmatch_lines(["test_mem.py::test_train: command differs from the baseline's: argument 4 (after '--batch'): '8' -> '64'*"])
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-update").assert_outcomes(passed=1)
    run(pytester).assert_outcomes(passed=1)
    assert "command" not in row(pytester)["message"], row(pytester)["message"]  # the entry holds the new arguments


ENV_CHANGED = '''
import os
import sys


@pytest.mark.gpu_budget(ram="1 GiB")
def test_train(gpu_budget):
    gpu_budget.measure(Scenario(name="cmd", command=[sys.executable, "-c", "pass"],
                                env={"BATCH": os.environ["BATCH"], "MODEL": "tiny"}))
'''


def test_a_changed_command_env_names_the_variable_that_changed_not_both_whole_environments(project, monkeypatch):
    """Before, the row quoted both environments whole, the stored one sorted and this run's in its own order:
    `command_env {'BATCH': '8', 'MALLOC_MMAP_THRESHOLD_': ..., 'OPENBLAS_NUM_THREADS': '1'} -> {'OMP_NUM_THREADS':
    '1', ..., 'BATCH': '64', 'MODEL': 'tiny'}`, the one change to be found by eye among the pins."""
    pytester = project(ENV_CHANGED)
    monkeypatch.setenv("BATCH", "8")
    run(pytester).assert_outcomes(passed=1)
    monkeypatch.setenv("BATCH", "64")
    run(pytester).assert_outcomes(passed=1)
    message = row(pytester)["message"]
    assert message.startswith("setup differs from the baseline's: command_env BATCH 8 -> 64"), message
    assert "MALLOC" not in message and "MODEL" not in message, message


IN_PROJECT = '''
import sys
from pathlib import Path


@pytest.mark.gpu_budget(ram="1 GiB")
def test_train(gpu_budget):
    gpu_budget.measure(Scenario(name="cmd", command=[sys.executable, str(Path(__file__).parent / "train.py")]))
'''


def recorded_in_project(project):
    """IN_PROJECT's case run once in a project of its own (its root marked): the pytester and the stored entry."""
    pytester = project(IN_PROJECT)
    (pytester.path / "train.py").write_text("pass\n")
    (pytester.path / "pyproject.toml").write_text("")
    run(pytester).assert_outcomes(passed=1)
    stored = json.loads(next((pytester.path / "baselines").rglob("*.json")).read_text())
    (entry,) = stored["entries"]["tiny"].values()
    return pytester, entry


def test_a_script_named_by_its_path_in_the_project_is_the_same_command_in_another_checkout(project, tmp_path):
    """The path a cwd error advises (str(Path(__file__).parent / "train.py")) is kept from the project's root: a CI
    runner's checkout elsewhere runs the same command, and its row says nothing of one."""
    pytester, entry = recorded_in_project(project)
    assert entry["command"][1] == "<project>/train.py", entry["command"]
    other = tmp_path / "elsewhere"
    shutil.copytree(pytester.path, other)
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:randomly", "--gpu-budget",
                          "--gpu-budget-json=report.json", "--rootdir", str(other), str(other))
    result.assert_outcomes(passed=1)
    (moved,) = json.loads((pytester.path / "report.json").read_text())["results"]
    assert "command differs" not in moved["message"], moved["message"]


def test_the_same_command_run_by_a_venv_elsewhere_is_the_same_command(project, tmp_path):
    """`[sys.executable, "train.py"]` recorded the interpreter's path whole: a CI runner whose venv lies elsewhere
    read "command differs from the baseline's: the program: '/.../bin/python' -> '/.../bin/python'" on every row.
    The session's own interpreter is kept as <python>. The venv elsewhere here: its bin/python and lib linked from
    this one's, with its pyvenv.cfg, so it runs the same packages from another path."""
    pytester, entry = recorded_in_project(project)
    assert entry["command"][0] == "<python>", entry["command"]
    venv, here = tmp_path / "venv elsewhere", Path(sys.prefix)
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    (venv / "lib").symlink_to(here / "lib")
    (venv / "pyvenv.cfg").write_text((here / "pyvenv.cfg").read_text())
    result = pytester.run(str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:randomly", "--gpu-budget",
                          "--gpu-budget-json=report.json")
    result.assert_outcomes(passed=1)
    (moved,) = json.loads((pytester.path / "report.json").read_text())["results"]
    assert "command differs" not in moved["message"] and "program" not in moved["message"], moved["message"]
