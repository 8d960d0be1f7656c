"""FINDINGS.md's comparisons: each measured fix beside its scenario's as-reported run, judged as the gate judges noise.

Read by the CPU tables (findings.py) and the GPU tables (findings_gpu.py)
alike, so a fix reads the same on either. A fix is judged against the tolerance
the gate judged its row with (its marker's `tolerance=`, else the scale's
default): a change inside it is "no effect", not a win.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gpu_budget.declare.fixes import Control, Fix
from gpu_budget.declare.marks import default_tolerance
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.entry import SPREAD_MULTIPLE
from gpu_budget.model.figures import Fields
from gpu_budget.model.json_value import Json
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import Result, Verdict, param_changes
from gpu_budget.report.markdown_text import inline
from gpu_budget.report.memtests import registered
from gpu_budget.report.order import scale_order
from gpu_budget.report.row_fields import FixNotes, gated_metric
from gpu_budget.units import format_change, format_size

AS_REPORTED = "as-reported"  # the label of a scenario's own run, measured once per session by its own test


@dataclass(frozen=True)
class Pair(Fields):
    """One variant of a scenario at one scale beside the scenario's as-reported run: the figures compared, the verdict.

    metric: the gated metric both rows hold (None where the variant was not
    measured); before / after: its figure as reported and with the variant;
    main_*: the main process's RAM; reserved_*: the GPU memory the allocator
    reserved; before_died / after_died: the as-reported run / the variant's run
    died of out-of-memory, so its figure is what it held when it died, a lower
    bound of its peak: the saving is at least (at most) the one shown; after_failed:
    the variant's child failed (an error row), so its figures are what it held then;
    tolerance: the variant row's (None: the scale's default), what a change must
    pass to be more than noise; spread: the widest spread of the metric either
    row's baseline stored over fresh runs (None: none stored), which widens that
    as the gate widens an allowance (SPREAD_MULTIPLE times it). knobs: the params the variant ran at other values
    than the as-reported run and no fix between them sets ("batch_size 8 → 1"):
    a variant of the scenario, not a fix of it (empty: a fix, or not told: knobs).
    """

    scenario: str
    scale: str
    variant: str
    fixes: tuple[str, ...]
    test: str
    facts: Mapping[str, Json]
    verdict: str
    metric: Metric | None = None
    before: int | None = None
    after: int | None = None
    main_before: int | None = None
    main_after: int | None = None
    reserved_before: int | None = None
    reserved_after: int | None = None
    before_died: bool = False
    after_died: bool = False
    tolerance: Tolerance | None = None
    knobs: tuple[str, ...] = ()
    after_failed: bool = False
    spread: int | None = None

    @property
    def compared(self) -> bool:
        """Both figures measured: a fix against its as-reported run."""
        return self.before is not None and self.after is not None

    @property
    def applied(self) -> bool:
        """Whether its runner applied all its fixes where it ran: one it reports not applied measured the case
        unchanged ("not applied here"), so no saving is the fix's."""
        return not FixNotes.from_json(self.facts, self.fixes).unapplied()

    @property
    def saving(self) -> str:
        """The saving against the as-reported run, "-" where there is none to compute, where a run that died of
        out-of-memory leaves only a bound that tells nothing (a loss at least, a saving at most), or where its runner
        did not apply the fix (the difference is two runs of the case, no saving of the fix's)."""
        if not self.applied:
            return "-"
        shown = bounded_saving(self.before, self.after, self.before_died, self.after_died)
        return noise_said(shown, self)

    @property
    def noise(self) -> str | None:
        """"within noise (±4.00 MiB)" where the figure with the variant is inside the noise band of the as-reported
        one (the band its verdict reads "no effect" in), None where it is outside it or there is none to compare."""
        if not self.compared:
            return None
        return within_noise(self.before, self.after, self.scale, self.tolerance, self.spread)

    @property
    def as_reported(self) -> str:
        """The as-reported figure's cell (held_cell)."""
        return held_cell(self.before, self.before_died and bool(self.before))

    @property
    def with_fix(self) -> str:
        """The variant's figure's cell (held_cell)."""
        return held_cell(self.after, self.after_died, self.after_failed)

    @property
    def main(self) -> str:
        """The main process's figures, as reported and with the variant (held_cell); "-" where neither is held."""
        if self.main_before is None and self.main_after is None:
            return "-"
        return (f"{held_cell(self.main_before, self.before_died)}, "
                f"{held_cell(self.main_after, self.after_died, self.after_failed)}")


