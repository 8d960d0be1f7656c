"""against/verdict.py: head judged against base from both sides' rows; against/__init__.py: the arguments each side gets."""

import os
from pathlib import Path

from gpu_budget.against import at_base, passed_through
from gpu_budget.against.pairs import session_args
from gpu_budget.against.verdict import Figure, judge_all, judge_case, undecided
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Failure, Measurement, Result, Verdict

MiB = 2**20
TOL = Tolerance(rel=0.005, abs=4 * MiB)


def row(ram_tree: int | None, *, verdict: str = "no-baseline", passed: bool = True, error: bool = False,
        nodeid: str = "t.py::test_a", tolerance=TOL, measured: bool = True, test_outcome: str | None = None) -> Result:
    measurement = None
    if measured:
        measurement = Measurement(status="error" if error else "ok", peaks=Peaks(ram=ram_tree, ram_tree=ram_tree),
                                  error=Failure(kind="crash", message="boom") if error else None)
    return Result(nodeid=nodeid, scenario="a", scale="tiny", verdict=Verdict(verdict), passed=passed,
                  message="boom" if error else "ok", tolerance=tolerance, measurement=measurement,
                  test_outcome=test_outcome, test_failure="assert 1 == 0" if test_outcome == "failed" else None)


def test_equal_sides_pass_and_the_figure_is_the_tree():
    case = judge_case("t.py::test_a", [row(100 * MiB), row(100 * MiB + 4096)], [row(100 * MiB + 8192), row(100 * MiB)])
    assert (case.status, case.passed) == ("pass", True)
    assert [f.metric for f in case.figures] == ["ram_tree"]  # ram_tensor and vram absent on every run: not compared
    assert case.figures[0].spread_base == 4096


def test_past_the_tolerance_is_a_regression_naming_the_figure():
    case = judge_case("t.py::test_a", [row(100 * MiB)] * 2, [row(164 * MiB)] * 2)
    assert (case.status, case.passed) == ("regression", False)
    assert case.message.startswith("ram_tree head 164.00 MiB (lowest of 2) > base 100.00 MiB (highest of 2)")
    assert round(case.figures[0].change, 2) == 0.64


def test_the_spread_widens_the_rule():
    """+6 MiB on medians is past 0.5 % + 4 MiB, but head's lowest run is within the limit of base's highest."""
    base, head = [row(100 * MiB), row(108 * MiB)], [row(104 * MiB), row(116 * MiB)]
    case = judge_case("t.py::test_a", base, head)
    assert case.status == "pass" and "cannot be told from noise" in case.message
    assert [c.nodeid for c in undecided([case])] == ["t.py::test_a"]
    fig = Figure("ram_tree", (100 * MiB, 100 * MiB), (106 * MiB, 106 * MiB), Tolerance(0.005, 4 * MiB))
    assert fig.regressed and not fig.noisy


def test_one_run_a_side_near_the_limit_is_unsure_and_further_from_it_is_decided():
    """The limit of 100 MiB is 104.5 MiB (0.5 % + 4 MiB), the margin 4.5 MiB: a head within 2.25 MiB of the limit, on
    either side, gets a pair more; one further is judged on its one run, as a stored baseline would be."""
    tol = Tolerance(0.005, 4 * MiB)
    for head, unsure in ((104 * MiB, True), (106 * MiB, True), (102 * MiB, False), (107 * MiB, False), (100 * MiB, False)):
        fig = Figure("ram_tree", (100 * MiB,), (head,), tol)
        assert fig.unsure is unsure, head / MiB
    assert not Figure("ram_tree", (100 * MiB, 100 * MiB), (104 * MiB, 104 * MiB), tol).unsure  # two runs: the spread judges
    case = judge_case("t.py::test_a", [row(100 * MiB)], [row(104 * MiB)])
    assert case.status == "pass" and [c.nodeid for c in undecided([case])] == ["t.py::test_a"]
    far = judge_case("t.py::test_a", [row(100 * MiB)], [row(110 * MiB)])
    assert far.status == "regression" and undecided([far]) == []


