"""README's figures, and those of the docs/ pages its sections moved to, come from committed reports.

One test per checker of readme_checkers.py (the sweep, test_figure_sweep.py, runs the same checkers).
"""

from readme_checkers import (
    measuring_xdist_shutdown,
    readme_allocator,
    readme_benchmarks_isolation,
    readme_card_sizes,
    readme_checkpoints,
    readme_command_tree,
    readme_isolation_step,
    readme_nvml_interval,
    readme_overhead,
    readme_plot,
    readme_plugin_test,
    readme_process_tree,
    readme_real_scale_run,
    readme_real_scale_spreads,
    readme_remediation_example,
    readme_remediation_table,
    readme_setups,
    readme_spikes,
    readme_suite_time,
    readme_terminal_table,
    readme_tiny_tolerance,
)


def test_the_quick_start_table_is_the_committed_tiny_run():
    """The example terminal output is what the gate prints for rows of the committed tiny run, not a typed copy."""
    readme_terminal_table()


def test_the_real_scale_run_is_the_suite_report():
    """S1's real peak, the real suite's minutes per scenario and S5's search come from the suite benchmark's reports."""
    readme_real_scale_run()


def test_the_cards_in_gib_are_the_units_conversion():
    """The write-ups' cards, read as GB = 10^9 bytes, in GiB as gpu_budget.units converts them."""
    readme_card_sizes()


def test_the_remediation_table_is_the_committed_reports():
    """Every cell of the remediation table, the cases' knobs included, is the committed remediation report's."""
    readme_remediation_table()


def test_the_remediation_example_is_the_committed_search():
    """The printed search in docs/fixes.md is rendered from the committed report's rows, as the gate prints it."""
    readme_remediation_example()


def test_the_isolation_step_is_the_isolation_report():
    """How it measures, 1.: the per-case cost and the forkserver's one-time start, as RESULTS.md section 3 states them."""
    readme_isolation_step()


def test_the_process_tree_paragraph_is_the_fidelity_report():
    """How it measures, 3.: the over-count of summed VmHWM and the planted worker spikes (RESULTS.md section 1b)."""
    readme_process_tree()


def test_the_command_section_quotes_the_trees_poll_interval():
    """Gate your training script: the window the tree is read in is the ProcessTree's own interval."""
    readme_command_tree()


def test_the_nvml_interval_is_the_code():
    """How it measures, 4.: NVML's sampling interval is the sampler's own constant."""
    readme_nvml_interval()


def test_xdist_s_shutdown_waits_are_the_installed_packages():
    """How it measures, 2.: what a worker a signal never reached waits for, execnet's and xdist's own constants."""
    measuring_xdist_shutdown()


def test_the_tiny_tolerance_is_the_repeatability_and_detection_reports():
    """The default tolerance, the spread table under it and the detection counts: RESULTS.md sections 4 and 5."""
    readme_tiny_tolerance()


def test_the_plugin_test_plants_what_the_readme_says():
    """The planted regression of tests/integration/test_plugin.py, as docs/baselines.md quotes it, is the test's own."""
    readme_plugin_test()


def test_the_real_scale_spreads_are_the_repeatability_report():
    """The real-scale spreads and the real default tolerance they set (RESULTS.md section 4, "Real scale")."""
    readme_real_scale_spreads()


def test_the_allocator_paragraph_is_the_repeatability_report():
    """Why peaks repeat: system against steady allocator over fresh sessions (RESULTS.md section 4)."""
    readme_allocator()


def test_the_setups_figures_are_the_setups_report():
    """Kernels, import floor, tensor bytes and planted regressions across emulated setups (RESULTS.md section 7)."""
    readme_setups()


def test_the_spike_figures_are_the_fidelity_report():
    """Benchmarks, Spikes: the planted design, the meter's error and the other tools' misses (RESULTS.md section 1)."""
    readme_spikes()


def test_the_overhead_figures_are_the_overhead_report():
    """Benchmarks, Overhead: every tool's step-time ratio at both scales (RESULTS.md section 2)."""
    readme_overhead()


def test_the_isolation_bullet_is_the_isolation_report():
    """Benchmarks, Isolation: both cases and the forkserver's one-time start, as RESULTS.md's headline has them."""
    readme_benchmarks_isolation()


def test_the_suite_time_is_the_suite_report():
    """Benchmarks, Suite time: both scales, as RESULTS.md section 6 sums them."""
    readme_suite_time()


def test_the_checkpoint_sizes_are_the_build_report():
    """The prepared 7B/8B checkpoints' sizes, extrapolated by the checkpoint benchmark (RESULTS.md section 9)."""
    readme_checkpoints()


def test_the_plot_caption_is_the_committed_row():
    """The example plot is drawn from S3's row of the committed tiny run; its caption's budget and step are that row's."""
    readme_plot()