def held_cell(figure: int | None, died: bool, failed: bool = False) -> str:
    """A run's figure as a table shows it: marked where the run died of out-of-memory, or otherwise failed (what it
    held then, not its peak)."""
    if figure is None or not (died or failed):
        return format_size(figure)
    return format_size(figure) + (" when it died of OOM" if died else " when it failed")


def cell(text: str) -> str:
    """A markdown table cell's text: its lines joined (a child's multi-line error) and its '|', '<', '`', '*' escaped
    (a parametrized id, a label, a message: markdown_text.inline), so it stays one cell of one row, as written."""
    return inline(" ".join(text.splitlines()))


def skip_verdict(row: Result) -> str:
    return "needs GPU, not measured here" if "CUDA" in row.message else f"skipped: {row.message}"


def not_applied(row: Result) -> str | None:
    """Why a fix of this row was not applied where it ran, as its runner reported it; None when all were.

    Runners report `info["fixes_applied"]` ({fix: "applied" or why not}); reports
    from before that contract hold the fact under the fix's own name.
    """
    reasons = [f"{fix}: {note}" for fix, note in FixNotes.from_json(row.info, row.fixes).unapplied().items()]
    return "; ".join(reasons) or None


def fix_verdict(before: int | None, after: int | None, scale: str = "tiny", tolerance: Tolerance | None = None,
                spread: int | None = None) -> str:
    """Judged against `tolerance`, the one the gate judged the row with (None: the gate's default at that scale, the
    noise measured there), widened as the gate widens it by the `spread` a baseline stored over fresh runs."""
    if before is None or after is None:
        return "not measured"
    floor, limit = noise_band(before, scale, tolerance, spread)
    if after < floor:
        return "works"
    if after > limit:
        return "makes it worse"
    return "no effect"


def noise_said(shown: str, e: Pair) -> str:
    """A change's cell `shown` (a saving, or a variant's change) as a table prints it: "within noise (±X)" where it is
    inside the noise band, as its verdict reads it, not a figure finer than the runs can tell; "-" where a run died
    there (a bound inside the noise tells nothing either way)."""
    if shown == "-" or e.noise is None:
        return shown
    return "-" if e.before_died or e.after_died else e.noise


def within_noise(before: int, after: int, scale: str, tolerance: Tolerance | None, spread: int | None) -> str | None:
    """"within noise (±X)" where `after` is inside the noise band of `before` (noise_band: a change fix_verdict calls
    "no effect"), X its half-width; None outside it."""
    floor, limit = noise_band(before, scale, tolerance, spread)
    if not floor <= after <= limit:
        return None
    return f"within noise (±{format_size(limit - before)})"


def noise_band(before: int, scale: str, tolerance: Tolerance | None, spread: int | None) -> tuple[int, int]:
    """The figures around `before` a change inside of is noise: the tolerance's (None: the scale's default), or
    SPREAD_MULTIPLE times the spread the case's baseline stored over fresh runs where that is wider (the gate's rule)."""
    tol, wide = tolerance or default_tolerance(scale), SPREAD_MULTIPLE * (spread or 0)
    return min(tol.floor(before), before - wide), max(tol.limit(before), before + wide)


def stored_spread(metric: Metric, *rows: Result) -> int | None:
    """The widest spread of `metric` the rows' baselines stored over fresh runs (None: none stored)."""
    spreads = [r.baseline.spread.get(metric) for r in rows if r.baseline is not None and r.baseline.spread is not None]
    return max((s for s in spreads if s is not None), default=None)


