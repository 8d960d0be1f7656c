"""`python -m gpu_budget baselines drop --scale`: a scale that is none is a usage error (exit 2);
one stored in none of the files given says so and exits 1, so a typo never reads as done (judge/baselines_cli.py)."""

import subprocess
import sys

import pytest

from gpu_budget.judge import baselines_cli, files

ENTRY = {"peaks": {"ram": 1}, "fingerprint": {"malloc": "steady"}}


def test_an_unknown_scale_is_a_usage_error_named_with_the_known_ones(tmp_path, capsys):
    path = tmp_path / "hw" / "m.json"
    files.write(path, "tiny", {"test_a": ENTRY})
    with pytest.raises(SystemExit) as info:
        baselines_cli.main(["drop", "--scale", "Tiny", str(tmp_path)])
    assert info.value.code == 2
    assert "error: --scale 'Tiny' is not a scale: they are tiny, real" in capsys.readouterr().err
    assert set(files.load(path)["entries"]) == {"tiny"}


def test_a_scale_no_file_given_holds_says_so_names_those_held_and_exits_1(tmp_path, capsys):
    one, other = tmp_path / "hw" / "a.json", tmp_path / "hw" / "b.json"
    for path in (one, other):
        files.write(path, "tiny", {"test_a": ENTRY})
    assert baselines_cli.main(["drop", "--scale", "real", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "no entries of scale 'real' in the 2 baseline files given (they hold 'tiny'): nothing dropped" in err
    assert "not a scale" not in err


def test_files_that_hold_no_entries_say_so(tmp_path, capsys):
    path = tmp_path / "hw" / "m.json"
    files.write(path, "tiny", {"test_a": ENTRY})
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 0
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 1
    assert "(they hold no entries): nothing dropped" in capsys.readouterr().err


def test_a_folder_without_baseline_files_says_so_and_exits_1(tmp_path, capsys):
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 1
    assert f"no baseline file (*.json) under {tmp_path}" in capsys.readouterr().err


def test_a_scale_some_files_hold_is_dropped_from_those(tmp_path, capsys):
    one, other = tmp_path / "hw" / "a.json", tmp_path / "hw" / "b.json"
    files.write(one, "real", {"test_a": ENTRY})
    files.write(other, "tiny", {"test_a": ENTRY})
    assert baselines_cli.main(["drop", "--scale", "real", str(tmp_path)]) == 0
    assert files.load(one)["entries"] == {} and set(files.load(other)["entries"]) == {"tiny"}
    assert capsys.readouterr().out == f"{one}: dropped the 'real' entries\n"


def test_the_exit_code_reaches_the_shell(tmp_path):
    files.write(tmp_path / "hw" / "m.json", "tiny", {"test_a": ENTRY})
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "baselines", "drop", "--scale", "real", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "no entries of scale 'real'" in done.stderr


def test_every_unreadable_file_is_named_in_one_run_and_nothing_is_dropped(tmp_path, capsys):
    """A drop is the first step of re-recording: it drops from every file or from none (a file left holding the scale
    would keep its old entries through --gpu-budget-update), and names each file it cannot read, so one run lists
    them all instead of one per run."""
    good, later = tmp_path / "hw" / "a.json", tmp_path / "hw" / "e.json"
    for path in (good, later):
        files.write(path, "tiny", {"test_a": ENTRY})
    not_utf8, not_json, folder = tmp_path / "hw" / "b.json", tmp_path / "hw" / "c.json", tmp_path / "hw" / "d.json"
    not_utf8.write_bytes(b"\xff\xfe{}")
    not_json.write_text('{"schema": "gpu-budget-baselines/1", "entries": {')
    folder.mkdir()
    before = {path: path.read_bytes() for path in (good, later, not_utf8, not_json)}
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    for path in (not_utf8, not_json, folder):
        assert f"python -m gpu_budget baselines drop: baseline file {path} " in err
    assert "3 of 5 files cannot be read (named above): nothing dropped" in err
    assert {path: path.read_bytes() for path in before} == before


def test_a_file_it_cannot_write_is_named_and_the_others_dropped(tmp_path, capsys, refuse_a_json):
    """A write refused by the system (an unwritable folder) names the file, left whole, as `baselines resolve` does;
    the files read before it are dropped, so the message says which were."""
    one, other = tmp_path / "hw" / "a.json", tmp_path / "hw" / "b.json"
    for path in (one, other):
        files.write(path, "tiny", {"test_a": ENTRY})
    before = one.read_bytes()
    refuse_a_json()
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert f"python -m gpu_budget baselines drop: {one}: [Errno 13] Permission denied" in err
    assert "1 of 2 files left holding 'tiny' (named above)" in err and out == f"{other}: dropped the 'tiny' entries\n"
    assert one.read_bytes() == before and files.load(other)["entries"] == {}


def test_a_file_named_twice_is_dropped_from_once(tmp_path, capsys):
    """Before: a file given twice (a folder and a file in it) printed "dropped the 'tiny' entries" twice, the second
    time rewriting a file that held none."""
    path = tmp_path / "hw" / "m.json"
    files.write(path, "tiny", {"test_a": ENTRY})
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path), str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: dropped the 'tiny' entries\n"


def test_a_json_that_is_no_baseline_file_is_skipped_by_name_and_blocks_none(tmp_path, capsys):
    """Before: one hidden or tool's *.json in the folder ("top level: 'schema' is None") made the drop refuse every
    file: "1 of 2 files cannot be read (named above): nothing dropped", exit 1. It is no baseline file: it is named
    as skipped, and the baseline file beside it dropped from; `resolve` of the folder skips it too."""
    path, hidden = tmp_path / "hw" / "m.json", tmp_path / "hw" / ".cache.json"
    files.write(path, "tiny", {"test_a": ENTRY})
    hidden.write_text('{"tool": "cache", "version": 3}')
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert out == f"{path}: dropped the 'tiny' entries\n" and files.load(path)["entries"] == {}
    assert err == (f"python -m gpu_budget baselines drop: skipped {hidden}: no baseline file (JSON with neither the "
                   "'gpu-budget-baselines/1' schema nor entries)\n")
    assert hidden.read_text() == '{"tool": "cache", "version": 3}'
    assert baselines_cli.main(["resolve", str(tmp_path)]) == 0
    assert f"skipped {hidden}: no baseline file" in capsys.readouterr().err


def test_a_folder_holding_only_other_json_says_so_and_exits_1(tmp_path, capsys):
    (tmp_path / "hw").mkdir()
    (tmp_path / "hw" / "report.json").write_text("[1, 2]")
    assert baselines_cli.main(["drop", "--scale", "tiny", str(tmp_path)]) == 1
    assert f"no baseline file (*.json) under {tmp_path} but those skipped (named above)" in capsys.readouterr().err
