"""`python -m gpu_budget findings` on reports with nothing to compare: it says why and writes nothing (exit 1); what it
writes keeps one cell per column."""

import json

import pytest

from gpu_budget.report.findings import main

MiB = 2**20


def own(scenario: str, label=None, fixes=()) -> dict:
    """A row of a user's own gate: one case per test, no fix measured beside it."""
    return {"scenario": scenario, "scale": "tiny", "label": label, "fixes": list(fixes), "nodeid": f"t.py::test_{scenario}",
            "verdict": "pass", "message": "", "peaks": {"ram": 500 * MiB, "vram_allocated": None}, "info": {},
            "wall_seconds": 1.0}


def test_reports_without_a_fix_beside_its_run_say_why_and_write_nothing(tmp_path, capsys):
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 2, "hardware": {"key": "cpu-x86_64"},
                                "results": [own("train"), own("eval")]}))
    assert main([str(path), "-o", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert f"no findings in {path}: 2 case(s) of scenario(s) eval, train, none measured with a fix beside" in err
    assert f"nothing written to {out}" in err


def test_reports_without_a_measured_case_say_so(tmp_path, capsys):
    path, out = tmp_path / "empty.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 2, "results": []}))
    assert main([str(path), "-o", str(out)]) == 1
    assert not out.exists()
    assert f"no findings in {path}: no case in the report(s); nothing written to {out}" in capsys.readouterr().err


def test_one_fix_beside_its_run_is_a_finding(tmp_path):
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 2, "results": [own("train"), own("train", "lora", ["lora"])]}))
    assert main([str(path), "-o", str(out)]) == 0
    assert "## train" in out.read_text()


def _table_widths(text: str) -> set[int]:
    """How many cells GitHub reads in each line of the file's tables: each '|' not escaped ends one; a table line
    broken by a newline in a cell reads as a line of no table."""
    widths = set()
    for line in text.splitlines():
        if line.startswith("|"):
            widths.add(len(line.replace("\\|", "").strip().strip("|").split("|")))
    return widths


def test_a_pipe_or_a_newline_in_a_label_or_a_message_stays_in_its_cell(tmp_path):
    """A label with '|' and a child's multi-line error holding '|' would split their rows: each stays one row of
    the table's nine cells, the error's lines joined."""
    broken = {**own("train", "crashes", ["crashes"]), "verdict": "error",
              "message": "measured child failed (exception): bad | pipe\nsecond line | more"}
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 2, "results": [own("train"), own("train", "lora|8bit", ["lora"]), broken]}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert _table_widths(text) == {9}
    assert "| lora\\|8bit | lora |" in text
    assert "error: measured child failed (exception): bad \\| pipe second line \\| more |" in text


