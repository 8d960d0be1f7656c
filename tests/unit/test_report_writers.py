"""Two sessions writing one report path at once: each writes through a temp file of its own, never another's."""

import json

from gpu_budget.against import render
from gpu_budget.report import json_report, outputs


def _other_writer(path):
    """The temp file another session's write of `path` would be filling now, under the name a fixed scheme gives."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text('{"version": 3, "results": [')  # half written
    return tmp


def test_the_json_report_leaves_another_writers_temp_file_alone(tmp_path):
    path = tmp_path / "report.json"
    other = _other_writer(path)
    json_report.write_json(path, [], {"key": "cpu"})
    assert json.loads(path.read_text())["hardware"] == {"key": "cpu"}
    assert other.read_text() == '{"version": 3, "results": [', "another session's report, half written, was taken"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "report.json.tmp"]


def test_the_against_report_leaves_another_writers_temp_file_alone(tmp_path):
    path = tmp_path / "against.json"
    other = _other_writer(path)

    class Outcome:
        def to_json(self):
            return {"pairs": []}

    render.write_json(path, Outcome())
    assert json.loads(path.read_text()) == {"pairs": []}
    assert other.exists(), "another session's report, half written, was taken"


def test_a_whole_write_names_its_temp_file_for_this_write_alone(tmp_path, monkeypatch):
    """The pid alone is not one writer's: a process in another pid namespace sharing the folder may have it."""
    path = tmp_path / "out.md"
    names = []
    real = type(path).write_text

    def spy(self, text, *args, **kwargs):
        names.append(self.name)
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(type(path), "write_text", spy)
    outputs.write_whole(path, "a\n")
    outputs.write_whole(path, "b\n")
    assert path.read_text() == "b\n"
    assert len(set(names)) == 2 and all(name.startswith(".out.md.") for name in names)
