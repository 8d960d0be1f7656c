"""The child -> parent protocol (events.py): every event crosses as one JSON line and back unchanged."""

import pytest

from gpu_budget.isolate import events
from gpu_budget.measure.host import Probed
from gpu_budget.measure.summary import summarize
from gpu_budget.model.figures import PhaseRecord
from gpu_budget.model.result import Failure

EVERY = [
    events.Started(12, False, "vmhwm", "vmhwm+peak-of-summed-descendants", True, command=True),
    events.PhaseEnded(PhaseRecord("load", None, 0.5, 1, None, None)),
    events.TreeFigure(2**30),
    events.SnapshotDumped("/tmp/s.pickle"),
    events.Finished(summarize([PhaseRecord("load", None, 0.5, 1, None, None)], cuda=False), {"malloc": "steady"}),
    events.Failed("exit", None, "command 'x' exited with 3", None, {"exit_code": 3}),
    events.DeviceSeen(Probed.from_json({"cuda": False, "setup": {"floor": 1, "packages": {"torch": "2.13.0"}}})),
    events.Prepared(),
]


@pytest.mark.parametrize("event", EVERY, ids=lambda e: e.kind)
def test_every_event_crosses_one_line_and_back(event):
    line = events.encode(event)
    assert line.endswith("\n") and line.count("\n") == 1
    assert events.decode(line) == event


def test_a_line_cut_short_by_a_kill_ends_the_reading(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text(events.encode(EVERY[0]) + events.encode(EVERY[1]) + events.encode(EVERY[2])[:9])
    assert events.read(str(path)) == EVERY[:2]


def test_an_unknown_event_is_an_error_naming_it():
    with pytest.raises(events.EventError, match="no known kind: .*surprise"):
        events.decode('{"event": "surprise", "x": 1}')


def test_a_failure_reads_as_the_measurements_error():
    assert EVERY[5].failure() == Failure(kind="exit", type=None, message="command 'x' exited with 3", traceback=None)
