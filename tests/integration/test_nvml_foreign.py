"""NVML's figure of a measured child on a GPU another job uses too, end to end on the stand-in device and NVML
(tests/fake_torch.py, tests/fake_pynvml.py): no GPU figure here, what the stand-ins plant."""

import subprocess
from pathlib import Path

from inner_session import rows
from inner_session import run_on_stand_in as run

GiB, MiB = 2**30, 2**20
CONTEXT = 300 * MiB  # tests/fake_torch.py's


def test_another_jobs_process_is_never_counted_as_the_childs(fake_cuda, monkeypatch):
    """Another job's process holds 5 GiB on the GPU. Before the child's first allocation NVML lists that process
    alone; it runs in this pid namespace (not the child), so it is not the child's figure: the load phase reads the
    child's own 1 GiB allocated + 1 GiB cached + its context."""
    pytester = fake_cuda('''
        @pytest.mark.gpu_budget(vram="8 GiB")
        def test_shared(gpu_budget):
            gpu_budget.measure(S(2))
    ''')
    pytester.makepyfile(pynvml=(Path(__file__).parents[1] / "fake_pynvml.py").read_text())
    nvml = pytester.mkdir("nvml")
    monkeypatch.setenv("FAKE_NVML_DIR", str(nvml))
    other = subprocess.Popen(["sleep", "120"])
    try:
        (nvml / str(other.pid)).write_text(str(5 * GiB))
        result = run(pytester)
    finally:
        other.kill()
        other.wait()
    result.assert_outcomes(passed=1)
    row = rows(pytester)["test_shared"]
    assert row["phases"]["load"]["vram_device"] == 2 * GiB + CONTEXT, row["phases"]["load"]
    assert row["peaks"]["vram_device"] == 3 * GiB + CONTEXT  # a step's 2 GiB allocated + 1 GiB cached + context
    assert row["info"]["nvml_method"] == "pid"