def bounded_saving(before: int | None, after: int | None, before_died: bool = False, after_died: bool = False) -> str:
    """(before - after) / before, "at least" where `before` is a dead run's lower bound, "at most" where `after` is;
    "-" where there is none to compute or the bound tells nothing (a loss at least, a saving at most)."""
    if not before or after is None:
        return "-"
    shown = (before - after) / before
    if before_died and after_died or before_died and shown <= 0 or after_died and shown >= 0:
        return "-"
    return f"{'at least ' if before_died else 'at most ' if after_died else ''}{format_change(shown)}"


def bounded_verdict(before: int | None, after: int | None, scale: str, before_died: bool, after_died: bool,
                    tolerance: Tolerance | None = None, spread: int | None = None) -> str:
    """fix_verdict where a run that died of out-of-memory gives only a lower bound of its peak: only what the bound
    proves is said (a fix below a dead as-reported run works; one above the as-reported peak when it died is worse)."""
    both = before is not None and after is not None
    floor, limit = noise_band(before, scale, tolerance, spread) if both else (0, 0)
    if before_died and after_died:
        return "not told: both runs died of out-of-memory"
    if after_died:
        return "makes it worse (died of out-of-memory)" if both and after > limit else \
            "died of out-of-memory: its peak is at least what it held then, no saving shown"
    if before_died and not (both and after < floor):
        return "not told: the as-reported run died of out-of-memory, its figure only a lower bound of its peak"
    return fix_verdict(before, after, scale, tolerance, spread)


def _reference(rows: list[Result]) -> Result | None:
    """The row a scenario's variants are compared with: the one labelled as-reported, else the one without fixes."""
    measured = [r for r in rows if r.verdict not in (Verdict.SKIPPED, Verdict.ERROR)]
    return next((r for r in measured if r.label == AS_REPORTED), None) or next((r for r in measured if not r.fixes), None)


def _json(value: Json) -> str:
    return json.dumps(value, sort_keys=True)


def knobs(row: Result, ref: Result, library: Mapping[str, Fix]) -> tuple[str, ...]:
    """The params `row` ran at other values than `ref`, its as-reported run, that no fix between them sets (one
    either row applies and the other does not), each as "name before → after": a variant of the scenario (another
    batch size, longer clips), not a fix of it. Empty where it is a fix, and where it cannot be told: a row without
    params (a report from before rows carried them), or a fix between them not registered here (its params unknown)."""
    if row.params is None or ref.params is None:
        return ()
    between = set(row.fixes) ^ set(ref.fixes)
    if not between <= set(library):
        return ()
    out = []
    for name, before, after in param_changes(ref.params, row.params):
        set_by = [fix for fix in between if name in library[fix].params and
                  _json(library[fix].params[name]) == (after if fix in row.fixes else before)]
        if not set_by:
            out.append(f"{name} {before} → {after}")
    return tuple(out)


def _pair(row: Result, ref: Result | None, library: Mapping[str, Fix]) -> Pair:
    """The variant `row` beside the reference `ref` (None where the scale has none)."""
    variant = row.label or ", ".join(row.fixes) or row.nodeid.rsplit("/", 1)[-1]  # an unlabelled run: its test
    base = Pair(row.scenario, row.scale, variant, tuple(row.fixes), row.nodeid, row.info,
                verdict="", main_before=None if ref is None else ref.peaks.ram, main_after=row.peaks.ram,
                reserved_before=None if ref is None else ref.peaks.vram_reserved, reserved_after=row.peaks.vram_reserved,
                knobs=() if ref is None else knobs(row, ref, library))
    if row.verdict == Verdict.SKIPPED:
        return Pair(base.scenario, base.scale, base.variant, base.fixes, base.test, base.facts, skip_verdict(row),
                    knobs=base.knobs)
    if row.verdict == Verdict.ERROR or ref is None:
        metric = gated_metric(row.peaks)
        verdict = f"error: {row.message[:120]}" if row.verdict == Verdict.ERROR else "no as-reported run to compare"
        failed = row.verdict == Verdict.ERROR and row.error is not None  # its child failed: figures held then
        return replace(base, metric=metric, after=row.peaks.figure(metric), verdict=verdict,
                       after_died=failed and died_of_memory(row), after_failed=failed)
    metric = gated_metric(ref.peaks, row.peaks)
    before, after = ref.peaks.figure(metric), row.peaks.figure(metric)
    reason = not_applied(row)
    before_died, after_died, tolerance = died_of_memory(ref), died_of_memory(row), row.tolerance or ref.tolerance
    spread = stored_spread(metric, ref, row)
    verdict = f"not applied here ({reason})" if reason else \
        bounded_verdict(before, after, row.scale, before_died, after_died, tolerance, spread)
    return replace(base, metric=metric, before=before, after=after, verdict=verdict, before_died=before_died,
                   after_died=after_died, tolerance=tolerance, spread=spread)


