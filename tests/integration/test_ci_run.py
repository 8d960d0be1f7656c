""".ci/run fails when the gate or the tests fail: stand-ins for python3's venv, pip and pytest, no install.

A `| tee log`, a `|| true` or a lost `set -o pipefail` there would turn a failed gate into a passing CI run; the
real commands take tens of minutes, so their exit codes are played by a fake .venv.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

VENV = """#!/bin/bash
# `python3 -m venv .venv`: a .venv whose pip succeeds and whose pytest exits as told
mkdir -p .venv/bin
printf '#!/bin/bash\\necho pip "$*" >> "$LOG"\\n' > .venv/bin/pip
printf '#!/bin/bash\\necho pytest "$*" >> "$LOG"\\ncase "$*" in *--gpu-budget*) exit "$GATE";; *) exit "$TESTS";; esac\\n' \\
    > .venv/bin/pytest
chmod +x .venv/bin/pip .venv/bin/pytest
"""


@pytest.mark.parametrize("piped", [False, True], ids=["as-is", "piped"])
@pytest.mark.parametrize(("gate", "tests", "code", "ran"), [
    (0, 0, 0, 2), (1, 0, 1, 1), (5, 0, 1, 1), (0, 1, 1, 2), (0, 5, 1, 2)])
def test_ci_run_fails_when_the_gate_or_the_tests_fail(tmp_path, gate, tests, code, ran, piped):
    """5 is pytest's "no tests collected": a gate that measured nothing fails the run too. Piped: each step's command
    planted with a `| tee` (a step runs in a `bash -c` of its own, which does not inherit the script's pipefail)."""
    (tmp_path / "repo" / ".ci").mkdir(parents=True)
    script = (ROOT / ".ci" / "run").read_text()
    if piped:
        script, planted = re.subn(r"^(step '.*)' \|\| exit 1$", r"\1 | tee -a piped.log' || exit 1", script,
                                  flags=re.MULTILINE)
        assert planted == 2, script
    (tmp_path / "repo" / ".ci" / "run").write_text(script)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3").write_text(VENV)
    (tmp_path / "bin" / "python3").chmod(0o755)
    log = tmp_path / "log"
    done = subprocess.run(["bash", str(tmp_path / "repo" / ".ci" / "run")], check=False, capture_output=True,
                          text=True, timeout=60, env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "LOG": str(log),
                                                      "GATE": str(gate), "TESTS": str(tests)})
    assert done.returncode == code, done.stderr
    pytests = [line for line in log.read_text().splitlines() if line.startswith("pytest")]
    assert len(pytests) == ran and "--gpu-budget memtests" in pytests[0], pytests  # a failed gate stops the run
    assert (5 in (gate, tests)) == ("collected no tests" in done.stderr), done.stderr
