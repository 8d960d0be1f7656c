"""Remediation search: the cheapest set of fixes that brings a failing scenario within its budget.

"Over budget" alone leaves the user guessing; this turns it into "passes with
these changes". The lattice is the scenario's supported fixes (fixes.py) that
are remedies, not yet applied, and runnable here. Sets are tried cheapest
first, each one measured for real by the caller's `measure` (a fresh child in
the gate), until one passes or the bound on runs is reached.

Cost of a set: each fix costs 1 (a change to the recipe) plus its trade-off
rank (none 0, slower 1, accuracy-risk 2); a set costs the sum. Ties go to
fewer fixes, then to the order the scenario lists its fixes in (the set whose
first differing fix is listed first). The empty set costs 0: a scenario that passes as it
is needs no fix ("not-needed"); its run is the caller's where it has one (the gate's
failing case), else the search's first.

What keeps the number of real runs small:
- a fix whose requirement is missing (no CUDA, a package not installed) is never run;
- a fix that changes nothing in a command scenario's command line, env or prepared
  assets (a param its command never reads) is never run: it would measure the case again;
  nor is one whose placeholder names no param of that scenario, nor a set holding
  one that changes nothing the others of the set do not (one that only sets what
  its companion sets): it would measure the smaller set again;
- a set with a conflicting pair or without a companion fix is never built (no run);
- the first passing set ends the search: every later set costs at least as
  much, so no superset of a passing set is ever run;
- no set holding one whose child crashed of something other than memory (it
  raised, a signal, a timeout) is run: it would crash again; the report counts
  them per crashed set, so no set is called the cheapest over one never measured;
- a hard bound, `max_runs`; the report says how many runs it took.

A set that passes while its runner reports one of the fixes added not applied
(info["fixes_applied"]) measured the case unchanged: its pass is noise, not the
answer, and the search goes on. A fix its runner reports not applied when run
alone is in no larger set that is run (each would measure the set without it
again); the report counts those sets per fix.

Plain functions of plain data: no pytest, no torch; `measure` is injected.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice

from gpu_budget.declare import fixes as library
from gpu_budget.declare.fixes import Fix, FixChangesNothing, FixError
from gpu_budget.declare.scenario import Scenario
from gpu_budget.judge import unmeasured
from gpu_budget.judge.compare import all_breaches, projected
from gpu_budget.model.budget import SCALES, Budget
from gpu_budget.model.entry import Spread
from gpu_budget.model.result import COUNT_CAP, Measurement, Remediation, Trial, Verdict
from gpu_budget.report.row_fields import FixNotes

DEFAULT_MAX_RUNS = 8


def weight(fix: Fix) -> int:
    return 1 + fix.rank


def lattice(scenario: Scenario, cuda: bool, scale: str | None = None,
            installed: Callable[[str], bool] | None = None) -> tuple[list[Fix], dict[str, str]]:
    """The fixes the search may combine (cheapest first), and why each other offered remedy was left out.

    scale: the one the candidates are measured at (None: any of the scenario's). installed: whether a fix's package
    is found where the case runs (its own environment's interpreter; None: this one).
    """
    offered = scenario.offered() or library.registered()
    table = {f.name: f for f in (*library.registered(), *offered)}
    usable: list[Fix] = []
    skipped: dict[str, str] = {}
    for fix in offered:
        library.unknown_companion(fix, table, f"scenario {scenario.name!r}: ")  # never tried without it
        library.unknown_rival(fix, table, f"scenario {scenario.name!r}: ")  # never kept apart from it
        if not fix.remedy or fix.name in scenario.fixes:
            continue
        lacking = library.missing(fix, cuda, installed)
        clash = _applied_clash(scenario, fix, table) or _kept_setting(scenario, fix, table)
        unfit = None if scenario.command is None or not fix.applies_to_commands else _unfit(scenario, fix, scale)
        if scenario.command is not None and not fix.applies_to_commands:
            skipped[fix.name] = "no args, env or params: it cannot apply to a command"
        elif unfit:
            skipped[fix.name] = unfit
        elif lacking:
            skipped[fix.name] = "needs " + ", ".join(lacking)
        elif clash:
            skipped[fix.name] = clash
        else:
            usable.append(fix)
    offered_names, dropped = {f.name for f in offered}, True
    while dropped:  # a fix whose offered companion is neither applied nor tried is in no set that can be built
        present = {f.name for f in usable} | set(scenario.fixes)
        gone = {f.name: c for f in usable for c in f.requires if c in offered_names and c not in present}
        skipped.update({name: f"needs fix {companion}, not tried here" for name, companion in gone.items()})
        usable, dropped = [f for f in usable if f.name not in gone], bool(gone)
    order = {f.name: i for i, f in enumerate(offered)}
    return sorted(usable, key=lambda f: (weight(f), order[f.name])), skipped


def _applied_clash(scenario: Scenario, fix: Fix, table: dict[str, Fix]) -> str | None:
    """Why `fix` can join no set with the scenario's applied fixes (one it does not replace conflicts with it, or sets
    a param it sets to another value), or None: every set holding it would be refused unbuilt, unsaid."""
    for name in scenario.fixes:
        if name in fix.replaces or name not in table:
            continue
        both = library.param_clash(fix, table[name])
        if fix.conflicts_with(table[name]) or both:
            return f"conflicts with {name}, already applied" + (f" (both set {', '.join(both)})" if both else "")
    return None


def _kept_setting(scenario: Scenario, fix: Fix, table: dict[str, Fix]) -> str | None:
    """Why `fix` cannot stand in for an applied fix it replaces, or None: that fix set params `fix` does not set, which
    stay as it set them once it is dropped (without_fixes keeps params; the values before it are not known), so a run
    of `fix` would measure the replaced fix's setting still, and the answer would name it removed."""
    for name in scenario.fixes:
        kept = [p for p in table[name].params if p not in fix.params] if name in fix.replaces and name in table else []
        if kept:
            return (f"replaces {name}, applied, whose {', '.join(kept)} would stay as it set {'it' if len(kept) == 1 else 'them'} "
                    f"(its run would measure {name}'s setting still): set {', '.join(kept)} in {fix.name}'s params too")
    return None


def _unfit(scenario: Scenario, fix: Fix, scale: str | None) -> str | None:
    """Why `fix` is not run on a command scenario, or None: its placeholder names no param here, or it leaves the
    command line (arguments, cwd, env) and prepare's params as they are at `scale` (None: at every scale), so a run
    of it would measure the unchanged scenario again."""
    try:
        fixed = scenario.without_fixes(*fix.replaces).with_fixes(fix.name)
    except FixChangesNothing:  # a param its command never reads (no supports=: the Scenario refuses it)
        return "changes nothing in this command"
    except FixError:
        return None  # it needs a companion fix: judged in the sets that hold both
    except ValueError as exc:
        return str(exc).removeprefix(f"scenario {scenario.name!r}: ")
    for at in [scale] if scale in scenario.scales else scenario.scales:
        if fixed.command_at(at, ".") != scenario.command_at(at, "."):
            return None
        if scenario.prepare and fixed.prepare_params(at) != scenario.prepare_params(at):
            return None
    return "changes nothing in this command"


def candidates(scenario: Scenario, usable: list[Fix]) -> Iterator[tuple[list[str], Scenario]]:
    """(added fixes, candidate Scenario) in cost order, valid combinations only.

    Lazy best-first walk over subsets (`usable` sorted by weight >= 1, then
    listed order): a set's children either add the next fix or swap its last
    fix for the next one, so a child never sorts before its parent and the heap
    yields every subset once, in (cost, size, listed order) order, without
    building the whole lattice. Listed order: the positions of a set's fixes in
    the scenario's list, sorted, compared in turn (the set whose first differing
    fix is listed first goes first), not their places in `usable`.
    """
    if not usable:
        return
    offered = [f.name for f in scenario.offered() or library.registered()]
    listed = [offered.index(f.name) if f.name in offered else len(offered) + i for i, f in enumerate(usable)]

    def entry(cost: int, picked: tuple[int, ...]) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
        return cost, len(picked), tuple(sorted(listed[i] for i in picked)), picked

    heap = [entry(weight(usable[0]), (0,))]
    while heap:
        cost, _, _, picked = heapq.heappop(heap)
        last = picked[-1]
        if last + 1 < len(usable):
            nxt = weight(usable[last + 1])
            heapq.heappush(heap, entry(cost + nxt, (*picked, last + 1)))
            heapq.heappush(heap, entry(cost - weight(usable[last]) + nxt, (*picked[:-1], last + 1)))
        chosen = [usable[i] for i in picked]
        replaced = {old for fix in chosen for old in fix.replaces}
        try:
            candidate = scenario.without_fixes(*replaced).with_fixes(*(f.name for f in chosen))
        except FixError:
            continue  # a conflicting pair or a missing companion fix: never built, never run
        if _idle(scenario, candidate, chosen):
            continue  # it measures a smaller set again
        yield [f.name for f in chosen], candidate


def _idle(scenario: Scenario, candidate: Scenario, chosen: list[Fix]) -> bool:
    """Whether a command scenario's set holds a fix that changes nothing the others do not: the set without it (and
    with what it replaced back) has the same command line and prepare params at every scale, so a run of the set
    measures that smaller set again, and a pass on noise would name a fix that did nothing. A fix that only sets what
    its companion sets is one; a fix alone is judged in the lattice (_unfit)."""
    if scenario.command is None or len(chosen) < 2:
        return False
    for fix in chosen:
        rest = [f for f in chosen if f is not fix]
        try:
            without = scenario.without_fixes(*(old for f in rest for old in f.replaces)).with_fixes(*(f.name for f in rest))
        except (FixError, ValueError):
            continue  # the others need it (a companion): it changes what they can be
        if all(without.command_at(at, ".") == candidate.command_at(at, ".")
               and (not scenario.prepare or without.prepare_params(at) == candidate.prepare_params(at))
               for at in scenario.scales):
            return True
    return False


def search(scenario: Scenario, measure: Callable[[Scenario], Trial], *, cuda: bool = False,
           max_runs: int = DEFAULT_MAX_RUNS, scale: str | None = None,
           installed: Callable[[str], bool] | None = None, as_is: Trial | None = None) -> Remediation:
    """Measure fix sets of `scenario`, cheapest first, until one passes or `max_runs` runs are spent.

    The cheapest set is the empty one: where `scenario` passes as it is, no fix is needed ("not-needed"), never a set
    of fixes as if one were. as_is: its own run, judged (trial_outcome), where the caller has one (the gate hands the
    failing case's); None: the search measures it first, a run counted and listed (no fixes) like the sets'.

    measure(candidate Scenario) -> a Trial (its fixes left empty: the search names them): one real run judged
    against the failing case's budget (trial_outcome), at `scale` (None: any of the scenario's). A set whose Trial
    is `crashed` (its child raised or died of something other than memory) is in no larger set that is run: each
    would crash again, at a real run's cost. A pass whose `not_applied` names a fix of the set is no answer.
    installed: whether a fix's package is found where the case runs (lattice).
    """
    _check(max_runs, scale, cuda, as_is)
    usable, skipped = lattice(scenario, cuda, scale, installed)
    tried = [] if as_is is not None else [replace(measure(scenario), fixes=(), not_applied={})]  # its own fixes: given
    as_is = as_is or tried[0]
    if as_is.verdict == Verdict.PASS:
        return Remediation("not-needed", (), tuple(scenario.fixes), (), as_is.peaks, len(tried), max_runs, tuple(tried),
                           skipped, tuple(f.name for f in usable))
    left = _Left()
    walk = candidates(scenario, usable)
    names = tuple(f.name for f in usable)
    for added, candidate in walk:
        if left.prune(added):
            continue
        if len(tried) >= max_runs:
            rest = [more for more, _ in islice(walk, COUNT_CAP + 1)]  # counting them all would build the lattice
            untried = COUNT_CAP + 1 if len(rest) > COUNT_CAP else 1 + sum(1 for more in rest if not left.prune(more))
            return Remediation("bound-reached", None, None, (), None, len(tried), max_runs, tuple(tried), skipped,
                               names, untried, left.pruned, left.unapplied)
        outcome = measure(candidate)
        trial = replace(outcome, fixes=tuple(added), not_applied={f: n for f, n in outcome.not_applied.items() if f in added})
        tried.append(trial)
        left.learn(trial)
        if trial.verdict == Verdict.PASS and not trial.not_applied:  # a fix it did not apply: the case measured again
            removed = tuple(f for f in scenario.fixes if f not in candidate.fixes)
            return Remediation("found", tuple(added), tuple(candidate.fixes), removed, trial.peaks, len(tried),
                               max_runs, tuple(tried), skipped, names, pruned=left.pruned, unapplied=left.unapplied)
    status = "none-passes" if tried else "no-candidates"
    return Remediation(status, None, None, (), None, len(tried), max_runs, tuple(tried), skipped, names,
                       pruned=left.pruned, unapplied=left.unapplied)


def _check(max_runs: object, scale: object, cuda: object, as_is: object) -> None:
    """search()'s bound, scale, device and the case's own run, each refused naming its value before any run."""
    if not isinstance(max_runs, int) or isinstance(max_runs, bool) or max_runs < 1:
        raise ValueError(f"max_runs={max_runs!r}: expected a whole number >= 1")
    if scale is not None and scale not in SCALES:  # else a command fix judged at every scale, unsaid
        raise ValueError(f"scale={scale!r}: expected one of {', '.join(SCALES)} (the scale measure runs), or None: any "
                         "of the scenario's")
    if not isinstance(cuda, bool):  # "yes" would run the fixes needing a GPU, None leave them out
        raise ValueError(f"cuda={cuda!r}: expected True or False (whether the measured children have a CUDA GPU)")  # noqa: TRY004  as max_runs
    if as_is is not None and not isinstance(as_is, Trial):  # "pass" would die on .verdict once the lattice was built
        raise TypeError(f"as_is={as_is!r}: expected a Trial (remediate.trial_outcome of the case's own run), or None: the "
                        "search runs the case first")


@dataclass
class _Left:
    """What the runs so far rule out, and the sets left unrun for it: sets holding one whose child crashed, counted
    under that set's name ("a+b"), and sets holding a fix its runner reported not applied when run alone (the set
    would measure the others again, and a pass of it would name a fix that did nothing)."""

    crashed: list[tuple[str, ...]] = field(default_factory=list)
    inert: list[str] = field(default_factory=list)
    pruned: dict[str, int] = field(default_factory=dict)
    unapplied: dict[str, int] = field(default_factory=dict)

    def learn(self, trial: Trial) -> None:
        if trial.crashed:
            self.crashed.append(trial.fixes)
        if len(trial.fixes) == 1 and trial.fixes[0] in trial.not_applied:
            self.inert.append(trial.fixes[0])

    def prune(self, added: list[str]) -> bool:
        """Whether `added` is ruled out (then counted): a crash of one fix alone is that fix's, a crash of a set whose
        smaller sets ran is that combination's."""
        chosen = set(added)
        holds = next(("+".join(crash) for crash in self.crashed if chosen.issuperset(crash)), None)
        if holds is not None:
            self.pruned[holds] = self.pruned.get(holds, 0) + 1
            return True
        idle = next((f for f in self.inert if f in chosen), None)
        if idle is not None:
            self.unapplied[idle] = self.unapplied.get(idle, 0) + 1
        return idle is not None


def needs_remedy(measurement: Measurement, budget: Budget, steps: int | None = None, recorded: Spread | None = None) -> bool:
    """Whether a measured case gives the search something to remedy: a budget broken, or an OOM crash. recorded: the
    spread its baseline stored over fresh runs, whose growth widens the growth allowance, as the gate judges it."""
    if not measurement.ok:
        return measurement.died_of_memory
    return bool(_breaches(measurement, budget, steps, recorded)[0])


def trial_outcome(measurement: Measurement, budget: Budget, steps: int | None = None, recorded: Spread | None = None) -> Trial:
    """One candidate's measurement judged against the budget alone, by the gate's own rule (each rank's peak, their
    imbalance, the growth projected to the marker's `steps`, within what the case's `recorded` runs widened it to): what
    `search` expects `measure` to return, with the fixes its runner reports not applied."""
    peaks = measurement.peaks
    unapplied = {f: note for f, note in FixNotes.from_json(measurement.info, ()).applied.items() if note != "applied"}
    if not measurement.ok:  # a death of memory did not pass: over budget, as the exploration counts it
        error, died = measurement.error, measurement.died_of_memory
        return Trial((), Verdict.OVER_BUDGET if died else Verdict.ERROR, peaks,
                     f"measured child failed ({error.kind}): {error.message}"[:300], measurement.wall_seconds,
                     crashed=not died)
    breaches, problem = _breaches(measurement, budget, steps, recorded)
    problem = _unmeasured(measurement, budget) or problem
    if problem and not breaches:  # a peak over budget fails the set whatever its growth or figures untold
        return Trial((), Verdict.ERROR, peaks, problem[:300], measurement.wall_seconds, not_applied=unapplied)
    said = "; ".join([*breaches, *([problem[:300]] if problem else [])])
    return Trial((), Verdict.OVER_BUDGET if breaches else Verdict.PASS, peaks, said, measurement.wall_seconds,
                 not_applied=unapplied)


def _unmeasured(measurement: Measurement, budget: Budget) -> str | None:
    """Why a budget tested nothing on the set's run, as the gate errs on a case's (judge/unmeasured.py), or None."""
    return (unmeasured.vram(budget, measurement, "the set's run")
            or unmeasured.imbalance(budget, measurement, "the set's run"))


def _breaches(measurement: Measurement, budget: Budget, steps: int | None,
              recorded: Spread | None) -> tuple[list[str], str | None]:
    """The budget broken as judge() finds it (compare.all_breaches: each rank's growth too), and why the growth could
    not be projected (a rank's too), if so. A growth too short to tell from a buffer is that problem, no breach: the
    gate errs on it, so it needs no remedy, and a set whose run reads so neither passes nor fails (an error)."""
    grown = projected(measurement, budget, steps, recorded)
    return all_breaches(measurement, budget, grown, certain=True), grown.problem
