"""A peak reads the same wherever the gate prints it: the table's cell, the verdict's message and the JSON's bytes.

A baseline recorded under another import floor is compared with the floor's shift taken off
(judge/compare.py); the message then shows the measured peak, as the table does, before the arithmetic.
"""

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result
from gpu_budget.model.setup import Setup
from gpu_budget.report import terminal
from gpu_budget.units import MiB, format_size

TOL = Tolerance(rel=0.005, abs=4 * MiB)


def _row(peak: int, base: int, shift: int) -> Result:
    measured = Measurement(status="ok", peaks=Peaks(ram=peak, ram_tree=peak, vram_allocated=None))
    baseline = Entry(Peaks(ram=base, ram_tree=base))
    j = judge(measured, Budget(ram=2**30), baseline, TOL, ci=True, update=False, setup=Setup(floor_shift=shift))
    return Result(nodeid="t.py::test_x", scenario="s", scale="tiny", verdict=j.verdict, passed=j.passed,
                  message=j.message, budget=Budget(ram=2**30), tolerance=TOL, measurement=measured,
                  change=j.change, baseline=baseline)


def test_a_peak_compared_with_the_floor_taken_off_reads_as_the_table_reads_it():
    peak = 651_784_192  # 621.59 MiB; with a shift of -24 KiB taken off it is 621.61 MiB
    row = _row(peak, 606 * MiB, -24 * 1024)
    cell = terminal.table_rows([row])[0][terminal.HEADERS.index("RAM tree")]
    assert cell == format_size(row.to_json()["peaks"]["ram_tree"]) == "621.59 MiB"
    assert row.verdict == "regression", row.message
    assert row.message.startswith(f"ram_tree {cell} - import floor shift -24.00 KiB = 621.61 MiB (floor taken off) "
                                  "> baseline 606.00 MiB"), row.message


def test_without_a_shift_the_message_shows_the_tables_figure_alone():
    row = _row(700 * MiB, 600 * MiB, 0)
    cell = terminal.table_rows([row])[0][terminal.HEADERS.index("RAM tree")]
    assert row.message.startswith(f"ram_tree {cell} > baseline 600.00 MiB"), row.message
    assert "floor" not in row.message


def test_a_figure_grown_from_a_zero_baseline_is_in_the_change_cell_that_the_regression_rests_on():
    """A CUDA case whose baseline allocated nothing on the GPU (its model kept on the CPU) and now allocates 12 MiB:
    no percentage of 0 exists, and the change cell named only the unchanged RAM, "RAM tree +0.0%", beside
    "regression FAIL"."""
    measured = Measurement(status="ok", peaks=Peaks(ram=300 * MiB, ram_tree=300 * MiB, vram_allocated=12 * MiB), cuda=True)
    baseline = Entry(Peaks(ram=300 * MiB, ram_tree=300 * MiB, vram_allocated=0))
    j = judge(measured, Budget(ram=2**30, vram=2**30), baseline, TOL, ci=True, update=False)
    row = Result(nodeid="t.py::test_x", scenario="s", scale="tiny", verdict=j.verdict, passed=j.passed,
                 message=j.message, budget=Budget(ram=2**30, vram=2**30), tolerance=TOL, measurement=measured,
                 change=j.change, baseline=baseline)
    assert row.verdict == "regression" and row.change["vram_allocated"] is None, row.message  # the JSON: no ratio
    cell = terminal.table_rows([row])[0][terminal.HEADERS.index("change")]
    assert cell == "RAM tree 0.0%, VRAM +12.00 MiB from 0 B"
    assert "change: RAM tree 0.0%, VRAM +12.00 MiB from 0 B" in terminal.case_detail(row)
    same = Result.from_json({**row.to_json(), "peaks": Peaks(ram=300 * MiB, ram_tree=300 * MiB, vram_allocated=0).to_json()})
    assert terminal.table_rows([same])[0][terminal.HEADERS.index("change")] == "RAM tree 0.0%, VRAM 0 B, as before"
