"""against/verdict.py and render.py on cases one side lacks: a renamed module, a case at head only, a module a side
could not collect; against/renames.py's parse of git's output; against/collected.py's one-line error."""

import sys
from pathlib import Path

import pytest

from gpu_budget.against import collected
from gpu_budget.against.renames import parse
from gpu_budget.against.render import rows
from gpu_budget.against.verdict import judge_all
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result, Verdict

MiB = 2**20
TOL = Tolerance(rel=0.005, abs=4 * MiB)


def row(nodeid: str, ram_tree: int, *, verdict: str = "no-baseline", passed: bool = True) -> Result:
    measurement = Measurement(status="ok", peaks=Peaks(ram=ram_tree, ram_tree=ram_tree))
    return Result(nodeid=nodeid, scenario="a", scale="tiny", verdict=Verdict(verdict), passed=passed,
                  message="over budget 64.00 MiB" if not passed else "ok", tolerance=TOL, measurement=measurement)


def test_a_renamed_module_pairs_its_cases_and_a_growth_fails():
    base = [[row("test_a.py::test_x", 64 * MiB)]] * 2
    head = [[row("test_b.py::test_x", 512 * MiB)]] * 2
    (case,) = judge_all(base, head, renamed={"test_a.py": "test_b.py"})
    assert (case.nodeid, case.status, case.passed, case.renamed_from) == ("test_b.py::test_x", "regression", False,
                                                                         "test_a.py")
    assert case.message.startswith("renamed from test_a.py; ram_tree head 512.00 MiB")
    assert case.to_json()["renamed_from"] == "test_a.py" and case.to_json()["paired_by"] == "git"
    assert rows([case])[0][0] == "test_b.py::test_x (renamed from test_a.py)"


def test_a_rename_pairs_only_a_case_of_the_same_name():
    base = [[row("test_a.py::test_x", 64 * MiB), row("test_a.py::test_gone", 8 * MiB)]]
    head = [[row("test_b.py::test_x", 64 * MiB), row("test_b.py::test_added", 8 * MiB)]]
    found = {c.nodeid: c for c in judge_all(base, head, renamed={"test_a.py": "test_b.py"})}
    assert {n: (c.status, c.renamed_from) for n, c in found.items()} == {
        "test_b.py::test_x": ("pass", "test_a.py"), "test_b.py::test_added": ("unpaired", None),
        "test_a.py::test_gone": ("removed", None)}  # a case gained while one is lost: flagged, not a plain "new"


def test_a_file_renamed_past_gits_detection_pairs_its_cases_by_name_and_a_growth_fails():
    """git's rename detection needs 50 % alike: a test file renamed with heavy edits reads as one deleted and one
    added. Its cases keep their names, each the only one of its name base lost and head gained: one case each, and
    an 8x growth fails as a regression (before, "new" and "removed": it passed unjudged)."""
    base = [[row("test_a.py::test_x", 64 * MiB), row("test_a.py::test_y[8]", 8 * MiB)]]
    head = [[row("test_b.py::test_x", 512 * MiB), row("test_b.py::test_y[8]", 8 * MiB)]]
    x, y = judge_all(base, head)
    assert (x.nodeid, x.status, x.passed, x.renamed_from, x.paired_by) == ("test_b.py::test_x", "regression", False,
                                                                         "test_a.py", "name")
    assert x.message.startswith("renamed from test_a.py (git saw no rename: paired by the case's name")
    assert "ram_tree head 512.00 MiB (lowest of 1) > base 64.00 MiB" in x.message
    assert (y.status, y.renamed_from) == ("pass", "test_a.py")
    assert rows([x])[0][0] == "test_b.py::test_x (renamed from test_a.py)"


def test_a_name_two_lost_or_two_gained_cases_hold_is_not_paired_and_flagged():
    base = [[row("test_a.py::test_x", 64 * MiB), row("test_c.py::test_x", 8 * MiB)]]
    head = [[row("test_b.py::test_x", 512 * MiB)]]
    found = {c.nodeid: c for c in judge_all(base, head)}
    assert {n: c.status for n, c in found.items()} == {"test_b.py::test_x": "unpaired", "test_a.py::test_x": "removed",
                                                      "test_c.py::test_x": "removed"}
    flagged = found["test_b.py::test_x"]
    assert flagged.passed and flagged.renamed_from is None
    assert flagged.message.startswith("at head only, and base lost 2 case(s) in the same change that no case pairs with: "
                                      "test_a.py::test_x (ram_tree 64.00 MiB at base, head +700.0%, past the tolerance); "
                                      "test_c.py::test_x (ram_tree 8.00 MiB at base, head +6300.0%, past the tolerance)")
    assert flagged.message.endswith("judged on its budget alone")
    assert "head gained 1 case(s) in the same change that no case pairs with (test_b.py::test_x)" in found["test_a.py::test_x"].message


