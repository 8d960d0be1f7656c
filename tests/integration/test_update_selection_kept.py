"""An --gpu-budget-update of a selection (-k, node ids) keeps the entries it did not measure, as it must: only an
update of the whole suite prunes. Where the selection collected a test whole and an entry of it is no longer measured
(its parametrize ids renamed: `test_x[bs8]` -> `test_x[batch8]`), the summary names the entry kept, so it does not
stay unseen; a sibling id the selection deselected (-k) or left out (a node id) is measured still, and not named."""

import json

import pytest

CASES = '''
@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("mib", [8, 16], ids=IDS)
def test_x(gpu_budget, mib):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": mib}))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_y(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 8}))
'''

WORKERS = pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "2"]], ids=["serial", "xdist"])


def run(pytester, workers, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", *workers, *args)


def keys(pytester) -> list[str]:
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    return sorted(json.loads(path.read_text())["entries"]["tiny"])


def kept(result) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("baselines: kept")]


@WORKERS
def test_an_update_of_a_selection_names_the_entries_of_renamed_ids_it_keeps(project, workers):
    """Before: `-k "test_x and batch8"` wrote test_x[batch8] and kept test_x[bs8] without a word; it stayed until an
    update of the whole suite, which few run. test_x[bs16] and test_y, deselected by -k, are measured still."""
    pytester = project(CASES.replace("IDS", '["bs8", "bs16"]'))
    run(pytester, workers).assert_outcomes(passed=3)
    project(CASES.replace("IDS", '["batch8", "bs16"]'))
    result = run(pytester, workers, "--gpu-budget-update", "-k", "test_x and batch8")
    result.assert_outcomes(passed=1)
    assert keys(pytester) == ["test_mem.py::test_x[batch8]", "test_mem.py::test_x[bs16]", "test_mem.py::test_x[bs8]",
                              "test_mem.py::test_y"]  # nothing pruned: a selection never drops an entry
    path = next((pytester.path / "baselines").glob("*/test_mem.json")).relative_to(pytester.path)
    said = (f"baselines: kept 1 entry no longer measured in {path} (test_mem.py::test_x[bs8]): this update ran a "
            "selection (-k, -m, node ids or deselection), so it drops none; an update of the whole suite drops them")
    assert kept(result) == [said], result.stdout.str()


def test_a_node_id_naming_one_id_names_no_sibling(project):
    """A node id of one parametrize id collects that id alone: its siblings' entries were not measured, and may be
    anyone's, so none is named; a node id of the function collects it whole, and its renamed ids are named."""
    pytester = project(CASES.replace("IDS", '["bs8", "bs16"]'))
    run(pytester, ["-p", "no:xdist"]).assert_outcomes(passed=3)
    result = run(pytester, ["-p", "no:xdist"], "--gpu-budget-update", "test_mem.py::test_x[bs8]")
    result.assert_outcomes(passed=1)
    assert kept(result) == [], result.stdout.str()
    project(CASES.replace("IDS", '["bs8", "batch16"]'))
    result = run(pytester, ["-p", "no:xdist"], "--gpu-budget-update", "test_mem.py::test_x")
    result.assert_outcomes(passed=2)
    assert [line.split(" (", 1)[1].split(")")[0] for line in kept(result)] == ["test_mem.py::test_x[bs16]"], \
        result.stdout.str()
