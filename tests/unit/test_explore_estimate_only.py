"""An exploration on the estimate alone (no real run can measure the metric here): its boundary stands on predictions."""

from gpu_budget.search.explore import Envelope, explore

MiB = 2**20


def test_predictions_along_the_boundary_that_contradict_it_are_a_problem():
    """The estimate jumps at b=3 (300 MiB, over a 100 MiB budget), then grows 10 MiB a step: the bisection put the
    boundary at b=10 though b=3 is predicted over it. With real runs, that contradiction is a problem; on the
    estimate alone, before, "largest b within 100.0 MiB, estimated: 10" and no problem."""
    def estimate(knobs):
        return (300 if knobs["b"] == 3 else knobs["b"] * 10) * MiB

    result = explore("jump", Envelope({"b": (1, 16)}), 100 * MiB, estimate, None, boundary="b")
    assert result.boundary.predicted_value == 10
    assert result.problems == [("predictions along b contradict its boundary (10): b=3: 300.0 MiB, over budget at or "
                                "below it; the estimate does not grow along b here, so the boundary is unfounded")]


def test_a_boundary_the_predictions_agree_with_is_no_problem():
    result = explore("steady", Envelope({"b": (1, 16)}), 100 * MiB, lambda k: k["b"] * 10 * MiB, None, boundary="b")
    assert result.boundary.predicted_value == 10 and not result.problems
