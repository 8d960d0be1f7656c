"""report/tally.py: the summary's lines on baselines written and withheld, and its line grouping the skipped cases by why."""

from pathlib import Path

from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import RECORDED, UPDATED, WITHIN, Result
from gpu_budget.report.tally import dropped_line, kept_line, skipped_line, unchanged_line, withheld_line, written_kinds, written_line
from gpu_budget.session.collection import NOT_PROBING
from gpu_budget.session.held import WITHHELD

HERE = Path("/project")
CUDA = "scenario 's2_paraformer' at scale 'tiny' needs a CUDA GPU; this host has none"
EXPLORE = "exploration is opt-in: run with --gpu-budget --gpu-budget-explore"


def test_a_first_run_names_the_file_and_its_new_entries_relative_to_the_working_folder():
    line = written_line({"/project/baselines/cpu-x86_64/test_train.json": 3}, update=False, here=HERE)
    assert line == ("baselines: recorded 3 new entries in baselines/cpu-x86_64/test_train.json; "
                    "commit it: under CI a case without a baseline fails")


def test_several_files_each_with_its_count_and_a_file_elsewhere_stays_absolute():
    line = written_line({"/project/baselines/k/test_b.json": 1, "/elsewhere/k/test_a.json": 2}, update=False, here=HERE)
    assert line == ("baselines: recorded 3 new entries in 2 files: /elsewhere/k/test_a.json (2), "
                    "baselines/k/test_b.json (1); commit them: under CI a case without a baseline fails")


def test_an_update_says_which_entries_are_new_and_which_updated_and_nothing_written_is_no_line():
    """An update's line said "wrote 1 entry" of an entry it wrote for a case with none, as of one it rewrote: a
    reviewer could not tell a new entry to check from a moved one."""
    line = written_line({"/project/b/k/test_a.json": 1}, update=True, here=HERE, new=1)
    assert line == "baselines: wrote 1 new entry (--gpu-budget-update) in b/k/test_a.json; review the diff and commit it"
    line = written_line({"/project/b/k/test_a.json": 2}, update=True, here=HERE)
    assert line == "baselines: updated 2 entries (--gpu-budget-update) in b/k/test_a.json; review the diff and commit it"
    line = written_line({"/project/b/k/test_a.json": 3}, update=True, here=HERE, new=1)
    assert line == ("baselines: wrote 3 entries (--gpu-budget-update: 1 new, 2 updated) in b/k/test_a.json; "
                    "review the diff and commit it")
    assert written_line({}, update=False, here=HERE) is None
    assert written_line({"/project/b/k/test_a.json": 0}, update=False, here=HERE) is None


def test_an_update_says_the_entries_it_left_as_they_were():
    """An update whose cases all stayed within their baselines printed no baselines line at all."""
    assert unchanged_line(2) == ("baselines: left 2 entries unchanged (--gpu-budget-update): within tolerance of their "
                                 "baseline on the same setup, so not rewritten")
    assert unchanged_line(1).startswith("baselines: left 1 entry unchanged")
    assert unchanged_line(0) is None


def test_an_updates_rows_are_counted_new_updated_or_unchanged_by_what_each_says_it_wrote():
    def row(verdict, message, baseline=True, passed=True, outcome="passed"):
        return Result(f"t.py::test_{len(message)}", "s", "tiny", verdict, passed, message,
                      baseline=Entry(peaks=Peaks(ram=1)) if baseline else None, test_outcome=outcome)

    rows = [row("no-baseline", f"{RECORDED}", baseline=False), row("improved", f"ram_tree smaller; {UPDATED}"),
            row("pass", WITHIN), row("pass", "within, noted"), row("pass", WITHIN + " ", outcome="failed"),
            row("error", "the child died"), row("pass", f"no baseline yet: {WITHHELD}", baseline=False)]
    assert written_kinds(rows) == (1, 2)  # new; unchanged: the passing rows with a baseline that claim no write


def test_entries_an_update_pruned_are_named_per_file_the_first_five_of_each():
    many = [f"t.py::test_{i}" for i in range(7)]
    line = dropped_line({"/project/b/k/test_a.json": many, "/project/b/k/test_b.json": ["u.py::x"]}, here=HERE)
    assert line == ("baselines: dropped 8 entries no longer measured (--gpu-budget-update) from 2 files: b/k/test_a.json "
                    "(t.py::test_0, t.py::test_1, t.py::test_2, t.py::test_3, t.py::test_4 and 2 more), b/k/test_b.json "
                    "(u.py::x); review the diff and commit it")
    assert dropped_line({"/project/b/k/test_a.json": []}, here=HERE) is None
    assert dropped_line({}, here=HERE) is None


def test_entries_an_update_of_a_selection_kept_unmeasured_are_named_per_file():
    line = kept_line({"/project/b/k/test_a.json": ["t.py::test_x[bs8]"]}, here=HERE)
    assert line == ("baselines: kept 1 entry no longer measured in b/k/test_a.json (t.py::test_x[bs8]): this update "
                    "ran a selection (-k, -m, node ids or deselection), so it drops none; an update of the whole suite "
                    "drops them")
    assert kept_line({"/project/b/k/test_a.json": []}, here=HERE) is None


def test_entries_withheld_from_tests_that_did_not_pass_are_named_and_none_is_no_line():
    assert withheld_line(["t.py::a"], update=False) == (
        "baselines: 1 entry not recorded, its test did not pass after measuring (t.py::a): only a passing test records "
        "its baseline")
    assert withheld_line(["t.py::a", "t.py::b::x"], update=True) == (
        "baselines: 2 entries not written, their test did not pass after measuring (t.py::a, t.py::b::x): only a "
        "passing test records its baseline")
    assert withheld_line([], update=False) is None


def test_skips_are_grouped_by_why_in_a_fixed_order_singular_or_plural():
    reasons = [f"Skipped: {NOT_PROBING}"] * 2 + [EXPLORE, CUDA, CUDA,
                                                 "the test pins device='cuda'; this host has no CUDA GPU"]
    assert skipped_line(reasons) == ("skipped 6: 2 probes (opt-in: --gpu-budget-probes), 1 exploration (opt-in: "
                                     "--gpu-budget-explore), 3 CUDA-only (no CUDA GPU here)")


def test_a_reason_of_no_group_is_quoted_when_its_cases_share_it_else_left_to_rs():
    hint = "S2 needs FunASR: pip install -e '.[s2]'"
    assert skipped_line([hint, hint]) == f"skipped 2: 2 missing a package ({hint})"
    assert skipped_line(["one reason", "another"]) == "skipped 2: 2 other (-rs lists why)"
    assert skipped_line([]) is None