def test_a_smaller_head_is_an_improvement_that_passes():
    """Its message subtracts both terms, as the rule does (before: "< base 200.00 MiB (lowest of 2) - 0.5% + 4.00 MiB",
    read as a floor 8 MiB above the rule's)."""
    case = judge_case("t.py::test_a", [row(200 * MiB)] * 2, [row(100 * MiB)] * 2)
    assert (case.status, case.passed) == ("improved", True)
    assert case.message.startswith("ram_tree head 100.00 MiB (highest of 2) < base 200.00 MiB (lowest of 2) - 0.5% - "
                                   "4.00 MiB")


def test_the_budget_still_applies_to_head():
    case = judge_case("t.py::test_a", [row(100 * MiB)] * 2,
                      [row(100 * MiB), row(100 * MiB, verdict="over-budget", passed=False)])
    assert (case.status, case.passed) == ("over-budget", False)
    assert case.message.startswith("at head: ")


def test_a_head_that_lost_its_expected_failure_fails():
    """An expected over-budget case that stayed within its budget passes nothing: its row is "pass", not passed."""
    case = judge_case("t.py::test_a", [row(100 * MiB)] * 2, [row(100 * MiB, verdict="pass", passed=False)] * 2)
    assert (case.status, case.passed) == ("failed", False)


def test_a_head_whose_test_failed_after_measure_fails_as_the_plain_gate_fails_it():
    """The row passed the gate (no-baseline, within tolerance of base) but its test's own assertion failed after
    measure(): the plain gate exits 1 on it, so against mode must not call it a pass."""
    case = judge_case("t.py::test_a", [row(100 * MiB)], [row(100 * MiB, test_outcome="failed")])
    assert (case.status, case.passed) == ("failed", False)
    assert case.message == "at head: its test failed after measure(): assert 1 == 0"
    new = judge_case("t.py::test_a", [], [row(100 * MiB, test_outcome="failed")])  # at head only: failed too
    assert (new.status, new.passed) == ("failed", False)
    over = judge_case("t.py::test_a", [row(100 * MiB)],  # the gate's own failure is named first
                      [row(100 * MiB, test_outcome="failed"), row(100 * MiB, verdict="over-budget", passed=False,
                                                                  test_outcome="failed")])
    assert (over.status, over.passed) == ("over-budget", False)
    fine = judge_case("t.py::test_a", [row(100 * MiB)], [row(100 * MiB, test_outcome="passed")])
    assert (fine.status, fine.passed) == ("pass", True)
    xfailed = judge_case("t.py::test_a", [row(100 * MiB)], [row(100 * MiB, test_outcome="xfailed")])  # as pytest says
    assert (xfailed.status, xfailed.passed) == ("pass", True)


def test_a_base_whose_test_failed_after_measure_is_noted_not_failed():
    """A base is not the head's to fix: its figures were measured all the same and judge the head as usual."""
    case = judge_case("t.py::test_a", [row(100 * MiB, test_outcome="failed")], [row(100 * MiB, test_outcome="passed")])
    assert (case.status, case.passed) == ("pass", True)
    assert case.message == ("within the tolerance of base; at base its test failed after measure(): assert 1 == 0 "
                            "(not judged: a base is not the head's to fix)")
    worse = judge_case("t.py::test_a", [row(100 * MiB, test_outcome="failed")], [row(164 * MiB, test_outcome="passed")])
    assert (worse.status, worse.passed) == ("regression", False)


def test_new_removed_and_error_at_base():
    cases = {c.nodeid: c for c in judge_all(
        [[row(1 * MiB, nodeid="t.py::old"), row(1 * MiB, nodeid="t.py::broken", error=True, verdict="error",
                                                   passed=False)]],
        [[row(1 * MiB, nodeid="t.py::new"), row(1 * MiB, nodeid="t.py::broken")]])}
    assert list(cases) == ["t.py::new", "t.py::broken", "t.py::old"]  # head's order, then base only
    assert (cases["t.py::new"].status, cases["t.py::new"].passed) == ("unpaired", True)  # base lost t.py::old
    assert (cases["t.py::old"].status, cases["t.py::old"].passed) == ("removed", True)
    assert (cases["t.py::broken"].status, cases["t.py::broken"].passed) == ("error at base", True)
    assert "head judged on its budget alone" in cases["t.py::broken"].message


