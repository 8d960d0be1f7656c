"""The gate's table and lines, as the terminal prints them and pytest's report sections hold them.

The step summary (summary.py) and the JSON report (json_report.py) are
rendered from the same list of Results (model/result.py), so the three cannot
disagree; plots: plots.py. Host RAM shows twice: the process tree's peak
(gated: the measured process and its DataLoader workers and subprocesses) and
the main process's alone.
"""

from __future__ import annotations

from gpu_budget.declare.marks import default_tolerance
from gpu_budget.model.entry import SPREAD_MULTIPLE
from gpu_budget.model.figures import Peaks
from gpu_budget.model.metric import Metric
from gpu_budget.model.result import COUNT_CAP, RECORDED, WITHIN, Remediation, Result, Verdict, verdict_failure
from gpu_budget.report import once
from gpu_budget.report.findings_pairs import noise_band
from gpu_budget.report.markdown_text import inline
from gpu_budget.report.row_fields import FixNotes, LaunchFacts, gated_metric
from gpu_budget.report.text_table import tabulated
from gpu_budget.units import format_change, format_size

HEADERS = ["test", "scale", "RAM tree", "RAM main", "VRAM peak", "budget", "baseline", "change", "fixes", "verdict"]


def _budget(row: Result) -> str:
    budget = row.budget
    parts = []
    if budget.ram is not None:
        parts.append(f"RAM {format_size(budget.ram)}")
    if budget.vram is not None:
        parts.append(f"VRAM {format_size(budget.vram)}" + (" unchecked" if row.unchecked else "")
                     + (f" as on {row.card}" if row.card else ""))
    return ", ".join(parts) or "-"


def _baseline(row: Result) -> str:
    base = row.baseline
    if not base:
        return "-"
    parts = [format_size(base.peaks.gated_ram) + ("" if base.peaks.ram_tree is not None else " (main)")]
    if base.peaks.vram_allocated is not None:
        parts.append(format_size(base.peaks.vram_allocated))
    return " / ".join(parts)


CHANGE_LABELS = {"ram": "RAM main", "ram_tree": "RAM tree", "ram_tensor": "tensors", "vram_allocated": "VRAM"}


def _change(row: Result) -> str:
    """Each gated figure's change against the baseline: a percentage, or from a baseline of 0 (no percentage of it
    exists, and a figure left out hid the one a regression rests on) what it grew by."""
    parts = [f"{CHANGE_LABELS.get(k, k)} {format_change(v)}" if v is not None else _from_zero(row, k) for k, v in row.change.items()]
    return ", ".join(part for part in parts if part) or "-"


def _from_zero(row: Result, metric: str) -> str | None:
    """A figure whose baseline is 0: "VRAM +12.00 MiB from 0 B" ("VRAM 0 B, as before"); None where it has no change
    to say (either figure unknown)."""
    then = row.baseline.peaks.figure(metric) if row.baseline and metric in set(Metric) else None
    now = row.peaks.figure(metric) if then == 0 else None
    if now is None:
        return None
    label = CHANGE_LABELS.get(metric, metric)
    return f"{label} {format_size(now)}, as before" if not now else f"{label} +{format_size(now)} from {format_size(0)}"


def setup_lines(rows: list[Result]) -> list[str]:
    """One line per distinct way the setup differs from the baselines' (fingerprint.py), with how many cases."""
    seen: dict[tuple, int] = {}
    for row in rows:
        setup = row.setup
        moved = setup is None or setup.floor_moved is not False  # a smaller shift moves no verdict (model/setup.py Setup)
        shift = round(setup.floor_shift / 2**20, 1) if setup is not None and moved else 0
        if setup and (row.fingerprint_changed or shift):
            key = (tuple(row.fingerprint_changed), setup.policy, shift)
            seen[key] = seen.get(key, 0) + 1
    lines = []
    for (diffs, policy, shift), count in seen.items():
        taken = "" if policy == "foreign" else ", taken off the host RAM peak"  # foreign: host RAM not compared
        floor = [f"import floor {shift:+.1f} MiB{taken}"] if shift else []
        how = {"foreign": "host RAM not compared: record a baseline for this setup",
               "allocator": "allocated VRAM not compared: record a baseline for this setup",
               "setup": "compared, but this setup moves host RAM itself: a regression of that size can pass; "
                        "record baselines on it for full sensitivity"}.get(policy, "compared as usual")
        lines.append(f"{count} case(s): setup differs from the baseline's: {'; '.join([*diffs, *floor])} ({how})")
    return lines


