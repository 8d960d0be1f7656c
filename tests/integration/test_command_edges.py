"""Rough edges of a command case, met as a new user meets them: accelerate launch on a CPU host, relative paths.

The accelerate tests share one real pytest session (a subprocess, as pytester
runs one) of four `accelerate launch` cases of a small Accelerator script: a
launch takes about 7 s here, so the session runs once for the module. What
accelerate 1.15 does on a host without CUDA, measured: an FSDP config file
with ACCELERATE_USE_CPU=true trains DDP (MULTI_CPU: no FSDP plugin on a CPU
host); without it each rank trains alone (DistributedType.NO); `--cpu` with a
config file starts one process with no RANK, and beside `--multi_gpu` it is
refused; `--num_processes 2` with neither `--multi_gpu` nor a config file
starts one process.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from inner_session import rows

TRAIN = '''
import torch
from accelerate import Accelerator

import gpu_budget

accelerator = Accelerator()
model = torch.nn.Linear(64, 64)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for _ in range(2):
    gpu_budget.step()
    accelerator.backward(model(torch.ones(4, 64)).sum())
    optimizer.step()
    optimizer.zero_grad()
'''

FSDP_CONFIG = '''
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_machines: 1
num_processes: 2
mixed_precision: 'no'
use_cpu: true
fsdp_config:
  fsdp_version: 2
'''

CASES = '''
import dataclasses
import sys
from pathlib import Path

import pytest
from gpu_budget import Scenario

HERE = Path(__file__).parent
LAUNCH = [sys.executable, "-m", "accelerate.commands.launch"]
FSDP = Scenario(name="fsdp", command=[*LAUNCH, "--config_file", str(HERE / "fsdp.yaml"), str(HERE / "train.py")],
                ranks=2)
# docs/several-ranks.md's accelerate example, as it stands there
ACCELERATE = Scenario(name="my_accelerate", command=[*LAUNCH, "--multi_gpu", "--num_processes", "2",
                                                     str(HERE / "train.py")], ranks=2)


@pytest.mark.gpu_budget(ram="2 GiB")
def test_fsdp_config_use_cpu(gpu_budget):
    gpu_budget.measure(dataclasses.replace(FSDP, env={"ACCELERATE_USE_CPU": "true"}))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_fsdp_config(gpu_budget):
    gpu_budget.measure(FSDP)


@pytest.mark.gpu_budget(ram="2 GiB")
def test_num_processes_alone(gpu_budget):
    gpu_budget.measure(Scenario(name="alone", command=[*LAUNCH, "--num_processes", "2", str(HERE / "train.py")],
                                ranks=2))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_docs_example(gpu_budget):
    # on a host without CUDA, accelerate trains the ranks as one (MULTI_CPU, gloo) only with ACCELERATE_USE_CPU=true
    cpu = {"ACCELERATE_USE_CPU": "true"} if gpu_budget.device == "cpu" else {}
    gpu_budget.measure(dataclasses.replace(ACCELERATE, env=cpu))
'''


class Session:
    """One finished pytest session: its terminal output, its JSON report's rows by test name, and what it left in its
    temporary folder."""

    def __init__(self, out: str, rows: dict, left: list[str] = ()) -> None:
        self.out, self.rows, self.left = out, rows, left

    def message(self, name: str) -> str:
        row = self.rows[name]
        return (row.get("error") or {}).get("message") or row["message"]


@pytest.fixture(scope="module")
def launched(tmp_path_factory) -> Session:
    """The four accelerate cases, run once in a real pytest session of a throwaway project."""
    project = tmp_path_factory.mktemp("accelerate")
    (project / "pytest.ini").write_text("[pytest]\ngpu_budget_preload =\n")
    (project / "train.py").write_text(TRAIN)
    (project / "fsdp.yaml").write_text(FSDP_CONFIG)
    (project / "test_accelerate.py").write_text(CASES)
    # HOME: no accelerate default config file of this machine's; CI unset: a missing baseline is recorded
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS") and not k.startswith("ACCELERATE_")}
    env["HOME"] = str(project)
    tmp = Path(tempfile.mkdtemp(prefix="gb-acc-", dir="/tmp"))  # the session's TMPDIR: short, and its own
    env["TMPDIR"] = str(tmp)
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider",
                               "--gpu-budget", "--gpu-budget-json=r.json"], check=False, cwd=project, env=env,
                              capture_output=True, text=True, timeout=600)
        left = sorted(p.name for p in tmp.iterdir() if not p.name.startswith("torchinductor_"))  # torch's cache
    finally:
        shutil.rmtree(tmp)
    assert (project / "r.json").exists(), done.stdout + done.stderr
    data = json.loads((project / "r.json").read_text())
    return Session(done.stdout, {r["nodeid"].split("::", 1)[1]: r for r in data["results"]}, left)


def test_an_fsdp_config_on_a_cpu_host_names_the_ddp_its_ranks_ran(launched):
    row = launched.rows["test_fsdp_config_use_cpu"]
    assert row["verdict"] == "no-baseline" and row["error"] is None, row["message"]
    assert row["info"]["distributed_type"] == {"0": "MULTI_CPU", "1": "MULTI_CPU"}, row["info"]
    note = ("the accelerate config asks for FSDP (ACCELERATE_USE_FSDP=true), but the ranks ran MULTI_CPU (DDP): "
            "accelerate applies no FSDP plugin on a CPU host")
    assert note in row["info"]["notes"] and note in row["message"], (row["info"], row["message"])
    line = next(line for line in launched.out.splitlines() if line.startswith("test_accelerate.py::test_fsdp_config_use_cpu "))
    assert " 2 MULTI_CPU (FSDP asked) " in line, launched.out


def test_the_cpu_trap_advice_fits_a_config_file_launch(launched):
    message = launched.message("test_fsdp_config")
    assert launched.rows["test_fsdp_config"]["error"]["kind"] == "rank", message
    assert "accelerate trained rank 0, 1 as a single process (DistributedType.NO, 1 process)" in message, message
    assert 'set ACCELERATE_USE_CPU=true in the Scenario\'s env (env={"ACCELERATE_USE_CPU": "true"})' in message, message
    assert "not --cpu: with a config file, accelerate launch --cpu starts one process, with no RANK" in message, message
    assert "(or --cpu)" not in message, message


def test_accelerate_launch_without_multi_gpu_names_the_missing_flag(launched):
    message = launched.message("test_num_processes_alone")
    assert "the scenario declares 2 ranks (Scenario(ranks=2)), but no process(es) ran with a launcher's RANK" in message
    assert ("accelerate launch without --multi_gpu or a config file starts its one-process launcher (one process, no "
            "RANK) on a host with fewer than 2 GPUs, whatever --num_processes says: add --multi_gpu (or --config_file "
            "with num_processes: 2)") in message, message
    assert "is the launcher's process count the same?" not in message, message


def test_accelerate_launch_leaves_no_log_folder_in_the_temporary_folder(launched):
    """accelerate launch hands torchrun its own --log_dir (none), so each launch left a torchelastic_XXXXXXXX folder
    under the session's $TMPDIR: the command's $TMPDIR is now a folder of its case's, removed with the case."""
    assert launched.left == [], launched.left


