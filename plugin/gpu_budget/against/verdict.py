"""Head judged against base, per case and per gated figure, from the rows of the interleaved runs.

The rule is the gate's own tolerance (judge/compare.py: a figure regresses past
`then * (1 + rel) + abs`, the test's tolerance, else marks.default_tolerance),
widened by the measured spread of each side: a figure regresses when head's
*smallest* run passes the limit of base's *largest* run, and improves when
head's largest run is below the floor of base's smallest. Where peaks repeat
(the steady allocator: spreads of a few KiB) this is the stored-baseline rule
itself; where a side's runs spread, a change must clear that spread as well.
A side whose spread is wider than the tolerance's own margin is `noisy`: the
runner adds pairs for it (pairs.py), and the row says a change below the spread
cannot be told from noise.

Each side starts with one run. With one run a side has no spread of its own, so
a head figure within UNSURE of the margin from the regression limit is `unsure`:
the default tolerance clears the spread measured over fresh sessions several
times over (marks.DEFAULT_TOLERANCE; benchmarks/RESULTS.md, sections 4 and 5,
say by how much), so a single run further than half the margin from the limit
is on its side of it by several such spreads; one closer gets a pair more, and
from two runs a side its measured spread judges as before.

The gated figures are compare.GATED's: host RAM (the process tree's peak where
every run of both sides holds it, else the main process's), live CPU tensor
bytes and the allocated GPU peak, each where every measured run of both sides
has it. A launcher case is compared rank by rank where every run of both sides
holds the same ranks (its row is its worst rank's, in which another rank could
grow unseen), else on its worst rank's figures (each row's `peaks`).

Budgets still apply to the head: a head run that fails its test (over budget,
an error, a lost reproduction) fails the case whatever base did, and so does a
head run whose test failed after measure() returned a row the gate passed (its
own assertion: the row's `test_outcome`, session/held.py), as the plain gate
fails it. A base run whose test failed so is only noted in the case's message:
its figures were measured all the same, and a base is not the head's to fix.
A test pytest failed with no case of it measured leaves no row (each session
records pytest's failures: collected.py): at head it fails, a case of it or
not; at base it is an "error at base", as an uncollected module is. A case only at
head is "new" (judged on its budget alone, its head figures shown), one only at
base is "removed" (listed, never failing), one whose base runs errored, or
whose module base could not collect, is "error at base" (head judged on its
budget alone, the base error named). A case whose module head could not collect
is an "error" (it fails). A test file git saw renamed between base and head
(renames.py) pairs its cases with the old file's: one case, "renamed from" the
old path. A case base lost and head gained after that is paired by its name
(the node id less its module path) where one lost and one gained case alone hold
it: a file rewritten past git's rename detection, a test moved to another file.
What is still gained while something is lost is "unpaired": it could be a lost
case renamed, so its line names each lost case with what its change would be
against it; it passes on its budget, as a new case does (`unpaired`). Stored
baselines play no part: where one exists it is shown beside
the pair (stored.py), never judged against. A case whose card= or params changed
since base is judged as usual, its message naming the change (card_changed,
params_changed): a change of its figures may be the knob's, not the code's.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gpu_budget.against import collected
from gpu_budget.declare.marks import default_tolerance
from gpu_budget.judge import reached
from gpu_budget.judge.compare import GATED
from gpu_budget.model.budget import Tolerance
from gpu_budget.model.card import Card
from gpu_budget.model.json_value import JsonObject
from gpu_budget.model.result import Result, Verdict, param_changes
from gpu_budget.units import format_change, format_size

UNSURE = 0.5  # a single run's head this share of the margin from the regression limit, or closer: a pair more


@dataclass(frozen=True)
class Figure:
    """One gated figure of one case: each side's runs (bytes, in run order) and the tolerance it is judged at. A case
    measured at head only has no base runs: its figure is shown, and nothing is judged against base."""

    metric: str
    base: tuple[int, ...]
    head: tuple[int, ...]
    tolerance: Tolerance
    rank: int | None = None  # a launcher case's rank whose figure this is; None: the case's (its worst rank's)

    @property
    def name(self) -> str:
        """"ram_tree", or "rank 1 ram_tree" for one rank's."""
        return self.metric if self.rank is None else f"rank {self.rank} {self.metric}"

    @property
    def base_median(self) -> float | None:
        return statistics.median(self.base) if self.base else None

    @property
    def head_median(self) -> float:
        return statistics.median(self.head)

    @property
    def change(self) -> float | None:
        return self.head_median / self.base_median - 1 if self.base_median else None

    @property
    def spread_base(self) -> int | None:
        return max(self.base) - min(self.base) if self.base else None

    @property
    def spread_head(self) -> int:
        return max(self.head) - min(self.head)

    @property
    def margin(self) -> float:
        """What the tolerance allows above base's median: a side spreading wider cannot be judged at it."""
        base = self.base_median if self.base else self.head_median
        return self.tolerance.limit(int(base)) - base

    @property
    def noisy(self) -> bool:
        return bool(self.base) and max(self.spread_base, self.spread_head) > self.margin

    @property
    def unsure(self) -> bool:
        """One run a side, and head within UNSURE x the margin of the regression limit: a pair more settles it."""
        if len(self.base) != 1 or len(self.head) != 1:
            return False
        return abs(self.head[0] - self.tolerance.limit(self.base[0])) <= UNSURE * self.margin

    @property
    def regressed(self) -> bool:
        return bool(self.base) and min(self.head) > self.tolerance.limit(max(self.base))

    @property
    def improved(self) -> bool:
        return bool(self.base) and max(self.head) < self.tolerance.floor(min(self.base))

    def said(self) -> str:
        """The regression or improvement in words, with the rule's figures."""
        rel, abs_ = f"{self.tolerance.rel:.1%}", format_size(self.tolerance.abs)
        tol = f"{rel} + {abs_}"
        if self.regressed:
            return (f"{self.name} head {format_size(min(self.head))} (lowest of {len(self.head)}) > base "
                    f"{format_size(max(self.base))} (highest of {len(self.base)}) + {tol}")
        if self.improved:
            return (f"{self.name} head {format_size(max(self.head))} (highest of {len(self.head)}) < base "
                    f"{format_size(min(self.base))} (lowest of {len(self.base)}) - {rel} - {abs_}")
        if not self.base:
            return f"{self.name} head {format_size(round(self.head_median))} (median of {len(self.head)}), no base run"
        return f"{self.name} within {tol} of base"

    def to_json(self) -> JsonObject:
        return {"metric": self.metric, "rank": self.rank, "base": list(self.base), "head": list(self.head), "change": self.change,
                "spread_base": self.spread_base, "spread_head": self.spread_head,
                "tolerance": {"rel": self.tolerance.rel, "abs": self.tolerance.abs}, "noisy": self.noisy,
                "regressed": self.regressed, "improved": self.improved}