MARKED_OUTCOMES = ("skipped", "xfailed", "xpassed")  # pytest's outcomes a verdict cell names beside the gate's word


def verdict_text(row: Result) -> str:
    """The verdict, "FAIL" after it where the gate failed the case; a case the gate passed in a test that failed after
    measure() says "test FAILED" (the test's own assertion: pytest failed it, so the gate's row does not pass it), and
    so does one whose test failed on another of its cases' verdicts (pytest's word; that case alone counts as failed).
    A test pytest skipped, xfailed or xpassed after measure() says so after the gate's word ("pass, test xfailed"),
    so its row does not read as a test judged as any other; a case the gate itself skipped is said once. A case
    expected over budget that stayed within it says what was expected after FAIL ("pass FAIL (expected over-budget)"):
    "pass FAIL" alone reads as two words at odds."""
    text = row.verdict
    if row.expect and row.verdict == row.expect:
        text += " (expected)"
    if not row.passed:
        text += " FAIL" + (f" (expected {row.expect})" if row.expect and row.verdict == Verdict.PASS else "")
    elif row.test_failed:  # after measure(), or on another of its cases' verdicts (that row says FAIL and why)
        return f"{text}, test {row.test_outcome.upper()}"  # FAILED, or ERROR: pytest's word in its summary
    outcome = row.test_outcome
    if outcome in MARKED_OUTCOMES and not (outcome == "skipped" and row.verdict == Verdict.SKIPPED):
        text += f", test {outcome}"
    return text


def _named_fixes(row: Result) -> str:
    """The row's fixes, each one its runner did not apply (or never read) marked so: it ran the case unchanged."""
    unapplied = FixNotes.from_json(row.info, row.fixes).unapplied()
    return ", ".join(f"{fix} (not applied)" if fix in unapplied else fix for fix in row.fixes) or "-"


def _fixes(row: Result) -> str:
    text = _named_fixes(row)
    rem = row.remediation
    if rem:
        text += f" ({_outcome(rem)})"
    return text


def _outcome(rem: Remediation) -> str:
    """The search's answer in a few words: 'passes with +truncate', 'no fix set passes', ..."""
    if rem.status == "found":
        return "passes with " + " ".join([*(f"+{f}" for f in rem.found), *(f"-{f}" for f in rem.removed)])
    return {"not-needed": "passes as it is", "none-passes": "no fix set passes", "no-candidates": "no fix to try",
            "bound-reached": f"none passed within {rem.bound} runs"}[rem.status]


def _peaks(peaks: Peaks) -> str:
    parts = [f"RAM {format_size(peaks.gated_ram)}"]
    if peaks.ram_tree is not None and peaks.ram_tree != peaks.ram:
        parts[0] += f" (main {format_size(peaks.ram)})"
    if peaks.vram_allocated is not None:
        parts.append(f"VRAM {format_size(peaks.vram_allocated)}")
    return ", ".join(parts)


