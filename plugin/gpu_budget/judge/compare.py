"""Turn one Measurement into a verdict against its budget and its baseline.

Gated metrics: the host RAM peak, the live CPU tensor bytes where measured,
and the *allocated* GPU peak. Reserved and NVML device memory are reported but
not gated: they depend on the caching allocator's history and are too noisy to
fail a merge on.

Host RAM is the process tree's peak (`ram_tree`: the measured process and its
DataLoader workers and subprocesses); the main process's (`ram`) is reported
beside it. A baseline recorded before the tree was read holds `ram` only: it is
compared on that, main process against main process, until it is re-recorded.

Against a baseline recorded under another setup (fingerprint.py says which
fields differ and what each is shown to move), the host RAM peak is compared
after taking off the difference of the two import floors, at the test's
tolerance (the setups measured so far stay within it: benchmarks/RESULTS.md,
section 7), and not at all when the allocator, glibc or AVX-512 kernels on one
side only differ; the exact metrics are compared as usual.

An entry recorded over several fresh runs (--gpu-budget-record-runs=N) holds
their spread per gated metric (model/entry.py Spread). A figure is then allowed the
larger of the test's tolerance and SPREAD_MULTIPLE times its stored spread
(`Allowance`): the rule the default tolerances rest on (at least 6x the
run-to-run spread: benchmarks/RESULTS.md, section 4), applied to the case's own
noise, so a case whose peak moves with scheduling is judged against it. Where
that allowance cannot catch a +5 % change the row says so (a warning, not a
failure). An entry without a spread is judged exactly as before.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from gpu_budget import oom
from gpu_budget.judge import growth, reached
from gpu_budget.measure.ranks import imbalance, largest, smallest, worst
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import SPREAD_MULTIPLE, Entry, Spread
from gpu_budget.model.figures import Peaks, PhaseRecord, RankFigures
from gpu_budget.model.metric import GATED
from gpu_budget.model.result import RE_RECORDED, RECORDED, UPDATED, WITHIN, Failure, Measurement, Verdict, param_changes
from gpu_budget.model.room import Room
from gpu_budget.model.setup import FOREIGN, Setup
from gpu_budget.units import format_size

MUST_CATCH = 0.05  # a stored spread whose allowance lets +5 % pass is said in the row


@dataclass(frozen=True)
class Allowance:
    """What one gated figure may move from its baseline: the test's tolerance, widened to SPREAD_MULTIPLE times the
    spread the entry stored over its recorded runs where that is wider (spread None: the tolerance alone)."""

    tolerance: Tolerance
    spread: int | None = None
    runs: int = 1

    @classmethod
    def of(cls, tolerance: Tolerance, spread: Spread | None, metric: str) -> Allowance:
        each = spread.get(metric) if spread is not None else None
        return cls(tolerance, each, spread.runs if spread is not None else 1)

    @property
    def by_spread(self) -> int:
        return SPREAD_MULTIPLE * self.spread if self.spread is not None else 0

    def widened(self, then: int) -> bool:
        """Whether the spread, not the tolerance, sets the allowance at this baseline figure."""
        return self.by_spread > self.tolerance.limit(then) - then

    def limit(self, then: int) -> float:
        return max(self.tolerance.limit(then), then + self.by_spread)

    def floor(self, then: int) -> float:
        return min(self.tolerance.floor(then), then - self.by_spread)

    def said(self, then: int, sign: str) -> str:
        """The allowance in a row's words: `+0.5% +4.00 MiB`, or the spread's where it is wider."""
        if self.widened(then):
            return (f"{sign}{format_size(self.by_spread)} ({SPREAD_MULTIPLE}x its spread {format_size(self.spread)} "
                    f"over {self.runs} recorded runs)")
        return f"{sign}{self.tolerance.rel:.1%} {sign}{format_size(self.tolerance.abs)}"

    def too_wide(self, metric: str, then: int) -> str | None:
        """The row's warning where the stored spread lets a +5 % change pass as noise, else None."""
        if not then or not self.widened(then) or self.limit(then) < then * (1 + MUST_CATCH):
            return None
        return (f"warning: {metric}'s stored spread {format_size(self.spread)} over {self.runs} runs is too wide to "
                f"catch +{MUST_CATCH:.0%}: it allows {format_size(self.by_spread)} ({self.by_spread / then:.1%} of the "
                "baseline), so a change under that reads as noise")


