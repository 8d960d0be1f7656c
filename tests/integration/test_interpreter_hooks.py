"""A session under the interpreter's debug hooks (-X dev, PYTHONMALLOC, tracemalloc) is named against its baseline.

Dev mode puts Python's debug allocator under every allocation of the measured
children (the forkserver inherits the flag): a function case recorded without
it read as a host RAM regression under it, and nothing said why. The hooks are
a fingerprint field now, a foreign setup: host RAM is not compared.
"""

import json
import textwrap

import pytest

TEST = textwrap.dedent('''
    import pytest
    from gpu_budget import Scenario


    def run(ctx):
        held = [bytes(1 << 10) * 64 for _ in range(512)]  # 32 MiB in small allocations
        return {"held": len(held)}


    @pytest.mark.gpu_budget(ram="2 GiB")
    def test_held(gpu_budget):
        gpu_budget.measure(Scenario(name="held", run=run))
''')


def run(pytester, name):
    report = pytester.path / f"r-{name}.json"
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-o", "gpu_budget_preload=", "--gpu-budget",
                                           f"--gpu-budget-json={report}")
    return result, json.loads(report.read_text())["results"][0]


@pytest.mark.parametrize("env, named", [({"PYTHONDEVMODE": "1"}, "dev mode"),
                                        ({"PYTHONMALLOC": "malloc"}, "PYTHONMALLOC=malloc"),
                                        ({"PYTHONTRACEMALLOC": "1"}, "tracemalloc")])
def test_a_session_under_debug_hooks_is_named_and_its_host_ram_not_compared(pytester, monkeypatch, env, named):
    monkeypatch.delenv("CI", raising=False)
    for variable in ("PYTHONDEVMODE", "PYTHONMALLOC", "PYTHONTRACEMALLOC"):
        monkeypatch.delenv(variable, raising=False)
    pytester.makepyfile(test_hooks=TEST)
    first, row = run(pytester, "plain")
    first.assert_outcomes(passed=1)
    assert row["verdict"] == "no-baseline", row["message"]
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    hooked, row = run(pytester, "hooked")
    hooked.assert_outcomes(passed=1)
    assert f"interpreter unset -> {named}" in row["message"], row["message"]
    assert "host RAM not compared across these setups" in row["message"], row["message"]
