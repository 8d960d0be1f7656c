"""The fail-safe: the gate never passes because nothing was measured, and says which case it is.

Under CI, or with --gpu-budget-require-gpu (the GPU job), these fail the
session; run by hand they are warnings. This host has no GPU, so it plays a
GPU runner whose GPU is missing.
"""

import json
import os
from pathlib import Path

import pytest

FITS = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S)
'''

VRAM_ONLY = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(vram="16 GiB", expect="over-budget")  # a reproduction resting on its VRAM budget alone
def test_vram(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_gpu_scale(gpu_budget):
    gpu_budget.measure(Scenario(name="g", run="runners:alloc", params={"mib": 8},
                                scales={"tiny": {"needs_cuda": True}}))
'''

NO_BUDGET_TESTS = '''
def test_plain():
    assert 1 + 1 == 2
'''


def run(pytester, *args, ci: bool = False):
    """One inner session, as a CI run or not, its step summary and JSON report in the project."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        if ci:
            monkeypatch.setenv("CI", "true")
        else:
            monkeypatch.delenv("CI", raising=False)
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
        return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget",
                                             "--gpu-budget-json=report.json", *args)


def gate_problems(pytester) -> list[str]:
    return json.loads((pytester.path / "report.json").read_text())["gate_problems"]


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "xdist"])
def test_zero_budget_tests_collected_fails_under_ci(project, xdist):
    pytester = project(NO_BUDGET_TESTS)
    result = run(pytester, *xdist, ci=True)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*gpu-budget gate FAILED: no memory-budget test was collected*measured nothing*"])
    assert gate_problems(pytester) == [("no memory-budget test was collected (no selected test has the gpu_budget "
                                        "marker or fixture): the gate measured nothing")]
    summary = (pytester.path / "summary.md").read_text()
    assert "> **Gate failed:** no memory-budget test was collected" in summary


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "xdist"])
def test_everything_deselected_measures_nothing_and_says_it_was_deselected(project, xdist):
    pytester = project(FITS + NO_BUDGET_TESTS)
    result = run(pytester, *xdist, "-k", "plain", "--gpu-budget-require-gpu")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([("*gate FAILED: 1 memory-budget test(s) collected, none selected (-k, -m or another "
                                 "deselection left none): the gate measured nothing*")])


def test_by_hand_the_same_findings_are_warnings(project):
    pytester = project(NO_BUDGET_TESTS)
    result = run(pytester, "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*gpu-budget warning: no memory-budget test was collected*fails the run under CI*"])
    assert gate_problems(pytester) == []


def test_all_skipped_for_lack_of_a_gpu_fails_under_ci_saying_why(project):
    pytester = project(VRAM_ONLY)
    result = run(pytester, "-p", "no:xdist", ci=True)
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (problem,) = gate_problems(pytester)
    assert problem.startswith("2 memory-budget test(s) selected, none measured: ")
    assert "1 x expect='over-budget' rests on the VRAM budget 16.00 GiB alone, which needs a CUDA GPU" in problem
    assert "1 x scenario 'g' at scale 'tiny' needs a CUDA GPU" in problem


def test_require_gpu_on_a_host_without_one(project):
    """The GPU job's flag: a test that needs a GPU fails instead of skipping, and the session says why."""
    pytester = project(FITS + VRAM_ONLY)
    result = run(pytester, "-p", "no:xdist", "--gpu-budget-require-gpu")
    result.assert_outcomes(passed=1, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*test_vram*VRAM budget 16.00 GiB alone, which needs a CUDA GPU*--gpu-budget-require-gpu says this runner must*",
    ])
    (problem,) = gate_problems(pytester)
    assert problem.startswith("--gpu-budget-require-gpu: the measured children saw no CUDA GPU (hardware key cpu-")
    assert problem.endswith("2 test(s) needed one")


def test_require_gpu_counts_every_test_that_needed_one(project):
    """A test pinned to CUDA (as on its card, or not) needed the GPU as much as one whose scale needs it."""
    pytester = project(VRAM_ONLY + '''
@pytest.mark.gpu_budget(card="T4", device="cuda")
def test_pinned(gpu_budget):
    gpu_budget.measure(S)
''')
    result = run(pytester, "-p", "no:xdist", "--gpu-budget-require-gpu")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(["*test_pinned*pins device='cuda'*--gpu-budget-require-gpu says this runner must*"])
    problem = gate_problems(pytester)[-1]  # after "none measured"
    assert problem.endswith("3 test(s) needed one"), problem


def test_require_gpu_with_nothing_collected_still_probes_the_device(project):
    pytester = project(NO_BUDGET_TESTS)
    result = run(pytester, "-p", "no:xdist", "--gpu-budget-require-gpu")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    problems = gate_problems(pytester)
    assert len(problems) == 2 and "measured nothing" in problems[0] and "saw no CUDA GPU" in problems[1]


def test_missing_baselines_folder_under_ci_names_the_folder(project):
    pytester = project(FITS)
    result = run(pytester, "-p", "no:xdist", ci=True)
    result.assert_outcomes(failed=1)  # the test itself: no baseline
    folder = pytester.path / "baselines" / f"cpu-{os.uname().machine}"
    assert gate_problems(pytester) == [(f"no baselines folder {folder} for this hardware (CI is set): record one "
                                        f"with --gpu-budget-update and commit it")]
    result.stdout.fnmatch_lines([f"*gate FAILED: no baselines folder {folder} for this hardware*"])


