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


def test_runs_of_one_estimate_are_never_predicted_below_what_they_measured():
    """No line through points of one estimate (a knob the estimate does not read, dataloader workers, set apart two
    runs that measured 130 and 150 MiB): their mean offset stood, predicting 140 MiB where a run measured 150, under
    a budget of 145 MiB within it. The largest offset stands, as where a line does not rise. No run: the estimate."""
    calibration = explore._Calibration()
    assert (calibration.record().slope, calibration.record().intercept, calibration(5 * MiB)) == (1.0, 0, 5 * MiB)
    runs = (130 * MiB, 150 * MiB)
    calibration.add(100 * MiB, runs[0])
    calibration.add(100 * MiB, None)  # a run that died of memory: no point
    calibration.add(100 * MiB, runs[1])
    record = calibration.record()
    assert (record.slope, record.points, record.refused_slope) == (1.0, 2, None)
    assert calibration(100 * MiB) >= max(runs), f"predicted {calibration(100 * MiB) / MiB:g} MiB"