def params_note(now: Mapping | None, then: Mapping) -> str | None:
    """The params this run changes from the baseline entry's, or None (an entry that stored none says nothing).

    Compared all the same: a params change moves a peak as a code change does, and a
    regression it brings is one the gate is for; the row names it so the reader knows why.
    """
    if now is None or not then:
        return None
    changed = [f"{k} {a} -> {b}" for k, a, b in param_changes(then, now)]
    return "params differ from the baseline's: " + ", ".join(changed) if changed else None


def scenario_note(now: str | None, then: str | None) -> str | None:
    """The scenario this run measures where its entry was recorded for another (a test switched to another Scenario):
    compared all the same, as a params change is, and named so the reader knows whose figures they are."""
    if now is None or then is None or now == then:
        return None
    return f"scenario differs from the baseline's: {then!r} -> {now!r}"


def command_note(now: Sequence[str] | None, then: Sequence[str] | None) -> str | None:
    """The arguments a command case changed from its entry's (`--batch 16` raised to `--batch 64` in the test), or
    None (a function case, or an entry that stored none): compared all the same, as a params change is."""
    if now is None or then is None or tuple(now) == tuple(then):
        return None
    if len(now) != len(then):
        return f"command differs from the baseline's: {shlex.join(then)!r} -> {shlex.join(now)!r}"
    changed = [f"{_argument(then, i)}: {a!r} -> {b!r}" for i, (a, b) in enumerate(zip(then, now, strict=True)) if a != b]
    return "command differs from the baseline's: " + ", ".join(changed)


def _argument(argv: Sequence[str], i: int) -> str:
    """Which argument of a command: the program, or the i-th after it with the one before it (the flag it gives)."""
    return "the program" if i == 0 else f"argument {i} (after {argv[i - 1]!r})"


@dataclass
class Judgement:
    verdict: Verdict
    passed: bool
    message: str
    change: dict[str, float | None] = field(default_factory=dict)  # metric -> relative change vs baseline
    write_baseline: bool = False
    projection: growth.Check | None = None  # the growth projected to the declared run length (steps=), where declared


def budget_breaches(peaks: Peaks, budget: Budget) -> list[str]:
    out = []
    ram = peaks.gated_ram
    if budget.ram is not None and ram is not None and ram > budget.ram:
        whose = f" (process tree; main process {format_size(peaks.ram)})" if peaks.ram_tree is not None else ""
        out.append(f"host RAM peak {format_size(ram)}{whose} > budget {format_size(budget.ram)}")
    vram = peaks.vram_allocated
    if budget.vram is not None and vram is not None and vram > budget.vram:
        out.append(f"GPU allocated peak {format_size(vram)} > budget {format_size(budget.vram)}")
    return out


def rank_breaches(measurement: Measurement, budget: Budget) -> list[str]:
    """The budget broken, by each rank of a launcher case (a budget applies to each rank), else by the case."""
    if not measurement.ranks:
        return budget_breaches(measurement.peaks, budget)
    out = [f"rank {r.rank}: {breach}" for r in measurement.ranks for breach in budget_breaches(r.peaks, budget)]
    ratio = imbalance(list(measurement.ranks))
    if budget.imbalance is not None and ratio is not None and ratio > budget.imbalance:
        top, low = largest(list(measurement.ranks)), smallest(list(measurement.ranks))
        out.append(f"rank imbalance of RAM tree {ratio:.3f}x (rank {top.rank} {format_size(top.peaks.ram_tree)} / rank "
                   f"{low.rank} {format_size(low.peaks.ram_tree)}) > budget {budget.imbalance:.3f}x")
    return out


ALONE = "one process, no launcher's RANK"  # a run of no launcher, as a world change names it


