"""memtests/conftest.py: under xdist the launches on several ranks go out first, and the report keeps its row order.

The hook is copied as it stands into a project of trivial measured cases: a
module named like the launches' (test_several_ranks.py) and one collected
before it. Each test logs, as it starts, the xdist worker that runs it.
"""

import json
from pathlib import Path

import pytest
from inner_session import leave_outer_run

HOOK = Path(__file__).resolve().parents[2] / "memtests" / "conftest.py"

RUNNER = '''
def trivial(ctx):
    with ctx.meter.phase("load"):
        pass
'''

CASES = '''
import os

import pytest
from gpu_budget import Scenario

TRIVIAL = Scenario(name="trivial", run="runners:trivial")


@pytest.mark.parametrize("n", range({n}))
@pytest.mark.gpu_budget(ram="1 GiB")
def test_case(gpu_budget, n):
    with open(os.environ["ORDER_LOG"], "a") as fh:
        fh.write(f"{{os.environ.get('PYTEST_XDIST_WORKER', 'serial')}} {{os.environ['PYTEST_CURRENT_TEST'].split()[0]}}\\n")
    gpu_budget.measure(TRIVIAL, label=f"n{{n}}")
'''


@pytest.fixture
def project(pytester, monkeypatch):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makeconftest(HOOK.read_text())
    # 6 + 2 cases: each worker's first share holds 4, so the launches start a share only when sorted first
    pytester.makepyfile(runners=RUNNER, test_a_first=CASES.format(n=6), test_several_ranks=CASES.format(n=2))
    leave_outer_run(monkeypatch)
    return pytester


def _run(pytester, name: str, *xdist: str) -> tuple[list[tuple[str, str]], list[str]]:
    """One gate session; (worker, test id) in the order the tests started, and the report's rows."""
    log = pytester.path / f"{name}.log"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("ORDER_LOG", str(log))
        result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *xdist, "--gpu-budget",
                                               f"--gpu-budget-baselines={name}", f"--gpu-budget-json={name}.json")
    assert result.ret == 0, result.stdout.str()[-3000:]
    started = [tuple(line.split(" ", 1)) for line in log.read_text().splitlines()]
    rows = [r["nodeid"] for r in json.loads((pytester.path / f"{name}.json").read_text())["results"]]
    return started, rows


def test_under_xdist_the_launches_start_first_and_the_rows_keep_collection_order(project):
    started, rows = _run(project, "xdist", "-n", "2")
    firsts = {next(test for w, test in started if w == worker) for worker in ("gw0", "gw1")}  # each share's first
    assert "test_several_ranks.py::test_case[0]" in firsts, started
    assert [r.split("::")[0] for r in rows] == ["test_a_first.py"] * 6 + ["test_several_ranks.py"] * 2, rows


def test_a_serial_run_keeps_pytest_order(project):
    started, rows = _run(project, "serial", "-p", "no:xdist")
    assert [test.split("::")[0] for _, test in started] == ["test_a_first.py"] * 6 + ["test_several_ranks.py"] * 2
    assert [r.split("::")[0] for r in rows] == ["test_a_first.py"] * 6 + ["test_several_ranks.py"] * 2