def remediation_text(rem: Remediation, case: Result | None = None) -> str:
    """One sentence: what passes (with its peaks), or why nothing was found (and the lowest set measured), and how
    many real runs it took; beside the failing `case`, whether the passing peak is inside its tolerance of the case's own (the pass may be noise)."""
    runs = f"{rem.runs} real run{'s' if rem.runs != 1 else ''} (bound {rem.bound})"
    sets_run = [t for t in rem.tried if t.fixes]  # the case's own run, where the search made it, is no set
    failed = sum(1 for t in sets_run if t.verdict == Verdict.ERROR)  # no peak: neither within nor over budget
    unapplied = sum(1 for t in sets_run if t.verdict == Verdict.PASS and t.not_applied)  # the case measured again
    noise = "passed only with a fix its runner reports not applied, so not counted"
    pruned = _not_run(rem)
    if rem.status == "not-needed":
        return f"remediation: none needed: it passes as it is ({_peaks(rem.peaks)}), found in {runs}"
    if rem.status == "found":
        cheaper = (f"; {failed} set{'s' if failed != 1 else ''} tried before it failed with an error (not measured)"
                   f"{' and ' + pruned if pruned else ''}, so it may not be the cheapest") if failed else ""
        again = f"; {unapplied} set{'s' if unapplied != 1 else ''} tried before it {noise}" if unapplied else ""
        return f"remediation: {_outcome(rem)} ({_peaks(rem.peaks)}), found in {runs}{cheaper}{again}{_noise(rem, case)}"
    sets = f"{len(sets_run)} {'sets run' if pruned else 'valid sets'} of {', '.join(rem.lattice)}"
    claim = "" if pruned else "no set of this scenario's fixes brings it within budget: "  # a set not run might
    pruned = (f"; {pruned}" if pruned else "") + _lowest(rem, case)
    if rem.status == "none-passes":
        if failed or unapplied:
            parts = [f"{len(sets_run) - failed - unapplied} measured over budget",
                     *([f"{failed} failed with an error (not measured)"] if failed else []),
                     *([f"{unapplied} {noise}"] if unapplied else [])]
            return (f"remediation: none of the {sets} passed{' with its fixes applied' if unapplied else ''}: "
                    f"{', '.join(parts)}{pruned}")
        return f"remediation: {claim}none of the {sets} passed (all measured){pruned}"
    if rem.status == "no-candidates":
        return "remediation: no fix to try (none offered, all applied, or none runnable here)"
    left = f"more than {COUNT_CAP:,} sets" if rem.untried > COUNT_CAP else f"{rem.untried} set(s)"  # counted no further
    errors = [*([f"{failed} failed with an error, not measured"] if failed else []), *([f"{unapplied} {noise}"] if unapplied else [])]
    return (f"remediation: none of the {runs} passed{' with its fixes applied' if unapplied else ''}"
            f"{' (' + '; '.join(errors) + ')' if errors else ''}; {left} left untried, none cheaper than those run "
            f"(raise --gpu-budget-remediate-max-runs){pruned}")


def _lowest(rem: Remediation, case: Result | None = None) -> str:
    """Where no set passed, the measured one nearest the budget: the first thing to ask ("" where none was measured:
    a run that died read only what it reached); beside the `case`, said to lower nothing where it is not below the
    case's own figure by more than its noise (every fix made it worse, or changed nothing the runs can tell)."""
    measured = [t for t in rem.tried if t.fixes and t.peaks and t.verdict == Verdict.OVER_BUDGET and not t.not_applied
                and not t.message.startswith("measured child failed")]  # a set: the case's own run is none
    metric = gated_metric(*(t.peaks for t in measured)) if measured else None
    ranked = [t for t in measured if t.peaks.figure(metric) is not None]
    if not ranked:
        return ""
    lowest = min(ranked, key=lambda t: t.peaks.figure(metric))  # the first of a tie: the cheaper
    named = " ".join(f"+{f}" for f in lowest.fixes) or "no fix"  # as a passing set is named (_outcome)
    said = f"; the lowest: {named} ({_peaks(lowest.peaks)})"
    own = case.peaks.figure(metric) if case is not None and case.measurement is not None and case.measurement.ok else None
    if own is None or lowest.peaks.figure(metric) < noise_band(own, case.scale, case.tolerance, _stored(case, metric))[0]:
        return said
    return (f"{said}, no lower than the case's own {'VRAM' if metric == Metric.VRAM_ALLOCATED else 'RAM'} "
            f"{format_size(own)} (inside its noise or above it): no set run lowered the peak")


def _stored(case: Result, metric: Metric) -> int | None:
    """The spread of `metric` the case's baseline stored over fresh runs (None: none stored)."""
    spread = case.baseline.spread if case.baseline is not None else None
    return spread.get(metric) if spread is not None else None


