"""session/case.py: one case from its mark to its Result, with a stand-in for the measured child.

The child is replaced by a function returning a Measurement, so the verdicts,
the baseline written, the skips and errors are tested without a process.
"""

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_budget import Scenario
from gpu_budget.declare.marks import gpu_budget as read_mark
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.figures import Peaks, RankFigures
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.result import Failure, Measurement, Verdict
from gpu_budget.session import can_run, case, case_setup
from gpu_budget.session.options import Options

MiB = 2**20
HW = {"key": "cpu-test", "threads": 1, "package_versions": {}, "torch": "x"}
HARDWARE = Hardware.from_json(HW)
CPU = DeviceInfo(cuda=False)


def options(tmp_path, **over) -> Options:
    return Options(**{"enabled": True, "update": False, "baselines": tmp_path, "scale": "tiny", "json": None,
                      "timeout": 60, "threads": 1, "preload": (), **over})


def measured(ram: int, **over) -> Measurement:
    return Measurement(status="ok", peaks=Peaks(ram=ram, ram_tree=ram, vram_allocated=None), **over)


def one(tmp_path, mark, child, scenario=None, **opts):
    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=scenario or Scenario(name="s", run="m:run"))
    return case.run(c, mark, options(tmp_path, **opts), CPU, HARDWARE, lambda s, snap: child, ci=False)


def test_a_ranked_cuda_case_needs_a_gpu_per_rank_and_a_cpu_one_does_not():
    ddp = Scenario(name="ddp", command=["torchrun", "--nproc-per-node", "2", "train.py"], ranks=2)
    one_gpu = DeviceInfo(cuda=True, gpu_name="X", gpu_memory=80 * 2**30, gpus=1)
    why, for_gpu = can_run.unmeasurable(ddp, read_mark(ram="1 GiB"), "tiny", one_gpu)
    assert for_gpu and "launches 2 ranks, one GPU each; this worker measures on 1" in why
    assert "--gpu-budget-gpus-per-worker=2" in why
    shared = Scenario(name="ddp", command=["torchrun", "--nproc-per-node", "2", "train.py"], ranks=2, gpus=1)
    assert can_run.unmeasurable(shared, read_mark(ram="1 GiB"), "tiny", one_gpu) == (None, False)
    assert can_run.unmeasurable(ddp, read_mark(ram="1 GiB"), "tiny", replace(one_gpu, gpus=2)) == (None, False)
    assert can_run.unmeasurable(ddp, read_mark(ram="1 GiB"), "tiny", CPU) == (None, False)
    assert case_setup.fingerprint_for(HARDWARE, ddp, "steady")["ranks"] == 2
    assert case_setup.fingerprint_for(HARDWARE, ddp, "steady")["launcher"] == "torchrun"
    module = Scenario(name="m", command=["python", "-m", "torch.distributed.run", "t.py"], ranks=2)
    assert case_setup.fingerprint_for(HARDWARE, module, "steady")["launcher"] == "torch.distributed.run"
    assert "ranks" not in case_setup.fingerprint_for(HARDWARE, Scenario(name="s", command=["x"]), "steady")


def test_a_first_run_is_recorded_and_the_next_one_compared(tmp_path):
    first = one(tmp_path, read_mark(ram="1 GiB"), measured(500 * MiB))
    assert first.result.verdict == Verdict.NO_BASELINE and first.result.passed and first.baseline_write
    from gpu_budget.judge import files

    files.write(Path(first.baseline_write.path), "tiny",
                    {first.baseline_write.id: first.baseline_write.entry.to_json()})
    again = one(tmp_path, read_mark(ram="1 GiB"), measured(500 * MiB))
    assert again.result.verdict == Verdict.PASS and again.baseline_write is None
    worse = one(tmp_path, read_mark(ram="1 GiB"), measured(550 * MiB))
    assert worse.result.verdict == Verdict.REGRESSION and not worse.result.passed


