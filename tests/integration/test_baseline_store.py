"""Where a test's baseline lives does not depend on the folder pytest is started from (files.path_for).

A project without an ini file (no pytest.ini, no pyproject.toml, no [pytest]
section anywhere: a git checkout with tests in memtests/) gives pytest a
rootdir that follows the invocation: started from memtests/, the rootdir is
memtests/. The baselines folder is anchored at the project's root instead,
the nearest folder above the test file holding .git (or pyproject.toml,
setup.cfg, setup.py, tox.ini, pytest.ini), so both invocations read and write
one store.
"""

import json
import os
import textwrap

import pytest

TEST = textwrap.dedent('''
    import sys
    from pathlib import Path

    import pytest
    from gpu_budget import Scenario

    HELD = Path(__file__).parent / "held.py"


    @pytest.mark.gpu_budget(ram="2 GiB")
    def test_held(gpu_budget):
        gpu_budget.measure(Scenario(name="held", command=[sys.executable, str(HELD)]))
''')


@pytest.fixture
def project(pytester, monkeypatch):
    """A git checkout without an ini file: memtests/test_store.py gating memtests/held.py (32 MiB held)."""
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / ".git").mkdir()
    memtests = pytester.mkdir("memtests")
    (memtests / "held.py").write_text("held = b'\\x01' * (32 << 20)\n")
    (memtests / "test_store.py").write_text(TEST)
    return pytester


def run(pytester, name, *args):
    """A pytest session started in the working folder; the JSON report (r-`name`.json) and its one row."""
    report = pytester.path / f"r-{name}.json"
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-o", "gpu_budget_preload=", "--gpu-budget",
                                           f"--gpu-budget-json={report}", *args)
    data = json.loads(report.read_text())
    return result, data, data["results"][0]


def test_started_from_memtests_the_gate_finds_the_baseline_recorded_from_the_root(project, monkeypatch):
    first, _, row = run(project, "root", "memtests")
    first.assert_outcomes(passed=1)
    assert row["verdict"] == "no-baseline", row["message"]
    stored = list((project.path / "baselines").glob("*/test_store.json"))
    assert len(stored) == 1, row["message"]
    recorded = row["message"]
    monkeypatch.chdir(project.path / "memtests")
    second, _, row = run(project, "memtests")
    second.assert_outcomes(passed=1)
    assert row["nodeid"] == "test_store.py::test_held", row["nodeid"]  # pytest's rootdir is memtests/ now
    assert row["verdict"] == "pass" and row["baseline"] is not None, row["message"]
    assert not (project.path / "memtests" / "baselines").exists()
    assert recorded.endswith(f"(baseline file {stored[0]})"), recorded  # where it was recorded
    assert row["baseline_file"] == str(stored[0])  # and where the row compared against was read


def test_a_missing_baseline_names_the_file_it_looked_in(project, monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.chdir(project.path / "memtests")
    result, data, row = run(project, "memtests")
    result.assert_outcomes(failed=1)
    assert row["verdict"] == "no-baseline", row["message"]
    looked = project.path / "baselines" / data["hardware"]["key"]
    assert row["message"].endswith(f"(baseline file {looked / 'test_store.json'})"), row["message"]


def test_a_rootdir_given_on_the_command_line_fixes_the_folder_as_an_ini_file_does(project, monkeypatch):
    """`--rootdir` fixes pytest's rootdir as an ini file does, and the baselines folder with it: started from memtests
    with `--rootdir=.` it is memtests/baselines, not the project root's (docs/baselines.md, "Where the store is")."""
    monkeypatch.chdir(project.path / "memtests")
    result, _, row = run(project, "rootdir", "--rootdir=.")
    result.assert_outcomes(passed=1)
    assert row["baseline_file"].startswith(str(project.path / "memtests" / "baselines")), row["baseline_file"]
    assert not (project.path / "baselines").exists()


def test_a_rootdir_away_from_the_ini_file_says_its_baselines_folder_holds_no_file(project, monkeypatch):
    """pytest anchors its cache at --rootdir, and the gate its baselines folder: `--rootdir=memtests` beside an ini file
    one folder up reads memtests/baselines, not the committed baselines/. Each case was then recorded anew there with
    no word on why none was compared; the summary now names the folder, says it held no file, and names the ini's."""
    (project.path / "pytest.ini").write_text("[pytest]\n")
    first, _, _ = run(project, "root", "memtests")
    first.assert_outcomes(passed=1)
    result, _, row = run(project, "moved", "--rootdir=memtests", "memtests")
    result.assert_outcomes(passed=1)
    assert row["verdict"] == "no-baseline", row["message"]
    said = [line for line in result.stdout.lines if line.startswith("gpu-budget warning: --rootdir")]
    expected = (f"gpu-budget warning: --rootdir=memtests puts the baselines folder at memtests{os.sep}baselines, "
                "which held no baseline file before this run, so no case was compared with one (the ini file "
                "pytest.ini's folder holds baselines with 1 file); drop --rootdir, or give "
                "--gpu-budget-baselines, to judge against the committed baselines")
    assert said == [expected], result.stdout.str()
    quiet, _, row = run(project, "root-again", "memtests")  # the ini file's own rootdir: no word
    assert row["verdict"] == "pass", row["message"]
    assert not [line for line in quiet.stdout.lines if "gpu-budget warning" in line]
