"""Plugin behaviour, end to end in throwaway projects (pytester, one subprocess per session)."""

import json
import subprocess
import sys

import pytest

from gpu_budget.declare.marks import DEFAULT_TOLERANCE

MiB = 2**20

FITS = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 64})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    row = gpu_budget.measure(S)
    assert row.peaks.ram > 128 * 2**20
'''


def baseline_file(pytester):
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    return path


def run(pytester, *args, env=None):
    """One inner session, with `env` set for it."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        return pytester.runpytest_subprocess("-p", "no:randomly", *args)


def test_without_flag_memtests_skip_with_reason(project):
    pytester = project(FITS)
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*run with --gpu-budget*"])


def test_records_then_passes_and_reports(project, monkeypatch):
    pytester = project(FITS)
    monkeypatch.delenv("CI", raising=False)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    entry = json.loads(baseline_file(pytester).read_text())["entries"]["tiny"]["test_mem.py::test_fits"]
    assert entry["peaks"]["ram"] > 128 * MiB and "vram_allocated" not in entry["peaks"]  # a figure where measured
    assert set(entry["phases"]) == {"load", "train_step_1", "train_step_2", "train_step_3"}
    result = run(pytester, "--gpu-budget", "--gpu-budget-json=report.json", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*gpu-budget*", "test*RAM tree*RAM main*VRAM peak*budget*baseline*",
                                 "*test_mem.py::test_fits*tiny*MiB*MiB*RAM 2.00 GiB*pass*"])
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["version"] == 3 and report["hardware"]["key"].startswith("cpu-")
    (res,) = report["results"]
    assert res["verdict"] == "pass" and res["peaks"]["ram"] > 128 * MiB
    assert res["peaks"]["ram_tree"] == res["peaks"]["ram"]  # no descendants: the tree is the main process
    assert all(s["ram_tree"] == s["ram"] for s in res["steps"]) and res["ram_tree_method"]
    assert res["peaks"]["vram_allocated"] is None and res["budget"] == {"ram": 2 * 2**30, "vram": None}
    assert [s["step"] for s in res["steps"]] == [1, 2, 3]
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="gpu_budget_ram_peak"' in junit and 'name="gpu_budget_ram_tree_peak"' in junit


def test_planted_regression_fails_and_update_repairs(project, monkeypatch):
    pytester = project(FITS)
    monkeypatch.delenv("CI", raising=False)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    peaks = data["entries"]["tiny"]["test_mem.py::test_fits"]["peaks"]
    assert peaks["ram_tree"] == peaks["ram"]  # no descendants: the tree is the main process
    peaks["ram_tree"] //= 2  # the gated figure's baseline lowered by 50%
    path.write_text(json.dumps(data))
    result = run(pytester, "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]gpu-budget regression]*ram_tree*> baseline*"])
    assert json.loads((pytester.path / "r.json").read_text())["results"][0]["verdict"] == "regression"
    run(pytester, "--gpu-budget", "--gpu-budget-update").assert_outcomes(passed=1)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)


def test_within_tolerance_passes(project):
    pytester = project(FITS)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    for metric in ("ram", "ram_tree"):
        data["entries"]["tiny"]["test_mem.py::test_fits"]["peaks"][metric] -= 2 * MiB  # inside the default 0.5 % + 4 MiB
    path.write_text(json.dumps(data))
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)


def test_a_baseline_recorded_before_the_tree_is_compared_on_the_main_process(project):
    pytester = project(FITS)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    entry = data["entries"]["tiny"]["test_mem.py::test_fits"]
    del entry["peaks"]["ram_tree"]  # what the committed baselines hold
    for phase in entry["phases"].values():
        del phase["ram_tree"]
    path.write_text(json.dumps(data))
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)  # main against main: unchanged
    entry["peaks"]["ram"] //= 2
    path.write_text(json.dumps(data))
    result = run(pytester, "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]gpu-budget regression]*ram * > baseline*"])
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert set(row["change"]) == {"ram"} and row["change"]["ram"] > 0.9


def test_planted_ten_percent_regression_fails_at_default_tolerance(project):
    pytester = project('''