def test_a_case_skipped_at_head_is_skipped():
    case = judge_case("t.py::test_a", [], [row(None, verdict="skipped", measured=False)])
    assert (case.status, case.passed) == ("skipped", True)


def test_the_case_tolerance_is_its_own():
    wide = Tolerance(rel=0.5, abs=0)
    case = judge_case("t.py::test_a", [row(100 * MiB, tolerance=wide)] * 2, [row(140 * MiB, tolerance=wide)] * 2)
    assert case.status == "pass"


def test_each_side_gets_the_users_arguments_less_what_each_run_sets():
    args = ["tests", "-n", "2", "--gpu-budget", "--gpu-budget-against", "main", "--gpu-budget-json=r.json",
            "--gpu-budget-plots", "plots", "-k", "fn"]
    assert passed_through(args) == ["tests", "-n", "2", "-k", "fn"]
    top, tree = Path("/repo"), Path("/tmp/wt/base")
    assert at_base(["/repo/tests/test_a.py", "--rootdir=/repo", "/repository", "tests"], top, tree) == \
        ["/tmp/wt/base/tests/test_a.py", "--rootdir=/tmp/wt/base", "/repository", "tests"]
    run = session_args(["-k", "fn"], Path("/s/r.json"), Path("/s/b"))
    assert run[:2] == ["-k", "fn"] and "--gpu-budget-update" in run and "--gpu-budget-baselines=/s/b" in run
    assert run[-2:] == ["-p", "no:randomly"] and session_args(["-p", "randomly"], Path("r"), Path("b"))[-1] != "no:randomly"


