"""card= on a host without CUDA: a case that cannot run here is skipped, and nothing says it ran as on its card; a
card on a test pinned to the CPU, which no host would run as on it, is refused."""

import json

CASES = '''
@pytest.mark.gpu_budget(card="T4", device="cuda")
def test_pinned_to_cuda(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
'''


def test_a_card_case_skipped_here_does_not_say_it_ran_as_on_its_card(project, monkeypatch):
    pytester = project(CASES)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "--gpu-budget-json=r.json", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*the test pins device='cuda'; this host has no CUDA GPU*"])
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["verdict"] == "skipped" and row["budget_origin"] == "card" and "card" not in row, row
    assert "as on" not in result.stdout.str() and "as on" not in summary.read_text()


ALONE = '''
@pytest.mark.gpu_budget(card="T4")
def test_card_alone(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
'''


def test_a_case_with_a_card_alone_says_its_card_went_unchecked(project):
    """It passed with budget "-" and not a word of its card; under --gpu-budget-require-gpu it passed too, the gate
    counting "0 test(s) needed one"."""
    pytester = project(ALONE)
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist", "--gpu-budget")
    result = pytester.runpytest_subprocess(*args, "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    said = "*test_card_alone: card='T4' (on CUDA, its cap and the VRAM budget *) not checked: this host has no CUDA GPU*"
    result.stdout.fnmatch_lines([said])
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["unchecked"] and row["unchecked"][0].startswith("card='T4'"), row
    required = pytester.runpytest_subprocess(*args, "--gpu-budget-require-gpu")
    required.assert_outcomes(failed=1)
    required.stdout.fnmatch_lines(["*card='T4' (on CUDA, *) needs a CUDA GPU to check*"])


def test_a_card_on_a_test_pinned_to_the_cpu_is_refused_naming_both(project):
    """A test pinned to the CPU never runs as on a card: its child sees no GPU on any host, so no allocator is capped
    and no VRAM budget stands for the card. It passed with not a word of its card; now it fails as vram= with
    device='cpu' does, naming the card and the pin, and a farther marker's card is dropped with card=None."""
    pytester = project('''
pytestmark = pytest.mark.gpu_budget(card="T4")

@pytest.mark.gpu_budget(card={"real": "A100 80GB"}, device="cpu", ram="1 GiB")
def test_pinned(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))

@pytest.mark.gpu_budget(card=None, device="cpu", ram="1 GiB")
def test_dropped(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["_* test_pinned _*",
                                 ("test_mem.py::test_pinned: card={'tiny': 'T4', 'real': 'A100 80GB'} with "
                                  "device='cpu': the test's child never sees a GPU, so no host runs it as on that card*")],
                                consecutive=True)


def test_a_card_budget_unchecked_here_is_in_the_budget_column_marked_unchecked(project):
    """On a CPU host a card's test has the VRAM budget the card stands for (its memory, where vram= is not given), as
    a test with vram= has its own: its budget column says it, marked unchecked, as it says a declared VRAM budget
    unchecked there. It read "RAM 4.00 GiB" alone, so the row looked as if the test declared no VRAM budget at all."""
    from gpu_budget.model.card import by_name
    from gpu_budget.units import format_size

    pytester = project('''
@pytest.mark.gpu_budget(ram="4 GiB", card="RTX 3090")
def test_card(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))

@pytest.mark.gpu_budget(ram="4 GiB", vram="20 GiB", card="RTX 3090")
def test_vram(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=2)
    card = format_size(by_name("RTX 3090").capacity)
    result.stdout.fnmatch_lines([f"test_mem.py::test_card * RAM 4.00 GiB, VRAM {card} unchecked *",
                                 "test_mem.py::test_vram * RAM 4.00 GiB, VRAM 20.00 GiB unchecked *"])
    assert "as on" not in result.stdout.str()  # it ran on the CPU, as on no card
    rows = {row["nodeid"]: row for row in json.loads((pytester.path / "r.json").read_text())["results"]}
    card_row = rows["test_mem.py::test_card"]
    assert card_row["budget"]["vram"] == by_name("RTX 3090").capacity, card_row
    assert card_row["unchecked"][0].startswith("card='RTX 3090'") and card_row["peaks"]["vram_allocated"] is None


def test_a_card_budget_in_an_error_or_skipped_row_is_in_its_budget_column(project):
    """Under --gpu-budget-require-gpu a card's test without CUDA is an error for its unchecked card, but its row's
    budget column read "RAM 4.00 GiB" (card alone: "-"), while the same test without the option read "RAM 4.00 GiB,
    VRAM ... unchecked"; a card's test skipped here (its scenario needs CUDA) dropped the card's VRAM too, while one
    pinned to CUDA kept it. Each row now names the VRAM budget the test declared, unchecked where that is the error."""
    from gpu_budget.model.card import by_name
    from gpu_budget.units import format_size

    pytester = project('''
S = Scenario(name="a", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(card="RTX 3090")
def test_alone(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="4 GiB", card="RTX 3090")
def test_card(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="4 GiB", vram="20 GiB")
def test_vram(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="4 GiB", card="RTX 3090")
def test_needs_cuda(gpu_budget):
    gpu_budget.measure(S.with_params(needs_cuda=True))
''')
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist", "--gpu-budget", "--gpu-budget-json=r.json")
    card = format_size(by_name("RTX 3090").capacity)
    required = pytester.runpytest_subprocess(*args, "--gpu-budget-require-gpu")
    required.assert_outcomes(failed=4)
    required.stdout.fnmatch_lines([f"test_mem.py::test_alone * VRAM {card} unchecked * error FAIL",
                                   f"test_mem.py::test_card * RAM 4.00 GiB, VRAM {card} unchecked * error FAIL",
                                   "test_mem.py::test_vram * RAM 4.00 GiB, VRAM 20.00 GiB unchecked * error FAIL",
                                   f"test_mem.py::test_needs_cuda * RAM 4.00 GiB, VRAM {card}  * error FAIL"])
    rows = {row["nodeid"]: row for row in json.loads((pytester.path / "r.json").read_text())["results"]}
    assert rows["test_mem.py::test_card"]["budget"]["vram"] == by_name("RTX 3090").capacity, rows
    assert rows["test_mem.py::test_card"]["unchecked"][0].startswith("card='RTX 3090'"), rows
    skipped = pytester.runpytest_subprocess(*args)
    skipped.assert_outcomes(passed=3, skipped=1)
    skipped.stdout.fnmatch_lines([f"test_mem.py::test_needs_cuda * RAM 4.00 GiB, VRAM {card}  * skipped"])