import os
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 200, "plant_bytes": int(os.environ.get("PLANT", 0))})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S)
''')
    run(pytester, "--gpu-budget", env={"PLANT": "0"}).assert_outcomes(passed=1)
    peak = json.loads(baseline_file(pytester).read_text())["entries"]["tiny"]["test_mem.py::test_fits"]["peaks"]["ram_tree"]
    run(pytester, "--gpu-budget", env={"PLANT": str(peak // 10)}).assert_outcomes(failed=1)


def test_missing_baseline_fails_under_ci(project):
    pytester = project(FITS)
    result = run(pytester, "--gpu-budget", env={"CI": "true"})
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no-baseline*--gpu-budget-update*"])
    assert not (pytester.path / "baselines").exists()


def test_corrupted_baseline_is_a_clear_error_and_kept(project):
    pytester = project(FITS)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    data["entries"]["tiny"]["test_mem.py::test_fits"]["peaks"]["ram"] = "lots"
    path.write_text(json.dumps(data))
    before = path.read_text()
    for args in (["--gpu-budget"], ["--gpu-budget", "--gpu-budget-update"]):
        result = run(pytester, *args)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines([f"*baseline file {path}*'test_mem.py::test_fits'*peaks.ram*'lots'*"])
        assert path.read_text() == before


def test_over_budget_child_fails(project):
    pytester = project('''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 64})

@pytest.mark.gpu_budget(ram="100 MiB")
def test_over(gpu_budget):
    gpu_budget.measure(S)
''')
    result = run(pytester, "--gpu-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*[[]gpu-budget over-budget] host RAM peak * > budget 100.00 MiB*"])


def test_sigkill_crash_and_timeout_are_failures_and_the_session_goes_on(project):
    pytester = project('''
@pytest.mark.gpu_budget(ram="4 GiB")
def test_killed(gpu_budget):
    gpu_budget.measure(Scenario(name="k", run="runners:sigkill"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_hangs(gpu_budget):
    gpu_budget.measure(Scenario(name="h", run="runners:hang"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_raises(gpu_budget):
    gpu_budget.measure(Scenario(name="b", run="runners:boom"))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_after(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
''')
    result = run(pytester, "--gpu-budget", "--gpu-budget-timeout=3", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=3, passed=1)
    result.stdout.fnmatch_lines([
        "*test_killed*killed by SIGKILL*peak seen so far*MiB*",
        "*test_hangs*timed out after 3 s*it was in phase 'load'*",
        "*test_raises*the scenario broke*",
    ])
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert rows["test_killed"]["verdict"] == "error" and rows["test_killed"]["peaks"]["ram"] > 64 * MiB
    assert rows["test_hangs"]["error"]["kind"] == "timeout" and rows["test_hangs"]["peaks"]["ram"] > 32 * MiB
    assert rows["test_hangs"]["error"]["phase"] == "load" and "phase" not in rows["test_raises"]["error"]
    assert rows["test_after"]["verdict"] in ("pass", "no-baseline")
    assert all(not p.name.startswith(".") for p in (pytester.path / "baselines").rglob("*"))


def test_a_vram_budget_without_cuda_is_unchecked_and_a_cuda_only_scale_skips(project):
    pytester = project('''
@pytest.mark.gpu_budget(vram="15 GiB")
def test_vram(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))

@pytest.mark.gpu_budget(ram="4 GiB")
def test_gpu_only_scale(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8},
                                scales={"tiny": {"needs_cuda": True}}))
''')
    result = run(pytester, "--gpu-budget", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*test_vram*VRAM 15.00 GiB unchecked*no-baseline*",
                                 "*needs a CUDA GPU; this host has none*"])


def test_two_test_files_of_one_name_keep_their_own_baselines(project):
    """tests/a/test_same.py and tests/b/test_same.py share a baseline file, never an entry."""
    pytester = project("")
    body = '''import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="2 GiB")
def test_x(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={{"mib": {mib}}}))
'''
    for sub, mib in (("a", 16), ("b", 96)):
        pytester.mkpydir(f"tests_{sub}")
        pytester.path.joinpath(f"tests_{sub}", "test_same.py").write_text(body.format(mib=mib))
    run(pytester, "--gpu-budget", "tests_a").assert_outcomes(passed=1)
    run(pytester, "--gpu-budget", "tests_b").assert_outcomes(passed=1)  # its own first run: recorded, not compared
    (path,) = (pytester.path / "baselines").glob("*/test_same.json")
    stored = json.loads(path.read_text())["entries"]["tiny"]
    assert set(stored) == {"tests_a/test_same.py::test_x", "tests_b/test_same.py::test_x"}
    assert stored["tests_b/test_same.py::test_x"]["peaks"]["ram"] > stored["tests_a/test_same.py::test_x"]["peaks"]["ram"]
    run(pytester, "--gpu-budget", "-p", "no:cacheprovider", env={"CI": "true"}).assert_outcomes(passed=2)


def test_an_entry_recorded_under_the_test_s_name_alone_is_still_read(project):
    """A baseline file from before keys held the file's path is judged against, and re-keyed on update."""
    pytester = project(FITS)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    data["entries"]["tiny"] = {"test_fits": data["entries"]["tiny"]["test_mem.py::test_fits"]}
    data["entries"]["tiny"]["test_fits"]["peaks"]["ram_tree"] //= 2  # read: a planted regression fails
    path.write_text(json.dumps(data))
    run(pytester, "--gpu-budget", env={"CI": "true"}).assert_outcomes(failed=1)
    run(pytester, "--gpu-budget", "--gpu-budget-update").assert_outcomes(passed=1)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"test_mem.py::test_fits"}


def test_bad_budget_string_names_string_and_test(project):
    pytester = project('''
