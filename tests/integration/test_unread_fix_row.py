"""A fix a function case's runner never read is shown not applied in the row, not as applied (declare/fix_reads.py)."""

import json

RUNNER = '''
def honours_lora(ctx):
    """Reads lora by name and its own knob; never asks about truncate."""
    mib = ctx.params["mib"] // (2 if ctx.has("lora") else 1)
    with ctx.meter.phase("load"):
        held = b"\\x01" * (mib << 20)
    return {"held": len(held)}
'''


def test_a_fix_the_runner_never_read_is_shown_not_applied(project):
    """The row's fixes column once said "truncate, lora" for a runner that never read truncate: as if both ran."""
    pytester = project('''
        @pytest.mark.gpu_budget(ram="1 GiB")
        def test_fixed(gpu_budget):
            gpu_budget.measure(Scenario(name="s", run="runner_fix:honours_lora", params={"mib": 40},
                                        supports=["truncate", "lora"]).with_fixes("truncate", "lora"))
    ''')
    pytester.makepyfile(runner_fix=RUNNER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_mem.py::test_fixed*truncate (not applied), lora*"])
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["fixes"] == ["truncate", "lora"]
    assert list(row["info"]["fixes_applied"]) == ["truncate"]  # lora was read: nothing to say of it
    assert row["info"]["fixes_applied"]["truncate"].startswith("not applied: its runner never read it")