def world_setup(setup: Setup, measurement: Measurement, baseline: Entry | None) -> Setup:
    """The setup with the launch's world where it differs from the baseline's though the fingerprint's declared
    ranks do not (Scenario(ranks=) left out): another world reshapes each rank's share, and a rank the baseline lacks
    has nothing to be compared with, so the host RAM is not compared and an update records the new world. A run
    without a launcher (no process with a RANK) against a baseline of ranks, or the reverse, is another world too: a
    single process's peak is not a rank's."""
    if baseline is None or not measurement.ok or "ranks" in setup.diffs or \
            {r.rank for r in measurement.ranks} == set(baseline.ranks):
        return setup
    world = (len(baseline.ranks), len(measurement.ranks))
    if not measurement.ranks:  # the same command run without its launcher: one process against the worst rank's
        said = f"ranks {world[0]} -> none ({ALONE}; no Scenario(ranks=))"
    else:  # a launch against a baseline of one process, or of another world
        said = f"ranks {world[0] or f'none ({ALONE})'} -> {world[1]} (the launch's: no Scenario(ranks=))"
    return replace(setup, diffs={**setup.diffs, "ranks": world}, policy=FOREIGN, described=(*setup.described, said))


def per_rank(measurement: Measurement, baseline: Entry, tolerance: Tolerance, setup: Setup,
             notes: list[str]) -> tuple[dict[str, float | None], list[str], list[str]]:
    """Each rank against its own baseline, so a regression of a rank that is not the worst is caught, and named;
    the change per metric is the largest any rank shows. A stored spread widens each rank's allowance: the rank's own
    runs' (Spread.of_rank), else the row's."""
    change: dict[str, float | None] = {}
    regressed, improved = [], []
    measured = {r.rank: r for r in measurement.ranks}
    if set(measured) != set(baseline.ranks):
        notes.append(f"ranks measured {', '.join(map(str, sorted(measured)))}; the baseline holds "
                     f"{', '.join(map(str, sorted(baseline.ranks)))}: {_compared(measured, baseline, tolerance, setup)}")
    for rank in sorted(set(measured) & set(baseline.ranks)):
        seen: list[str] = []
        rank_change, up, down = against_baseline(measured[rank].peaks, baseline.ranks[rank], tolerance, setup, seen,
                                                 measured[rank].phases, baseline.rank_phases.get(rank),
                                                 spread=baseline.spread.of_rank(rank) if baseline.spread is not None else None)
        notes += [n for n in (f"rank {rank}: {s}" for s in seen) if n not in notes]  # its figures: named
        regressed += [f"rank {rank}: {r}" for r in up]
        improved += [f"rank {rank}: {i}" for i in down]
        for metric, value in rank_change.items():
            if value is not None and (change.get(metric) is None or value > change[metric]):
                change[metric] = value
    return change, regressed, improved


def _compared(measured: Mapping[int, RankFigures], baseline: Entry, tolerance: Tolerance, setup: Setup) -> str:
    """What of a launch's ranks its baseline of other ranks compares: host RAM is not compared across another world
    (a foreign setup), so only GPU figures are, and a CPU launch has none: no rank is compared, said as such."""
    if setup.ram_tolerance(tolerance) is not None:
        return "only the ranks in both are compared"
    both = set(measured) & set(baseline.ranks)
    if setup.vram_tolerance(tolerance) is not None and any(
            measured[k].peaks.vram_allocated is not None and baseline.ranks[k].vram_allocated is not None for k in both):
        return "only the ranks in both are compared, on their GPU figures"
    return ("no rank is compared (host RAM is not compared across these setups, and the ranks in both have no GPU "
            "figure)")


def _seen(peaks: Peaks) -> str:
    seen = f"host RAM peak seen so far {format_size(peaks.gated_ram)}"
    if peaks.vram_allocated is not None:
        seen += f", GPU allocated {format_size(peaks.vram_allocated)}"
    if peaks.vram_tree is not None:  # a command's NVML sum, streamed of a phase its processes never reported
        seen += f", GPU tree (NVML) {format_size(peaks.vram_tree)}"
    return seen