def test_changed_parametrize_ids_are_flagged_with_the_change_against_each_lost_case():
    """Ids 8, 32 become small, big: no name pairs them (nor could a guess by order be trusted), so each gained case is
    flagged, naming what its change would be against each lost one; the run still passes on the budgets."""
    base = [[row("t.py::test_p[8]", 8 * MiB), row("t.py::test_p[32]", 32 * MiB)]]
    head = [[row("t.py::test_p[small]", 32 * MiB), row("t.py::test_p[big]", 128 * MiB)]]
    small, big, *lost = judge_all(base, head)
    assert [c.status for c in (small, big, *lost)] == ["unpaired", "unpaired", "removed", "removed"]
    assert all(c.passed for c in (small, big, *lost))
    assert "t.py::test_p[32] (ram_tree 32.00 MiB at base, head +300.0%, past the tolerance)" in big.message


def test_a_case_gained_with_none_lost_is_new_and_one_lost_with_none_gained_is_removed():
    base = [[row("t.py::test_x", 8 * MiB), row("t.py::test_gone", 8 * MiB)]]
    assert [c.status for c in judge_all(base, [[row("t.py::test_x", 8 * MiB)]])] == ["pass", "removed"]
    head = [[row("t.py::test_x", 8 * MiB), row("t.py::test_added", 8 * MiB)]]
    assert [c.status for c in judge_all([[row("t.py::test_x", 8 * MiB)]], head)] == ["pass", "new"]


def test_a_case_the_other_side_could_not_collect_is_not_paired_by_name():
    """Its module's error is why it has no row there: an error, not a lost case a new one could be."""
    base = [[row("test_a.py::test_x", 64 * MiB)]]
    head = [[row("test_b.py::test_x", 512 * MiB)]]
    found = {c.nodeid: c.status for c in judge_all(base, head, head_uncollected={"test_a.py": "SyntaxError: ..."})}
    assert found == {"test_b.py::test_x": "new", "test_a.py::test_x": "error"}


def test_a_case_at_head_only_shows_its_figures_and_its_budget_judges_it():
    head = [[row("t.py::test_new", 100 * MiB), row("t.py::test_over", 96 * MiB, verdict="over-budget", passed=False)],
            [row("t.py::test_new", 101 * MiB), row("t.py::test_over", 96 * MiB, verdict="over-budget", passed=False)]]
    new, over = judge_all([], head)
    assert (new.status, new.passed, over.status, over.passed) == ("new", True, "over-budget", False)
    fig = new.figures[0]
    assert (fig.metric, fig.base, fig.head, fig.change, fig.spread_base) == ("ram_tree", (), (100 * MiB, 101 * MiB),
                                                                           None, None)
    assert not (fig.regressed or fig.improved or fig.noisy)
    assert new.to_json()["figures"][0]["base"] == [] and over.figures
    assert rows([new])[0][1:6] == ("ram_tree", "-", "100.50 MiB", "-", "- / 1.00 MiB")


def test_a_module_base_could_not_collect_names_its_error_per_case():
    head = [[row("test_ok.py::test_ok", 8 * MiB), row("test_b.py::test_one", 8 * MiB),
             row("test_b.py::test_two", 8 * MiB, verdict="over-budget", passed=False)]]
    base = [[row("test_ok.py::test_ok", 8 * MiB)]]
    error = "SyntaxError: invalid syntax (test_b.py, line 9)"
    found = {c.nodeid: c for c in judge_all(base, head, base_uncollected={"test_b.py": error})}
    ok, one, two = found["test_ok.py::test_ok"], found["test_b.py::test_one"], found["test_b.py::test_two"]
    assert (ok.status, one.status, one.passed, two.status, two.passed) == ("pass", "error at base", True,
                                                                           "over-budget", False)
    assert one.message == f"could not be collected at base: {error}; head judged on its budget alone"
    assert one.figures and one.figures[0].base == ()
    assert two.message.endswith(f"; could not be collected at base: {error}")


def test_a_base_error_follows_a_renamed_module_and_a_module_without_cases_is_listed():
    head = [[row("test_b.py::test_x", 8 * MiB)]]
    found = {c.nodeid: c for c in judge_all([], head, renamed={"test_a.py": "test_b.py"},
                                            base_uncollected={"test_a.py": "E1", "tests/gone": "E2"})}
    x = found["test_b.py::test_x"]
    assert (x.status, x.renamed_from) == ("error at base", "test_a.py")
    assert x.message == "renamed from test_a.py; could not be collected at base: E1; head judged on its budget alone"
    gone = found["tests/gone"]
    assert (gone.status, gone.passed) == ("error at base", True) and "E2; no case of it measured at head" in gone.message


def test_a_module_head_could_not_collect_fails_per_case_or_once():
    base = [[row("test_b.py::test_one", 8 * MiB)]]
    found = {c.nodeid: c for c in judge_all(base, [], head_uncollected={"test_b.py": "E", "test_new.py": "N"},
                                            base_uncollected={"test_new.py": "M"})}
    assert (found["test_b.py::test_one"].status, found["test_b.py::test_one"].passed) == ("error", False)
    assert found["test_b.py::test_one"].message == "could not be collected at head: E"
    assert (found["test_new.py"].status, found["test_new.py"].passed) == ("error", False)
    assert found["test_new.py"].message == "could not be collected at head: N; at base too: M"