def _noise(rem: Remediation, case: Result | None) -> str:
    """Where the passing set's gated peak is inside the case's tolerance of the case's own, or inside SPREAD_MULTIPLE
    times the spread its baseline stored over fresh runs (the gate's own allowance), so one run cannot tell the fixes
    from run-to-run noise: saying so ("" where it is outside it, or there is nothing to compare: a case that died read
    only what it reached before dying). Else, where it is inside that of a run of the set less one fix (over budget),
    that fix's part in the pass is no more than noise: saying so."""
    if case is None or rem.peaks is None or case.measurement is None or not case.measurement.ok:
        return ""
    metric = gated_metric(case.peaks, rem.peaks)
    before, after = case.peaks.figure(metric), rem.peaks.figure(metric)
    tolerance = case.tolerance or default_tolerance(case.scale)
    spread = case.baseline.spread if case.baseline is not None else None
    stored = spread.get(metric) if spread is not None else None
    wide = SPREAD_MULTIPLE * stored if stored else 0
    if after is None:
        return ""

    def near(figure: int) -> str | None:
        """What puts `after` inside the noise of `figure`, in words, or None: it is outside it."""
        if tolerance.floor(figure) <= after <= tolerance.limit(figure):
            return f"the tolerance ({tolerance.rel:.1%} + {format_size(tolerance.abs)})"
        if spread is not None and stored and figure - wide <= after <= figure + wide:
            return f"{SPREAD_MULTIPLE}x the spread of the case's baseline runs ({format_size(stored)} over {spread.runs} runs)"
        return None

    inside = f"; its {'VRAM' if metric == Metric.VRAM_ALLOCATED else 'RAM'} is inside "
    said = near(before) if before is not None else None
    if said:
        return f"{inside}{said} of the case's own {format_size(before)}, so the pass may be run-to-run noise, not the fixes"
    found = set(rem.found or ())
    for trial in rem.tried:  # cost order: the set less one fix ran before the passing one
        less = found - set(trial.fixes)
        measured = trial.verdict == Verdict.OVER_BUDGET and not trial.message.startswith("measured child failed")
        other = trial.peaks.figure(metric) if trial.peaks and measured else None  # a death read what it reached
        said = near(other) if trial.fixes and len(less) == 1 and set(trial.fixes) < found and other is not None else None
        if said:
            return (f"{inside}{said} of +{'+'.join(trial.fixes)}'s own {format_size(other)} (over budget), so "
                    f"{less.pop()}'s part in the pass may be run-to-run noise")
    return ""


def _not_run(rem: Remediation) -> str:
    """The sets the search ran no child for because they hold one that crashed, or a fix its runner reported not
    applied when run alone ("" when none)."""
    parts = []
    for held, why in ((rem.pruned, ("whose run crashed", "whose runs crashed")),
                      (rem.unapplied, ("which its runner reported not applied alone",
                                       "which their runner reported not applied alone"))):
        count = sum(held.values())
        if count:
            parts.append(f"{count} set{'s' if count != 1 else ''} holding {' or '.join(held)}, "
                         f"{why[len(held) != 1]}, {'was' if count == 1 else 'were'} not run"
                         + (" (a fix applied only beside another is run with it where its requires= names that one)"
                            if held is rem.unapplied else ""))
    return "; ".join(parts)


def remediation_lines(rows: list[Result], markdown: bool = False) -> list[str]:
    """Per searched case: the answer, every set tried with its peaks and verdict, and what was skipped."""
    lines = []
    for row in rows:
        rem = row.remediation
        if not rem:
            continue
        said = inline if markdown else str  # a node id, a fix's name, a child's error: shown as written
        name = f"**{said(row.nodeid)}**" if markdown else row.nodeid
        lines.append(f"{'- ' if markdown else ''}{name} ({_peaks(row.peaks)}, budget {_budget(row)}): "
                     f"{said(remediation_text(rem, row))}")
        indent = "  - " if markdown else "    "
        for trial in rem.tried:
            died = trial.verdict == Verdict.OVER_BUDGET and trial.message.startswith("measured child failed")
            note = f" ({trial.message})" if trial.verdict == Verdict.ERROR or died else ""  # why, where no peak says
            if trial.not_applied:
                note += " (not counted: " + "; ".join(f"{f}: {why}" for f, why in trial.not_applied.items()) + ")"
            tried = "+".join(trial.fixes) or "no fix (the case as it is)"  # the search's own run of the case
            lines.append(f"{indent}" + said(f"tried {tried}: {_peaks(trial.peaks or Peaks())} "
                                            f"{trial.verdict}{note}"))
        left = [*(f"{f} ({why})" for f, why in rem.skipped.items()),
                *(f"{n} set{'s' if n != 1 else ''} holding {crash} (its run crashed)" for crash, n in rem.pruned.items()),
                *(f"{n} set{'s' if n != 1 else ''} holding {fix} (not applied alone)" for fix, n in rem.unapplied.items())]
        if left:
            lines.append(f"{indent}" + said("not tried: " + ", ".join(left)))
    if lines:
        lines.insert(0, "#### Remediation (cheapest passing fix set)" if markdown else
                     "remediation (--gpu-budget-remediate): cheapest passing fix set per case")
    return lines