def _died(measurement: Measurement, budget: Budget, room: Room) -> Judgement | None:
    """The verdict of a child that died of memory under expect="over-budget", or None (its death is an error).

    A child killed by SIGKILL (the kernel's OOM killer) reproduces the failure
    when the peak seen before the kill, a lower bound of its peak, already broke
    the budget; one killed by another signal (SIGSEGV, SIGABRT) crashed, and
    reproduces nothing. An out-of-memory error is the reported failure itself
    only where the memory it ran out of (oom.memory_of) could hold that memory's
    budget: a death in host RAM (or a cgroup) smaller than the RAM budget, or
    under a card= cap below the VRAM budget, shows only that the memory is small
    (`_too_small`), and one in a memory no budget bounds reproduces nothing.
    """
    error, peaks = measurement.error, measurement.peaks
    breaches = budget_breaches(peaks, budget)
    if error.kind == "killed":
        return (Judgement(Verdict.OVER_BUDGET, True, f"over budget as expected: {'; '.join(breaches)} before the child "
                          f"was {error.message}") if measurement.died_of_memory and breaches else None)
    if error.kind != "oom":
        return None
    host = oom.memory_of(error.type, error.message) == "host"
    limit, held = (budget.ram, room.ram) if host else (budget.vram, room.vram)
    where = "host RAM" if host else "GPU memory"
    if limit is None and not breaches:
        return Judgement(Verdict.ERROR, False, f"measured child failed (oom) in {where}, which no budget of this case "
                                               f"bounds ({error.message[:300]}): it reproduces no {'RAM' if host else 'VRAM'} "
                                               f"budget; {_seen(peaks)}")
    if limit is not None and held is not None and held < limit and not breaches:
        return _too_small(error, peaks, room, limit, host)
    return Judgement(Verdict.OVER_BUDGET, True, f"over budget as expected: the child died of out-of-memory "
                                                f"({error.message[:300]}), the reported failure itself; {_seen(peaks)}")


def _too_small(error: Failure, peaks: Peaks, room: Room, limit: int, host: bool) -> Judgement:
    """An out-of-memory death in a memory smaller than its budget: no reproduction. A skip where another machine
    would hold the budget (a host with more RAM, a bigger GPU), as a VRAM budget above the GPU is skipped
    (can_run.py); an error under a card= cap, which every host applies."""
    died = f"the child died of out-of-memory ({error.message[:300]}), but"
    if host:
        return Judgement(Verdict.SKIPPED, True, f"{died} {room.ram_words()} is below the RAM budget {format_size(limit)}: "
                                                "the death shows only that this host is smaller than the budget; it is "
                                                f"measured on a host with more memory; {_seen(peaks)}")
    if room.card is not None:
        return Judgement(Verdict.ERROR, False, f"{died} {room.vram_words()}, below the VRAM budget {format_size(limit)}: "
                                               "the death shows only that the card is smaller than the budget, on every "
                                               "host; lower vram= to the card's memory, or name a card that holds the "
                                               f"budget; {_seen(peaks)}")
    return Judgement(Verdict.SKIPPED, True, f"{died} {room.vram_words()} is below the VRAM budget {format_size(limit)}: "
                                            f"it is measured on a card with more memory; {_seen(peaks)}")


