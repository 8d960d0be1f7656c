"""card=: a case run as on a smaller card, end to end on the stand-in device (tests/fake_torch.py): no GPU figure here.

The stand-in device holds 16 GiB and a CUDA context of 300 MiB; its allocator reserves what is allocated plus
1 GiB, and under set_per_process_memory_fraction it raises OutOfMemoryError past the cap, as the caching
allocator does once freeing its cache and retrying is not enough. The runner plants 1 GiB at load and `gib`
GiB in each of three steps: under a 4 GiB card the cap is 4 GiB less the 300 MiB context, so 2 GiB a step
(3 GiB reserved) fits and 3 GiB (4 GiB reserved) does not.
"""


import json

import pytest
from inner_session import rows
from inner_session import run_on_stand_in as run

GiB, MiB = 2**30, 2**20

CASES = '''
@pytest.mark.gpu_budget(card="4 GiB")
def test_fits(gpu_budget):
    row = gpu_budget.measure(S(2))
    assert row.budget.vram == 4 * 2**30  # the card is the default VRAM budget


@pytest.mark.gpu_budget(card="4 GiB")
def test_does_not_fit(gpu_budget):
    gpu_budget.measure(S(3))


@pytest.mark.gpu_budget(card="RTX 3090")
def test_bigger_than_this_gpu(gpu_budget):
    gpu_budget.measure(S(2))

'''


def test_a_function_case_runs_as_on_its_card(fake_cuda):
    pytester = fake_cuda(CASES)
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    by = rows(pytester)

    fits = by["test_fits"]
    assert fits["passed"] and fits["peaks"]["vram_allocated"] == 2 * GiB
    assert fits["info"]["card"] == ("ran as on a 4 GiB card: the caching allocator capped at 3.71 GiB (the card "
                                    "less the device's used memory as the CUDA context, 300.00 MiB)")

    row = by["test_does_not_fit"]
    assert not row["passed"] and row["error"]["kind"] == "oom", row
    assert row["error"]["message"].startswith(
        "out of memory as on a 4 GiB card, in phase train_step_1 (step 1): the caching allocator was capped "
        "at 3.71 GiB (the card less a CUDA context of 300.00 MiB): CUDA out of memory."), row["error"]
    assert row["phases"]["load"]["vram_allocated"] == GiB  # what it measured before it died stands

    assert "card" not in by["test_bigger_than_this_gpu"]  # skipped: it never ran as on the 3090
    result.stdout.fnmatch_lines([("*card='RTX 3090' asks for RTX 3090 (23.69 GiB), more than this GPU's total memory "
                                  "16.00 GiB (Fake GPU): a smaller card cannot run as a bigger one*")])


@pytest.mark.parametrize(("given", "says"), [
    ('"24"', "card='24' is a bare number: give it a unit"),
    ('"RTX 9999"', "card='RTX 9999' is neither a known card (RTX 3080 10GB, RTX 3060 12GB, T4, RTX A4000"),
    ('{"huge": "T4"}', "card names unknown scale(s) ?'huge'?"),
    ("24", "card=24: expected a card's name"),
    ('"4 GiB", vram="10 GiB"', "vram budget '10 GiB' (10.00 GiB) at scale 'tiny' is above the card it runs as on, a 4 GiB card"),
    ('"RTX 3090", vram="30 GiB"', ("vram budget '30 GiB' (30.00 GiB) at scale 'tiny' is above the card it runs as "
                                   "on, RTX 3090 (")),
    ('"4 GiB", device="cpu", ram="4 GiB"', "card='4 GiB' with device='cpu': the test's child never sees a GPU"),
    ('"T4", cuda={"vram": "26GB"}', ("cuda?'vram'? budget '26GB' (24.21 GiB) at scale 'tiny' is above the card it "
                                     "runs as on, T4 (14.75 GiB)")),
])
def test_a_bad_card_is_an_error_naming_it(fake_cuda, given, says):
    """The failure is the message alone, the line under the test's header: no traceback through the gate's code."""
    pytester = fake_cuda(f'''
@pytest.mark.gpu_budget(card={given})
def test_bad(gpu_budget):
    gpu_budget.measure(S(2))
''')
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["_* test_bad _*", f"test_mem.py::test_bad: *{says}*"], consecutive=True)
    assert "declare/marks.py" not in result.stdout.str(), result.stdout.str()


def test_the_row_and_the_table_say_the_card(fake_cuda):
    pytester = fake_cuda(CASES)
    result = run(pytester, "-k", "fits and not does_not")
    result.assert_outcomes(passed=1, deselected=2)
    assert rows(pytester)["test_fits"]["card"] == "a 4 GiB card"
    result.stdout.fnmatch_lines(["*test_mem.py::test_fits*VRAM 4.00 GiB as on a 4 GiB card*"])