def test_over_budget_fails_unless_expected(tmp_path):
    assert one(tmp_path, read_mark(ram="400 MiB"), measured(500 * MiB)).result.verdict == Verdict.OVER_BUDGET
    assert not one(tmp_path, read_mark(ram="400 MiB"), measured(500 * MiB)).result.passed
    expected = one(tmp_path, read_mark(ram="400 MiB", expect="over-budget"), measured(500 * MiB)).result
    assert expected.verdict == Verdict.OVER_BUDGET and expected.passed


def test_an_expected_over_budget_case_within_its_budget_says_what_was_expected_beside_pass_fail(tmp_path):
    """Its verdict is "pass" and the gate fails it: the table's cell read "pass FAIL", two words at odds, the why in
    a message the step summary's table does not hold."""
    from gpu_budget.report import legend
    from gpu_budget.report.summary import markdown
    from gpu_budget.report.terminal import case_line, verdict_text

    within = one(tmp_path, read_mark(ram="1 GiB", expect="over-budget"), measured(500 * MiB)).result
    assert within.verdict == Verdict.PASS and not within.passed
    assert verdict_text(within) == "pass FAIL (expected over-budget)"
    assert "| pass FAIL (expected over-budget) |" in markdown([within], None)
    assert case_line(within).startswith("s (tiny): pass FAIL (expected over-budget); ")
    assert any("stayed within it" in line for line in legend.lines([verdict_text(within)]))
    over = one(tmp_path, read_mark(ram="400 MiB", expect="over-budget"), measured(500 * MiB)).result
    assert verdict_text(over) == "over-budget (expected)"  # as before: the expected failure happened


def test_a_missing_dependency_in_the_child_is_a_skip_with_its_message(tmp_path):
    child = Measurement(status="error", peaks=Peaks(ram=None), error=Failure(kind="missing-dependency", type=None,
                                                                      message="funasr is not installed", traceback=None))
    out = one(tmp_path, read_mark(ram="1 GiB"), child)
    assert out.skipped and out.result.message == "funasr is not installed"


def test_a_broken_baseline_file_is_an_error_naming_it_and_is_not_rewritten(tmp_path):
    path = tmp_path / "cpu-test" / "m.json"
    path.parent.mkdir()
    path.write_text("{not json")
    out = one(tmp_path, read_mark(ram="1 GiB"), measured(500 * MiB))
    assert out.result.verdict == Verdict.ERROR and str(path) in out.result.message and out.baseline_write is None
    assert path.read_text() == "{not json"


def test_a_vram_budget_on_a_cpu_host_gates_host_ram_and_says_the_vram_budget_was_not_checked(tmp_path):
    s = Scenario(name="c", command=["python", "t.py"])
    out = one(tmp_path, read_mark(ram="1 GiB", vram="1 GiB"), measured(1), scenario=s)
    assert not out.skipped and out.result.verdict == Verdict.NO_BASELINE and out.baseline_write
    assert out.result.message.startswith("VRAM budget 1.00 GiB not checked: this host has no CUDA GPU")
    assert (out.result.budget.ram, out.result.budget.vram) == (2**30, 2**30) and out.result.unchecked
    over = one(tmp_path, read_mark(ram="1 GiB", vram="1 GiB"), measured(2 * 2**30), scenario=s)
    assert over.result.verdict == Verdict.OVER_BUDGET and not over.result.passed  # the RAM budget is gated
    required = one(tmp_path, read_mark(ram="1 GiB", vram="1 GiB"), measured(1), scenario=s, require_gpu=True)
    assert required.result.verdict == Verdict.ERROR and "--gpu-budget-require-gpu" in required.result.message
    assert "VRAM budget 1.00 GiB needs a CUDA GPU to check" in required.result.message


def test_an_expected_failure_resting_on_a_vram_budget_alone_is_a_skip_on_a_cpu_host(tmp_path):
    out = one(tmp_path, read_mark(vram="1 GiB", expect="over-budget"), measured(1))
    assert out.skipped and "rests on the VRAM budget 1.00 GiB alone" in out.result.message
    with_ram = one(tmp_path, read_mark(ram="1 MiB", vram="1 GiB", expect="over-budget"), measured(2 * MiB))
    assert with_ram.result.verdict == Verdict.OVER_BUDGET and with_ram.result.passed