@dataclass(frozen=True)
class CaseVerdict:
    """One case's verdict: its status (pass, regression, improved, new, removed, error at base, over-budget, error,
    failed, skipped), whether it passes, why, its figures, each side's rows in run order, and the module path it had
    at base where git saw its file renamed."""

    nodeid: str
    status: str
    passed: bool
    message: str
    figures: tuple[Figure, ...] = ()
    base: tuple[Result, ...] = ()
    head: tuple[Result, ...] = ()
    renamed_from: str | None = None
    paired_by: str | None = None  # how a case whose file moved was paired with base's: "git" (a rename) or "name"

    def to_json(self) -> JsonObject:
        return {"nodeid": self.nodeid, "status": self.status, "passed": self.passed, "message": self.message,
                "renamed_from": self.renamed_from, "paired_by": self.paired_by,
                "figures": [f.to_json() for f in self.figures]}


def by_case(runs: Sequence[Sequence[Result]]) -> dict[str, tuple[Result, ...]]:
    """Each case's rows across runs, in run order; cases in the order first seen."""
    out: dict[str, list[Result]] = {}
    for rows in runs:
        for row in rows:
            out.setdefault(row.nodeid, []).append(row)
    return {nodeid: tuple(rows) for nodeid, rows in out.items()}


def tolerance_of(rows: Sequence[Result]) -> Tolerance:
    """The case's own tolerance, as its rows report it, else the default at its scale."""
    for row in rows:
        if row.tolerance:
            return Tolerance(rel=float(row.tolerance.rel), abs=int(row.tolerance.abs))
    return default_tolerance(rows[0].scale if rows else "tiny")


