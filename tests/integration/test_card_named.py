"""card= as a user writes it in a marker: a size in powers of ten fails the test, naming the value and what to write."""

CASES = '''
@pytest.mark.gpu_budget(ram="1 GiB", card="24GB")
def test_sold_with(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))

@pytest.mark.gpu_budget(ram="1 GiB", card="24259MB")
def test_copied_from_torch(gpu_budget):
    gpu_budget.measure(Scenario(name="b", run="runners:alloc", params={"mib": 8}))
'''


def test_a_card_in_powers_of_ten_fails_its_test_naming_the_value(project):
    """Both were read as powers of ten and passed: on a GPU they ran as smaller cards than the ones meant (a card sold
    with that much, a total torch printed in MiB), with nothing said."""
    pytester = project(CASES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        ("*test_mem.py::test_sold_with: card='24GB' reads as 24,000,000,000 bytes*but 24GB is what L4, A10, A10G, "
         "RTX 3090, RTX 4090 are sold with*name the card*"),
        "*test_mem.py::test_copied_from_torch: card='24259MB' reads as 24,259,000,000 bytes*are MiB*",
    ])
