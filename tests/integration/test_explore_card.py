"""Exploration within a card (card=): estimated alone on a host without a GPU, verified under the card's cap on one.

On the stand-in device (tests/fake_torch.py: 16 GiB, a 300 MiB context, reserved = allocated + 1 GiB) the runner
plants `gib` GiB a step. A 4 GiB card is budgeted at 4 GiB less the 610 MiB context allowance, 3.40 GiB; the
estimate handed in says `gib` GiB, so it puts the boundary at 3. Under the cap (4 GiB less the 300 MiB context)
3 GiB a step reserves 4 GiB and dies of out-of-memory: the real runs settle the boundary at 2, where the estimate
was exact (error 0). No GPU figure here.
"""

import json

import pytest

from gpu_budget.search.explore import Envelope, explore

GiB = 2**30

TEST = '''
import json

import pytest
from pathlib import Path

from gpu_budget.search.explore import Envelope


@pytest.mark.gpu_budget(card="4 GiB")
def test_explore(gpu_budget):
    result = gpu_budget.explore(S(1), Envelope({"gib": (1, 8)}), boundary="gib", max_real_runs=6,
                                estimate=lambda k: k["gib"] << 30)
    Path("explore.json").write_text(json.dumps(result.to_json()))
    print("\\n".join(result.summary()))
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                         "--gpu-budget", "--gpu-budget-explore", "-s", *args)


def test_on_a_gpu_host_the_estimated_boundary_is_verified_under_the_cards_cap(fake_cuda):
    pytester = fake_cuda(TEST)
    run(pytester).assert_outcomes(passed=1)
    found = json.loads((pytester.path / "explore.json").read_text())
    assert found["card"] == "a 4 GiB card" and found["verified"] and found["metric"] == "vram_allocated"
    assert found["budget"] == 4 * GiB - 610 * 2**20
    boundary = found["boundary"]
    assert boundary["predicted_value"] == 3 and boundary["value"] == 2, boundary  # 3 GiB dies under the cap
    assert dict(boundary["peaks"])[3] is None and dict(boundary["peaks"])[2] == 2 * GiB
    assert found["boundary_error"] == 0


def test_on_a_host_without_a_gpu_the_boundary_is_the_estimates_alone(fake_cuda, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the stand-in sees no device: a CPU host
    pytester = fake_cuda(TEST)
    result = run(pytester)
    result.assert_outcomes(passed=1)
    found = json.loads((pytester.path / "explore.json").read_text())
    assert found["card"] == "a 4 GiB card" and not found["verified"] and not found["real_runs"]
    assert found["boundary"]["predicted_value"] == 3 and found["boundary_error"] is None
    result.stdout.fnmatch_lines(["*within a 4 GiB card: estimated only (no GPU here: nothing is verified)*",
                                 "*largest gib within 3,486.0 MiB, estimated: 3*"])


def test_without_a_measure_the_search_runs_no_real_run():
    result = explore("estimated", Envelope({"batch": (1, 8), "seconds": (1, 30)}), budget="150 MiB",
                     estimate=lambda k: (k["batch"] * k["seconds"]) << 20, measure=None, boundary="batch",
                     max_examples=40, card="T4 (14.75 GiB)")
    assert not result.verified and not result.real_runs and not result.problems
    assert result.worst.config == {"batch": 8, "seconds": 30} and result.worst.measured is None
    assert result.boundary.predicted_value == 5 and result.boundary.at == {"seconds": 30}  # 5 * 30 <= 150
    assert result.smallest_failing.predicted > 150 << 20 and result.smallest_failing.measured is None


@pytest.mark.parametrize("host", ["gpu", "cpu"])
def test_a_card_the_context_allowance_leaves_nothing_of_is_an_error_naming_both(fake_cuda, monkeypatch, host):
    """An exploration within a card searches below the card less the context allowance (610 MiB): a 512 MiB card
    leaves nothing. It failed with "SizeError: negative memory size: -102760448", a traceback through the search."""
    if host == "cpu":
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the stand-in sees no device: a CPU host
    pytester = fake_cuda(TEST.replace('card="4 GiB"', 'card="512 MiB"'))
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["_* test_explore _*",
                                 ("test_mem.py::test_explore: card='512 MiB' leaves no memory to explore within: a "
                                  "512 MiB card holds no more than the 610.00 MiB CUDA context allowance *")],
                                consecutive=True)
    assert "SizeError" not in result.stdout.str()