def died_of_memory(row: Result) -> bool:
    """Whether the row's run died of out-of-memory (its peaks are what it held then)."""
    return row.measurement is not None and row.measurement.died_of_memory


def pairs(results: list[Result]) -> dict[str, list[Pair]]:
    """Per scenario and scale: each measured variant beside the scenario's as-reported measurement.

    The reference is the row labelled "as-reported" (measured once per session
    by the scenario's own test), else the row without fixes. A row that ran other
    params than the reference, not set by a fix, is a variant of it (Pair.knobs).
    """
    library = registered(results)
    groups: dict[tuple[str, str], list[Result]] = defaultdict(list)
    for row in results:
        groups[(row.scenario, row.scale)].append(row)
    out: dict[str, list[Pair]] = defaultdict(list)
    for (scenario, _), rows in sorted(groups.items(), key=lambda kv: (kv[0][0], scale_order(kv[0][1]))):
        ref = _reference(rows)
        for row in rows:
            if row is not ref and row.label != AS_REPORTED:  # the reference itself: in findings.failures()
                out[scenario].append(_pair(row, ref, library))
    return out


def split_lines(entries: Sequence[Pair], controls: dict[str, Control], where: str | None = None) -> list[str]:
    """A fix's saving split into a control's part and the rest (Fix.control), per scale where both were measured, each
    part judged as the fix table judges a fix (a part inside the tolerance is "no effect"); `where` (a card) follows
    the scale when given."""
    lines = []
    for control, split in controls.items():
        fix, alone, short, rest = split.of, split.alone, split.short, split.rest
        for scale in sorted({e.scale for e in entries}, key=scale_order):
            by = {e.variant: e for e in entries if e.scale == scale and e.before and e.after is not None and not e.knobs}
            if fix not in by or control not in by or by[fix].metric != by[control].metric:
                continue
            if by[fix].after_died or by[control].after_died or by[fix].before_died:
                continue  # what a run held when it died (the as-reported run's too) is no part of a saving
            if not (by[fix].applied and by[control].applied):
                continue  # a run its runner did not apply the fix in measured the case unchanged
            before, part, whole = by[fix].before, by[control].after, by[fix].after
            head = f"{scale}, on {where}" if where else scale
            lines.append(f"- {head}: {fix}'s saving split ({by[fix].metric}): as reported {format_size(before)}; "
                         f"{alone} {format_size(part)}, {_part_said(before, part, by[control])}; {rest}: {fix} "
                         f"{format_size(whole)}, {_rest_said(before, part, whole, short, by[fix])}")
    return lines


def _part_said(before: int, part: int, control: Pair) -> str:
    """The control's part of a split saving: its size, share and verdict, or "within noise" where it is inside it."""
    noisy = within_noise(before, part, control.scale, control.tolerance, control.spread)
    if noisy:
        return f"saving {noisy}, no effect"
    verdict = fix_verdict(before, part, control.scale, control.tolerance, control.spread)
    return f"saving {format_size(before - part)} ({format_change((before - part) / before)}, {verdict})"


def _rest_said(before: int, part: int, whole: int, short: str, fix: Pair) -> str:
    """The rest of a split saving: how far the whole fix is from the control's run, or "within noise" of it."""
    noisy = within_noise(part, whole, fix.scale, fix.tolerance, fix.spread)
    if noisy:
        return f"{noisy} of {short} (no effect)"
    verdict = fix_verdict(part, whole, fix.scale, fix.tolerance, fix.spread)
    return (f"{format_size(abs(whole - part))} {'lower' if whole < part else 'higher'} than {short} "
            f"(saving {format_change((part - whole) / before)} of as reported, {verdict})")