def test_the_docs_accelerate_example_trains_two_ranks_as_one_on_a_cpu_host(launched):
    row = launched.rows["test_docs_example"]
    assert row["error"] is None and row["passed"], launched.message("test_docs_example")
    assert row["info"]["distributed_type"] == {"0": "MULTI_CPU", "1": "MULTI_CPU"}, row["info"]
    assert row["info"]["groups"] == {"0": 2, "1": 2} and "notes" not in row["info"], row["info"]


# -- relative paths: resolved against the test's working folder (where pytest was started) -----------------

RELATIVE = '''
import sys

import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_script(gpu_budget):
    gpu_budget.measure(Scenario(name="script", command=[sys.executable, "train.py", "--steps", "2"]))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_program(gpu_budget):
    gpu_budget.measure(Scenario(name="program", command=["./run.sh"]))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_found(gpu_budget):  # the same script, its folder given: no hint where nothing is missing
    gpu_budget.measure(Scenario(name="found", command=[sys.executable, "train.py", "--steps", "2"], cwd="memtests"))
'''


def test_a_relative_path_that_names_nothing_in_the_invocation_folder_says_where_it_looked(pytester, monkeypatch):
    """The user's files sit beside the test in memtests/; pytest is started from the project's root."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    memtests = pytester.mkdir("memtests")
    (memtests / "train.py").write_text("import sys\nsys.exit(0)\n")
    (memtests / "run.sh").write_text("#!/bin/sh\nexit 0\n")
    (memtests / "run.sh").chmod(0o755)
    (memtests / "test_rel.py").write_text(RELATIVE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", "memtests")
    result.assert_outcomes(failed=2, passed=1)
    by = rows(pytester)
    where = (f"is not in the command's working folder, {pytester.path} (the test's working folder as it measured: "
             "where pytest was started, unless the test moved; the Scenario gives no cwd=): relative paths in a "
             "command resolve against it; give an absolute path")
    script = by["test_script"]["error"]["message"]
    assert "exited with 2; 'train.py' " + where in script, script
    assert 'give an absolute path (str(Path(__file__).parent / "train.py")) or cwd=' in script, script
    program = by["test_program"]["error"]["message"]
    assert "command './run.sh' not found; './run.sh' " + where in program, program
    assert 'give an absolute path (str(Path(__file__).parent / "run.sh")) or cwd=' in program, program
    assert by["test_found"]["error"] is None, by["test_found"]["message"]


def test_a_command_that_fails_for_another_reason_gets_no_path_hint(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(fails="import sys\nprint(\"can't open file 'data.csv': [Errno 2] No such file\", file=sys.stderr)\n"
                              "sys.exit(2)\n")
    pytester.makepyfile(test_fails=textwrap.dedent('''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_fails(gpu_budget):
            gpu_budget.measure(Scenario(name="f", command=[sys.executable, "fails.py"]))
    '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    message = rows(pytester)["test_fails"]["error"]["message"]
    assert "exited with 2; the last lines of its stderr" in message and "relative paths" not in message, message


MOVED = '''
import sys

import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_moved(gpu_budget, monkeypatch):
    monkeypatch.chdir("elsewhere")
    gpu_budget.measure(Scenario(name="moved", command=[sys.executable, "train.py"]))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_writes(gpu_budget, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gpu_budget.measure(Scenario(name="writes", command=[sys.executable, "-c", "open('out.txt', 'w').write('x')"]))
    assert (tmp_path / "out.txt").exists()
'''


def test_a_command_runs_in_the_folder_the_test_moved_to_and_the_hint_says_so(pytester, monkeypatch):
    """A test that changes its working folder (monkeypatch.chdir, to keep a script's outputs out of the project)
    runs its command there: what it writes lands there, and a relative path missing there is named as taken from
    the test's working folder, not from where pytest was started."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.mkdir("elsewhere")
    (pytester.path / "train.py").write_text("import sys\nsys.exit(0)\n")
    pytester.makepyfile(test_moved=MOVED)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1, passed=1)
    message = rows(pytester)["test_moved"]["error"]["message"]
    assert f"'train.py' is not in the command's working folder, {pytester.path / 'elsewhere'} (the test's working " \
           "folder as it measured: where pytest was started, unless the test moved; the Scenario gives no cwd=)" \
           in message, message
    assert not (pytester.path / "out.txt").exists()