@pytest.mark.gpu_budget(ram="12.7 Gibs")
def test_typo(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
''')
    result = run(pytester, "--gpu-budget")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_mem.py::test_typo: bad ram budget: unknown unit 'Gibs'*'12.7 Gibs'*"])


def test_update_prunes_only_when_the_whole_suite_ran(project):
    pytester = project(FITS + '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_other(gpu_budget):
    gpu_budget.measure(S)
''')
    run(pytester, "--gpu-budget").assert_outcomes(passed=2)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    data["entries"]["tiny"]["test_mem.py::test_gone"] = data["entries"]["tiny"]["test_mem.py::test_fits"]
    path.write_text(json.dumps(data))
    run(pytester, "--gpu-budget", "--gpu-budget-update", "-k", "fits").assert_outcomes(passed=1, deselected=1)
    assert "test_mem.py::test_gone" in json.loads(path.read_text())["entries"]["tiny"]
    run(pytester, "--gpu-budget", "--gpu-budget-update").assert_outcomes(passed=2)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"test_mem.py::test_fits", "test_mem.py::test_other"}



LABELLED = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 64})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_labels(gpu_budget):
    gpu_budget.measure(S, label="LABEL")

@pytest.mark.gpu_budget(ram="2 GiB")
def test_stops(gpu_budget):
    gpu_budget.measure(S, label="kept")
    assert STOP_EARLY is False
    gpu_budget.measure(S, label="late")
'''


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_update_drops_the_labels_a_finished_test_no_longer_measures(project, workers):
    """A label renamed left its old entry for good (a rename back would be judged against it). A whole-suite update
    drops the labels of a test that ran to its end without measuring them; a test that failed (or was skipped) may
    not have reached its labels, so its entries stay. Before, "test_mem.py::test_labels::old" stayed."""
    def labelled(label: str, stop: bool):
        return project(LABELLED.replace("LABEL", label).replace("STOP_EARLY", str(stop)))

    pytester = labelled("old", stop=False)
    run(pytester, "--gpu-budget").assert_outcomes(passed=2)
    keys = {"test_mem.py::test_labels::old", "test_mem.py::test_stops::kept", "test_mem.py::test_stops::late"}
    assert set(json.loads(baseline_file(pytester).read_text())["entries"]["tiny"]) == keys
    labelled("new", stop=True)
    run(pytester, "--gpu-budget", "--gpu-budget-update", *workers).assert_outcomes(passed=1, failed=1)
    held = set(json.loads(baseline_file(pytester).read_text())["entries"]["tiny"])
    assert held == {"test_mem.py::test_labels::new", "test_mem.py::test_stops::kept", "test_mem.py::test_stops::late"}
    labelled("newer", stop=False)  # a narrowed update prunes nothing
    run(pytester, "--gpu-budget", "--gpu-budget-update", "-k", "labels").assert_outcomes(passed=1, deselected=1)
    assert held < set(json.loads(baseline_file(pytester).read_text())["entries"]["tiny"])


def test_an_update_of_the_last_failed_keeps_the_entries_of_the_tests_it_left_out(project):
    """--lf drops the tests that passed from a module's collection itself, with no deselection to see: the update
    that reran the one failed test pruned every other entry of the file (test_fits's went)."""
    pytester = project(FITS + '''