def test_an_expected_failure_resting_on_its_card_alone_is_a_skip_on_a_cpu_host(tmp_path):
    """card= stands for a VRAM budget at the card's memory on CUDA (declaring.md, "The card a user trains on"), so a
    reproduction resting on it alone cannot run without CUDA, as one resting on vram= alone: it was an error on a CPU
    host ("expect='over-budget' on cpu at scale 'tiny', but no ram or vram budget applies there")."""
    out = one(tmp_path, read_mark(card="RTX 3090", expect="over-budget"), measured(1))
    assert out.skipped and "rests on card='RTX 3090' alone" in out.result.message, out.result.message
    required = one(tmp_path, read_mark(card="RTX 3090", expect="over-budget"), measured(1), require_gpu=True)
    assert required.result.verdict == Verdict.ERROR and "--gpu-budget-require-gpu" in required.result.message
    with_ram = one(tmp_path, read_mark(ram="1 MiB", card="RTX 3090", expect="over-budget"), measured(2 * MiB))
    assert with_ram.result.verdict == Verdict.OVER_BUDGET and with_ram.result.passed


def test_a_vram_budget_on_a_gpu_host_with_no_gpu_figure_is_an_error_not_a_pass(tmp_path):
    """A command that trained on the CPU on a GPU host reports no GPU figure: its VRAM budget tested nothing."""
    s = Scenario(name="c", command=["python", "t.py"])
    gpu = DeviceInfo(cuda=True, gpu_name="X", gpu_memory=80 * 2**30, gpus=1)
    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=s)
    mark = read_mark(ram="1 GiB", vram="1 GiB", host="cuda")
    out = case.run(c, mark, options(tmp_path), gpu, HARDWARE, lambda s, snap: measured(1), ci=False)
    assert out.result.verdict == Verdict.ERROR and not out.result.passed
    assert "no GPU figure was measured: its own process never initialised CUDA" in out.result.message
    seen = Measurement(status="ok", peaks=Peaks(ram=1, ram_tree=1, vram_allocated=512 * MiB))
    judged = case.run(c, mark, options(tmp_path), gpu, HARDWARE, lambda s, snap: seen, ci=False)
    assert judged.result.verdict == Verdict.NO_BASELINE and judged.result.passed, judged.result.message


def test_an_imbalance_budget_on_a_run_of_fewer_than_two_ranks_is_an_error_not_a_pass(tmp_path):
    """imbalance= bounds a launcher's largest rank over its smallest: a run of one process has no ratio, and its
    budget would pass unseen."""
    s = Scenario(name="c", command=["python", "t.py"])
    out = one(tmp_path, read_mark(ram="1 GiB", imbalance=1.2), measured(1), scenario=s)
    assert out.result.verdict == Verdict.ERROR and not out.result.passed
    assert "imbalance=1.2 bounds a launcher's largest rank over its smallest, but the case ran no ranks" in \
        out.result.message
    two = replace(measured(1), ranks=(RankFigures(0, Peaks(ram=1, ram_tree=1)), RankFigures(1, Peaks(ram=1, ram_tree=1))))
    judged = one(tmp_path, read_mark(ram="1 GiB", imbalance=1.2), two, scenario=s)
    assert judged.result.verdict == Verdict.NO_BASELINE and judged.result.passed, judged.result.message


def test_a_gpu_only_scale_on_a_cpu_host_is_a_skip_with_the_reason(tmp_path):
    s = Scenario(name="g", run="m:run", scales={"tiny": {"needs_cuda": True}})
    out = one(tmp_path, read_mark(ram="1 GiB"), measured(1), scenario=s)
    assert out.skipped and "needs a CUDA GPU" in out.result.message