def judge(measurement: Measurement, budget: Budget, baseline: Entry | None, tolerance: Tolerance, *,
          ci: bool, update: bool, expect: str | None = None, setup: Setup | None = None,
          params: Mapping | None = None, steps: int | None = None, scenario: str | None = None,
          room: Room | None = None, command: Sequence[str] | None = None) -> Judgement:
    """The verdict for one measured case.

    expect="over-budget": the case reproduces a reported failure, so breaking
    the budget is the passing outcome and staying within it fails (the
    reproduction was lost); a child that died of out-of-memory reproduces it
    too where the memory it ran out of could hold the budget (`room`: the memory the child could hold; _died).
    Baseline regressions fail either way. `setup`: how this run's setup
    differs from the baseline's (module docstring); `params`: the case's params at
    this scale, named where they differ from the entry's (params_note), as is its
    `scenario` name (scenario_note) and a command case's arguments (`command`, command_note). `steps`:
    the real run's declared length, to which growth.py projects the peak's growth.
    """
    setup = setup or Setup()
    peaks = measurement.peaks
    if not measurement.ok:
        error = measurement.error
        died = _died(measurement, budget, room or Room()) if expect == "over-budget" else None
        if died is not None:
            return died
        if "\n" in error.message:  # it ends with a stream's last lines: the figure goes before them, not after
            return Judgement(Verdict.ERROR, False, f"measured child failed ({error.kind}), {_seen(peaks)}: "
                                                   f"{error.message}")
        return Judgement(Verdict.ERROR, False, f"measured child failed ({error.kind}): {error.message}; {_seen(peaks)}")

    grown = projected(measurement, budget, steps, baseline.spread if baseline is not None else None)
    verdict = _judge(measurement, budget, baseline, tolerance, grown, ci=ci, update=update, expect=expect, setup=setup,
                     params=params, scenario=scenario, command=command)
    verdict.projection = grown if steps is not None else None
    return verdict


def projected(measurement: Measurement, budget: Budget, steps: int | None, recorded: Spread | None) -> growth.Check:
    """The run's growth projected to `steps` (a projection past the budget is a breach), within the allowance the
    `recorded` runs widen it to; its problem where it, or a rank's, cannot be projected (short_rank), or where a rank's
    only breach is a climb too short to tell from a buffer (rank_undecided, naming it). A launch's warnings (an
    allowance widened past the budget, tops too few to read a leak under) are each rank's, named (Check.notes), not
    the row's."""
    grown = growth.check(measurement.steps, measurement.peaks, budget, steps, recorded=_row_spread(measurement, recorded),
                         unmarked=growth.unmarked_ranks(measurement.ranks))
    if not measurement.ranks:
        return grown
    checks = growth.rank_checks(measurement.ranks, budget, steps, recorded)  # once: what all_breaches reads too
    short = growth.short_rank(measurement.ranks, steps)  # before the row's: the row's steps are one rank's, maybe it
    if short or (grown.problem and not grown.projections):  # else the run too short for every rank: the row's words
        return replace(grown, problem=short or grown.problem, ranks=checks)
    return replace(grown, problem=growth.rank_undecided(checks), ranks=checks)  # each rank named


def _row_spread(measurement: Measurement, recorded: Spread | None) -> Spread | None:
    """The spread the row's growth is held to: under a launcher its rank's own runs' (Spread.of_rank), the worst rank
    now, whose steps the row holds (measure/summary.py) and which need not be the worst the runs recorded, as that
    rank's own check is; else the entry's."""
    return recorded.of_rank(worst(list(measurement.ranks)).rank) if recorded is not None and measurement.ranks else recorded


def all_breaches(measurement: Measurement, budget: Budget, grown: growth.Check, certain: bool = False) -> list[str]:
    """The budget broken: by each rank's peak (or the case's) and imbalance, and by the growth `grown` projects, each
    rank's under a launcher (a budget applies to each rank). What judge() fails a case on, and the search a set.
    certain: leave out growth too short to tell from a buffer (growth.Check.certain), which alone is no verdict."""
    if measurement.ranks:
        return rank_breaches(measurement, budget) + growth.rank_breaches(grown.ranks or (), certain)
    return rank_breaches(measurement, budget) + (grown.certain if certain else grown.breaches)


def _marks_elsewhere(measurement: Measurement) -> str:
    """Why a command measured no steps though its script marked them: the marks came from another process than the
    command's own (a shell or launcher running python as its child), and only the command's own process marks. Not
    under a launcher whose ranks ran: there the other ranks' marks are ignored by design, and rank 0 marks."""
    if measurement.ranks:
        return ""
    ignored = measurement.info.get("ignored_marks")
    if not isinstance(ignored, int) or isinstance(ignored, bool) or ignored <= 0:
        return ""
    return (f". {ignored} phase mark(s) arrived from a descendant of the command and were ignored: only the "
            "command's own process (rank 0's under a launcher) marks phases and steps, so run the script as the "
            "command itself ([sys.executable, \"train.py\"]), not through a shell or wrapper")


