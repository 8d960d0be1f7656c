"""A command case in its own environment imports what it does outside the gate, as a command of the running
environment does (test_command.py): the folders pytest put on its own sys.path (memtests/) are the session's, not
the command's. The helper that runs an environment's forkserver was handed them as plain PYTHONPATH folders, so its
commands got them first, and a script's `import model` took the test's helper module beside the tests instead of the
project's: another program than the one gated, and only inside an environment."""

import json
import os
import textwrap

from local_wheels import offline, write_wheel

SCRIPT = '''
import json, os, sys
import model
json.dump({"who": model.WHO, "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "path": sys.path},
          open(os.environ["SEEN"], "w"))
'''

TESTS = '''
import sys
import pytest
from gpu_budget import Environment, Scenario

@pytest.mark.gpu_budget(ram="2 GiB")
def test_script(gpu_budget):
    gpu_budget.measure(Scenario(name="s", command=[sys.executable, "proj/train.py"], env={"SEEN": "{seen}"},
                                environment=Environment(requirements=["gbtiny==1.0"])))
'''


def test_a_command_in_an_environment_gets_the_sessions_pythonpath_not_pytests_folders(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    seen = tmp_path / "seen.json"
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    for path, text in {"memtests/model.py": "WHO = 'the test helper'\n", "src/model.py": "WHO = 'the project'\n",
                       "proj/train.py": SCRIPT,
                       "memtests/test_imports.py": textwrap.dedent(TESTS).replace("{seen}", str(seen))}.items():
        (pytester.path / path).parent.mkdir(exist_ok=True)
        (pytester.path / path).write_text(text)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"),
                                                                   str(pytester.path / "src")])))
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "memtests",
                                  f"--gpu-budget-envs={tmp_path / 'envs'}").assert_outcomes(passed=1)
    found = json.loads(seen.read_text())
    assert found["who"] == "the project", found
    assert str(pytester.path / "memtests") not in found["PYTHONPATH"].split(os.pathsep), found
    assert str(pytester.path / "src") in found["PYTHONPATH"].split(os.pathsep), found