@pytest.mark.parametrize(("raw", "said"), [
    (b"\xff\xfe{}", "is not UTF-8 text"),
    (b'{"version": 3, "results": [5]}', "holds a malformed result row"),
    (b'{"version": 3, "results": [], "hardware": 7}', "holds a malformed 'hardware'"),
    (b'{"version": 3, "results": [], "notes": 7}', "holds malformed 'notes'"),
])
def test_a_report_it_cannot_read_is_a_usage_error_naming_it(raw, said, tmp_path, capsys):
    """Before: a report not UTF-8, or one whose row, hardware or notes are not what the gate writes, ended in a
    traceback (UnicodeDecodeError, TypeError, AttributeError) and exit 1."""
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    path.write_bytes(raw)
    with pytest.raises(SystemExit) as stopped:
        main([str(path), "-o", str(out)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"findings: error: {path}" in err and said in err, err
    assert not out.exists()


@pytest.mark.parametrize(("key", "value", "said"), [
    ("nodeid", None, "'nodeid' None"),
    ("scenario", 5, "'scenario' 5"),
    ("label", 1.5, "'label' 1.5"),
    ("scale", "huge", "'scale' 'huge'"),
    ("device", "tpu", "'device' 'tpu'"),
    ("budget_origin", "guess", "'budget_origin' 'guess'"),
    ("growth", "x", "'growth' 'x'"),
])
def test_a_row_field_of_another_kind_is_a_usage_error_naming_it(key, value, said, tmp_path, capsys):
    """Before: a row whose node id, scenario, label, scale, device, budget origin or growth is not what the gate
    writes (a report edited by hand, or made by another tool) was read, then crashed the rendering with a
    traceback (AttributeError, TypeError, KeyError) and exit 1."""
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 3, "results": [own("train"), {**own("train", "lora", ["lora"]), key: value}]}))
    with pytest.raises(SystemExit) as stopped:
        main([str(path), "-o", str(out)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"findings: error: {path}: holds a malformed result row" in err and said in err, err
    assert "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("where", ["folder", "missing/FINDINGS.md"])
def test_an_output_it_cannot_write_is_a_usage_error_naming_it(where, tmp_path, capsys):
    """Before: `-o` naming a folder, or a file in no folder, ended in a traceback (IsADirectoryError,
    FileNotFoundError) and exit 1, after the reports were read."""
    path, out = tmp_path / "mine.json", tmp_path / where
    (tmp_path / "folder").mkdir()
    path.write_text(json.dumps({"version": 2, "results": [own("train"), own("train", "lora", ["lora"])]}))
    with pytest.raises(SystemExit) as stopped:
        main([str(path), "-o", str(out)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"findings: error: -o {out}: " in err, err
    assert "a folder, not a file" in err if where == "folder" else f"no folder {out.parent}" in err


def test_a_write_that_fails_leaves_the_old_file_whole_and_exits_1(tmp_path, capsys, monkeypatch):
    """Before: the file was opened for writing (emptied) before its text was written: a write that failed left it
    empty or half-written, with a traceback."""
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 2, "results": [own("train"), own("train", "lora", ["lora"])]}))
    out.write_text("the findings before\n")
    from gpu_budget.report import findings

    def full(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(findings, "render", lambda *a, **k: "new findings\n")
    monkeypatch.setattr("os.replace", full)
    assert main([str(path), "-o", str(out)]) == 1
    assert out.read_text() == "the findings before\n"
    assert f"findings: error: -o {out}: No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FINDINGS.md", "mine.json"]


def test_a_report_of_a_version_it_cannot_read_is_named_by_its_version(tmp_path, capsys):
    """Before: a report a later plugin wrote (version 4) was said to be "not a gpu-budget JSON report (version 1 or 2
    or 3)", as if it were another tool's file."""
    path = tmp_path / "later.json"
    path.write_text(json.dumps({"version": 4, "results": []}))
    with pytest.raises(SystemExit) as stopped:
        main([str(path)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"{path} is a version-4 gpu-budget report: this pytest-gpu-budget reads versions 1, 2 and 3" in err, err


def test_a_report_whose_version_is_true_is_not_read_as_version_1(tmp_path, capsys):
    """Before: {"version": true} passed as version 1 (a bool is an int in Python) and was rendered."""
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"version": True, "results": []}))
    with pytest.raises(SystemExit) as stopped:
        main([str(path)])
    assert stopped.value.code == 2
    assert f"{path} is not a gpu-budget JSON report" in capsys.readouterr().err


def test_an_output_that_is_a_report_read_is_refused_and_the_report_kept(tmp_path, capsys):
    """Before: `findings report.json -o report.json` wrote FINDINGS.md over the JSON report it had just read, exit
    0: the report's figures were lost."""
    path = tmp_path / "mine.json"
    text = json.dumps({"version": 2, "results": [own("train"), own("train", "lora", ["lora"])]})
    path.write_text(text)
    with pytest.raises(SystemExit) as stopped:
        main([str(path), "-o", f"{tmp_path}/./mine.json"])
    assert stopped.value.code == 2
    assert f"-o {path}: the same file as {path}, an input: name another" in capsys.readouterr().err
    assert path.read_text() == text