import os

@pytest.mark.gpu_budget(ram="2 GiB")
def test_flaky(gpu_budget):
    gpu_budget.measure(S)
    assert os.environ.get("FIXED") == "1"
''')
    run(pytester, "--gpu-budget").assert_outcomes(passed=1, failed=1)
    path = baseline_file(pytester)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"test_mem.py::test_fits"}
    run(pytester, "--gpu-budget", "--gpu-budget-update", "--lf", env={"FIXED": "1"}).assert_outcomes(passed=1)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"test_mem.py::test_fits", "test_mem.py::test_flaky"}


GONE = '''
import os

@pytest.mark.gpu_budget(ram="2 GiB")
def test_gone(gpu_budget):
    gpu_budget.measure(S)
    assert os.environ.get("BROKEN") != "1"
'''


@pytest.mark.parametrize("failed", [False, True], ids=["no-failure-recorded", "failed-test-deleted"])
def test_an_update_of_the_last_failed_that_reruns_the_whole_suite_prunes_as_one(project, failed):
    """--lf with no recorded failure among the collected tests (none at all, or only of a test since deleted) runs the
    whole suite: the update prunes as one. Before, it was taken for a selection: test_gone's entry stayed for good."""
    pytester = project(FITS + GONE)
    run(pytester, "--gpu-budget").assert_outcomes(passed=2)
    if failed:
        run(pytester, "--gpu-budget", env={"BROKEN": "1"}).assert_outcomes(passed=1, failed=1)
    project(FITS)
    result = run(pytester, "--gpu-budget", "--gpu-budget-update", "--lf")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["baselines: dropped 1 entry no longer measured*(test_mem.py::test_gone)*"])
    assert set(json.loads(baseline_file(pytester).read_text())["entries"]["tiny"]) == {"test_mem.py::test_fits"}


@pytest.mark.parametrize("order", ["", "@pytest.hookimpl(tryfirst=True)\n"], ids=["plain", "tryfirst"])
def test_an_update_keeps_the_entries_of_tests_a_conftest_drops_from_the_items(project, order):
    """A conftest's pytest_collection_modifyitems that drops items itself (items[:] = ..., no pytest_deselected) ran
    before the gate noted them: the update pruned the entries of the tests it dropped as if they were deleted. The
    gate's own hook is tryfirst, but a conftest below the rootdir, registered after it, whose hook is tryfirst too,
    ran first all the same: the gate notes each test as pytest collects it."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("mib", [8, 16])
def test_p(gpu_budget, mib):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": mib}))
''')
    sub = pytester.mkdir("sub")
    (pytester.path / "test_mem.py").rename(sub / "test_mem.py")
    (sub / "conftest.py").write_text(f"import os\nimport pytest\n\n{order}def pytest_collection_modifyitems(items):\n"
                                     "    if os.environ.get('DROP'):\n"
                                     "        items[:] = [i for i in items if os.environ['DROP'] not in i.nodeid]\n")
    run(pytester, "--gpu-budget").assert_outcomes(passed=2)
    path = baseline_file(pytester)
    both = {"sub/test_mem.py::test_p[8]", "sub/test_mem.py::test_p[16]"}
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == both
    for dropped in ("[16]", "test_p"):
        run(pytester, "--gpu-budget", "--gpu-budget-update", env={"DROP": dropped})
        assert set(json.loads(path.read_text())["entries"]["tiny"]) == both, dropped


