"""The remediation search on a command scenario: a fix that changes nothing in its command is never run."""

import json

SCRIPT = '''
import json, sys
from pathlib import Path
from gpu_budget import phase, step

runs = Path("runs.log")
first = not runs.exists()
with runs.open("a") as fh:  # one line per real run: its arguments
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
mib = int(sys.argv[sys.argv.index("--mib") + 1]) - (0 if first else 100)  # later runs hold less: noise
phase("load")
held = b"\\x01" * (mib << 20)
for k in range(2):
    step()
'''

TESTS = '''
import sys
from gpu_budget import Fix
from gpu_budget.declare import fixes

fixes.register(Fix("e2e_cmd_unread", "train", "a knob this command does not take", params={"e2e_batch": 2}))
fixes.register(Fix("e2e_cmd_halve", "model", "half the MiB", cost="accuracy-risk", params={"mib": 150}))
S = Scenario(name="cmd", command=[sys.executable, "script.py", "--mib", "{mib}"], params={"mib": 300})

@pytest.mark.gpu_budget(ram="260 MiB")
def test_script(gpu_budget):
    gpu_budget.measure(S)
'''


def test_a_fix_that_changes_nothing_in_the_command_is_never_run_nor_the_answer(project):
    """The scenario supports every registered fix: e2e_cmd_unread and fewer_workers set params its command never
    reads. Before, each ran as a real run of the unchanged command, and the first, passing on the noise of a second
    run, was called the cheapest passing fix set."""
    pytester = project(TESTS)
    pytester.makepyfile(script=SCRIPT)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-remediate",
                                           "--gpu-budget-json=report.json")
    result.assert_outcomes(failed=1)
    (row,) = json.loads((pytester.path / "report.json").read_text())["results"]
    rem = row["remediation"]
    runs = [json.loads(line) for line in (pytester.path / "runs.log").read_text().splitlines()]
    assert runs == [["--mib", "300"], ["--mib", "150"]]  # the case, then the one fix that changes the command
    assert rem["found"] == ["e2e_cmd_halve"] and rem["runs"] == 1
    assert rem["skipped"]["e2e_cmd_unread"] == rem["skipped"]["fewer_workers"] == "changes nothing in this command"
    result.stdout.fnmatch_lines([
        "*remediation: passes with +e2e_cmd_halve (RAM *), found in 1 real run (bound 8)",
        "*not tried: *e2e_cmd_unread (changes nothing in this command)*",
    ])