def _ok(row: Result) -> bool:
    return row.measurement is not None and row.measurement.ok


def figures(base: Sequence[Result], head: Sequence[Result], tolerance: Tolerance) -> tuple[Figure, ...]:
    """The gated figures every finished run of both sides holds (host RAM: the tree where all hold it); head's alone,
    with no base run, where base finished none. A launcher case whose runs all hold the same ranks is compared rank
    by rank, as the stored gate compares it (compare.per_rank): its row is its worst rank's, so a rank that is not
    the worst could grow unseen; else (a world that changed) on the worst rank's figures."""
    base, head = [r for r in base if _ok(r)], [r for r in head if _ok(r)]
    if not head:
        return ()
    ranks = _common_ranks([*base, *head])
    if ranks:
        return tuple(fig for rank in ranks for fig in _gated(base, head, tolerance, rank))
    return _gated(base, head, tolerance)


def _common_ranks(rows: Sequence[Result]) -> tuple[int, ...]:
    """The ranks every row holds, where each holds the same ones; () where a row ran no launcher, or another world."""
    worlds = {tuple(sorted(r.rank for r in row.ranks)) for row in rows}
    return next(iter(worlds)) if len(worlds) == 1 else ()


def _gated(base: Sequence[Result], head: Sequence[Result], tolerance: Tolerance,
           rank: int | None = None) -> tuple[Figure, ...]:
    """The gated figures of the rows' peaks, or of one rank's where `rank` is given."""
    both = [r.peaks if rank is None else next(f.peaks for f in r.ranks if f.rank == rank) for r in [*base, *head]]
    out = []
    for metric in GATED:
        if metric == "ram" and all(p.ram_tree is not None for p in both):
            metric = "ram_tree"
        values = [p.figure(metric) for p in both]
        if all(v is not None for v in values):
            out.append(Figure(metric, tuple(values[:len(base)]), tuple(values[len(base):]), tolerance, rank))
    return tuple(out)


def judge_case(nodeid: str, base: Sequence[Result], head: Sequence[Result], *, renamed_from: str | None = None,
               base_error: str | None = None, head_error: str | None = None, base_failed: str | None = None,
               head_failed: str | None = None, by_name: bool = False) -> CaseVerdict:
    """One case's verdict from its rows at base and at head (either may be empty); `base_error` and `head_error`: why
    its module could not be collected at that side, `base_failed` and `head_failed`: why pytest failed its test at a
    side that measured no row of it, `renamed_from`: its module's path at base, `by_name`: paired with base's case by
    its name where git saw no rename (judge_all)."""
    base, head = tuple(base), tuple(head)
    renamed = f"renamed from {renamed_from}{BY_NAME if by_name else ''}; " if renamed_from else ""
    paired_by = None if not renamed_from else "name" if by_name else "git"
    if base_error is None and base_failed is not None:
        base_error = None if base else f"{FAILED_BEFORE}: {base_failed}"

    noted = base_failed_after(base) + card_changed(base, head) + params_changed(base, head)

    def verdict(status: str, passed: bool, message: str, figs: tuple[Figure, ...] = ()) -> CaseVerdict:
        return CaseVerdict(nodeid, status, passed, renamed + message + noted, figs, base, head, renamed_from, paired_by)

    if not head:
        return verdict(*_without_head(head_failed, head_error))
    if all(r.verdict == Verdict.SKIPPED for r in head):
        return verdict("skipped", True, head[0].message)
    figs = figures(base, head, tolerance_of(head))
    # on its verdict first; else a test failing after measure() (its own assertion), as the plain gate fails it
    failing = next((r for r in head if not r.passed), None) or next((r for r in head if r.failed_after), None)
    regressed = [f.said() for f in figs if f.regressed]
    at_base = f"; {_at_base(base_error)}" if base_error and not base else ""
    if failing is not None:
        more = f"; and against base: {'; '.join(regressed)}" if regressed else ""
        status = (str(failing.verdict) if not failing.passed and failing.verdict in (Verdict.OVER_BUDGET, Verdict.ERROR)
                  else "failed")  # a lost reproduction, or a test failing after measure()
        return verdict(status, False, f"at head: {failing.failed_after or failing.message}{more}{at_base}", figs)
    if not base and base_error:
        return verdict("error at base", True, f"{_at_base(base_error)}; head judged on its budget alone", figs)
    if not base:
        return verdict("new", True, "at head only: judged on its budget alone", figs)
    broken = next((r for r in base if r.verdict == Verdict.ERROR or (r.measurement is not None and not r.measurement.ok)), None)
    if broken is not None:
        return verdict("error at base", True, f"at base: {broken.message}; head judged on its budget alone",
                       figures((), head, tolerance_of(head)))
    if (missed := short_of_base(base, head)) and not params_changed(base, head):
        return verdict("error", False, f"at head: {missed}", figs)
    if not figs:
        return verdict("pass", True, "no gated figure measured on both sides")
    noisy = _noisy(figs)
    if regressed:
        return verdict("regression", False, "; ".join(regressed + noisy), figs)
    if improved := [f.said() for f in figs if f.improved]:
        return verdict("improved", True, "; ".join(improved + noisy), figs)
    return verdict("pass", True, "; ".join(noisy) or "within the tolerance of base", figs)


