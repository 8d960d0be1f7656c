"""The live tensor-bytes peak: exact on planted tensors, views counted once, frees seen; per phase in a real child."""

import json

import pytest

torch = pytest.importorskip("torch")

from gpu_budget.measure.tensors import TensorPeak

MB = 10**6


def test_counts_new_storages_once_and_sees_them_die():
    with TensorPeak() as tp:
        a = torch.ones(MB, dtype=torch.uint8)
        view = a[: MB // 2]  # a view: the same storage
        a.add_(1)  # in place: the same storage again
        assert tp.live == MB and tp.peak == MB
        b = torch.empty(3 * MB, dtype=torch.uint8)  # allocated, never touched: counted like CUDA's allocated bytes
        assert tp.live == tp.peak == 4 * MB
        del b
        assert tp.live == MB and tp.peak == 4 * MB
        tp.reset()
        assert tp.peak == MB
        c = a * 2  # a temporary the size of a
        del c
        assert (tp.live, tp.peak) == (MB, 2 * MB)
        del a, view
        assert tp.live == 0


def test_ops_returning_lists_count_every_output():
    with TensorPeak() as tp:
        parts = torch.ones(4 * MB, dtype=torch.uint8).split(MB)  # views of one storage
        copies = torch._foreach_add(list(parts), 1)  # four new storages
        assert tp.live == 4 * MB + 4 * MB
    del parts, copies


def test_a_storage_an_op_grows_is_counted_at_its_new_size():
    """An op writing into a smaller tensor (`out=`, `resize_`) grows that storage: it was counted at the size it was
    first seen, an empty buffer as 0 bytes however large the op made it."""
    with TensorPeak() as tp:
        buf = torch.empty(0, dtype=torch.uint8)
        parts = [torch.ones(MB, dtype=torch.uint8) for _ in range(3)]
        torch.cat(parts, out=buf)  # buf grown to 3 MB
        assert (tp.live, tp.peak) == (6 * MB, 6 * MB), (tp.live, tp.peak)
        del parts
        buf.resize_(8 * MB)
        assert (tp.live, tp.peak) == (8 * MB, 8 * MB), (tp.live, tp.peak)
        del buf
        assert tp.live == 0


def test_ops_of_another_thread_are_not_counted():
    """docs/baselines.md: the count is the thread's that entered it (torch keeps dispatch modes per thread)."""
    import threading

    made = []
    with TensorPeak() as tp:
        worker = threading.Thread(target=lambda: made.append(torch.ones(MB, dtype=torch.uint8)))
        worker.start()
        worker.join()
        assert (tp.live, tp.peak) == (0, 0)
    made.clear()


RUNNER = '''
import torch

def run(ctx):
    ctx.meter.start("load")
    keep = torch.ones(ctx.params["keep"], dtype=torch.uint8)
    for step in (1, 2):
        ctx.meter.start(f"train_step_{step}", step=step)
        tmp = torch.ones(ctx.params["spike"] * step, dtype=torch.uint8)
        del tmp
    ctx.meter.stop()
    return {"kept": keep.numel()}
'''


def test_a_measured_cpu_run_reports_its_exact_tensor_peak_per_phase(project):
    pytester = project('''
@pytest.mark.gpu_budget(ram="4 GiB")
def test_tensors(gpu_budget):
    gpu_budget.measure(Scenario(name="t", run="torch_runner:run", params={"keep": 5_000_000, "spike": 7_000_000}))
''')
    pytester.makepyfile(torch_runner=RUNNER)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["peaks"]["ram_tensor"] == 5_000_000 + 14_000_000
    phases = {name: p["ram_tensor"] for name, p in row["phases"].items()}
    assert phases == {"load": 5_000_000, "train_step_1": 12_000_000, "train_step_2": 19_000_000}
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    assert json.loads(path.read_text())["entries"]["tiny"]["test_mem.py::test_tensors"]["peaks"]["ram_tensor"] == 19_000_000