def _ranks(row: Result) -> str:
    """A launcher case's ranks and what accelerate ran in them: "2 MULTI_CPU", "2 MULTI_CPU (FSDP asked)"; "-" else."""
    m = row.measurement
    if m is None or not m.ranks:
        return "-"
    facts = LaunchFacts.from_json(row.info)
    kinds = sorted(set(facts.distributed_type.values()))
    asked = " (FSDP asked)" if facts.fsdp_requested and kinds != ["FSDP"] else ""
    return " ".join([str(len(m.ranks)), *(["/".join(kinds)] if kinds else [])]) + asked


def headers(rows: list[Result]) -> list[str]:
    """The table's columns: a "ranks" column after the scale where a row is a launcher case's."""
    return [*HEADERS[:2], "ranks", *HEADERS[2:]] if any(_ranks(row) != "-" for row in rows) else HEADERS


def _so_far(row: Result) -> str:
    """" so far" where the row's child failed (crashed, died of out-of-memory, timed out): its peaks are what it
    reached before it stopped, a lower bound of the run's peaks (legend "so far"), not measured ones; else ""."""
    return " so far" if row.error is not None else ""


def held(row: Result, figure: int | None) -> str:
    """A peak as the table shows it, marked "so far" where the child failed (_so_far)."""
    return format_size(figure) + (_so_far(row) if figure is not None else "")


def table_rows(rows: list[Result]) -> list[list[str]]:
    ranked = headers(rows) != HEADERS
    return [
        [
            row.nodeid,
            row.scale,
            *([_ranks(row)] if ranked else []),
            held(row, row.peaks.ram_tree),
            held(row, row.peaks.ram),
            held(row, row.peaks.vram_allocated),
            _budget(row),
            _baseline(row),
            _change(row),
            _fixes(row),
            verdict_text(row),
        ]
        for row in rows
    ]


def _tree_added(row: Result) -> str | None:
    """Where the case's descendants added the most host RAM (1 MiB or more): the phase, how much, how many processes."""
    phases = [p for p in row.phases.values() if p.ram_tree_peak is not None]
    if not phases:
        return None
    top = max(phases, key=lambda p: p.ram_tree_peak - (p.ram_peak or 0))
    added = top.ram_tree_peak - (top.ram_peak or 0)  # a main process never read (None) adds nothing of its own
    if added < 2**20:
        return None
    tree, m = top.tree, row.measurement
    exited = f", {tree.exited} exited in it" if tree is not None and tree.exited else ""
    if m is not None and m.ranks:  # a launch's row is its worst rank's: its own process and its own descendants
        from gpu_budget.measure.ranks import worst

        who, whose = f"rank {worst(list(m.ranks)).rank}'s own process", "its descendant process(es)"
    else:
        who, whose = "main process", "descendant process(es)"
    count = f"{tree.processes} " if tree is not None else ""
    own = format_size(top.ram_peak) if top.ram_peak is not None else "not read"
    return (f"phase {top.name}: {who} {own} + {count}{whose}{exited} {format_size(added)} = "
            f"{format_size(top.ram_tree_peak)}")


def _section(rows: list[Result], heading: str, text_of) -> list[str]:
    """A heading and one line per case `text_of` says something of; nothing where it says nothing of any."""
    lines = [f"{row.nodeid}: {text}" for row in rows if (text := text_of(row))]
    return [heading, *lines] if lines else []