def short_of_base(base: Sequence[Result], head: Sequence[Result]) -> str:
    """Why head's runs are short of the phases every base run reached (judge/reached.py), naming those; "" where
    they are not, or where a side kept no phases. A launch's rank is held to its own phases at base too (its row is
    its worst rank's: a rank that exited early reads lower, improved), as the stored gate holds it
    (compare._ranks_short), short of base's last phase alone not (a rank ending as rank 0 marks it: a race), nor is
    a launch's row (its worst rank's phases: reached.unreached_ranked)."""
    kept = [list(r.measurement.phases) for r in base if r.measurement is not None and r.measurement.phases]
    runs = [set(r.measurement.phases) for r in head if r.measurement is not None]
    if not kept or not runs or len(kept) < len(base):
        return ""
    every = [name for name in kept[0] if all(name in k for k in kept[1:])]  # in base's order: its last is a race
    measured = set.union(*runs)
    launched = any(r.measurement is not None and r.measurement.ranks for r in [*base, *head])
    missed = (reached.unreached_ranked if launched else reached.unreached)(measured, every)
    if missed:
        return reached.message(missed, measured, len(every), "base", AT_BASE_TOO)
    return "; ".join(filter(None, (_rank_short(base, head, rank) for rank in _common_ranks([*base, *head]))))


def _rank_short(base: Sequence[Result], head: Sequence[Result], rank: int) -> str:
    """Why head's `rank` is short of the phases it reached in every base run, or ""."""
    kept = [list(f.phases) for r in base for f in r.ranks if f.rank == rank]
    every = [name for name in kept[0] if all(name in k for k in kept[1:])] if kept else []
    measured = {name for r in head for f in r.ranks if f.rank == rank for name in f.phases}
    missed = reached.unreached_ranked(measured, every)
    if not missed:
        return ""
    return f"rank {rank} " + reached.message(missed, measured, len(every), "base", AT_BASE_TOO).removeprefix("the run ")


AT_BASE_TOO = ("a case shortened on purpose by a knob of its scenario (a step count among its params) is judged on "
               "its figures, the change named; one shortened otherwise passes once base stops there too")
def _noisy(figs: Sequence[Figure]) -> list[str]:
    """What a row says of each figure whose runs spread wider than its tolerance's margin."""
    return [f"{f.name} spreads {format_size(max(f.spread_base, f.spread_head))} run to run, wider than the tolerance's "
            f"{format_size(int(f.margin))}: a smaller change cannot be told from noise" for f in figs if f.noisy]


FAILED_BEFORE = "its test failed with no case of it measured"  # pytest failed it; no row says why (collected.py)
BY_NAME = (" (git saw no rename: paired by the case's name, its class aside where that changed, which no other case "
           "base lost or head gained holds)")