def test_the_against_modules_import_no_torch():
    """The invoking pytest process runs none of the measured code: only the sessions' children import torch."""
    import subprocess
    import sys

    code = ("import sys, gpu_budget.against, gpu_budget.against.render, gpu_budget.against.worktree; "
            "bad = [m for m in ('torch', 'transformers', 'hypothesis', 'peft') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_test_failed_with_no_row_fails_at_head_and_is_an_error_at_base():
    """pytest's failures of tests that left no row (collected.py): a case of the test with no head row fails, a test
    of no case at all is one failed row, one with a row (over budget) is judged on it, and at base it is noted."""
    base = [[row(100 * MiB), row(100 * MiB, nodeid="t.py::test_b")]]
    head = [[row(164 * MiB, nodeid="t.py::test_b", verdict="over-budget", passed=False, test_outcome="failed"),
             row(100 * MiB, nodeid="t.py::test_c")]]
    failed = {"t.py::test_a": "KeyError: 'x'", "t.py::test_b": "over budget", "t.py::test_plain": "assert 1 == 0"}
    found = {c.nodeid: c for c in judge_all(base, head, head_failed=failed, base_failed={"t.py::test_c": "OSError"})}
    assert [(n, c.status, c.passed) for n, c in found.items()] == [
        ("t.py::test_b", "over-budget", False), ("t.py::test_c", "error at base", True),
        ("t.py::test_a", "failed", False), ("t.py::test_plain", "failed", False)]
    assert found["t.py::test_a"].message == "at head: its test failed with no case of it measured: KeyError: 'x'"
    assert found["t.py::test_c"].message.startswith("at base its test failed with no case of it measured: OSError; ")


def test_a_card_changed_since_base_is_named_and_the_figures_still_compared():
    """`card="4 GiB"` at base, `card="T4"` at head: the rows say which card each side ran as on, and the verdict says
    they differ, as a stored baseline's fingerprint does; the figures are judged as usual."""
    from dataclasses import replace

    base = [replace(row(100 * MiB), card="a 4.00 GiB card")] * 2
    head = [replace(row(164 * MiB), card="T4 (14.75 GiB)")] * 2
    case = judge_case("t.py::test_a", base, head)
    assert (case.status, case.passed) == ("regression", False)
    assert "card a 4.00 GiB card at base -> T4 (14.75 GiB) at head (figures compared as usual)" in case.message
    same = judge_case("t.py::test_a", [replace(row(100 * MiB), card="T4 (14.75 GiB)")] * 2,
                      [replace(row(100 * MiB), card="T4 (14.75 GiB)")] * 2)
    assert "card" not in same.message
    unset = judge_case("t.py::test_a", [row(100 * MiB)] * 2, [replace(row(100 * MiB), card="T4 (14.75 GiB)")] * 2)
    assert "card none at base -> T4 (14.75 GiB) at head" in unset.message


def test_a_card_respelled_since_base_is_the_same_card():
    """card="4 GiB" at base, "4096 MiB" at head: one card, as the baselines' fingerprint keys it; a changed size is
    still named."""
    from dataclasses import replace

    from gpu_budget.model.card import pick_card

    def ran_as(written, keyed=True):
        card = pick_card(written, "tiny", "t.py")  # a row keeps the card's label and key, as the gate writes it
        ran = replace(row(100 * MiB), card=card.label, card_key=card.key if keyed else None)
        return [Result.from_json(ran.to_json())] * 2

    assert [pick_card(w, "tiny", "t.py").label for w in ("4 GiB", "4096 MiB")] == ["a 4 GiB card", "a 4096 MiB card (4.00 GiB)"]
    for keyed in (True, False):  # a report from before rows kept the key: read back from the label
        assert "card" not in judge_case("t.py::test_a", ran_as("4 GiB", keyed), ran_as("4096 MiB", keyed)).message
        assert "card a 4 GiB card at base -> a 4608 MiB card (4.50 GiB) at head" in \
            judge_case("t.py::test_a", ran_as("4 GiB", keyed), ran_as("4608 MiB", keyed)).message


def test_params_changed_since_base_are_named_and_the_figures_still_compared():
    """A case whose scenario's knobs changed since base (batch 8 -> 16): a change of its figures may be the knob's,
    so the verdict names what changed; rows without params (a report from before rows held them) note nothing."""
    from dataclasses import replace

    base = [replace(row(100 * MiB), params={"batch_size": 8, "seq": 128})] * 2
    head = [replace(row(164 * MiB), params={"batch_size": 16, "seq": 128, "pad_to_multiple_of": 64})] * 2
    case = judge_case("t.py::test_a", base, head)
    assert (case.status, case.passed) == ("regression", False)
    assert case.message.endswith("; params changed since base: batch_size 8 -> 16, pad_to_multiple_of unset -> 64 "
                                 "(figures compared as usual)"), case.message
    assert "params" not in judge_case("t.py::test_a", base, [replace(r, params={"seq": 128, "batch_size": 8})
                                                             for r in base]).message
    assert "params" not in judge_case("t.py::test_a", [row(100 * MiB)] * 2, head).message


def launched(*rank_trees: int) -> Result:
    """A 2-rank launcher case's row: its peaks its worst rank's, as measure/ranks.py makes them."""
    from dataclasses import replace

    from gpu_budget.model.figures import RankFigures

    ranks = tuple(RankFigures(rank=k, peaks=Peaks(ram=tree, ram_tree=tree)) for k, tree in enumerate(rank_trees))
    worst = max(rank_trees)
    base = row(worst)
    return replace(base, measurement=replace(base.measurement, ranks=ranks))


def test_a_rank_that_is_not_the_worst_regressing_is_caught_and_named():
    """Rank 0 grows 100 -> 150 MiB under rank 1's 200 MiB: the row, its worst rank's, is unchanged, so judged on it
    the growth passed; each rank is judged against its own base, as the stored gate judges it (compare.per_rank)."""
    case = judge_case("t.py::test_a", [launched(100 * MiB, 200 * MiB)] * 2, [launched(150 * MiB, 200 * MiB)] * 2)
    assert (case.status, case.passed) == ("regression", False), case.message
    assert case.message.startswith("rank 0 ram_tree head 150.00 MiB (lowest of 2) > base 100.00 MiB (highest of 2)")
    assert [f.name for f in case.figures] == ["rank 0 ram_tree", "rank 1 ram_tree"]
    assert case.figures[0].to_json()["rank"] == 0
    same = judge_case("t.py::test_a", [launched(100 * MiB, 200 * MiB)] * 2, [launched(100 * MiB, 200 * MiB)] * 2)
    assert same.status == "pass"
    # another world at head (3 ranks): compared on the worst rank's figures, as before
    other = judge_case("t.py::test_a", [launched(100 * MiB, 200 * MiB)] * 2,
                       [launched(150 * MiB, 200 * MiB, 120 * MiB)] * 2)
    assert (other.status, [f.name for f in other.figures]) == ("pass", ["ram_tree"])


def stepped(rank1_phases: int) -> Result:
    """A 2-rank launch's row: rank 0 over load and 3 steps at 200 MiB (the worst: the row's), rank 1 at 100 MiB, then
    140 MiB from step 2, over its first `rank1_phases` of those phases."""
    from dataclasses import replace

    from gpu_budget.model.figures import PhaseRecord, RankFigures

    names = ["load", "train_step_1", "train_step_2", "train_step_3"]

    def rank(k: int, mibs: list[int]) -> RankFigures:
        phases = {n: PhaseRecord.from_json({"name": n, "ram_peak": m * MiB, "ram_tree_peak": m * MiB})
                  for n, m in zip(names, mibs)}
        top = max(mibs) * MiB
        return RankFigures(rank=k, peaks=Peaks(ram=top, ram_tree=top), phases=phases)

    ranks = (rank(0, [200] * 4), rank(1, [100, 100, 140, 140][:rank1_phases]))
    base = row(200 * MiB)
    return replace(base, measurement=replace(base.measurement, ranks=ranks, phases=ranks[0].phases))


def test_a_rank_short_of_the_phases_it_reached_at_base_is_an_error_naming_it():
    """Rank 1 exited 0 after its first step at head (the launch exiting 0, rank 0 going on): its peak fell 140 -> 100
    MiB and the case read "improved: rank 1 ram_tree head 100.00 MiB (highest of 2) < base 140.00 MiB", as the stored
    gate read it before it held each rank to its own baseline phases (compare._ranks_short)."""
    case = judge_case("t.py::test_a", [stepped(4)] * 2, [stepped(2)] * 2)
    assert (case.status, case.passed) == ("error", False), case.message
    assert case.message.startswith("at head: rank 1 did not reach 2 of the 4 phases base measured (train_step_2..3;"), \
        case.message
    assert judge_case("t.py::test_a", [stepped(4)] * 2, [stepped(4)] * 2).status == "pass"
    assert judge_case("t.py::test_a", [stepped(4)] * 2, [stepped(3)] * 2).status != "error"  # its last alone: a race


def test_the_worst_rank_short_of_base_s_last_phase_alone_is_no_error_as_any_rank_is():
    """The row's phases are its worst rank's: rank 1 the worst, gone as rank 0 marked its last phase, read "at head:
    the run did not reach 1 of the 4 phases base measured (train_step_3; ...)", though a rank short of base's last
    phase alone is spared (a race with its exit, _rank_short)."""
    from dataclasses import replace

    def worst_is_rank_1(rank1_phases: int) -> Result:
        row = stepped(4)
        rank0, rank1 = row.measurement.ranks
        phases = {n: replace(p, ram_tree_peak=300 * MiB) for n, p in list(rank1.phases.items())}
        phases = dict(list(phases.items())[:rank1_phases])
        rank1 = replace(rank1, phases=phases, peaks=Peaks(ram=300 * MiB, ram_tree=300 * MiB))
        return replace(row, measurement=replace(row.measurement, ranks=(rank0, rank1), phases=phases, peaks=rank1.peaks))

    case = judge_case("t.py::test_a", [worst_is_rank_1(4)] * 2, [worst_is_rank_1(3)] * 2)
    assert case.status != "error", case.message
    short = judge_case("t.py::test_a", [worst_is_rank_1(4)] * 2, [worst_is_rank_1(2)] * 2)
    assert short.status == "error" and "did not reach 2 of the 4 phases base measured" in short.message, short.message


def test_an_absolute_path_through_a_link_to_the_repository_points_into_the_worktree(tmp_path):
    """`$PWD/test_mem.py` in a checkout reached through a symbolic link: left pointing at the head's file, the base
    session measured the head against itself and a regression passed."""
    top, tree = tmp_path / "repo", tmp_path / "wt" / "base"
    (top / "tests").mkdir(parents=True)
    (tmp_path / "link").symlink_to(top)
    (top / "linked").symlink_to(top / "tests")  # a link inside the repository is the worktree's own: kept
    link = tmp_path / "link"
    args = [f"{link}/tests/test_a.py::test_fn[a/../b]", f"--rootdir={link}", str(link), f"{top}/linked/test_a.py",
            str(tmp_path / "elsewhere")]
    assert at_base(args, top, tree) == [f"{tree}/tests/test_a.py::test_fn[a/../b]", f"--rootdir={tree}", str(tree),
                                        f"{tree}/linked/test_a.py", str(tmp_path / "elsewhere")]


def test_an_absolute_pythonpath_entry_into_the_repository_points_into_the_worktree_but_the_plugins(tmp_path,
                                                                                                   monkeypatch):
    from gpu_budget.against.tree_paths import PLUGIN_ROOT, pythonpath_into

    top, tree = tmp_path / "repo", tmp_path / "wt" / "base"
    (top / "src").mkdir(parents=True)
    (tree / "src").mkdir(parents=True)  # build/ is not in the worktree: untracked, the head's is kept
    (tmp_path / "link").symlink_to(top)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([f"{top}/src", f"{tmp_path}/link/src", "src", "", str(tmp_path),
                                                      str(PLUGIN_ROOT), f"{top}/build"]))
    assert pythonpath_into(top, tree).split(os.pathsep) == [f"{tree}/src", f"{tree}/src", "src", "", str(tmp_path),
                                                            str(PLUGIN_ROOT), f"{top}/build"]
    (tmp_path / "wt2" / PLUGIN_ROOT.name).mkdir(parents=True)  # the plugin's folder is in the worktree too
    assert str(PLUGIN_ROOT) in pythonpath_into(PLUGIN_ROOT.parent, tmp_path / "wt2").split(os.pathsep)  # kept
    # PYTHONPATH=plugin, relative, from the plugin's checkout: resolved in the worktree it would be REF's plugin
    monkeypatch.chdir(PLUGIN_ROOT.parent)
    monkeypatch.setenv("PYTHONPATH", PLUGIN_ROOT.name)
    assert pythonpath_into(PLUGIN_ROOT.parent, tmp_path / "wt2") == str(PLUGIN_ROOT)
    monkeypatch.delenv("PYTHONPATH")
    assert pythonpath_into(top, tree) is None


