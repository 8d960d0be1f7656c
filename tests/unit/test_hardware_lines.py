"""The terminal summary's hardware lines name what is installed, and warn of a failed preload only where it counts."""

from gpu_budget.model.hardware import Hardware
from gpu_budget.report.findings import Merged, _made
from gpu_budget.session.outputs import hardware_lines

FULL = {"key": "cpu-x86_64", "torch": "2.13.0+cpu", "transformers": "5.23.0", "peft": "0.18.0", "python": "3.11.7",
        "cpu": "X", "cpu_level": "x86-64-v3", "isa": "avx2", "dispatch": "avx2", "threads": 1, "malloc": "steady",
        "floor": 345 * 2**20}


def test_every_library_installed_is_named():
    line = hardware_lines(Hardware.from_json({**FULL, "preload": "torch transformers"}), True)[0]
    assert line == "hardware cpu-x86_64: torch 2.13.0+cpu, transformers 5.23.0, peft 0.18.0, python 3.11.7"


def test_a_library_not_installed_is_left_out():
    hw = Hardware.from_json({**FULL, "transformers": None, "peft": None})
    assert hardware_lines(hw, True)[0] == "hardware cpu-x86_64: torch 2.13.0+cpu, python 3.11.7"
    bare = Hardware.from_json({**FULL, "torch": None, "transformers": None, "peft": None})
    assert hardware_lines(bare, True)[0] == "hardware cpu-x86_64: python 3.11.7"


def test_a_default_preload_module_not_installed_is_no_warning_and_a_broken_one_is():
    hw = Hardware.from_json({**FULL, "transformers": None, "preload": "torch transformers(not-imported)"})
    assert len(hardware_lines(hw, True, installed=lambda name: name != "transformers")) == 2
    broken = hardware_lines(hw, True, installed=lambda name: True)  # installed, yet it failed to import
    assert broken[2].startswith("preload: transformers failed to import in the forkserver")


def test_a_module_the_user_named_is_warned_of_even_when_missing():
    hw = Hardware.from_json({**FULL, "preload": "torch no_such_module(not-imported)"})
    lines = hardware_lines(hw, True, installed=lambda name: False)
    assert lines[2].startswith("preload: no_such_module failed to import in the forkserver")
    assert len(hardware_lines(hw, False, installed=lambda name: False)) == 2  # no function case ran: no warning


def test_findings_header_leaves_out_a_library_not_installed():
    """A user's own project (no peft) gets no "peft None" in FINDINGS.md's header, as the terminal's line has none."""
    hw = Hardware.from_json({**FULL, "peft": None})
    header = _made(Merged(hw), ["r.json"], [])
    assert header.endswith("from real runs on `cpu-x86_64` (torch 2.13.0+cpu, transformers 5.23.0): `r.json`."), header
    bare = Hardware.from_json({**FULL, "torch": None, "transformers": None, "peft": None})
    assert _made(Merged(bare), ["r.json"], []).endswith("from real runs on `cpu-x86_64`: `r.json`.")
    assert _made(Merged(Hardware.from_json(FULL)), ["r.json"], []).endswith(
        "(torch 2.13.0+cpu, transformers 5.23.0, peft 0.18.0): `r.json`.")


def test_a_gpu_cards_line_leaves_out_a_library_not_installed():
    hw = Hardware.from_json({**FULL, "peft": None, "gpu_name": "NVIDIA H200", "driver": "570.1", "cuda": "12.8"})
    assert hw.card == "NVIDIA H200, driver 570.1, CUDA 12.8; torch 2.13.0+cpu, transformers 5.23.0"


def test_children_that_compiled_the_libraries_from_source_are_named_with_the_way_out():
    """A uv environment (installed without bytecode) on a host that sets PYTHONDONTWRITEBYTECODE: every run compiles
    torch, its peaks hold the compiler's memory, and the first baseline is recorded so; the summary says it then, not
    only once a later run differs."""
    seen = "0 of 716 modules with a usable .pyc; bytecode writes off (sys.dont_write_bytecode: PYTHONDONTWRITEBYTECODE or -B)"
    lines = hardware_lines(Hardware.from_json({**FULL, "bytecode": "source", "bytecode_seen": seen}), True)
    assert lines[2] == (f"bytecode: the libraries' modules compiled from source in the measured children ({seen}): "
                        "their host RAM peaks hold the compiler's memory, and a baseline recorded here holds it too; "
                        "write their bytecode once (python -m compileall on the environment, uv's --compile-bytecode) "
                        "or run without PYTHONDONTWRITEBYTECODE")
    mixed = hardware_lines(Hardware.from_json({**FULL, "bytecode": "mixed", "bytecode_seen": "400 of 716 ..."}), True)
    assert mixed[2].startswith("bytecode: the libraries' modules partly compiled from source in the measured children")
    for quiet in ("cached", None):
        assert len(hardware_lines(Hardware.from_json({**FULL, "bytecode": quiet}), True)) == 2, quiet
