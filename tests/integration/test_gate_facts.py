"""A row's facts hold the runner's and the gate's own under one mapping (Measurement.info): a runner's fact named as
one of the gate's stood in for it (`"notes": "hello"` made the verdict's message "h; e; l; l; o"), so it is refused,
naming it, as returned or as written into ctx.meter.info; and every name the gate writes beside a function runner's facts is one GATE_FACTS lists."""

import json

from gpu_budget.model.result import GATE_FACTS

RUNNERS = '''
def clash(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)
    return {"notes": "hello", "malloc": "mine", "kept": 1}


def written(ctx):
    ctx.meter.info["kept"] = 1
    ctx.meter.info.update({"notes": "hello"})
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)


def plain(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)
    return {"kept": 1}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_clash(gpu_budget):
    gpu_budget.measure(Scenario(name="clash", run="runners:clash"))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_written(gpu_budget):
    gpu_budget.measure(Scenario(name="written", run="runners:written"))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_plain(gpu_budget):
    gpu_budget.measure(Scenario(name="plain", run="runners:plain"))
'''


def test_a_runners_fact_named_as_the_gates_is_refused_and_the_gates_names_are_listed(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_facts=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1, failed=2)
    rows = {r["nodeid"].split("::")[1]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert rows["test_clash"]["verdict"] == "error"
    assert ("runners:clash returned facts named 'malloc', 'notes': a name of the gate's own facts of the row, which "
            "yours would stand in for: name yours otherwise") in rows["test_clash"]["message"]
    assert "h; e; l; l; o" not in rows["test_clash"]["message"]
    assert rows["test_written"]["verdict"] == "error"
    assert "ctx.meter.info took a fact named 'notes': a name of the gate's own facts" in rows["test_written"]["message"]
    assert "h; e; l; l; o" not in rows["test_written"]["message"]
    written = set(rows["test_plain"]["info"]) - {"kept"}
    assert written and written <= GATE_FACTS, sorted(written - GATE_FACTS)
