"""session/session.py: what the session does with its data at the end, without a pytest session around it."""

import json

from gpu_budget.judge import files
from gpu_budget.judge.store import BaselineStore, PendingWrite
from gpu_budget.model.hardware import Hardware
from gpu_budget.session import session
from gpu_budget.session.data import SessionData

ENTRY = {"peaks": {"ram": 1}, "phases": {}, "fingerprint": {}, "recorded": "2026-11-25", "tolerance": {"rel": 0.005, "abs": 1}}


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


def test_pruning_drops_only_entries_of_tests_that_no_longer_exist(tmp_path):
    path = tmp_path / "hw" / "m.json"
    files.write(path, "tiny", {"kept": ENTRY, "kept::label": ENTRY, "gone": ENTRY})
    data = SessionData(hardware=Hardware(key="hw"))
    data.collected["m.py"].add("kept")
    BaselineStore.of(tmp_path, data.hardware).prune(data.collected, "tiny")  # as the session's end does
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"kept", "kept::label"}