def tree_lines(rows: list[Result]) -> list[str]:
    """For each case whose descendants added host RAM: how much, in how many processes, in which phase."""
    return _section(rows, "process tree (DataLoader workers, subprocesses): the phase where descendants added the "
                    "most", _tree_added)


def jit_text(row: Result) -> str | None:
    """A case measured again because the driver's compute cache grew during its first run: both runs' figures. The
    cache is the machine's: another process's compile (a second session, on one runner) grows it as well, so the
    growth is not said to be the case's."""
    m = row.measurement
    if m is None or m.jit_rerun is None:
        return None
    first = m.jit_rerun.first_peaks
    return (f"the CUDA driver's compute cache grew during the first run (+{format_size(m.jit_rerun.cache_growth)}: a "
            f"compile of this case's, or of another process on the machine; RAM tree {format_size(first.gated_ram)}, "
            f"VRAM {format_size(first.vram_allocated)}); measured again with the kernels cached: RAM tree "
            f"{format_size(m.ram)}, VRAM {format_size(m.peaks.vram_allocated)}")


def jit_lines(rows: list[Result]) -> list[str]:
    """For each case whose first child paid the driver's JIT compiler (measure/compute_cache.py)."""
    return _section(rows, "CUDA driver JIT: the first run is not judged, the driver's compiler may have been in its "
                          "host RAM", jit_text)


def ranks_text(row: Result) -> str | None:
    """A launcher case's ranks: the worst, the imbalance, the whole node; None for a case of no ranks."""
    m = row.measurement
    if m is None or not m.ranks:
        return None
    from gpu_budget.measure.ranks import imbalance, largest, smallest, worst

    top, low = worst(list(m.ranks)), smallest(list(m.ranks))
    ratio = imbalance(list(m.ranks))
    spread = "-" if ratio is None else f"{ratio:.2f}x (rank {largest(list(m.ranks)).rank} / rank {low.rank})"
    node = m.node.peaks if m.node is not None else Peaks()
    gpu = f", GPU {format_size(node.vram_tree)}" if node.vram_tree is not None else ""
    return (f"{len(m.ranks)} rank{'s' if len(m.ranks) != 1 else ''}; worst rank {top.rank}: RAM tree {format_size(top.peaks.ram_tree)} "
            f"(its own process {format_size(top.peaks.ram)}); imbalance of RAM tree {spread}; node (launcher and every "
            f"rank) {format_size(node.ram_tree)}{gpu}, launcher {format_size(node.ram)}")


def rank_lines(rows: list[Result]) -> list[str]:
    """For each launcher case: its worst rank, the imbalance, the node."""
    return _section(rows, "ranks (torchrun, accelerate launch): a budget applies to each rank; the table shows the "
                    "worst", ranks_text)


# -- one case in pytest's own report: a failing case's longrepr, every case's line in the "gpu-budget" section --

SNAPSHOT_HOWTO = ("open one at https://pytorch.org/memory_viz (drag the file in), or offline: "
                  "`python -m torch.cuda._memory_viz trace_plot FILE -o FILE.html`")


TRACEBACK_TAIL = 12  # lines of a failed child's traceback kept in the test's report (the JSON report holds it all)


PEAK_LABELS = {"ram_tree": "RAM tree", "ram": "RAM main", "ram_tensor": "tensors", "vram_allocated": "VRAM allocated",
               "vram_reserved": "VRAM reserved", "vram_device": "VRAM NVML", "vram_tree": "VRAM tree (NVML)"}


def _all_peaks(peaks: Peaks) -> str:
    held = peaks.measured
    return ", ".join(f"{label} {format_size(held[k])}" for k, label in PEAK_LABELS.items() if k in held) or "-"


def _peaks_of(row: Result) -> str:
    """'peaks RAM tree ..., RAM main ...'; 'peaks so far ...' where the child failed before its run's end (_so_far)."""
    return f"peaks{_so_far(row)} {_all_peaks(row.peaks)}"


