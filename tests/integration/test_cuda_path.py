"""The CUDA path of a gated session, end to end on a stand-in device (tests/fake_torch.py): no GPU figure here.

Per-device expectations (a case's budget and expectation follow the device its
child runs on), a case pinned to the CPU on a CUDA host, an out-of-memory death
that reproduces an expected over-budget failure, a budget above the card, and a
sticky CUDA error whose message must survive the child's clean-up.
"""

import json

import pytest
from inner_session import rows
from inner_session import run_on_stand_in as run

PER_DEVICE = '''
# a host-RAM budget where the case trains on the CPU, a VRAM budget where it trains on the GPU
BUDGET = {"cpu": {"ram": "1 GiB"}, "cuda": {"vram": "10 GiB"}}


@pytest.mark.gpu_budget(**BUDGET)
def test_on_the_host_device(gpu_budget):
    row = gpu_budget.measure(S(8))
    assert row.device == "cuda" and (row.budget.ram, row.budget.vram) == (None, 10 * 2**30) and row.expect is None


@pytest.mark.gpu_budget(**BUDGET, device="cpu")
def test_pinned_to_the_cpu(gpu_budget):
    row = gpu_budget.measure(S(8))  # its child does not see the GPU: host RAM only, judged by the cpu block
    assert row.device == "cpu" and row.info["device"] == "cpu"
    assert row.peaks.vram_allocated is None and row.budget.ram == 2**30


@pytest.mark.gpu_budget(cpu={"ram": "1 GiB"}, cuda={"ram": None}, expect="over-budget")
def test_expectation_without_a_budget_on_this_device(gpu_budget):
    gpu_budget.measure(S(8))


@pytest.mark.gpu_budget(vram="10 GiB", device="cpu")
def test_vram_budget_pinned_to_the_cpu(gpu_budget):
    gpu_budget.measure(S(8))
'''


def test_expectations_follow_the_device_the_child_runs_on(fake_cuda):
    pytester = fake_cuda(PER_DEVICE)
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=2)
    by = rows(pytester)
    assert by["test_on_the_host_device"]["verdict"] == "no-baseline"
    assert by["test_pinned_to_the_cpu"]["verdict"] == "no-baseline"
    problem = by["test_expectation_without_a_budget_on_this_device"]
    assert problem["verdict"] == "error" and "wall_seconds" not in problem  # a declaration error: nothing ran
    result.stdout.fnmatch_lines(["*expect='over-budget' on cuda at scale 'tiny', but no ram or vram budget applies*"])
    # pinned to the CPU, its VRAM budget could be checked on no host: refused, not skipped on every host
    result.stdout.fnmatch_lines(["*vram='10 GiB' with device='cpu': the test's child never sees a GPU, so no host*"])
    baseline = json.loads((pytester.path / "baselines" / "nvidia-fake-gpu-16gb" / "test_mem.json").read_text())
    assert baseline["entries"]["tiny"]["test_mem.py::test_pinned_to_the_cpu"]["fingerprint"]["device"] == "cpu"
    assert baseline["entries"]["tiny"]["test_mem.py::test_on_the_host_device"]["fingerprint"]["device"] == "cuda"


DEATHS = '''
@pytest.mark.gpu_budget(vram="10 GiB", expect="over-budget")
def test_oom_reproduces(gpu_budget):
    row = gpu_budget.measure(S(9, fail="oom"))  # never broke 10 GiB before it died: the death is the failure
    assert row.verdict == "over-budget" and "out-of-memory" in row.message


@pytest.mark.gpu_budget(vram="10 GiB")
def test_oom_is_an_error(gpu_budget):
    gpu_budget.measure(S(9, fail="oom"))


@pytest.mark.gpu_budget(vram="10 GiB", expect="over-budget")
def test_other_deaths_are_errors(gpu_budget):
    gpu_budget.measure(S(12, fail="sticky"))


@pytest.mark.gpu_budget(vram="20 GiB", expect="over-budget")
def test_budget_above_the_card(gpu_budget):
    gpu_budget.measure(S(9, fail="oom"))
'''


def test_an_oom_death_reproduces_an_expected_over_budget_failure_and_a_budget_above_the_card_is_skipped(fake_cuda):
    pytester = fake_cuda(DEATHS)
    result = run(pytester, "--gpu-budget-snapshot=never")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    by = rows(pytester)
    assert by["test_oom_reproduces"]["passed"] and by["test_oom_reproduces"]["error"]["kind"] == "oom"
    assert (by["test_oom_is_an_error"]["verdict"], by["test_oom_is_an_error"]["passed"]) == ("error", False)
    assert (by["test_other_deaths_are_errors"]["verdict"], by["test_other_deaths_are_errors"]["passed"]) == ("error", False)
    assert "wall_seconds" not in by["test_budget_above_the_card"]  # never measured: the 16 GiB card cannot reach 20 GiB
    result.stdout.fnmatch_lines(["*VRAM budget 20.00 GiB is above this GPU's total memory 16.00 GiB (Fake GPU)*"])


