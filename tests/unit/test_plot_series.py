"""A plot says what the verdict said: the growth it judged (its figures, its steps, its projection), and for a
launcher case one line per rank captioned by rank (report/plot_series.py; pixels are plots.py's)."""

import json
from pathlib import Path

import pytest

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry, Spread
from gpu_budget.model.figures import Peaks, PhaseRecord, Step
from gpu_budget.model.result import Failure, Measurement, Result, Verdict
from gpu_budget.report import plot_series
from gpu_budget.units import MiB

ROOT = Path(__file__).resolve().parents[2]
COMMAND = ROOT / "benchmarks" / "results" / "gpu-command-1.report.json"  # an H100 run: steps= and a torchrun case


def _rows() -> dict[str, Result]:
    return {r["nodeid"].rsplit("::", 1)[-1]: Result.from_json(r) for r in json.loads(COMMAND.read_text())["results"]}


def _growing(steps: int = 10, declared: int = 10_000, baseline: Entry | None = None) -> Result:
    """A case whose host RAM grows 2 MiB a step from step 3 on, judged with steps= by the gate's own rule."""
    ram = [300 * MiB + (max(0, s - 3) * 2 * MiB) + (s % 2) * 1024 for s in range(1, steps + 1)]
    phases = {f"train_step_{s}": PhaseRecord(name=f"train_step_{s}", step=s, ram_peak=r, ram_tree_peak=r)
              for s, r in zip(range(1, steps + 1), ram)}
    measured = Measurement(status="ok", peaks=Peaks(ram=max(ram), ram_tree=max(ram)), phases=phases,
                           steps=tuple(Step(step=s, ram=r, ram_tree=r) for s, r in zip(range(1, steps + 1), ram)))
    budget = Budget(ram=4 * 2**30)
    j = judge(measured, budget, baseline, Tolerance(rel=0.005, abs=4 * MiB), ci=False, update=False, steps=declared)
    return Result(nodeid="t.py::test_leak", scenario="leak", scale="tiny", verdict=j.verdict, passed=j.passed,
                  message=j.message, budget=budget, measurement=measured, growth_projection=j.projection.record())


def test_a_judged_growth_is_drawn_with_the_verdicts_figures_steps_and_projection():
    row = _growing()
    judged = plot_series.projection(row, "ram_tree_peak")
    assert judged is not None and judged.grows, row.message
    note = plot_series.growth_note(judged)
    first, last = judged.steps_fitted
    # every figure of the note is the verdict's: the growth per step, the judged steps, the projection
    said = f"grows {plot_series.per_step(judged.slope)} over steps {first}-{last}"
    assert note.startswith(said) and said in row.message, (note, row.message)
    projected = note.split(": ", 1)[1].split(" within")[0].split(" >")[0]
    assert projected.startswith("about ") and projected in row.message, (projected, row.message)
    line = plot_series.growth_line(row, list(row.phases.values()), "ram_tree_peak")
    steps = [s for s in range(first, last + 1)]
    assert line.xs == tuple(s - 1 for s in steps)  # the phases of the judged steps, no others
    assert line.ys[-1] - line.ys[0] == pytest.approx(judged.slope * (last - first))
    assert f"judged growth {plot_series.per_step(judged.slope)}, steps {first}-{last}" in line.label
    assert f"at step {judged.at_step:,}" in line.label