def _without_head(head_failed: str | None, head_error: str | None) -> tuple[str, bool, str]:
    """The status, passed and message of a case with no row at head: its test failed there before measuring, its
    module could not be collected there, or it is gone."""
    if head_failed:
        return "failed", False, f"at head: {FAILED_BEFORE}: {head_failed}"
    if head_error:
        return "error", False, f"could not be collected at head: {head_error}"
    return "removed", True, "at base only: not collected at head"


def card_changed(base: Sequence[Result], head: Sequence[Result]) -> str:
    """A note where the sides ran as on different cards (`card=` changed since REF): the figures are compared as
    usual, as a stored baseline recorded as on another card is, but a reader must know; "" where they agree."""
    if not base or not head or _card_key(base[0]) == _card_key(head[0]):
        return ""
    return f"; card {base[0].card or 'none'} at base -> {head[0].card or 'none'} at head (figures compared as usual)"


def _card_key(row: Result) -> str | None:
    """The card a row ran as on, however its card= was spelled ("4 GiB" and "4096 MiB" are one card): its key, or
    read back from its label in a report from before rows kept the key."""
    return row.card_key or (None if row.card is None else Card.key_of(row.card))


def params_changed(base: Sequence[Result], head: Sequence[Result]) -> str:
    """A note where the sides ran the case with other params (its scenario's knobs changed since REF: another batch
    size, longer clips): the figures are compared as usual, but a change may be the knob's, not the code's; "" where
    they agree, or where a side's rows carry no params (a stored report from before rows held them)."""
    if not base or not head or base[0].params is None or head[0].params is None:
        return ""
    changed = param_changes(base[0].params, head[0].params)
    if not changed:
        return ""
    said = ", ".join(f"{name} {before} -> {after}" for name, before, after in changed)
    return f"; params changed since base: {said} (figures compared as usual)"


def _at_base(error: str) -> str:
    """Why base has no row of a case: its test failed there, or its module could not be collected."""
    return f"at base {error}" if error.startswith(FAILED_BEFORE) else f"could not be collected at base: {error}"


def base_failed_after(base: Sequence[Result]) -> str:
    """A note where a base run's test failed after measure() returned a row the gate passed: not the head's to fix,
    so it fails nothing; "" where none did."""
    failed = next((r for r in base if r.failed_after), None)
    return "" if failed is None else f"; at base {failed.failed_after} (not judged: a base is not the head's to fix)"


def judge_all(base_runs: Sequence[Sequence[Result]], head_runs: Sequence[Sequence[Result]], *,
              renamed: Mapping[str, str] | None = None, base_uncollected: Mapping[str, str] | None = None,
              head_uncollected: Mapping[str, str] | None = None, base_failed: Mapping[str, str] | None = None,
              head_failed: Mapping[str, str] | None = None) -> tuple[CaseVerdict, ...]:
    """Every case's verdict: head's cases in their order, then those at base only, then each module a side could not
    collect that holds no case of the other side.

    `renamed`: old module path -> new (node-id paths, renames.py): a base case of a renamed module is paired with the
    head case of the same name in the new module. `*_uncollected`: collector node id -> why it could not be
    collected at that side (collected.py). `*_failed`: test node id -> why pytest failed it at that side (collected.py):
    a case with no row at a side whose test failed there is judged so, and a test failed at head with no case of it at
    either side is one failed row."""
    renamed = dict(renamed or {})
    head = by_case(head_runs)
    base_errors = {_moved(where, renamed): error for where, error in (base_uncollected or {}).items()}
    head_errors = dict(head_uncollected or {})
    old = {new: was for was, new in renamed.items()}
    base_fails = {_moved(test, renamed): why for test, why in (base_failed or {}).items()}
    head_fails, tests = dict(head_failed or {}), set()
    base, by_name = _base_paired(by_case(base_runs), head, renamed, (base_errors, base_fails), (head_errors, head_fails))
    out, covered = [], set()
    for nodeid in [*head, *(n for n in base if n not in head)]:
        base_where = collected.holder(nodeid, base_errors) if nodeid not in base else None
        head_where = collected.holder(nodeid, head_errors) if nodeid not in head else None
        covered |= {where for where in (base_where, head_where) if where is not None}
        module = nodeid.split("::")[0]
        was = old.get(module) if nodeid in base or base_where is not None else None
        if nodeid in by_name:  # its old module; its old node id where its class changed
            was = by_name[nodeid] if case_name(by_name[nodeid]) != case_name(nodeid) else by_name[nodeid].split("::")[0]
        rows = head.get(nodeid) or base.get(nodeid) or ()
        test = rows[0].test_nodeid if rows else nodeid
        tests.add(test)
        out.append(judge_case(nodeid, base.get(nodeid, ()), head.get(nodeid, ()), renamed_from=was,
                              base_error=base_errors.get(base_where), head_error=head_errors.get(head_where),
                              base_failed=base_fails.get(test), head_failed=head_fails.get(test),
                              by_name=nodeid in by_name))
    out = unpaired(out)
    out += [judge_case(test, (), (), head_failed=why) for test, why in head_fails.items() if test not in tests]
    return tuple(out + _uncollected_rows(head_errors, base_errors, covered, old))