REMEDY = '''
from gpu_budget import Fix

HALVE = Fix("halve_steps", "train", "each step plants half as much", "none", params={"gib": 1})
FULL = Fix("full_card", "train", "each step plants more", "none", params={"gib": 3})


@pytest.mark.gpu_budget(card="4 GiB")
def test_dies_on_its_card(gpu_budget):
    gpu_budget.measure(Scenario(name="gpu", run="runners:gpu", params={"gib": 3}, supports=(FULL, HALVE)))
'''


def test_the_remediation_search_runs_its_trials_under_the_card(fake_cuda):
    """--gpu-budget-remediate on a case that dies of out-of-memory on its card: each trial is capped as the case
    was, so a fix that does not shrink the steps dies too and the one that does passes (what gpu_validation.sh's
    `remedy` part runs on a GPU)."""
    pytester = fake_cuda(REMEDY)
    result = run(pytester, "--gpu-budget-remediate")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_dies_on_its_card"]
    assert row["error"]["kind"] == "oom", row
    remedy = row["remediation"]
    assert remedy["status"] == "found" and remedy["found"] == ["halve_steps"], remedy
    by_fixes = {tuple(t["fixes"]): t for t in remedy["tried"]}
    assert by_fixes[("full_card",)]["verdict"] == "over-budget" and "(oom)" in by_fixes[("full_card",)]["message"], remedy
    assert by_fixes[("halve_steps",)]["verdict"] == "pass", remedy
    assert remedy["peaks"]["vram_allocated"] == GiB  # a planted peak: the load's 1 GiB, each step's 1 GiB


def test_a_baseline_recorded_as_on_another_card_is_named(fake_cuda):
    """The card is part of the fingerprint: an entry recorded as on a 4 GiB card, judged by a run as on a T4, says so
    in the row as any setup difference is said. Before: the fingerprint held no card, and the row said nothing."""
    pytester = fake_cuda('@pytest.mark.gpu_budget(card="4 GiB")\ndef test_gpu(gpu_budget):\n    gpu_budget.measure(S(1))\n')
    run(pytester).assert_outcomes(passed=1)
    (stored,) = (pytester.path / "baselines").rglob("test_mem.json")
    (entry,) = json.loads(stored.read_text())["entries"]["tiny"].values()
    assert entry["fingerprint"]["card"] == "a 4.00 GiB card", entry["fingerprint"]
    (pytester.path / "test_mem.py").write_text((pytester.path / "test_mem.py").read_text().replace('"4 GiB"', '"T4"'))
    run(pytester).assert_outcomes(passed=1)  # the allocated peak is compared as usual, and holds
    row = rows(pytester)["test_gpu"]
    assert row["fingerprint_changed"] == ["card a 4.00 GiB card -> T4 (14.75 GiB)"], row
    assert row["setup"]["policy"] == "libraries", row["setup"]
    assert "setup differs from the baseline's: card a 4.00 GiB card -> T4 (14.75 GiB)" in row["message"], row["message"]


def test_one_card_written_two_ways_is_one_card_to_the_baseline(fake_cuda):
    """The row quotes card= as written; the fingerprint holds the card it reads as, so respelling it changes nothing."""
    pytester = fake_cuda('@pytest.mark.gpu_budget(card="4 GiB")\ndef test_gpu(gpu_budget):\n    gpu_budget.measure(S(1))\n')
    run(pytester).assert_outcomes(passed=1)
    (pytester.path / "test_mem.py").write_text((pytester.path / "test_mem.py").read_text().replace('"4 GiB"',
                                                                                                 '"4096 MiB"'))
    run(pytester).assert_outcomes(passed=1)
    row = rows(pytester)["test_gpu"]
    assert row["card"] == "a 4096 MiB card (4.00 GiB)" and not row["fingerprint_changed"], row


def test_a_size_card_is_quoted_as_written_beside_what_it_reads_as(fake_cuda):
    """Before: card="24576 MiB" on the 16 GiB stand-in was skipped saying `card='24.00 GiB' asks for a 24.00 GiB
    card`, a value nobody wrote; and one card written two ways is still one card to the fingerprint."""
    pytester = fake_cuda('''
@pytest.mark.gpu_budget(card="24576 MiB")
def test_bigger(gpu_budget):
    gpu_budget.measure(S(2))


@pytest.mark.gpu_budget(card="2657 MiB", vram="10 GiB")
def test_budget_above(gpu_budget):
    gpu_budget.measure(S(2))
''')
    result = run(pytester)
    result.stdout.fnmatch_lines([
        "*card='24576 MiB' asks for a 24576 MiB card (24.00 GiB), more than this GPU's total memory 16.00 GiB*"])
    result.stdout.fnmatch_lines([("*vram budget '10 GiB' (10.00 GiB) at scale 'tiny' is above the card it runs as on, a "
                                  "2657 MiB card (2.59 GiB)*")])