def test_gits_name_status_output_gives_the_renames_only():
    out = "M\0runners.py\0R100\0test_a.py\0test_b.py\0C075\0x.py\0y.py\0D\0gone.py\0R087\0a/t.py\0b/t.py\0"
    assert parse(out) == {"test_a.py": "test_b.py", "a/t.py": "b/t.py"}
    assert parse("") == {}


def test_a_collection_error_is_one_line_naming_the_file_and_line(tmp_path):
    bad = tmp_path / "sub" / "test_bad.py"
    bad.parent.mkdir()
    bad.write_text("x = 1\ndef f(:\n")
    with pytest.raises(SyntaxError) as syntax:
        compile(bad.read_text(), str(bad), "exec")
    wrapped = pytest.Collector.CollectError("pytest's own words")
    wrapped.__cause__ = syntax.value
    said = collected.said(wrapped, tmp_path)
    assert said.startswith("SyntaxError: ") and said.endswith("(sub/test_bad.py, line 2)"), said
    (tmp_path / "test_imp.py").write_text("import no_such_module_here\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ImportError) as missing:
            __import__("test_imp")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("test_imp", None)
    assert collected.said(missing.value, tmp_path) == ("ModuleNotFoundError: No module named 'no_such_module_here' "
                                                      "(test_imp.py, line 1)")


def test_a_collector_holds_the_cases_under_it():
    errors = {"tests/a": "A", "test_b.py": "B"}
    assert collected.holder("tests/a/test_x.py::test_y", errors) == "tests/a"
    assert collected.holder("test_b.py::test_y[1]", errors) == "test_b.py"
    assert collected.holder("tests/ab/test_x.py::t", errors) is None
    assert collected.read(Path("/nonexistent/file")) == {}


def test_a_folder_is_named_renamed_only_where_its_files_came_from_one_folder():
    """renames.folder_was: `git mv memtests gputests` maps the folder back; files gathered from two folders, or a
    file renamed within the folder, name no old folder (the base side then runs without it, its cases new)."""
    from gpu_budget.against.renames import folder_was

    moved = {"memtests/test_a.py": "gputests/test_a.py", "memtests/sub/test_b.py": "gputests/sub/test_b.py"}
    assert folder_was(moved, "gputests") == "memtests"
    assert folder_was({"a/x/test_a.py": "b/x/test_a.py"}, "b/x") == "a/x"
    assert folder_was({**moved, "other/test_c.py": "gputests/test_c.py"}, "gputests") is None
    assert folder_was({"gputests/test_a.py": "gputests/test_b.py"}, "gputests") is None
    assert folder_was({"test_a.py": "gputests/test_a.py"}, "gputests") is None


def test_a_folder_is_named_by_its_new_name_only_where_its_files_went_to_one_folder():
    """renames.folder_now, folder_was the other way (a bisect's folder argument given at GOOD): files spread into two
    folders, or renamed within the folder, name no new folder."""
    from gpu_budget.against.renames import folder_now

    moved = {"memtests/test_a.py": "gputests/test_a.py", "memtests/sub/test_b.py": "gputests/sub/test_b.py"}
    assert folder_now(moved, "memtests") == "gputests"
    assert folder_now({"a/x/test_a.py": "b/x/test_a.py"}, "a/x") == "b/x"
    assert folder_now({**moved, "memtests/test_c.py": "other/test_c.py"}, "memtests") is None
    assert folder_now({"memtests/test_a.py": "memtests/test_b.py"}, "memtests") is None
    assert folder_now({"memtests/test_a.py": "test_a.py"}, "memtests") is None


def test_a_case_moved_into_a_class_pairs_by_its_function_and_a_growth_fails():
    """A test moved into a class (or out of one) in a PR that grows it 8x read "unpaired" and passed: its name less
    its class is held by one lost and one gained case alone, so it is paired, and the growth fails."""
    base = [[row("t.py::test_x", 64 * MiB), row("t.py::TestOld::test_y[8]", 8 * MiB)]]
    head = [[row("t.py::TestG::test_x", 512 * MiB), row("u.py::test_y[8]", 8 * MiB)]]
    x, y = judge_all(base, head)
    assert (x.nodeid, x.status, x.passed, x.renamed_from, x.paired_by) == ("t.py::TestG::test_x", "regression", False,
                                                                         "t.py::test_x", "name")
    assert x.message.startswith("renamed from t.py::test_x (git saw no rename: paired by the case's name, its class "
                                "aside where that changed")
    assert (y.status, y.renamed_from) == ("pass", "t.py::TestOld::test_y[8]")


def test_a_function_two_classes_hold_is_not_paired_by_it():
    base = [[row("t.py::TestA::test_x", 64 * MiB), row("t.py::TestB::test_x", 64 * MiB)]]
    head = [[row("t.py::TestC::test_x", 512 * MiB)]]
    assert [c.status for c in judge_all(base, head)] == ["unpaired", "removed", "removed"]