def test_a_command_cases_fingerprint_records_its_environment(tmp_path):
    s = Scenario(name="c", command=["python", "t.py"], env={"OMP_NUM_THREADS": "2"})
    fprint = case_setup.fingerprint_for(Hardware.from_json({**HW, "floor": 300 * MiB}), s, "steady")
    assert fprint["command_env"]["OMP_NUM_THREADS"] == "2" and fprint["command_env"]["MALLOC_TRIM_THRESHOLD_"] == "131072"
    out = one(tmp_path, read_mark(ram="1 GiB"), measured(500 * MiB), scenario=s)
    entry = out.baseline_write.entry.to_json()
    assert json.loads(json.dumps(entry)) == entry  # a baseline entry crosses to its file as plain JSON
    assert entry["fingerprint"]["command_env"]["OMP_NUM_THREADS"] == "2"


def test_a_commands_figure_has_a_moved_floor_taken_off_unless_the_preload_list_moved_it(tmp_path):
    """Another CPU model moves a fresh interpreter's footprint as it moves the child's floor; a preload list does not."""
    from gpu_budget.judge import files

    s = Scenario(name="c", command=["python", "t.py"])
    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=s)

    def run(peak, **hardware):
        hw = Hardware.from_json({**HW, "floor": 300 * MiB, "cpu": "A", "preload": "torch", **hardware})
        return case.run(c, read_mark(ram="1 GiB"), options(tmp_path), CPU, hw, lambda s, snap: measured(peak), ci=False)

    first = run(500 * MiB)
    files.write(Path(first.baseline_write.path), "tiny",
                    {first.baseline_write.id: first.baseline_write.entry.to_json()})
    assert run(512 * MiB).result.verdict == Verdict.REGRESSION  # above 500 MiB + 0.5 % + 4 MiB: the planted case
    moved = run(512 * MiB, cpu="B", floor=308 * MiB).result
    assert moved.verdict == Verdict.PASS
    assert moved.setup.floor_shift == 8 * MiB
    preload = run(512 * MiB, preload="torch transformers", floor=308 * MiB).result
    assert preload.verdict == Verdict.REGRESSION and preload.setup.floor_shift == 0


def test_a_function_cases_host_ram_is_not_compared_across_preload_lists_that_moved_the_floor(tmp_path):
    """One tiny case that imports torch, unchanged, recorded with gpu_budget_preload = torch and run with it empty, as
    measured on a CPU host: the floor fell by 133.32 MiB, the peak by less (248.46 -> 228.66 MiB), for the case
    imports torch itself. Taking the floor's fall off read +45.7 %, as measured it reads -8 %: neither is the code's."""
    from gpu_budget.judge import files

    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=Scenario(name="s", run="m:run"))

    def run(peak, **hardware):
        hw = Hardware.from_json({**HW, "floor": 272 * MiB, "preload": "torch", **hardware})
        return case.run(c, read_mark(ram="1 GiB"), options(tmp_path), CPU, hw, lambda s, snap: measured(peak), ci=False)

    then = int(248.46 * MiB)
    first = run(then)
    files.write(Path(first.baseline_write.path), "tiny", {first.baseline_write.id: first.baseline_write.entry.to_json()})
    assert run(int(then * 1.2)).result.verdict == Verdict.REGRESSION  # the planted case, on the baseline's preload
    fell = run(int(228.66 * MiB), preload="", floor=272 * MiB - int(133.32 * MiB)).result
    assert (fell.verdict, fell.setup.policy) == (Verdict.PASS, "foreign"), fell.message
    assert "preload torch -> ;" in fell.message and "host RAM not compared" in fell.message
    assert "taken off" not in fell.message
    kept = run(int(then * 1.2), preload="torch runners", floor=273 * MiB).result  # the floor kept: quiet, compared
    assert kept.verdict == Verdict.REGRESSION and kept.setup.quiet == ("preload torch -> torch runners",)


