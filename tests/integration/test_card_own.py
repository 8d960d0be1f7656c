"""card= naming the runner's own GPU: a T4 runner whose driver reports less than the table's T4 runs a card="T4" case
as on itself, at its own total; a GPU of another name holding less stays skipped. The stand-in device
(tests/fake_torch.py) takes its name and total from FAKE_GPU_NAME / FAKE_GPU_TOTAL: no GPU figure here."""

import pytest
from inner_session import rows
from inner_session import run_on_stand_in as run

GiB = 2**30
T4_HERE = round(14.56 * GiB)  # what a GCP T4 printed (docs/cards.md: Zheng-Chong/CatVTON#133)

CASE = '''
@pytest.mark.gpu_budget(card="T4")
def test_t4(gpu_budget):
    gpu_budget.measure(S(2))
'''


def on_a(monkeypatch, name: str, total: int) -> None:
    monkeypatch.setenv("FAKE_GPU_NAME", name)
    monkeypatch.setenv("FAKE_GPU_TOTAL", str(total))


def test_a_t4_runner_printing_less_than_the_table_runs_a_t4_case(fake_cuda, monkeypatch):
    """Before: skipped on the very card it names ("card='T4' asks for T4 (14.75 GiB), more than this GPU's total
    memory 14.56 GiB (Tesla T4)"), so the gate gated nothing on a T4 runner."""
    pytester = fake_cuda(CASE)
    on_a(monkeypatch, "Tesla T4", T4_HERE)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    row = rows(pytester)["test_t4"]
    assert row["card"] == "T4 (this runner's, 14.56 GiB; the table's 14.75)", row
    assert row["budget"]["vram"] == T4_HERE, row["budget"]  # the card's memory is the VRAM budget it stands for
    assert row["info"]["card"].startswith("ran as on T4 (this runner's, 14.56 GiB; the table's 14.75): the caching "
                                          "allocator capped at 14.27 GiB"), row["info"]
    result.stdout.fnmatch_lines(["*test_t4*as on T4 (this runner's, 14.56 GiB; the table's 14.75)*"])


def test_a_t4_case_still_dies_of_out_of_memory_past_the_runners_t4(fake_cuda, monkeypatch):
    pytester = fake_cuda(CASE.replace("S(2)", "S(14)"))
    on_a(monkeypatch, "Tesla T4", T4_HERE)
    run(pytester).assert_outcomes(failed=1)
    row = rows(pytester)["test_t4"]
    assert row["error"]["kind"] == "oom", row
    assert "as on T4 (this runner's, 14.56 GiB; the table's 14.75)" in row["error"]["message"], row["error"]


@pytest.mark.parametrize("name", ["NVIDIA A2", "Fake GPU"])
def test_a_gpu_of_another_name_holding_less_is_skipped(fake_cuda, monkeypatch, name):
    pytester = fake_cuda(CASE)
    on_a(monkeypatch, name, T4_HERE)
    result = run(pytester)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([(f"*card='T4' asks for T4 (14.75 GiB), more than this GPU's total memory 14.56 GiB "
                                  f"({name}): a smaller card cannot run as a bigger one*")])