def test_a_sticky_cuda_error_is_reported_with_its_message(fake_cuda):
    """After the error every device call fails (synchronize included); the child still reports the message and the
    phases measured before it, instead of dying in its own clean-up with 'exited without a result'. Each phase keeps
    the GPU peak the runner planted in it: the allocator's counters are host-side, readable after the error too."""
    pytester = fake_cuda('''
        @pytest.mark.gpu_budget(vram="10 GiB")
        def test_sticky(gpu_budget):
            gpu_budget.measure(S(4, fail="sticky"))
    ''')
    run(pytester).assert_outcomes(failed=1)
    (row,) = rows(pytester).values()
    assert row["error"]["kind"] == "exception" and row["error"]["type"] == "builtins.RuntimeError"
    assert "illegal memory access was encountered (planted)" in row["error"]["message"]
    assert "illegal memory access" in row["message"]
    phases = {name: (p["step"], p["vram_allocated"]) for name, p in row["phases"].items()}
    assert phases == {"load": (None, 1 << 30), "train_step_1": (1, 4 << 30),
                      "train_step_2": (2, 4 << 30)}  # the open phase went out too, with its figure
    assert row["peaks"]["vram_allocated"] == 4 << 30


@pytest.mark.parametrize("gpus, pinned", [("0,1", "0"), ("GPU-aaaa,GPU-bbbb", "GPU-aaaa"), ("1", None)])
def test_a_serial_run_on_several_gpus_measures_on_the_first(fake_cuda, gpus, pinned, monkeypatch):
    pytester = fake_cuda('''
        import os

        @pytest.mark.gpu_budget(vram="10 GiB")
        def test_one(gpu_budget):
            gpu_budget.measure(S(4))
            print("VISIBLE", os.environ.get("CUDA_VISIBLE_DEVICES"))
    ''')
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", gpus)
    result = run(pytester, "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*VISIBLE {pinned or gpus}"])
    if pinned:
        result.stdout.fnmatch_lines([f"*measured on one, CUDA_VISIBLE_DEVICES={pinned}*"])


def test_a_gpu_case_whose_gpus_cuda_visible_devices_hides_names_it_in_its_skip(fake_cuda, monkeypatch):
    """A runner whose CUDA_VISIBLE_DEVICES hides every GPU (empty, "-1", or an index it does not have): the measured
    children see no GPU, and the skip says that variable did it, not that the host has none."""
    pytester = fake_cuda('''
        @pytest.mark.gpu_budget(vram="10 GiB", device="cuda")
        def test_on_the_gpu(gpu_budget):
            gpu_budget.measure(S(4))
    ''')
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    result = run(pytester)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([("*the test pins device='cuda'; the measured children see no CUDA GPU "
                                  "(CUDA_VISIBLE_DEVICES='')*")])
    assert "this host has no CUDA GPU" not in result.stdout.str()


HANGS = '''
import time
import torch


def hang(ctx):
    """1 GiB held in load, 2 GiB more in step 1, 4 GiB more in step 2, where it hangs past its timeout."""
    for name, step, gib in (("load", None, 1), ("train_step_1", 1, 2), ("train_step_2", 2, 4)):
        ctx.meter.start(name, step=step)
        torch.cuda.alloc(gib << 30)
    time.sleep(60)
'''


def test_a_timed_out_case_keeps_the_gpu_peaks_of_the_phase_it_hung_in(fake_cuda):
    """Step 2 took 4 GiB more and hung: the row read "host RAM peak seen so far 19.55 MiB, GPU allocated 3.00 GiB",
    step 1's, and train_step_2 had no GPU figure: the allocator's peaks were read at a phase's end only. The child
    streams them as they rise; the stopped phase keeps them, lower bounds, and the row's peak seen so far is 7 GiB."""
    pytester = fake_cuda('''
        @pytest.mark.gpu_budget(vram="15 GiB")
        def test_hung(gpu_budget):
            gpu_budget.measure(Scenario(name="hung", run="hangs:hang"))
    ''')
    pytester.makepyfile(hangs=HANGS)
    run(pytester, "--gpu-budget-timeout=4").assert_outcomes(failed=1)
    (row,) = rows(pytester).values()
    assert row["error"]["kind"] == "timeout" and row["error"]["phase"] == "train_step_2", row["error"]
    stopped = row["phases"]["train_step_2"]
    assert stopped["seconds"] is None and stopped["vram_allocated"] == 7 << 30, stopped
    assert stopped["vram_reserved"] == 8 << 30, stopped  # the stand-in reserves its peak and 1 GiB
    assert row["peaks"]["vram_allocated"] == 7 << 30, row["peaks"]
    assert "GPU allocated 7.00 GiB" in row["message"], row["message"]