def test_a_growth_judged_in_blocks_is_drawn_naming_its_blocks_as_the_verdict_does():
    """A slow leak over 200 steps is judged in blocks of 16 steps (judge/growth.py): the note and the line say so in
    the verdict's words, and the JSON report keeps the block size."""
    ram = [300 * MiB + s * MiB // 4 for s in range(1, 201)]
    phases = {f"train_step_{s}": PhaseRecord(name=f"train_step_{s}", step=s, ram_peak=r, ram_tree_peak=r)
              for s, r in zip(range(1, 201), ram)}
    measured = Measurement(status="ok", peaks=Peaks(ram=max(ram), ram_tree=max(ram)), phases=phases,
                           steps=tuple(Step(step=s, ram=r, ram_tree=r) for s, r in zip(range(1, 201), ram)))
    j = judge(measured, Budget(ram=2**30), None, Tolerance(rel=0.005, abs=4 * MiB), ci=False, update=False,
              steps=10_000)
    row = Result(nodeid="t.py::test_slow", scenario="slow", scale="tiny", verdict=j.verdict, passed=j.passed,
                 message=j.message, budget=Budget(ram=2**30), measurement=measured,
                 growth_projection=j.projection.record())
    judged = plot_series.projection(Result.from_json(json.loads(json.dumps(row.to_json()))), "ram_tree_peak")
    assert judged.block == 16 and judged.breaks, row.message
    said = f"grows {plot_series.per_step(judged.slope)} over steps 119-199, in blocks of 16 judged steps"
    assert plot_series.growth_note(judged).startswith(said) and said in row.message, row.message
    line = plot_series.growth_line(row, list(row.phases.values()), "ram_tree_peak")
    assert "steps 119-199 in blocks of 16 judged steps" in line.label


def test_a_steady_run_reads_as_its_verdict_says_in_a_committed_report():
    """The report's plugin wrote every growth in MiB: GPU allocated's 20 KiB/step allowance read "0.02 MiB/step"."""
    row = _rows()["script"]  # the Trainer script on the H100, steps= declared
    for field in ("ram_tree_peak", "vram_allocated"):
        judged = plot_series.projection(row, field)
        assert judged is not None and not judged.grows
        note = plot_series.growth_note(judged)
        written = note.replace(plot_series.per_step(judged.allowance), f"{judged.allowance / MiB:.2f} MiB/step")
        assert written in row.message, (field, row.message)
    assert "allowance 20.00 KiB/step" in plot_series.growth_note(plot_series.projection(row, "vram_allocated"))


def test_a_growth_within_its_recorded_runs_allowance_reads_as_its_verdict_says():
    """An entry recorded over 5 runs whose largest growth was 1 MiB/step allows 6 MiB/step: the 2 MiB/step reads
    steady, and the note names the allowance as the row does."""
    peak = 300 * MiB + 14 * MiB
    row = _growing(baseline=Entry(peaks=Peaks(ram=peak, ram_tree=peak), spread=Spread(5, {}, {"ram_tree": MiB})))
    judged = plot_series.projection(row, "ram_tree_peak")
    assert judged.allowance_runs == 5 and not judged.grows, row.message
    note = plot_series.growth_note(judged)
    assert "within its recorded allowance 6.00 MiB/step (6x the largest growth of its 5 recorded runs)" in note
    assert note in row.message, (note, row.message)


def test_without_steps_declared_no_growth_is_drawn_from_the_verdict():
    row = _rows()["ddp-gloo"]
    assert row.growth_projection is None
    assert plot_series.projection(row, "ram_tree_peak") is None
    assert plot_series.growth_line(row, list(row.phases.values()), "ram_tree_peak") is None


def test_a_launcher_case_draws_one_line_per_rank_captioned_by_rank():
    row = _rows()["ddp-gloo"]
    phases = list(row.phases.values())
    lines = plot_series.rank_lines(row, phases, "ram_tree_peak")
    assert [line.label.split(" ")[:2] for line in lines] == [["rank", str(r.rank)] for r in row.ranks]
    worst = max(row.ranks, key=lambda r: r.peaks.gated_ram)
    assert [line.label for line in lines if line.label.endswith("(worst)")] == [f"rank {worst.rank} (worst)"]
    for line, rank in zip(lines, row.ranks):  # each line is its rank's own figures
        assert max(line.ys) == max(p.ram_tree_peak for p in rank.phases.values() if p.ram_tree_peak is not None)
    assert "per rank" in plot_series.RANK_TITLES["ram_tree_peak"]
    assert plot_series.rank_lines(_growing(), phases, "ram_tree_peak") == []  # no ranks: no rank lines


def _died(kind: str, message: str, phases: dict[str, PhaseRecord], peak: int, phase: str | None = None) -> Result:
    """A row whose child died: its closed phases, and the peak seen until it died (the row's RAM tree figure)."""
    measured = Measurement(status="error", peaks=Peaks(ram=peak, ram_tree=peak), phases=phases,
                           error=Failure(kind=kind, message=message, phase=phase))
    return Result(nodeid="t.py::test_died", scenario="died", scale="tiny", verdict=Verdict.ERROR, passed=False,
                  message=f"measured child failed ({kind}): {message}", budget=Budget(ram=100 * MiB), measurement=measured)


def test_a_child_killed_in_a_phase_is_drawn_with_the_peak_it_reached_there():
    """A child SIGKILLed in train_step_1 had its row say "host RAM peak seen so far 211.52 MiB" over a 100 MiB budget,
    and its plot drew load alone, 83.50 MiB, under the budget line: the phase it died in is drawn, at that peak."""
    load = PhaseRecord(name="load", ram_peak=83 * MiB, ram_tree_peak=83 * MiB)
    row = _died("killed", "killed by SIGKILL (the kernel's OOM killer sends SIGKILL); it was in phase 'train_step_1'",
                {"load": load}, 211 * MiB, phase="train_step_1")
    drawn = plot_series.drawn_phases(row)
    assert [p.name for p in drawn] == ["load", "train_step_1 (killed)"]
    assert (drawn[-1].ram_tree_peak, drawn[-1].ram_peak) == (211 * MiB, 211 * MiB)


def test_a_child_timed_out_in_its_first_phase_is_drawn_at_the_peak_seen_so_far():
    """A timed-out child that had closed no phase had no plot at all, where every other row had one."""
    row = _died("timeout", "timed out after 5 s and was killed, with every process it started; it was in phase 'load'",
                {}, 51 * MiB, phase="load")
    assert [(p.name, p.ram_tree_peak) for p in plot_series.drawn_phases(row)] == [("load (timeout)", 51 * MiB)]
    unnamed = _died("exit", "exited with code 3 without a result", {}, 51 * MiB)
    assert [p.name for p in plot_series.drawn_phases(unnamed)] == ["end (exit)"]


def test_the_phase_drawn_is_the_failures_field_never_words_of_its_message():
    """The plot named the last point by the first "it was in phase '...'" in the row's message, a command's stderr
    tail included: a command stopped in phase 'run' that had printed "it was in phase 'eval'" could be drawn as
    "eval (timeout)". The phase is the failure's own field (set where the child was stopped)."""
    said = "timed out after 4 s; no phase had begun; the last lines of its command's stderr:\nit was in phase 'eval'"
    assert [p.name for p in plot_series.drawn_phases(_died("timeout", said, {}, 51 * MiB))] == ["end (timeout)"]
    row = _died("killed", "killed by SIGKILL", {}, 51 * MiB, phase="it's \"odd\"")
    assert [p.name for p in plot_series.drawn_phases(row)] == ["it's \"odd\" (killed)"]


def test_a_failures_phase_goes_through_the_json_report_and_is_left_out_where_none():
    stopped = Failure(kind="timeout", message="timed out", phase="load")
    assert Failure.from_json(stopped.to_json()) == stopped
    assert "phase" not in Failure(kind="exception", message="boom").to_json()  # a row as earlier reports wrote it


def test_a_died_child_whose_phases_hold_its_peak_and_a_finished_one_draw_their_phases_alone():
    load = PhaseRecord(name="load", ram_peak=83 * MiB, ram_tree_peak=83 * MiB)
    row = _died("exception", "the scenario broke", {"load": load}, 83 * MiB)
    assert plot_series.drawn_phases(row) == [load]
    assert plot_series.drawn_phases(_growing()) == list(_growing().phases.values())


def _counted_down(declared: int | None = 10_000) -> Result:
    """20 marks numbered 20 down to 1, host RAM keeping 1.5 MiB a mark: the rule reads them in the order run."""
    numbers = list(range(20, 0, -1))
    ram = [300 * MiB + k * 3 * MiB // 2 for k in range(20)]
    phases = {f"train_step_{n}": PhaseRecord(name=f"train_step_{n}", step=n, ram_peak=r, ram_tree_peak=r)
              for n, r in zip(numbers, ram)}
    measured = Measurement(status="ok", peaks=Peaks(ram=max(ram), ram_tree=max(ram)), phases=phases,
                           steps=tuple(Step(step=n, ram=r, ram_tree=r) for n, r in zip(numbers, ram)),
                           growth={"ram_tree_per_step": 1.5 * MiB})
    budget = Budget(ram=4 * 2**30)
    j = judge(measured, budget, None, Tolerance(rel=0.005, abs=4 * MiB), ci=False, update=False, steps=declared)
    return Result(nodeid="t.py::test_back", scenario="back", scale="tiny", verdict=j.verdict, passed=j.passed,
                  message=j.message, budget=budget, measurement=measured,
                  growth_projection=j.projection.record() if declared else None)


def test_marks_numbered_back_are_drawn_at_their_place_as_the_verdict_reads_them():
    """The verdict judged the 14th-19th marks (numbered 7 down to 2); drawn by number, the line sat over step(14) ..
    step(19), the run's 2nd-7th marks, falling, captioned "steps 14-19", and the note said "over steps 14-19"."""
    row = _counted_down()
    assert "over the 14th-19th marked steps" in row.message, row.message
    line = plot_series.growth_line(row, list(row.phases.values()), "ram_tree_peak")
    assert line.xs == tuple(range(13, 19)) and line.ys == tuple(sorted(line.ys)) and "the 14th-19th marked steps" in line.label
    note = plot_series.growth_note(plot_series.projection(row, "ram_tree_peak"), plot_series.numbered_back(row))
    assert note.startswith("grows 1.50 MiB/step over the 14th-19th marked steps (its step numbers go back: read in the "
                           "order run)"), note
    assert not plot_series.numbered_back(_growing())


def test_a_failure_the_child_reported_is_drawn_at_the_phase_it_closed_not_at_an_end_of_its_own():
    """S4 as reported, capped as on an A100 80GB, ran out of GPU memory in train_step_1 (its row says so), and its plot
    drew one more point after it, "end (oom)", at the row's host RAM peak (load's, 0.46 MiB above it by the parent's
    poll), with the legend "its phase kept no record". The child closed the phase it failed in: its phases are drawn."""
    report = ROOT / "benchmarks" / "results" / "gpu-cards-s4-1.report.json"
    row = next(Result.from_json(r) for r in json.loads(report.read_text())["results"]
               if r["nodeid"].endswith("test_as_reported::as-reported"))
    assert row.error.kind == "oom" and "in phase train_step_1" in row.message
    assert row.peaks.ram_tree > max(p.ram_tree_peak for p in row.phases.values())  # the poll's, between two phases
    assert [p.name for p in plot_series.drawn_phases(row)] == list(row.phases)
