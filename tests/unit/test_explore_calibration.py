"""The exploration's calibration: the line it predicts with, and the fitted line it refused, each fitted once."""

import pytest

from gpu_budget.measure.fit import least_squares
from gpu_budget.search import explore

MiB = 2**20


def counted(monkeypatch):
    """explore's least_squares, counting its calls."""
    calls = []

    def fit(xs, ys):
        calls.append(len(xs))
        return least_squares(xs, ys)

    monkeypatch.setattr(explore, "least_squares", fit)
    return calls


@pytest.mark.parametrize("measured", [
    pytest.param((150, 260, 370), id="rising"),
    pytest.param((300, 300, 300), id="flat"),
    pytest.param((320, 300, 290), id="falling"),
])
def test_the_line_is_fitted_once_per_run_and_reads_as_before(monkeypatch, measured):
    """record() fitted the line twice (line() and refused() each called least_squares), and every prediction fitted
    it again. Now each real run's point fits it once; the line used and the one refused are what they were: a line
    that rises is used, one that does not is refused and the largest offset stands instead."""
    calls = counted(monkeypatch)
    estimates = (100 * MiB, 200 * MiB, 300 * MiB)
    calibration = explore._Calibration()
    for x, y in zip(estimates, measured):
        calibration.add(x, y * MiB)
    fitted = least_squares(estimates, [y * MiB for y in measured])
    del calls[:]
    record = calibration.record()
    predicted = [calibration(x) for x in estimates]
    assert calls == [], f"{len(calls)} fits to report and predict over {len(estimates)} points already fitted"
    rises = fitted[0] > 0
    slope, intercept = fitted if rises else (1.0, max(y * MiB - x for x, y in zip(estimates, measured)))
    assert (record.slope, record.intercept, record.points) == (slope, int(intercept), len(estimates))
    assert (record.refused_slope, record.refused_intercept) == ((None, None) if rises else (fitted[0], int(fitted[1])))
    assert predicted == [int(slope * x + intercept) for x in estimates]


def test_one_run_or_one_estimate_is_an_offset_and_none_is_the_estimate():
    """No line through one point (or points of one estimate): the mean offset, slope 1; no run: the estimate."""
    calibration = explore._Calibration()
    assert (calibration.record().slope, calibration.record().intercept, calibration(5 * MiB)) == (1.0, 0, 5 * MiB)
    calibration.add(100 * MiB, 130 * MiB)
    calibration.add(100 * MiB, None)  # a run that died of memory: no point
    calibration.add(100 * MiB, 150 * MiB)
    record = calibration.record()
    assert (record.slope, record.intercept, record.points, record.refused_slope) == (1.0, 40 * MiB, 2, None)