def test_a_pass_whose_params_or_card_changed_is_said_below_the_table():
    """Its figures within the tolerance, the case still ran with other knobs (or as on another card) at head: the
    terminal and the step summary say so, as for a renamed file's pass, or the note lives in the JSON alone and the
    table's `pass` reads as the code's doing."""
    from dataclasses import replace

    from gpu_budget.against.render import Outcome, markdown, text

    base = [replace(row(100 * MiB), params={"batch_size": 8})] * 2
    knobs = judge_case("t.py::test_knobs", base, [replace(r, params={"batch_size": 16}) for r in base])
    card = judge_case("t.py::test_card", [row(100 * MiB)] * 2, [replace(row(100 * MiB), card="T4 (14.75 GiB)")] * 2)
    plain = judge_case("t.py::test_plain", [row(100 * MiB)] * 2, [row(100 * MiB)] * 2)
    assert [c.status for c in (knobs, card, plain)] == ["pass"] * 3
    outcome = Outcome("main", "a" * 40, "b" * 40, False, (knobs, card, plain), ())
    said = text(outcome)
    assert "pass: t.py::test_knobs: within the tolerance of base; params changed since base: batch_size 8 -> 16" in said
    assert "pass: t.py::test_card: within the tolerance of base; card none at base -> T4 (14.75 GiB) at head" in said
    assert "pass: t.py::test_plain" not in said  # a plain pass gets no line
    assert "**pass** `t.py::test_knobs`: within the tolerance of base; params changed since base" in markdown(outcome)