def case_line(row: Result) -> str:
    """One line per case, as the test's "gpu-budget" report section lists it (pytest -rA shows it for a pass)."""
    name = row.label or row.scenario
    line = f"{name} ({row.scale}): {verdict_text(row)}; {_peaks_of(row)}; budget {_budget(row)}"
    if row.baseline:
        line += f"; baseline {_baseline(row)}, change {_change(row)}"
    return line


def case_detail(row: Result) -> list[str]:
    """A case's detail for pytest's report of a failing test (its longrepr, so junitxml and IDEs show it)."""
    lines = [f"case: {row.label or row.scenario} (scenario {row.scenario}, scale {row.scale}, device {row.device or '-'})",
             f"verdict: {verdict_text(row)}",
             f"peaks{_so_far(row)}: {_all_peaks(row.peaks)}",
             f"budget: {_budget(row)}" + (f" ({row.budget_origin})" if row.budget_origin else "")]
    if row.baseline:
        recorded = f" (recorded {row.baseline.recorded})" if row.baseline.recorded else ""
        lines += [f"baseline: {_baseline(row)}{recorded}", f"change: {_change(row)}"]
    else:
        lines.append("baseline: none")
    tolerance = row.tolerance
    if tolerance is not None:
        lines.append(f"tolerance: {tolerance.rel:.1%} + {format_size(tolerance.abs)}")
    lines.append(f"fixes: {_named_fixes(row)}")
    added = _tree_added(row)
    if added:
        lines.append(f"process tree: {added}")
    ranks = ranks_text(row)
    if ranks:
        lines.append(f"ranks: {ranks}")
    if row.fingerprint_changed:
        lines.append("setup differs from the baseline's: " + "; ".join(row.fingerprint_changed))
    if row.remediation:
        lines.append(remediation_text(row.remediation, row))
    lines += _child_failed(row)
    if row.snapshot:
        lines.append(f"memory snapshot: {row.snapshot} ({SNAPSHOT_HOWTO})")
    return lines


def _child_failed(row: Result) -> list[str]:
    """A failed child's error and the last lines of its traceback, each said once (once.py): the message's headline
    where the verdict's message holds it whole; no traceback of the plugin's own frames."""
    error = row.error
    if not error:
        return []
    kind = ", ".join(part for part in (error.kind, once.user_type(error.type)) if part)
    said = error.message and error.message in row.message
    lines = [f"child failed ({kind}): {once.first_line(error.message) if said else error.message}"]
    traceback = error.traceback or ""
    tail = [] if once.own_traceback(traceback, error.type) else traceback.rstrip().splitlines()[-TRACEBACK_TAIL:]
    if tail:
        lines += ["child's traceback (last lines):", *(f"  {line}" for line in tail)]
    return lines


def message_lines(rows: list[Result]) -> list[str]:
    """The section's line per case whose message a reader needs (failed, improved, an error, a regression that
    --gpu-budget-update accepted, or passed with a note: params or setup that differ from the baseline's, a budget not
    checked) and per memory snapshot; a failed case's
    line holds its message's headline, the rest being in the test's failure report; and per case the gate passed
    whose test failed after measure(), why."""
    lines = []
    for row in rows:
        noted = (row.verdict == Verdict.PASS and row.message != WITHIN
                 or row.verdict == Verdict.NO_BASELINE and row.passed and not row.message.startswith(RECORDED))
        if not row.passed or noted or row.verdict in (Verdict.IMPROVED, Verdict.REGRESSION, Verdict.ERROR):
            lines.append(f"{row.nodeid}: {row.message if row.passed else once.headline(row.message)}")
        if row.failed_after:
            lines.append(f"{row.nodeid}: {row.failed_after}")
        if row.snapshot:
            lines.append(f"{row.nodeid}: memory snapshot {row.snapshot} ({SNAPSHOT_HOWTO})")
    return lines


def failure_text(row: Result) -> str:
    """What a test failing on this case's verdict shows: the one-line reason, then the case's detail."""
    return "\n".join([verdict_failure(row.verdict, row.message), "", *case_detail(row)])


def terminal_table(rows: list[Result]) -> str:
    return tabulated(table_rows(rows), headers(rows), tablefmt="simple")