def _base_paired(raw: Mapping[str, tuple[Result, ...]], head: Mapping[str, tuple[Result, ...]],
                 renamed: Mapping[str, str], base_said: tuple[Mapping[str, str], Mapping[str, str]],
                 head_said: tuple[Mapping[str, str], Mapping[str, str]]) -> tuple[dict[str, tuple[Result, ...]],
                                                                                   dict[str, str]]:
    """Base's rows keyed by the head case each pairs with (its module renamed where git saw the file renamed, else
    by its name: pair_by_name), else by base's node id; and head's node id -> base's for those paired by name.
    `*_said`: a side's uncollected modules and failed tests, whose cases are not lost or gained (_excused)."""
    base: dict[str, tuple[Result, ...]] = {}
    for nodeid, rows in raw.items():
        target = _moved(nodeid, renamed)
        base[target if target in head and target not in raw else nodeid] = rows
    by_name = pair_by_name([n for n in base if n not in head and not _excused(n, *head_said)],
                           [n for n in head if n not in base and not _excused(n, *base_said)])
    for new, was in by_name.items():
        base[new] = base.pop(was)
    return base, by_name


def _uncollected_rows(head_errors: Mapping[str, str], base_errors: Mapping[str, str], covered: set[str],
                      old: Mapping[str, str]) -> list[CaseVerdict]:
    """One row for each module a side could not collect that holds no case judged above (`covered`)."""
    out = []
    for where, error in head_errors.items():
        if where not in covered:
            also = f"; at base too: {base_errors[where]}" if where in base_errors else ""
            out.append(CaseVerdict(where, "error", False, f"could not be collected at head: {error}{also}"))
            covered.add(where)
    for where, error in base_errors.items():
        if where not in covered:
            out.append(CaseVerdict(where, "error at base", True, f"could not be collected at base: {error}; no case "
                                                                 f"of it measured at head", renamed_from=old.get(where)))
    return out


def case_name(nodeid: str) -> str:
    """A case's node id less its module's path: the class, function, parametrize id and label ("test_x[8]")."""
    return nodeid.partition("::")[2]


def function_name(nodeid: str) -> str:
    """A case's name less its class too: the function, parametrize id and label ("test_x[8]")."""
    return nodeid.rpartition("::")[2] if "::" in nodeid else ""


def pair_by_name(lost: Sequence[str], gained: Sequence[str]) -> dict[str, str]:
    """Head's node id -> base's, for each case base lost and head gained (no pair after git's renames) under the same
    case name in another module, where that name is held by that one case on each side: a test file renamed with
    heavy edits (under git's 50 % similarity) or a test moved to another file keeps its name, not its module path.
    Then, among those still unpaired, by the name less its class, held so by one case on each side: a test moved
    into a class, out of one, or to another (in its module or another) keeps its function, id and label."""
    pairs = _unique_pairs(lost, gained, case_name)
    rest_lost = [n for n in lost if n not in pairs.values()]
    return pairs | _unique_pairs(rest_lost, [n for n in gained if n not in pairs], function_name)


def _unique_pairs(lost: Sequence[str], gained: Sequence[str], name: Callable[[str], str]) -> dict[str, str]:
    """Gained -> lost, for each `name` that one lost and one gained case alone hold."""
    names_lost, names_gained = _by_name(lost, name), _by_name(gained, name)
    return {ids[0]: names_lost[key][0] for key, ids in names_gained.items()
            if key and len(ids) == 1 and len(names_lost.get(key, ())) == 1}