def test_a_note_of_a_megabyte_is_cut_short_saying_how_much_more_the_report_holds(tmp_path):
    """gpu_budget.note() with 1 MiB of text: FINDINGS.md holds its first NOTE_CHARS characters and says how many more
    the JSON report holds. Before, the whole megabyte was one line of FINDINGS.md."""
    NOTE_CHARS = 2000  # findings.NOTE_CHARS
    path, out = tmp_path / "mine.json", tmp_path / "FINDINGS.md"
    note = {"nodeid": "t.py::test_search", "scenario": "train", "scale": "tiny", "text": "z" * 2**20, "data": {}}
    short = {**note, "nodeid": "t.py::test_other", "text": "largest batch within 1 GiB: 11"}
    path.write_text(json.dumps({"version": 2, "hardware": {"key": "cpu-x86_64"},
                                "results": [own("train"), own("train", "lora", ["lora"])], "notes": [note, short]}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert len(text) < 4 * NOTE_CHARS
    more = 2**20 - NOTE_CHARS
    assert f"- tiny: {'z' * NOTE_CHARS} ... ({more:,} more characters in the JSON report's notes) (`t.py::test_search`)" in text
    assert "- tiny: largest batch within 1 GiB: 11 (`t.py::test_other`)" in text
    assert json.loads(path.read_text())["notes"][0]["text"] == "z" * 2**20


def test_a_report_of_an_interrupted_session_is_said_to_be_partial(tmp_path, capsys):
    """Before: a report of a session stopped by Ctrl-C (its `gate_problems` saying it holds the cases measured before
    the stop only) made a FINDINGS.md that read as one of a whole session, exit 0 without a word: a fix case not
    measured read as one never declared."""
    stopped = ("the session was interrupted (Ctrl-C, SIGTERM) after 2 of 3 selected memory-budget tests reported: the "
               "table, the JSON report and the step summary hold theirs only")
    path, whole, out = tmp_path / "stopped.json", tmp_path / "whole.json", tmp_path / "FINDINGS.md"
    path.write_text(json.dumps({"version": 3, "gate_problems": [stopped],
                                "results": [own("train"), own("train", "lora", ["lora"])]}))
    whole.write_text(json.dumps({"version": 3, "gate_problems": [], "results": [own("eval")]}))
    assert main([str(path), str(whole), "-o", str(out)]) == 0
    text = out.read_text()
    assert f"> **`{path}`, a partial report:** its session's gate failed: {stopped}." in text, text[:1500]
    assert str(whole) + "`, a partial" not in text
    err = capsys.readouterr().err
    assert f"python -m gpu_budget findings: {path}: its session's gate failed: {stopped}" in err, err


def test_gate_problems_of_another_kind_are_a_usage_error(tmp_path, capsys):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"version": 3, "gate_problems": "stopped", "results": []}))
    with pytest.raises(SystemExit) as stopped:
        main([str(path), "-o", str(tmp_path / "FINDINGS.md")])
    assert stopped.value.code == 2
    assert f"findings: error: {path}: holds malformed 'gate_problems'" in capsys.readouterr().err


def test_a_budget_declared_without_an_origin_does_not_say_the_run_predates_origins(tmp_path, monkeypatch):
    """A fresh row of a mark that declares no origin read as an old report's: "- tiny: 500.00 MiB, origin not declared:
    what its verdict shows is not stated (origin as `t.py` declares it now; the run predates recorded origins)"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("import pytest\n\n@pytest.mark.gpu_budget(ram='500 MiB')\ndef test_train(gpu_budget):\n"
                                   "    pass\n")
    rows = [{**own("train", "as-reported"), "budget": {"ram": 500 * MiB}, "budget_origin": None},
            own("train", "lora", ["lora"])]
    (tmp_path / "r.json").write_text(json.dumps({"version": 3, "results": rows}))
    assert main(["r.json", "-o", "F.md"]) == 0
    text = (tmp_path / "F.md").read_text()
    assert "- tiny: 500.00 MiB, origin not declared: what its verdict shows is not stated\n" in text
    assert "predates" not in text


def test_a_row_recorded_without_an_origin_is_not_read_as_predating_origins(tmp_path, monkeypatch):
    """A run of `gpu_budget(ram=...)` whose memtest later gained origin="chosen": its row, recorded with
    `budget_origin: null`, read "chosen (...) (origin as `origins.py` declares it now; the run predates recorded
    origins)". A recorded null is a mark that declared none; only a row without the key predates origins."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "origins.py").write_text("import pytest\n\n@pytest.mark.gpu_budget(ram='500 MiB', origin='chosen')\n"
                                         "def test_train(gpu_budget):\n    pass\n")  # not t.py: imported already
    row = {**own("train", "as-reported"), "nodeid": "origins.py::test_train", "budget": {"ram": 500 * MiB}}
    lora = {**own("train", "lora", ["lora"]), "nodeid": "origins.py::test_lora"}
    declared_none = "- tiny: 500.00 MiB, origin not declared: what its verdict shows is not stated\n"
    for recorded, said in (({"budget_origin": None}, declared_none),
                           ({}, "declares it now; the run predates recorded origins)\n")):
        (tmp_path / "r.json").write_text(json.dumps({"version": 3, "results": [{**row, **recorded}, lora]}))
        assert main(["r.json", "-o", "F.md"]) == 0
        assert said in (tmp_path / "F.md").read_text()
