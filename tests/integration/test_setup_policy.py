"""Across setups, end to end: the pin and the thread count reach the children, and a baseline recorded under
another setup is compared the way fingerprint.py says (floor taken off, or not at all)."""

import json
import os
import platform

import pytest

MiB = 2**20

CASE = '''
S = Scenario(name="env", run="runners:environ", params={"mib": 200})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_env(gpu_budget):
    gpu_budget.measure(S)
'''


def _run(pytester, *args):
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *args)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    return result, row


def _host_ram(entry: dict, change) -> None:
    """Apply `change` to the entry's host-RAM figures: the main process's and the tree's (the gated one)."""
    for key in ("ram", "ram_tree"):
        if entry["peaks"].get(key) is not None:
            entry["peaks"][key] = change(entry["peaks"][key])


def _edit_baseline(pytester, change):
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    data = json.loads(path.read_text())
    change(data["entries"]["tiny"]["test_mem.py::test_env"])
    path.write_text(json.dumps(data))


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the kernel-dispatch pin applies on x86-64")
def test_children_run_avx2_kernels_and_one_thread_unless_told(project, monkeypatch):
    pytester = project(CASE)
    result, row = _run(pytester)
    result.assert_outcomes(passed=1)
    assert (row["info"]["ATEN_CPU_CAPABILITY"], row["info"]["ONEDNN_MAX_CPU_ISA"], row["info"]["MKL_ENABLE_INSTRUCTIONS"]) == \
        ("avx2", "AVX2", "AVX2")
    assert row["info"]["OMP_NUM_THREADS"] == "1"
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    _, native = _run(pytester, "--gpu-budget-cpu-dispatch=native", "--gpu-budget-threads=2")
    assert native["info"]["ATEN_CPU_CAPABILITY"] is None and native["info"]["OMP_NUM_THREADS"] == "2"
    assert "ATEN_CPU_CAPABILITY" not in os.environ  # the pytest process itself is never pinned


def test_a_bad_dispatch_mode_is_a_usage_error_naming_it(project):
    pytester = project(CASE)
    pytester.makeini("[pytest]\ngpu_budget_preload =\ngpu_budget_cpu_dispatch = avx9\n")
    result = pytester.runpytest_subprocess("--gpu-budget")
    result.stderr.fnmatch_lines(["*gpu_budget_cpu_dispatch='avx9': expected one of avx2, native*"])


def test_another_thread_count_is_compared_at_the_tests_tolerance(project):
    """Threads 2 against 1 was measured within the default tolerance, so the row names it and still gates on it."""
    pytester = project(CASE)
    _run(pytester)[0].assert_outcomes(passed=1)
    _edit_baseline(pytester, lambda e: e["fingerprint"].update(threads=2))
    result, row = _run(pytester)
    result.assert_outcomes(passed=1)
    assert row["fingerprint_changed"] == ["threads 2 -> 1"] and row["setup"]["policy"] == "setup"

    # 2 % + 4 MiB over the baseline: a regression under another thread count as under the same
    _edit_baseline(pytester, lambda e: _host_ram(e, lambda v: int(v / 1.02 - 4 * MiB)))
    result, row = _run(pytester)
    result.assert_outcomes(failed=1)
    assert row["verdict"] == "regression" and row["fingerprint_changed"] == ["threads 2 -> 1"]


def test_avx512_kernels_on_one_side_only_are_not_compared_on_host_ram(project):
    pytester = project(CASE)
    _run(pytester)[0].assert_outcomes(passed=1)
    _edit_baseline(pytester, lambda e: e["fingerprint"].update(isa="AVX512"))
    _edit_baseline(pytester, lambda e: _host_ram(e, lambda v: int(v / 1.05)))
    result, row = _run(pytester)
    result.assert_outcomes(passed=1)
    assert row["setup"]["policy"] == "foreign" and "record a baseline for this setup" in row["message"]


def test_the_floor_difference_is_taken_off_the_host_ram_peak(project):
    pytester = project(CASE)
    _run(pytester)[0].assert_outcomes(passed=1)

    def recorded_on_a_higher_floor(entry):  # the same run, recorded where 40 MiB more was imported
        _host_ram(entry, lambda v: v + 40 * MiB)
        entry["fingerprint"]["floor"] += 40 * MiB

    _edit_baseline(pytester, recorded_on_a_higher_floor)
    result, row = _run(pytester)
    result.assert_outcomes(passed=1)
    assert row["verdict"] == "pass" and row["setup"]["floor_shift"] < -39 * MiB
    assert "import floor -" in row["message"] and "taken off the host RAM peak" in row["message"]

    # without the floor, the same numbers read as a 40 MiB improvement
    _edit_baseline(pytester, lambda e: e["fingerprint"].update(floor=e["fingerprint"]["floor"] - 40 * MiB))
    assert _run(pytester)[1]["verdict"] == "improved"


def test_a_regression_is_still_caught_after_the_floor_is_taken_off(project):
    pytester = project(CASE)
    _run(pytester)[0].assert_outcomes(passed=1)

    def recorded_on_a_lower_floor_with_less_ram(entry):  # floor 10 MiB lower there, and the run 30 MiB smaller
        assert entry["fingerprint"]["floor"] > 10 * MiB  # a floor is a byte count: never edited below 0
        _host_ram(entry, lambda v: v - 40 * MiB)
        entry["fingerprint"]["floor"] -= 10 * MiB

    _edit_baseline(pytester, recorded_on_a_lower_floor_with_less_ram)
    result, row = _run(pytester)
    result.assert_outcomes(failed=1)
    assert row["verdict"] == "regression" and "(floor taken off)" in row["message"]


def test_another_allocator_is_not_compared_on_host_ram(project):
    pytester = project(CASE)
    _run(pytester)[0].assert_outcomes(passed=1)
    _edit_baseline(pytester, lambda e: _host_ram(e, lambda v: v // 2))  # would be a regression
    result, row = _run(pytester, "--gpu-budget-malloc=system")
    result.assert_outcomes(passed=1)
    assert row["fingerprint_changed"] == ["malloc steady -> system"] and row["setup"]["policy"] == "foreign"
    assert "record a baseline for this setup" in row["message"] and "ram" not in row["change"]


def test_a_baselines_path_that_is_a_file_is_one_usage_error(project):
    pytester = project(CASE)
    (pytester.path / "not-a-folder").write_text("x")
    result = pytester.runpytest_subprocess("--gpu-budget", "--gpu-budget-baselines=not-a-folder")
    result.stderr.fnmatch_lines(["*--gpu-budget-baselines='not-a-folder'*not-a-folder is a file, not a folder (baselines live in*"])
    assert result.ret == 4  # pytest's usage error: no test ran


def test_a_fifo_in_place_of_a_baseline_fails_its_test_and_the_session_goes_on(project):
    pytester = project(CASE + '''

def test_other(gpu_budget):
    gpu_budget.measure(S)
''')
    folder = pytester.path / "baselines" / f"cpu-{platform.machine()}"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "test_mem.json")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", timeout=300)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*baseline file*test_mem.json is a FIFO, not a regular file: refusing to read it*"])
