"""A run a few KiB from the budget: its figure, to 0.1 MiB, reads as the budget's own, so the report says by how much
it is over or under, where the side it is on would otherwise be unreadable."""

from gpu_budget.search.explore import Envelope, explore

KiB, MiB = 2**10, 2**20


def test_runs_that_round_to_the_budget_say_which_side_they_are_on():
    """seq 2049 is 50 KiB over a 100 MiB budget, 2048 exactly on it. Before, the boundary's line read "2048: 100.0
    MiB, 2049: 100.0 MiB" and the smallest configuration over the budget "measured 100.0 MiB, over budget" beside
    "budget 100.0 MiB"."""
    result = explore("edge", Envelope({"seq": (1, 4096)}), "100 MiB", lambda k: k["seq"] * 50 * KiB,
                     lambda k: k["seq"] * 50 * KiB, boundary="seq", max_examples=10)
    assert result.boundary.value == 2048, result.summary()
    (line,) = [s for s in result.summary() if s.startswith("largest seq")]
    assert "2048: 100.0 MiB, 2049: 100.0 MiB (50.00 KiB over the budget)" in line, line
    (line,) = [s for s in result.summary() if s.startswith("smallest configuration")]
    assert line.endswith("seq=2049: measured 100.0 MiB (50.00 KiB over the budget), over budget (predicted 100.0 MiB)"), line
