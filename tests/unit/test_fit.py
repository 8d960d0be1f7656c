"""The one least-squares fit: growth per step and exploration calibration both read it."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_budget.measure.fit import least_squares


@given(st.floats(-1e6, 1e6), st.floats(-1e9, 1e9), st.lists(st.integers(0, 10**6), min_size=2, max_size=20, unique=True))
def test_points_on_a_line_give_that_line(slope, intercept, xs):
    fitted = least_squares(xs, [slope * x + intercept for x in xs])
    assert fitted == pytest.approx((slope, intercept), rel=1e-6, abs=1e-3)


def test_noise_is_averaged_out():
    assert least_squares([0, 1, 2, 3], [0, 12, 18, 30]) == pytest.approx((9.6, 0.6))


@pytest.mark.parametrize("xs", [[], [5], [3, 3, 3]])
def test_without_two_distinct_xs_there_is_no_line(xs):
    assert least_squares(xs, [1] * len(xs)) is None


def test_unpaired_points_are_refused_by_count():
    with pytest.raises(ValueError, match="3 xs against 2 ys"):
        least_squares([1, 2, 3], [1, 2])
