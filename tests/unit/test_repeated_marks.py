"""Phases and steps a run marks more than once (measure/summary.py, model/figures.steps_of): an evaluation each epoch
keeps each of its phases, and a loop that marks step(global_step) at each micro-batch has one step per number.

Before, phases were keyed by name (the last 'eval' replaced the first: the row's 231 MiB peak was in none of its
phases), and each micro-batch was a step (48 of them for 12 optimizer steps): a 2 MiB/step leak read 0.50
MiB/step, within the clean allowance."""

from gpu_budget.measure.summary import summarize
from gpu_budget.model.figures import PhaseRecord

MiB = 2**20


def test_a_phase_met_again_is_kept_under_a_numbered_name():
    phases = [PhaseRecord("load", ram_peak=64 * MiB), PhaseRecord("eval", ram_peak=200 * MiB),
              PhaseRecord("eval", ram_peak=10 * MiB), PhaseRecord("eval", ram_peak=12 * MiB)]
    summary = summarize(phases, cuda=False)
    assert [p.name for p in summary.phases] == ["load", "eval", "eval (2)", "eval (3)"]
    assert max(p.ram_peak for p in summary.phases) == summary.peaks.ram == 200 * MiB


def test_micro_batches_marked_with_one_step_number_are_one_step():
    phases, kept = [PhaseRecord("load", ram_peak=64 * MiB)], 0
    for step in range(1, 13):
        for _ in range(4):
            kept += MiB // 2  # 2 MiB kept per optimizer step
            phases.append(PhaseRecord(f"train_step_{step}", step=step, ram_peak=64 * MiB + kept))
    summary = summarize(phases, cuda=False)
    assert [s.step for s in summary.steps] == list(range(1, 13))
    assert summary.steps[0].ram == 66 * MiB  # the most its four micro-batches reached
    assert summary.growth["ram_per_step"] == 2 * MiB


def test_a_step_number_met_again_later_is_another_step():
    """Numbers that restart (a loop counting per epoch) are not merged: only marks in a row are one step."""
    phases = [PhaseRecord(f"train_step_{k}", step=k, ram_peak=(100 + i) * MiB) for i, k in enumerate([1, 2, 3, 1, 2, 3])]
    assert [s.step for s in summarize(phases, cuda=False).steps] == [1, 2, 3, 1, 2, 3]


def test_a_phase_named_as_a_numbered_one_keeps_both():
    """A runner's own phase named 'eval (2)' after two evaluations took the second's name: keyed by name, it replaced
    that evaluation, whose 300 MiB peak was then in none of the row's phases."""
    phases = [PhaseRecord("eval", ram_peak=10 * MiB), PhaseRecord("eval", ram_peak=300 * MiB),
              PhaseRecord("eval (2)", ram_peak=20 * MiB), PhaseRecord("after eval", ram_peak=30 * MiB),
              PhaseRecord("after eval", ram_peak=40 * MiB)]
    summary = summarize(phases, cuda=False)
    names = [p.name for p in summary.phases]
    assert names == ["eval", "eval (2)", "eval (2) (2)", "after eval", "after eval (2)"], names
    assert max(p.ram_peak for p in {p.name: p for p in summary.phases}.values()) == summary.peaks.ram == 300 * MiB


def test_the_run_after_a_block_met_again_is_named_after_that_block():
    """The run after a block is kept only where it passed the block (gaps.GAP_NOISE): numbered by its own count, the
    one after the third evaluation read 'after eval (2)' where the first's was not kept, and was compared with the
    baseline's 'after eval (2)', the second's."""
    phases = [PhaseRecord("eval", ram_peak=10 * MiB), PhaseRecord("eval", ram_peak=10 * MiB),
              PhaseRecord("after eval", ram_peak=20 * MiB), PhaseRecord("eval", ram_peak=10 * MiB),
              PhaseRecord("after eval", ram_peak=30 * MiB)]
    names = [p.name for p in summarize(phases, cuda=False).phases]
    assert names == ["eval", "eval (2)", "after eval (2)", "eval (3)", "after eval (3)"], names