def test_a_command_envs_paths_under_the_project_are_recorded_from_it(tmp_path):
    """A PYTHONPATH into the project (S2's FunASR marks) is recorded the same from every checkout of it."""
    fprints = []
    for checkout in ("a", "b"):
        root = tmp_path / checkout
        scenario = Scenario(name="s", command=["x"], env={"PYTHONPATH": os.pathsep.join(
            [str(root / "memtests" / "marks"), "/opt/elsewhere"]), "TOKEN": "1"})
        fprints.append(case_setup.fingerprint_for(HARDWARE, scenario, "steady", root=root)["command_env"])
    assert fprints[0] == fprints[1]
    assert fprints[0]["PYTHONPATH"] == os.pathsep.join(["<project>/memtests/marks", "/opt/elsewhere"])
    assert fprints[0]["TOKEN"] == "1"
    unanchored = case_setup.fingerprint_for(HARDWARE, Scenario(name="s", command=["x"], env={"PYTHONPATH": "/p/q"}), "steady")
    assert unanchored["command_env"]["PYTHONPATH"] == "/p/q"


def test_a_reproduction_resting_on_a_ram_budget_above_the_host_s_memory_is_skipped(tmp_path):
    """As a VRAM budget above the GPU is: a host (or cgroup) of 16 GiB cannot reach a 24 GiB budget, so the run would
    die of out-of-memory before it, proving only that the host is small. Before, it ran, and its MemoryError passed:
    "over budget as expected: the child died of out-of-memory (...), the reported failure itself"."""
    small = DeviceInfo(cuda=False, host_memory=16 * 2**30)
    over = read_mark(ram="24 GiB", expect="over-budget")
    why, for_gpu = can_run.unmeasurable(Scenario(name="s", run="m:run"), over, "tiny", small)
    assert not for_gpu and "rests on the RAM budget 24.00 GiB, above this host's memory 16.00 GiB" in why, why
    assert can_run.unmeasurable(Scenario(name="s", run="m:run"), read_mark(ram="24 GiB"), "tiny", small) == (None, False)
    assert can_run.unmeasurable(Scenario(name="s", run="m:run"), read_mark(ram="12 GiB", expect="over-budget"), "tiny",
                                small) == (None, False)
    dead = Measurement("error", Peaks(ram=15 * 2**30), error=Failure(kind="oom", type="builtins.MemoryError",
                                                                     message="Unable to allocate 8.00 GiB"))
    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=Scenario(name="s", run="m:run"))
    gpu = DeviceInfo(cuda=True, gpu_name="X", gpu_memory=80 * 2**30, gpus=1, host_memory=16 * 2**30)
    both = read_mark(ram="24 GiB", vram="40 GiB", expect="over-budget", host="cuda")  # the VRAM budget may reproduce it
    got = case.run(c, both, options(tmp_path), gpu, HARDWARE, lambda s, snap: dead, ci=False)
    assert got.skipped and got.baseline_write is None, got.result.message  # ... but it died in host RAM below 24 GiB
    assert "this host's memory 16.00 GiB" in got.result.message and "below the RAM budget 24.00 GiB" in got.result.message


def test_a_reproduction_resting_on_a_vram_budget_above_its_card_is_refused_and_one_at_the_card_reproduced(tmp_path):
    """card="T4" caps every host at 14.75 GiB: a 24 GiB VRAM budget cannot be passed under it on any host, so the
    marker is refused before anything runs (the judge's own error for it: test_compare_oom.py). Budgeted at the card,
    the out-of-memory death under the cap is the reproduction."""
    gpu = DeviceInfo(cuda=True, gpu_name="X", gpu_memory=80 * 2**30, gpus=1)
    capped = Measurement("error", Peaks(ram=2**30, vram_allocated=14 * 2**30),
                         error=Failure(kind="oom", type="torch.OutOfMemoryError", message="CUDA out of memory"))
    c = case.Case(nodeid="m.py::t", module="m.py", name="t", scenario=Scenario(name="s", run="m:run"))
    with pytest.raises(ValueError, match=r"vram budget '24 GiB' \(24\.00 GiB\) .* above the card it runs as on, T4"):
        read_mark(vram="24 GiB", card="T4", expect="over-budget", host="cuda")
    at_card = read_mark(card="T4", expect="over-budget", host="cuda")  # budgeted at the card: the death reproduces it
    got = case.run(c, at_card, options(tmp_path), gpu, HARDWARE, lambda s, snap: capped, ci=False).result
    assert (got.verdict, got.passed) == (Verdict.OVER_BUDGET, True), got.message
