"""docs/*.md figures (besides docs/estimator.md: test_estimator_doc_figures.py) come from committed reports.

One test per checker of doc_checkers.py (the sweep, test_figure_sweep.py, runs the same checkers).
"""

from doc_checkers import (
    cards_page,
    declaring_command_noise,
    gpu_kit_on_cpu,
    gpu_validation_limits,
    process_tree_exit_reports,
    process_tree_measured,
    process_tree_mechanics,
    step_summary_example,
)


def test_the_step_summary_example_is_the_committed_tiny_run():
    """The example step summary is the gate's markdown for S3's rows of the committed tiny run, not a typed copy."""
    step_summary_example()


def test_the_kit_paragraph_is_the_kit_report():
    """The GPU kit tried on the CPU: floor shift, no regression, what improved and what was lost, from its report."""
    gpu_kit_on_cpu()


def test_the_time_limits_are_the_script():
    """Each part's time limit and the skip of run 2 are benchmarks/gpu_validation.sh's own defaults."""
    gpu_validation_limits()


def test_the_mechanics_are_the_plugins_defaults():
    """The poll interval and when shared pages are read again, as tree.py sets them."""
    process_tree_mechanics()


def test_the_exit_report_limitation_is_what_the_runs_show():
    process_tree_exit_reports()


def test_the_measured_figures_are_the_committed_runs():
    """docs/process-tree.md's measured figures: RESULTS.md sections 1c and 1b, from their JSON."""
    process_tree_measured()


def test_the_command_noise_paragraph_is_the_committed_run():
    declaring_command_noise()


def test_each_card_figure_is_one_its_threads_print():
    """docs/cards.md: the capacity is model/card.py's, and every figure of a row is one a named thread prints."""
    cards_page()