def test_a_whole_suite_update_drops_the_entries_of_a_parameter_removed(project):
    """A parametrize id dropped from a test (a scenario removed, or renamed: scenario0 -> small) is a deleted test:
    its entry was kept by every whole-suite update, since the test function was still collected."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("mib", [8, 16])
def test_p(gpu_budget, mib):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": mib}))
''')
    run(pytester, "--gpu-budget").assert_outcomes(passed=2)
    path = baseline_file(pytester)
    data = json.loads(path.read_text())
    data["entries"]["tiny"]["test_mem.py::test_p[8]::lab"] = data["entries"]["tiny"]["test_mem.py::test_p[8]"]
    data["entries"]["tiny"]["test_p[16]"] = data["entries"]["tiny"]["test_mem.py::test_p[16]"]  # a legacy key
    path.write_text(json.dumps(data))
    test = pytester.path / "test_mem.py"
    test.write_text(test.read_text().replace("[8, 16]", "[8, 32]"))
    run(pytester, "--gpu-budget", "--gpu-budget-update").assert_outcomes(passed=2)
    # test_p[8] ran to its end measuring no label "lab": that entry goes too (a label no longer measured)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"test_mem.py::test_p[8]", "test_mem.py::test_p[32]"}


def test_a_whole_suite_update_drops_the_entries_of_a_test_file_renamed(project):
    """test_mem.py renamed test_moved.py: its entries went to test_moved.json, and test_mem.json kept the old ones
    through every update, the prune visiting only the files of modules collected. A file of a module left uncollected
    (test_other.py, still there) and a file of legacy keys (whose module cannot be told) are kept."""
    pytester = project(FITS)
    pytester.makepyfile(test_other="import pytest\nfrom gpu_budget import Scenario\n" + FITS)
    run(pytester, "--gpu-budget").assert_outcomes(passed=2)
    folder = baseline_file(pytester).parent
    legacy = json.loads((folder / "test_other.json").read_text())
    legacy["entries"]["tiny"] = {"test_fits": legacy["entries"]["tiny"]["test_other.py::test_fits"]}
    (folder / "test_legacy.json").write_text(json.dumps(legacy))
    (pytester.path / "test_mem.py").rename(pytester.path / "test_moved.py")
    run(pytester, "--gpu-budget", "--gpu-budget-update", "test_moved.py").assert_outcomes(passed=1)
    assert sorted(p.name for p in folder.glob("*.json")) == ["test_legacy.json", "test_moved.json", "test_other.json"]
    assert set(json.loads((folder / "test_other.json").read_text())["entries"]["tiny"]) == {"test_other.py::test_fits"}


NAMESAKE = '''
import os
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="2 GiB")
def test_x(gpu_budget):
    gpu_budget.measure(Scenario(name="x", run="runners:alloc", params={"mib": int(os.environ.get("MIB", "8"))}))
'''


def test_an_update_of_one_folder_keeps_the_entries_of_a_namesake_in_another(project):
    """tests/a/test_same.py and tests/b/test_same.py share test_same.json. `--gpu-budget-update tests/a` collects a
    alone; it dropped b's entry, so b's next 8x growth read no-baseline (and was recorded) instead of failing."""
    pytester = project(FITS)
    pytester.makeini("[pytest]\ngpu_budget_preload =\naddopts = --import-mode=importlib\n")
    pytester.mkdir("tests")
    for sub in ("a", "b"):
        (pytester.mkdir(f"tests/{sub}") / "test_same.py").write_text(NAMESAKE)
    run(pytester, "--gpu-budget", "tests").assert_outcomes(passed=2)
    (path,) = (pytester.path / "baselines").glob("*/test_same.json")
    both = {"tests/a/test_same.py::test_x", "tests/b/test_same.py::test_x"}
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == both
    run(pytester, "--gpu-budget", "--gpu-budget-update", "tests/a").assert_outcomes(passed=1)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == both
    grown = run(pytester, "--gpu-budget", "tests/b", env={"MIB": "64"})
    grown.assert_outcomes(failed=1)
    grown.stdout.fnmatch_lines(["*tests/b/test_same.py::test_x*regression FAIL*"])
    (pytester.path / "tests" / "b" / "test_same.py").unlink()  # deleted: a whole run's update drops its entry
    run(pytester, "--gpu-budget", "--gpu-budget-update", "tests").assert_outcomes(passed=1)
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"tests/a/test_same.py::test_x"}

def test_step_summary_markdown(project):
    pytester = project(FITS)
    summary = pytester.path / "summary.md"
    run(pytester, "--gpu-budget", env={"GITHUB_STEP_SUMMARY": str(summary)}).assert_outcomes(passed=1)
    text = summary.read_text()
    assert text.startswith("### GPU budget: 1 measured, 0 failed on `cpu-")
    assert "| test_mem.py::test_fits" in text


def test_importing_the_plugin_imports_no_torch():
    code = ("import sys, gpu_budget, gpu_budget.pytest_plugin, gpu_budget.session.session; "
            "bad = [m for m in ('torch', 'transformers', 'hypothesis', 'peft') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_peak_measures_without_judging_or_recording(project):
    pytester = project('''
@pytest.mark.gpu_budget(ram="1 MiB")
def test_probe(gpu_budget):
    m = gpu_budget.peak(Scenario(name="alloc", run="runners:alloc", params={"mib": 32}))
    assert m.ok and m.peaks.ram > 64 * 2**20  # far over the budget, yet not judged
''')
    run(pytester, "--gpu-budget", env={"CI": "true"}).assert_outcomes(passed=1)
    assert not list((pytester.path / "baselines").rglob("*.json"))



PROBES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 16})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_judged(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget_probe
def test_finding(gpu_budget):
    assert gpu_budget.peak(S.with_params(mib=32)).peaks.ram > gpu_budget.peak(S).peaks.ram + 8 * 2**20

@pytest.mark.gpu_budget_probe
def test_misplaced(gpu_budget):
    gpu_budget.measure(S)
'''


def test_probes_run_only_with_their_flag_and_never_judge(project):
    """The gate runs every case that gets a verdict; a probe (no verdict) is a skip naming the flag, until asked for.
    A probe that calls measure() would hide a verdict behind the flag: a failure naming the test."""
    pytester = project(PROBES)
    result = run(pytester, "--gpu-budget", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_mem.py:10: an unjudged probe (no verdict): run with --gpu-budget-probes*"])
    result = run(pytester, "--gpu-budget", "--gpu-budget-probes")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_misplaced: marked gpu_budget_probe, an unjudged probe, but measure() judges*"])
    entries = json.loads(baseline_file(pytester).read_text())["entries"]["tiny"]
    assert set(entries) == {"test_mem.py::test_judged"}, entries  # a probe records nothing


def test_param_marker_refines_the_function_marker(project):
    """A parametrize mark's tolerance applies on top of the function's budget (closer marker wins per key)."""
    pytester = project('''
pytestmark = pytest.mark.gpu_budget(ram="3 GiB")
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("case", ["plain", pytest.param("loose", marks=pytest.mark.gpu_budget(tolerance={"rel": 0.5}))])
def test_fits(gpu_budget, case):
    gpu_budget.measure(S)
''')
    run(pytester, "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=2)
    rows = {r["nodeid"].split("[")[-1].rstrip("]"): r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert rows["plain"]["budget"]["ram"] == rows["loose"]["budget"]["ram"] == 2 * 2**30
    assert rows["plain"]["tolerance"]["rel"] == DEFAULT_TOLERANCE.rel and rows["loose"]["tolerance"]["rel"] == 0.5


def test_children_run_under_the_steady_allocator_unless_told(project):
    pytester = project(FITS)
    run(pytester, "--gpu-budget").assert_outcomes(passed=1)
    assert json.loads(baseline_file(pytester).read_text())["entries"]["tiny"]["test_mem.py::test_fits"]["fingerprint"]["malloc"] == "steady"
    run(pytester, "--gpu-budget", "--gpu-budget-malloc=system", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["fingerprint_changed"] == ["malloc steady -> system"]


def test_a_reproduction_on_a_ram_budget_above_the_host_s_memory_is_skipped_naming_both(project):
    """No host here holds 4096 GiB: a reproduction resting on that RAM budget would die of out-of-memory before it,
    which shows only that the host is small. Before, the case ran, and stayed within it: "the reproduction is lost"."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="4096 GiB", expect="over-budget")
def test_reproduces(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}))
''')
    result = run(pytester, "--gpu-budget", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([("*rests on the RAM budget 4096.00 GiB, above this host's memory *(its RAM, or its "
                                  "cgroup's memory limit where lower)*")])