def _by_name(nodeids: Sequence[str], name: Callable[[str], str]) -> dict[str, list[str]]:
    """The node ids grouped by `name`."""
    groups: dict[str, list[str]] = {}
    for nodeid in nodeids:
        groups.setdefault(name(nodeid), []).append(nodeid)
    return groups


def _excused(nodeid: str, errors: Mapping[str, str], fails: Mapping[str, str]) -> bool:
    """The other side has no row of the case for a reason it says (its module not collected, its test failed there):
    not a case lost or gained, so never paired by name."""
    return collected.holder(nodeid, errors) is not None or any(nodeid == t or nodeid.startswith(t + "::") for t in fails)


UNPAIRED_SHOWN = 3  # the cases a flag names, the rest counted


def unpaired(cases: Sequence[CaseVerdict]) -> list[CaseVerdict]:
    """The verdicts with each case at head only flagged "unpaired" where base lost a case in the same change (no pair
    by git's renames nor by name): its change against that case, if it is that case renamed (a new name, changed
    parametrize ids), cannot be judged. It passes on its budget as a new case does, but never as a plain "new": its
    line names the cases it could be, each with what the change would be against it. Each such removed case's line
    names the unpaired cases in turn."""
    lost = [c for c in cases if c.status == "removed"]
    gained = [c for c in cases if c.status == "new"]
    if not lost or not gained:
        return list(cases)
    out = []
    for case in cases:
        if case.status == "new":
            each = [_as_if(was, case) for was in lost[:UNPAIRED_SHOWN]]
            message = (f"at head only, and base lost {len(lost)} case(s) in the same change that no case pairs "
                       f"with: {'; '.join(each)}{_more(lost)}: if it is one of them renamed, its change against it is not "
                       f"judged (keep the case's name and it is paired); judged on its budget alone")
            case = CaseVerdict(case.nodeid, "unpaired", case.passed, message, case.figures, case.base, case.head)
        elif case.status == "removed":
            names = ", ".join(c.nodeid for c in gained[:UNPAIRED_SHOWN])
            case = CaseVerdict(case.nodeid, case.status, case.passed,
                               f"{case.message}; head gained {len(gained)} case(s) in the same change that no "
                               f"case pairs with ({names}{_more(gained)}): if one of them is it renamed, its change is not "
                               f"judged", case.figures,
                               case.base, case.head)
        out.append(case)
    return out


def _more(cases: Sequence[CaseVerdict]) -> str:
    """" and N more" for the cases past the UNPAIRED_SHOWN a flag names; else ""."""
    return f" and {len(cases) - UNPAIRED_SHOWN} more" if len(cases) > UNPAIRED_SHOWN else ""


def _as_if(was: CaseVerdict, case: CaseVerdict) -> str:
    """A lost case named, with what the gained case's change would be against it were it that case renamed."""
    figs = figures(was.base, case.head, tolerance_of(case.head))
    if not figs:
        return was.nodeid
    fig = figs[0]
    change = "" if fig.change is None else f", head {format_change(fig.change)}"
    past = ", past the tolerance" if fig.regressed else ""
    return f"{was.nodeid} ({fig.name} {format_size(round(fig.base_median))} at base{change}{past})"


def _moved(nodeid: str, renamed: Mapping[str, str]) -> str:
    """The node id with its module path renamed where git saw the file renamed, else as it is."""
    module, sep, rest = nodeid.partition("::")
    return f"{renamed[module]}{sep}{rest}" if module in renamed else nodeid


def undecided(cases: Sequence[CaseVerdict]) -> list[CaseVerdict]:
    """The cases whose figures spread wider than their tolerance, or whose one run a side falls near its limit: more
    pairs may settle them."""
    return [c for c in cases if c.status in ("pass", "regression", "improved")
            and any(f.noisy or f.unsure for f in c.figures)]


def counts(cases: Sequence[CaseVerdict]) -> Mapping[str, int]:
    out: dict[str, int] = {}
    for case in cases:
        out[case.status] = out.get(case.status, 0) + 1
    return out
