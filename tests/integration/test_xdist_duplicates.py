"""pytest-xdist with --keep-duplicates: a test collected twice is listed where a serial run lists each of its runs."""

import json

from inner_session import leave_outer_run

RUNNER = '''
import gpu_budget.measure.procfs


def planted(ctx):
    """Reports ctx.params["peak"] MiB as every phase's peak: the same number in every run."""
    procfs = gpu_budget.measure.procfs
    procfs.status = lambda pid: procfs.Status(hwm=ctx.params["peak"] << 20, rss=0, rss_anon=0, rss_file=0)
    with ctx.meter.phase("load"):
        pass
'''

TEST = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_{name}(gpu_budget):
    gpu_budget.measure(Scenario(name="planted", run="runners:planted", params={{"peak": {peak}}}))
'''


def _nodeids(pytester, name: str, *args: str) -> list[str]:
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget",
                                           f"--gpu-budget-baselines={name}", f"--gpu-budget-json={name}.json",
                                           "--keep-duplicates", "test_a.py", "test_b.py", "test_a.py", *args)
    assert result.ret == 0, result.stdout.str()
    return [row["nodeid"] for row in json.loads((pytester.path / f"{name}.json").read_text())["results"]]


def test_a_test_collected_twice_is_listed_at_each_of_its_places_under_xdist_as_in_serial(pytester, monkeypatch):
    """Both rows of test_a were listed at its second place (after test_b) under -n 2: the table's order followed the
    last place a node id was collected at."""
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNER, test_a=TEST.format(name="a", peak=100), test_b=TEST.format(name="b", peak=50))
    leave_outer_run(monkeypatch)
    serial = _nodeids(pytester, "serial", "-p", "no:xdist")
    assert serial == ["test_a.py::test_a", "test_b.py::test_b", "test_a.py::test_a"]
    assert _nodeids(pytester, "xdist", "-p", "xdist", "-n", "2") == serial