PWD = '''
import os
import sys

import pytest
from gpu_budget import Scenario

WRITE = "import os, sys; open(sys.argv[1], 'w').write(os.environ.get('PWD', ''))"


@pytest.mark.gpu_budget(ram="2 GiB")
def test_cwd(gpu_budget, tmp_path):
    gpu_budget.measure(Scenario(name="cwd", command=[sys.executable, "-c", WRITE, str(tmp_path / "pwd")], cwd="bin"))
    assert (tmp_path / "pwd").read_text() == os.path.abspath("bin")


@pytest.mark.gpu_budget(ram="2 GiB")
def test_moved(gpu_budget, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gpu_budget.measure(Scenario(name="moved", command=[sys.executable, "-c", WRITE, str(tmp_path / "pwd")]))
    assert (tmp_path / "pwd").read_text() == str(tmp_path)


@pytest.mark.gpu_budget(ram="2 GiB")
def test_given(gpu_budget, tmp_path):
    gpu_budget.measure(Scenario(name="given", command=[sys.executable, "-c", WRITE, str(tmp_path / "pwd")],
                                cwd="bin", env={"PWD": "/mine"}))
    assert (tmp_path / "pwd").read_text() == "/mine"
'''


def test_a_command_s_pwd_is_its_working_folder(pytester, monkeypatch):
    """A command run with cwd= (or from a test that moved) inherited PWD, the folder pytest was started in: a tool that
    reads $PWD rather than getcwd() looked there. It is now the command's own working folder, unless env= sets it."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.mkdir("bin")
    pytester.makepyfile(test_pwd=PWD)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(passed=3)