def _judge(measurement: Measurement, budget: Budget, baseline: Entry | None, tolerance: Tolerance,
           grown: growth.Check, *, ci: bool, update: bool, expect: str | None, setup: Setup,
           params: Mapping | None, scenario: str | None = None, command: Sequence[str] | None = None) -> Judgement:
    """judge()'s verdict for a run that finished, its growth already projected (`grown`)."""
    setup = world_setup(setup, measurement, baseline)
    breaches = _breaches(measurement, budget, grown)
    if breaches is None:
        return Judgement(Verdict.ERROR, False, grown.problem + _marks_elsewhere(measurement))
    notes: list[str] = list(measurement.info.get("notes") or ())  # what the measuring child says of the run
    notes += grown.notes
    if expect == "over-budget":
        if not breaches:
            return Judgement(Verdict.PASS, False, "expected this configuration to break its budget (it reproduces a "
                                            "reported failure), but it stayed within it: the reproduction is lost",
                             _changes(measurement, baseline, tolerance, setup) if baseline is not None else {})
        notes.append("over budget as expected: " + "; ".join(breaches))
    elif breaches:  # failed on its budget; its change against a stored baseline is still shown
        return Judgement(Verdict.OVER_BUDGET, False, "; ".join(breaches),
                         _changes(measurement, baseline, tolerance, setup) if baseline is not None else {})

    if baseline is None:
        if ci and not update:
            return Judgement(Verdict.NO_BASELINE, False, "no baseline recorded for this test on this hardware; "
                                                   "record one with --gpu-budget-update and commit it")
        verdict = Verdict.OVER_BUDGET if expect == "over-budget" else Verdict.NO_BASELINE
        return Judgement(verdict, True, "; ".join(notes + [RECORDED]), write_baseline=True)

    declared = _declared(baseline, scenario, params, command)
    notes += declared + [n for n in (setup.note(),) if n]
    if short := _ranks_short(measurement, baseline):  # the row's phases are one rank's: each is held to its own
        return _short(measurement, baseline, tolerance, setup, [], notes, update=update, expect=expect, said=short)
    if missed := (reached.unreached_ranked(measurement.phases, list(baseline.phases), _last_marked(measurement))
                  if measurement.ranks else reached.unreached(measurement.phases, baseline.phases)):
        return _short(measurement, baseline, tolerance, setup, missed, notes, update=update, expect=expect)
    if measurement.ranks and baseline.ranks:
        change, regressed, improved = per_rank(measurement, baseline, tolerance, setup, notes)
    else:
        change, regressed, improved = against_baseline(measurement.peaks, baseline.peaks, tolerance, setup, notes,
                                                       measurement.phases, baseline.phases, spread=baseline.spread)
    if regressed:  # with an update, the entry of the run as it is now
        return Judgement(Verdict.REGRESSION, update, "; ".join(notes + regressed + [UPDATED] * update), change, update)
    if improved:
        action = UPDATED if update else "update the baseline (--gpu-budget-update)"
        return Judgement(Verdict.IMPROVED, True, "; ".join(notes + improved + [action]), change, update)
    verdict = Verdict.OVER_BUDGET if expect == "over-budget" else Verdict.PASS
    if update and (setup.diffs or setup.quiet):  # recorded on another setup: the entry is this setup's from now on
        return Judgement(verdict, True, "; ".join(notes + [RE_RECORDED]), change, True)
    if update and declared:  # recorded for other params or another scenario: the entry describes the test as it is now
        return Judgement(verdict, True, "; ".join(notes + [UPDATED]), change, True)
    return Judgement(verdict, True, "; ".join(notes) or WITHIN, change)


