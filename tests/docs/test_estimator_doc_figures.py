"""docs/estimator.md's figures are its committed reports', so neither can drift alone.

One test per checker of estimator_checkers.py (the sweep, test_figure_sweep.py, runs the same checkers).
"""

from estimator_checkers import (
    estimator_cuda_rounding,
    estimator_real_prose,
    estimator_savings,
    estimator_speed,
    estimator_summary,
    estimator_tables,
    estimator_validation_prose,
)


def test_the_tables_are_rendered_from_the_committed_json():
    """The validation and CUDA-mode tables are the CLI's own rendering of the committed JSON."""
    estimator_tables()


def test_the_savings_table_is_the_validation_rows():
    """What each fix saves, estimated and measured, from the validation rows."""
    estimator_savings()


def test_the_prose_figures_are_the_validation_rows():
    """Reading the table: the error against the floor, per scenario, and the step increment's."""
    estimator_validation_prose()


def test_the_real_scale_prose_is_the_estimates():
    """The CUDA-mode estimates of the 7B/8B steps, quoted against the write-ups."""
    estimator_real_prose()


def test_the_speed_figures_are_the_committed_runs():
    """The estimator against real tensors (RESULTS.md section 10) and against the whole measured child."""
    estimator_speed()


def test_the_cuda_rounding_is_the_code():
    """CUDA mode's rounding is the estimator's own constant (the caching allocator's minimum block)."""
    estimator_cuda_rounding()


def test_the_summary_is_the_same_reports():
    """The page's summary quotes the same committed estimates and validation rows as its tables."""
    estimator_summary()
