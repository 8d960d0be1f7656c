"""A failing case on a host whose measured children see no GPU: its failure begins with why it failed.

README's example declares `vram="20 GiB"`, which a CPU host cannot check; the
row says so, but a failure headline (pytest's short summary, cut at the
terminal's width) that begins with "VRAM budget 20.00 GiB not checked" reads as
a VRAM failure. The reason the case failed comes first, the note after it.
"""

import pytest

SCRIPT = '''
from gpu_budget import phase
phase("load")
held = b"\\x01" * (64 * 2**20)
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU for the children on any host
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=SCRIPT, test_mem='''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.gpu_budget(ram="32 MiB", vram="20 GiB")
        def test_over(gpu_budget):
            gpu_budget.measure(Scenario(name="over", command=[sys.executable, "script.py"]))

        @pytest.mark.gpu_budget(ram="1 GiB", vram="20 GiB")
        def test_fits(gpu_budget):
            gpu_budget.measure(Scenario(name="fits", command=[sys.executable, "script.py"]))
    ''')
    return pytester


def test_a_failure_names_its_reason_before_the_unchecked_vram_budget(project):
    result = project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-rf")
    result.assert_outcomes(failed=1, passed=1)
    failed = [line for line in result.outlines if line.startswith("FAILED test_mem.py::test_over")]
    assert failed and failed[0].startswith("FAILED test_mem.py::test_over - Failed: [gpu-budget over-budget] host RAM"), failed
    result.stdout.fnmatch_lines(["*> budget 32.00 MiB; VRAM budget 20.00 GiB not checked*"])
    result.stdout.fnmatch_lines(["test_mem.py::test_fits: VRAM budget 20.00 GiB not checked*"])  # a pass: the note first