def _breaches(measurement: Measurement, budget: Budget, grown: growth.Check) -> list[str] | None:
    """What judge() fails a finished case on (all_breaches); where its growth went untold (grown.problem), the peaks'
    and imbalance's breaches with why beside them, or None where none is broken: an error, no verdict."""
    if not grown.problem:
        return all_breaches(measurement, budget, grown)
    over = rank_breaches(measurement, budget)  # a peak past the budget breaks it whatever the growth
    return [*over, grown.problem + _marks_elsewhere(measurement)] if over else None


def _short(measurement: Measurement, baseline: Entry, tolerance: Tolerance, setup: Setup, missed: list[str],
           notes: list[str], *, update: bool, expect: str | None, said: tuple[str, str] | None = None) -> Judgement:
    """A run that did not reach every phase its baseline measured: an error (judge/reached.py), or with an update
    the entry of the run as it is now. said: the error's words and the update's, where a rank's (_ranks_short)."""
    change = _changes(measurement, baseline, tolerance, setup)
    if not update:
        return Judgement(Verdict.ERROR, False, "; ".join(
            notes + [said[0] if said else reached.message(missed, list(measurement.phases), len(baseline.phases))]),
            change)
    verdict = Verdict.OVER_BUDGET if expect == "over-budget" else Verdict.PASS
    short = said[1] if said else f"the run did not reach {len(missed)} of the {len(baseline.phases)} phases its " \
                                 f"baseline measured ({reached.said(missed)})"
    return Judgement(verdict, True, "; ".join(notes + [short, UPDATED]), change, True)


def _ranks_short(measurement: Measurement, baseline: Entry) -> tuple[str, str] | None:
    """Where a launch's rank did not reach every phase its own baseline phases hold (a rank that ended early, with no
    error: its peaks cover less of the run, and read lower, "improved"), the error's words and the update's, each
    such rank named; None otherwise. The row's phases are its worst rank's, which need not be that rank. A rank is in
    a phase rank 0 marked where its processes were seen then, so one that ends as rank 0 marks its last phase is in it
    or not by a race: a rank short of its baseline's last phase alone is not held short (reached.unreached_ranked),
    nor is the row: the worst rank's phases."""
    errors, updates = [], []
    for rank in measurement.ranks:
        base = list(baseline.rank_phases.get(rank.rank) or ())
        missed = reached.unreached_ranked(rank.phases, base, _last_marked(measurement))
        if missed:
            said = reached.message(missed, list(rank.phases), len(base)).removeprefix("the run ")
            errors.append(f"rank {rank.rank} {said}")
            updates.append(f"rank {rank.rank} did not reach {len(missed)} of the {len(base)} phases its baseline "
                           f"measured ({reached.said(missed)})")
    return ("; ".join(errors), "; ".join(updates)) if errors else None


def _last_marked(measurement: Measurement) -> str | None:
    """The phase rank 0 marked last in a launch (the node's last), or None where the row kept no node phases."""
    return measurement.node.phases[-1].name if measurement.node is not None and measurement.node.phases else None


def _declared(baseline: Entry, scenario: str | None, params: Mapping | None, command: Sequence[str] | None) -> list[str]:
    """What the test declares now that its entry was recorded otherwise: another scenario, params or command."""
    return [n for n in (scenario_note(scenario, baseline.scenario), params_note(params, baseline.params),
                        command_note(command, baseline.command)) if n]


def _changes(measurement: Measurement, baseline: Entry, tolerance: Tolerance, setup: Setup) -> dict[str, float | None]:
    """The relative change of each gated figure against the baseline, where the verdict is decided elsewhere."""
    if measurement.ranks and baseline.ranks:
        return per_rank(measurement, baseline, tolerance, setup, [])[0]
    return against_baseline(measurement.peaks, baseline.peaks, tolerance, setup, [], spread=baseline.spread)[0]


