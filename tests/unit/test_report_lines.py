"""The table's change column and the setup lines say what was compared, in the table's own words."""

from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement, Result
from gpu_budget.model.setup import Setup
from gpu_budget.report import terminal

MiB = 2**20


def _row(change=None, setup=None, fingerprint_changed=()) -> Result:
    measured = Measurement(status="ok", peaks=Peaks(ram=500 * MiB, ram_tree=510 * MiB))
    return Result(nodeid="t.py::test", scenario="s", scale="tiny", verdict="pass", passed=True, message="",
                  measurement=measured, change=change or {}, setup=None if setup is None else Setup.from_json(setup), fingerprint_changed=fingerprint_changed)


def test_the_change_column_names_the_tree_as_the_table_does():
    assert terminal._change(_row({"ram_tree": 0.003, "ram_tensor": -0.01})) == "RAM tree +0.3%, tensors -1.0%"
    assert terminal._change(_row({"ram": 0.02})) == "RAM main +2.0%"  # a baseline of the main process only


def test_a_floor_shift_that_prints_as_zero_is_no_setup_difference():
    tiny = {"policy": "compare", "floor_shift": 20_000}  # 0.02 MiB: once a line that named no difference
    assert terminal.setup_lines([_row(setup=tiny)] * 4) == []
    moved = {"policy": "compare", "floor_shift": int(0.2 * MiB)}
    assert terminal.setup_lines([_row(setup=moved)] * 4) == [
        "4 case(s): setup differs from the baseline's: import floor +0.2 MiB, taken off the host RAM peak (compared as usual)"]
    kernel = _row(setup=tiny, fingerprint_changed=("kernel a -> b",))
    assert terminal.setup_lines([kernel]) == ["1 case(s): setup differs from the baseline's: kernel a -> b (compared as usual)"]


def test_a_setup_that_moves_host_ram_itself_says_what_it_can_hide():
    """Another CPU model moved the tiny gate's peaks past the floor (RESULTS.md 7b): "compared as usual" hid that a
    regression of the shift's size passes there."""
    cpu = _row(setup={"policy": "setup", "floor_shift": 0}, fingerprint_changed=("cpu AMD EPYC -> Intel Xeon",))
    said = ("50 case(s): setup differs from the baseline's: cpu AMD EPYC -> Intel Xeon (compared, but this setup moves "
            "host RAM itself: a regression of that size can pass; record baselines on it for full sensitivity)")
    assert terminal.setup_lines([cpu] * 50) == [said]


def test_a_foreign_setup_says_its_floor_without_taking_it_off():
    """Host RAM is not compared under a foreign setup (a preload list that moved the floor): nothing is taken off it."""
    preload = _row(setup={"policy": "foreign", "floor_shift": -int(133.3 * MiB), "floor_moved": True},
                   fingerprint_changed=("preload torch -> ",))
    said = ("1 case(s): setup differs from the baseline's: preload torch -> ; import floor -133.3 MiB (host RAM not "
            "compared: record a baseline for this setup)")
    assert terminal.setup_lines([preload]) == [said]
