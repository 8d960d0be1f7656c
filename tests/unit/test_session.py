"""session/session.py: what the session does with its data at the end, without a pytest session around it."""

import json

from gpu_budget.judge import files
from gpu_budget.judge.store import BaselineStore, PendingWrite
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.result import Result, Verdict
from gpu_budget.session import session
from gpu_budget.session.data import SessionData

ENTRY = {"peaks": {"ram": 1}, "phases": {}, "fingerprint": {"malloc": "steady"}, "recorded": "2026-11-25", "tolerance": {"rel": 0.005, "abs": 1}}


def test_pending_writes_land_one_per_file_and_scale_and_a_failed_write_is_a_problem(tmp_path):
    data = SessionData()
    good = tmp_path / "hw" / "m.json"
    data.pending += [PendingWrite.from_json(w) for w in (
        {"path": str(good), "scale": "tiny", "id": "a", "entry": ENTRY},
        {"path": str(good), "scale": "tiny", "id": "b", "entry": ENTRY},
        {"path": str(tmp_path / "file" / "m.json"), "scale": "tiny", "id": "c", "entry": ENTRY})]
    (tmp_path / "file").write_text("a file where a folder should be")
    problems = session.write_pending(data)
    assert set(files.load(good)["entries"]["tiny"]) == {"a", "b"}
    assert len(problems) == 1 and "could not write baselines to" in problems[0] and data.pending == []


def test_the_rows_of_entries_a_failed_write_lost_say_so_and_the_file_is_named_once(tmp_path):
    """Before, each row kept "no baseline yet: recorded" / "baseline updated" though nothing was written."""
    data = SessionData()
    (tmp_path / "file").write_text("a file where a folder should be")
    lost = str(tmp_path / "file" / "m.json")
    data.pending += [PendingWrite.from_json({"path": lost, "scale": "tiny", "id": key, "entry": ENTRY, "row": row})
                     for key, row in (("a", "m.py::test_a"), ("b", "m.py::test_b"))]
    data.rows += [Result(nodeid=nodeid, scenario="s", scale="tiny", verdict=verdict, passed=True, message=message)
                  for nodeid, verdict, message in (("m.py::test_a", Verdict.NO_BASELINE, "no baseline yet: recorded"),
                                                   ("m.py::test_b", Verdict.IMPROVED, "ram 1 < 2; baseline updated"),
                                                   ("m.py::test_c", Verdict.PASS, "within baseline"))]
    (problem,) = session.write_pending(data)
    assert problem.startswith(f"could not write baselines to {lost}: ") and problem.endswith("(2 entries not written)")
    said = [row.message for row in data.rows]
    assert said[0].startswith("no baseline yet: not recorded, the write failed (") and "recorded (" not in said[0]
    assert said[1].startswith("ram 1 < 2; baseline not recorded, the write failed (") and "updated" not in said[1]
    assert said[2] == "within baseline"


def test_pruning_drops_only_entries_of_tests_that_no_longer_exist(tmp_path):
    path = tmp_path / "hw" / "m.json"
    files.write(path, "tiny", {"kept": ENTRY, "kept::label": ENTRY, "gone": ENTRY})
    data = SessionData(hardware=Hardware(key="hw"))
    data.collected["m.py"].add("kept")
    BaselineStore.of(tmp_path, data.hardware).prune(data.collected, "tiny")  # as the session's end does
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"kept", "kept::label"}


def test_pruning_leaves_the_files_of_a_baselines_folder_outside_the_project(tmp_path, monkeypatch):
    """A folder outside the project (an absolute gpu_budget_baselines another project may share) holds files whose
    keys are another project's: a test file of theirs is not missing because this project lacks it."""
    project, shared = tmp_path / "project", tmp_path / "shared"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "tests" / "test_m.py").write_text("")
    theirs = shared / "hw" / "test_theirs.json"
    files.write(theirs, "tiny", {"tests/test_theirs.py::test_x": ENTRY})
    monkeypatch.chdir(project)
    data = SessionData(hardware=Hardware(key="hw"))
    data.collected[str(project / "tests" / "test_m.py")].add("test_x")
    BaselineStore.of(shared, data.hardware).prune(data.collected, "tiny")
    assert set(json.loads(theirs.read_text())["entries"]["tiny"]) == {"tests/test_theirs.py::test_x"}


def test_a_reproductions_junit_properties_say_its_verdict_was_expected():
    """A reproduction that still breaks its budget passes its test with the verdict "over-budget": before, its
    properties said only gpu_budget_verdict=over-budget, as a case that failed its budget, on a testcase that passed."""
    row = Result("t.py::test_x", "s1", "tiny", Verdict.OVER_BUDGET, True, "over budget as expected", expect="over-budget")
    props = dict(session.user_properties(row))
    assert (props["gpu_budget_verdict"], props["gpu_budget_expect"]) == ("over-budget", "over-budget")
    assert "gpu_budget_expect" not in dict(session.user_properties(row.but(expect=None)))