def against_baseline(peaks: Peaks, base: Peaks, tolerance: Tolerance, setup: Setup,
                     notes: list[str], phases: Mapping[str, PhaseRecord] | None = None,
                     base_phases: Mapping[str, Peaks] | None = None, *,
                     spread: Spread | None = None) -> tuple[dict[str, float | None], list[str], list[str]]:
    """Each gated metric against its baseline: the relative changes, what regressed, what improved (notes on the
    way: which RAM figure was compared, a stored spread too wide to catch +5 %). Given the run's phase records and
    the baseline's phases, a regression names the first phase that passed its own baseline phase (first_past).
    `spread`: the entry's, over its recorded runs; each metric's allowance is widened to it (Allowance)."""
    change: dict[str, float | None] = {}
    regressed, improved = [], []
    for metric in GATED:
        if metric == "ram":
            metric, note = ram_compared(peaks, base)
            notes += [note] if note else []
        now, then = peaks.figure(metric), base.figure(metric)
        if now is None and then is not None:  # nothing to compare it with: said, not passed over as within
            lacking = f"{metric}: the baseline holds {format_size(then)}, this run measured none: not compared"
            notes += [lacking] if lacking not in notes else []
        if now is None or then is None:
            continue
        tol = setup.vram_tolerance(tolerance) if metric == "vram_allocated" else tolerance
        if tol is None:  # another CUDA allocator config: it moves the allocated peak itself
            continue
        shown = format_size(now)
        shift = 0
        if metric in ("ram", "ram_tree"):  # the floor is the main process's, which the tree holds
            tol = setup.ram_tolerance(tolerance)
            if tol is None:
                continue
            if setup.floor_shift:
                shift = setup.floor_shift
                shown = floor_taken_off(now, shift)
                now -= shift
        change[metric] = (now - then) / then if then else None
        allowed = Allowance.of(tol, spread, metric)
        warning = allowed.too_wide(metric, then)
        notes += [warning] if warning and warning not in notes else []
        if now > allowed.limit(then):
            where = first_past(phases or {}, base_phases or {}, metric, allowed, shift, then)
            regressed.append(f"{metric} {shown} > baseline {format_size(then)} {allowed.said(then, '+')}"
                             + (f", {where}" if where else ""))
        elif now < allowed.floor(then):
            improved.append(f"{metric} {shown} < baseline {format_size(then)} {allowed.said(then, '-')}")
    return change, regressed, improved


def floor_taken_off(measured: int, shift: int) -> str:
    """A host RAM figure compared with the import floor's shift taken off, its measured peak first: the figure the
    table shows, then the arithmetic (`621.59 MiB - import floor shift -24.00 KiB = 621.61 MiB (floor taken off)`)."""
    return (f"{format_size(measured)} - import floor shift {'+' if shift > 0 else ''}{format_size(shift)} = "
            f"{format_size(measured - shift)} (floor taken off)")


def first_past(phases: Mapping[str, PhaseRecord], base_phases: Mapping[str, Peaks], metric: str,
               tol: Tolerance | Allowance, shift: int = 0, peak: int | None = None) -> str | None:
    """Where a regression began: the first phase of the run (in its order) whose figure of `metric`, less the
    floor `shift`, passed the limit of the same phase's figure in the baseline, or, for a phase the baseline
    lacks (one added, or renamed), of the baseline's `peak`; None where no phase did alone (or the baseline kept no
    phases). A leak kept from step 3 on is named at step 3."""
    for name, record in phases.items():
        then = base_phases[name].figure(metric) if name in base_phases else peak if base_phases else None
        now = record.peaks.figure(metric)
        if now is not None and then is not None and now - shift > tol.limit(then):
            step = f" (step {record.step})" if record.step is not None else ""
            if name not in base_phases:
                return f"first past the baseline's peak in {name}{step}, a phase its baseline lacks"
            return f"first past its baseline in {name}{step}"
    return None


def ram_compared(peaks: Peaks, base: Peaks) -> tuple[str, str | None]:
    """Which host-RAM metric a baseline is compared on, and a note when its tree figure is left uncompared."""
    if peaks.ram_tree is not None and base.ram_tree is not None:
        return "ram_tree", None
    if peaks.ram_tree is not None and peaks.ram is not None and peaks.ram_tree > peaks.ram:
        return "ram", (f"the baseline holds the main process only: compared on it; the tree's "
                       f"{format_size(peaks.ram_tree)} is not (re-record the baseline to gate it)")
    return "ram", None