def test_an_existing_folder_and_a_normal_run_raise_nothing(project):
    pytester = project(FITS)
    run(pytester, "-p", "no:xdist").assert_outcomes(passed=1)  # records the baseline
    result = run(pytester, "-n", "2", ci=True)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    assert gate_problems(pytester) == []
    out = result.stdout.str()
    assert "gpu-budget gate FAILED" not in out and "gpu-budget warning" not in out and "gate failed" not in out
    assert "Gate failed" not in (pytester.path / "summary.md").read_text()


def test_update_under_ci_creates_the_folder_without_complaint(project):
    pytester = project(FITS)
    result = run(pytester, "-p", "no:xdist", "--gpu-budget-update", ci=True)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK and gate_problems(pytester) == []


PROBES_ONLY = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_search(gpu_budget):
    assert gpu_budget.peak(S).ok
'''


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "xdist"])
def test_a_session_of_probes_only_has_measured(project, xdist):
    """peak() probes (bisection, exploration) run children but add no gate row: they still count as measured."""
    pytester = project(PROBES_ONLY)
    result = run(pytester, *xdist, ci=True)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert gate_problems(pytester) == []


@pytest.mark.parametrize("listing", ["--collect-only", "--setup-plan", "--setup-only", "--fixtures"])
def test_a_listing_is_not_a_gate_that_measured_nothing(project, listing):
    """A dry listing of what a gated run would do measures nothing by design: under CI it passes, and says nothing of
    the fail-safe."""
    pytester = project(FITS)
    result = run(pytester, "-p", "no:xdist", listing, ci=True)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "none measured" not in result.stdout.str()


def _findings(**over):
    from gpu_budget.judge import failsafe

    args = {"selected": 2, "rows": [], "probes": 0, "require_gpu": False, "ci": False, "update": False,
            "folder": Path("/nonexistent/cpu-x86_64"), "hardware_key": "cpu-x86_64", "cuda": lambda: False}
    return failsafe.nothing_measured(**{**args, **over})


def test_failsafe_rules_as_plain_data():
    from gpu_budget.model.result import NO_PEAKS, Measurement, Result

    skipped = Result("t::a", "s", "tiny", verdict="skipped", passed=True, message="needs a CUDA GPU")
    ran = Result("t::b", "s", "tiny", verdict="pass", passed=True, message="",
                 measurement=Measurement("ok", NO_PEAKS, wall_seconds=1.0))
    other = skipped.but(nodeid="t::c")  # two tests skipped alike: each its own row
    assert _findings(rows=[skipped, other]) == ["2 memory-budget test(s) selected, none measured: 2 x needs a CUDA GPU"]
    assert _findings(rows=[skipped], probes=1) == []
    assert _findings() == ["2 memory-budget test(s) selected, none measured: none reached measure()"]
    # interrupted inside the first case's measure(): that case was measured until then, and keeps no row
    assert _findings(interrupted=True) == [("2 memory-budget test(s) selected, none measured: the session was "
                                            "interrupted before any case's measurement ended (one stopped "
                                            "mid-measure keeps no row)")]
    assert _findings(rows=[ran]) == []
    assert _findings(selected=0)[0].startswith("no memory-budget test was collected")
    # an xdist controller learns its selection from workers that finish: interrupted first, it knows of none
    assert _findings(selected=0, interrupted=True) == [
        "the session was interrupted before any memory-budget test reported: the gate measured nothing"]
    missing = _findings(rows=[ran], ci=True)
    assert missing == [(f"no baselines folder {Path('/nonexistent/cpu-x86_64')} for this hardware (CI is set): "
                        "record one with --gpu-budget-update and commit it")]
    assert _findings(rows=[ran], ci=True, update=True) == []
    no_gpu = _findings(rows=[ran, skipped], require_gpu=True, ci=True)
    assert len(no_gpu) == 1 and no_gpu[0].startswith("--gpu-budget-require-gpu: the measured children saw no CUDA GPU")
    assert no_gpu[0].endswith("1 test(s) needed one")
    assert _findings(rows=[ran], require_gpu=True, cuda=lambda: True) == []


def test_a_file_where_the_baselines_folder_should_be_is_named_not_recorded_over(tmp_path):
    """Before: a file at baselines/ (or a dead link) got "record one with --gpu-budget-update", which cannot write
    there; each case's error already named the file."""
    from gpu_budget.model.result import NO_PEAKS, Measurement, Result

    ran = Result("t::b", "s", "tiny", verdict="pass", passed=True, message="",
                 measurement=Measurement("ok", NO_PEAKS, wall_seconds=1.0))
    (tmp_path / "baselines").write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / "gone")
    for blocked in (tmp_path / "baselines", tmp_path / "linked"):
        assert _findings(rows=[ran], ci=True, folder=blocked / "cpu-x86_64") == [
            f"no baselines folder {blocked / 'cpu-x86_64'}: {blocked} is a file or a dead link, not a folder"]


KILLS_ITS_SESSION = '''
import os, signal, time

def kills_its_session(ctx):
    """Kills the session that asked for this child (the OOM killer picking an xdist worker mid-measure)."""
    os.kill(int(os.environ["GPU_BUDGET_OWNER"].split(":")[0]), signal.SIGKILL)
    time.sleep(30)
'''


def test_a_worker_killed_mid_measure_is_not_said_to_have_missed_measure(project_of):
    """The worker's death loses its case's row: the gate names the test as failed without one, and the fail-safe's
    line counts it there instead of saying that none reached measure() (it did)."""
    pytester = project_of(KILLS_ITS_SESSION)('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_killed(gpu_budget):
            gpu_budget.measure(Scenario(name="k", run="runners:kills_its_session"))
    ''')
    result = run(pytester, "-n", "1")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "reached measure()" not in out
    result.stdout.fnmatch_lines([("*1 memory-budget test(s) selected, none measured: 1 failed without a row in the "
                                  "table (named in the gate's failure)*")])
