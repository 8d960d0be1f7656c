"""Hypothesis exploration of a scenario's knobs: the worst case, the boundary, the smallest breaking configuration.

Real runs cost seconds to minutes each, so Hypothesis searches a *prediction*:
the GPU-free estimate of the step's tensor peak (estimate.py), calibrated by
the real runs made so far (measured ~ slope x estimate + intercept: one run
gives an offset, two or more a line, since a process's non-tensor memory can
grow with its tensors; a line that does not rise gives way to the largest
offset seen). In order, with at most `max_real_runs` real runs:

  1. a real run at the envelope's smallest configuration (calibration);
  2. Hypothesis towards the worst case: hypothesis.target(predicted MiB),
     the envelope's top corner its first example, then a climb to the best
     neighbour; each example also checks that the
     estimate is monotone in each monotone knob (a drop is reported as a
     finding, it does not fail); the worst case is then run for real (a
     second calibration point);
  3. Hypothesis on the budget property (predicted <= budget): a failure
     shrinks to the smallest breaking configuration and stays in the example
     database, so the next run tries it first (if the examples miss while the
     worst case is over, the worst case is lowered knob by knob instead);
  4. the boundary along one knob (the largest value within the budget, the
     other knobs at the worst case's values): predicted, then bracketed by
     real runs (two when the prediction is right, a bisection when not);
  5. the smallest breaking configuration, run for real.

Opt-in: tests call the fixture's `gpu_budget.explore(...)` (explore_scenario
here) and are skipped unless --gpu-budget-explore is given;
--gpu-budget-explore-examples sets max_examples. The session keeps every
exploration in its data, so the table and the JSON report show it under xdist
too. Importing this module imports neither torch nor hypothesis.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import numbers
import os
import time
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from gpu_budget.declare import fixes as fix_library
from gpu_budget.declare.marks import BudgetMark, refuse_bare
from gpu_budget.measure.fit import least_squares
from gpu_budget.model.budget import SCALES
from gpu_budget.model.card import CONTEXT_ALLOWANCE
from gpu_budget.search.boundary import largest_fitting
from gpu_budget.search.disagree import disagreeing
from gpu_budget.search.envelope import Envelope
from gpu_budget.search.exploration import Boundary, Calibration, Config, Exploration, Knob, NotMonotone, Probe, RealRun, config_text, peak_text
from gpu_budget.units import format_size, parse_size

if TYPE_CHECKING:
    from hypothesis import HealthCheck, Phase
    from hypothesis import settings as Settings
    from hypothesis.database import ExampleDatabase

    from gpu_budget.declare.scenario import Scenario
    from gpu_budget.model.result import Measurement

DEFAULT_EXAMPLES = 20
DEFAULT_REAL_RUNS = 8
DATABASE_DIR = ".hypothesis/gpu-budget-explore"  # under the rootdir; CI caches it (docs/estimator.md)

Key = tuple[tuple[str, Knob], ...]  # a configuration as a dict key: its items, sorted


def _key(config: Config) -> Key:
    return tuple(sorted(config.items()))


class _Budgeted:
    """Real runs, cached by configuration and counted against a cap."""

    def __init__(self, measure: Callable[[Config], int | None], cap: int, log: list[RealRun]) -> None:
        self.measure, self.cap, self.log = measure, cap, log
        self.cache: dict[Key, int | None] = {}

    def __call__(self, config: Config) -> int | None:
        key = _key(config)
        if key not in self.cache:
            if len(self.log) >= self.cap:
                raise _OutOfRuns(f"the real-run cap ({self.cap}) is spent")
            t0 = time.perf_counter()
            try:
                peak = self.measure(config)
            except RunFailed as exc:  # it ran: listed and counted, with the peak it reached
                self.log.append(RealRun(dict(config), exc.peak, round(time.perf_counter() - t0, 1), exc.how))
                raise
            self.cache[key] = peak
            self.log.append(RealRun(dict(config), peak, round(time.perf_counter() - t0, 1)))
        return self.cache[key]


class _OutOfRuns(Exception):
    pass


class RunFailed(Exception):
    """A real run that failed other than by running out of memory: the exploration stops and reports it.

    how: the failure without the run's configuration; peak: the highest it reached before it failed (None: unread).
    """

    def __init__(self, config: Config, how: str, peak: int | None = None) -> None:
        super().__init__(f"real run {config_text(config)} {how}")
        self.how, self.peak = how, peak


class EstimateFailed(Exception):
    """An estimate that raised or returned no byte count: the exploration stops and reports it, naming the
    configuration, with the real runs it made (Hypothesis runs the estimate, so this leaves it, or a group, too)."""


def _estimate_failed(exc: BaseException) -> EstimateFailed | None:
    """The EstimateFailed in `exc` or, where Hypothesis gathered several failures into a group, in the group."""
    if isinstance(exc, EstimateFailed):
        return exc
    return next(filter(None, map(_estimate_failed, getattr(exc, "exceptions", ()))), None)




class _Calibration:
    """measured ~ slope * estimate + intercept, least squares over the real runs so far.

    One run: the estimate plus a constant offset (slope 1). More: the fitted
    line, since a process's non-tensor memory can grow with its tensors (a
    Trainer's input pipeline does). A line that does not rise (one noisy run
    can tilt two points down) is no model of memory: it would predict less the
    more the estimate holds, and turn the search for the worst case upside
    down; the largest offset seen stands instead (slope 1), so no real run is
    predicted below what it measured, and `refused` keeps the line for the report. So it does where no line can be
    fitted: runs of one estimate (a knob the estimate does not read) that measured apart. Fitted once per real run, when
    its point is added: every prediction and the report read the line kept.
    """

    def __init__(self) -> None:
        self.points: list[tuple[int, int]] = []
        self.line: tuple[float, float] = (1.0, 0.0)  # (slope, intercept) used; no run yet: the estimate itself
        self.refused: tuple[float, float] | None = None  # the fitted line where it does not rise (so is not used)

    def add(self, estimate: int, measured: int | None) -> None:
        if measured is None:
            return
        self.points.append((estimate, measured))
        fitted = least_squares([p[0] for p in self.points], [p[1] for p in self.points])
        self.refused = fitted if fitted is not None and fitted[0] <= 0 else None
        if fitted is not None and fitted[0] > 0:
            self.line = fitted
        else:  # a line that does not rise, or none (one point, or one estimate): the largest offset, never under a run
            self.line = 1.0, max(y - x for x, y in self.points)

    def record(self) -> Calibration:
        """The line used, for the report; with the fitted line it refused, where it did."""
        slope, intercept = self.line
        refused = (self.refused[0], int(self.refused[1])) if self.refused else ()
        return Calibration(slope, int(intercept), len(self.points), *refused)

    def __call__(self, estimate: int) -> int:
        slope, intercept = self.line
        return int(slope * estimate + intercept)


class _Predictor:
    """The prediction Hypothesis searches: the estimate (cached by configuration), calibrated by every real run."""

    def __init__(self, estimate: Callable[[Config], int], measure: Callable[[Config], int | None]) -> None:
        self._estimate, self._measure = estimate, measure
        self.estimates: dict[Key, int] = {}
        self.calibration = _Calibration()

    def est(self, config: Config) -> int:
        key = _key(config)
        if key not in self.estimates:
            try:
                value = self._estimate(config)
            except Exception as exc:
                raise EstimateFailed(f"estimate of {config_text(config)} raised {type(exc).__name__}: {exc}") from exc
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
                raise EstimateFailed(f"estimate of {config_text(config)} returned {value!r}: expected bytes, "
                                     "a number >= 0")
            self.estimates[key] = int(value)
        return self.estimates[key]

    def measured(self, config: Config) -> int | None:
        """A real run's peak, added to the calibration. Estimated first: a configuration the estimate refuses (a batch
        of 0) is never run, and a run is never made, then lost from the report as the estimate beside it fails."""
        estimate = self.est(config)
        peak = self._measure(config)
        self.calibration.add(estimate, peak)
        return peak

    def __call__(self, config: Config) -> int:
        return self.calibration(self.est(config))


@dataclass(frozen=True)
class _Hypothesis:
    """How the two searches run Hypothesis: their examples, the worst-case search's seed, the example database."""

    max_examples: int
    seed: int | None
    database: Path | None
    quiet: tuple[HealthCheck, ...]  # every health check, suppressed

    @classmethod
    def of(cls, max_examples: int, seed: int | None, database: Path | None) -> _Hypothesis:
        from hypothesis import HealthCheck

        return cls(max_examples, seed, database, tuple(HealthCheck))

    def settings(self, database: ExampleDatabase | None, phases: tuple[Phase, ...]) -> Settings:
        from hypothesis import settings

        return settings(database=database, phases=phases, max_examples=self.max_examples, deadline=None,
                        derandomize=False, print_blob=False, suppress_health_check=list(self.quiet))


def explore(name: str, envelope: Envelope, budget: int | str, estimate: Callable[[Config], int],
            measure: Callable[[Config], int | None] | None, boundary: str | None = None,
            max_examples: int = DEFAULT_EXAMPLES, max_real_runs: int = DEFAULT_REAL_RUNS, database: Path | None = None,
            seed: int | None = 0, metric: str = "ram", card: str | None = None, variant: str = "") -> Exploration:
    """Search `envelope` with Hypothesis on estimate(config) + offset, then confirm with measure(config).

    estimate(config) -> predicted tensor bytes (cheap); measure(config) -> a real
    run's peak in bytes, or None for a run that failed (counted as over budget);
    measure=None: no real run can measure the metric here (a card's VRAM on a
    host without a GPU), so the search stands on the estimate alone and says so.
    card: the card the budget is (its label), for the report.
    boundary: the knob whose largest value within the budget is found (others
    at the worst case's values). seed: Hypothesis' seed for the worst-case
    search (None: random); the budget run is seeded only where no example
    database is kept (database=None, or one that cannot be written), as a seed
    stops Hypothesis from saving to it. variant: what else sets this exploration apart from another of
    the same name (a scenario's fixes, params and scale): its own folder of the example database.
    """
    _check(envelope, boundary, max_real_runs, seed, estimate, max_examples)
    budget = parse_size(budget)  # as a marker's budget: a negative, True or None named, never explored
    database = _folder(database)
    t0 = time.perf_counter()
    result = Exploration(name, budget, metric, envelope.described(), card=card,
                         verified=measure is not None)
    predict = _Predictor(estimate, measure or _unmeasured)
    real = _Budgeted(predict.measured, max_real_runs if measure is not None else 0, result.real_runs)
    shelf = _writable(_shelf(database, name, envelope, budget, metric, variant, estimate), result)
    hypothesis = _Hypothesis.of(max_examples, seed, shelf)
    try:
        if measure is None:
            _estimate_only(envelope, budget, boundary, predict, result, hypothesis)
            _close_calls(envelope, budget, predict, result, estimate)
        else:
            _search(envelope, budget, boundary, predict, real, result, hypothesis)
    except _OutOfRuns as exc:
        result.problems.append(str(exc))
    except RunFailed as exc:
        result.problems.append(str(exc))
        result.failed = str(exc)
    except BaseException as exc:  # an estimate that failed inside a Hypothesis run leaves it as itself or in a group
        failed = _estimate_failed(exc)
        if failed is None:
            raise
        result.problems.append(str(failed))
        result.failed = str(failed)
    result.worst, result.smallest_failing = (_run_before(p, real.cache) for p in (result.worst, result.smallest_failing))
    result.problems += disagreeing(envelope, result.real_runs, budget, result.boundary)
    result.calibration = predict.calibration.record()
    result.estimates, result.seconds = len(predict.estimates), round(time.perf_counter() - t0, 1)
    return result


def _run_before(probe: Probe | None, peaks: Mapping[Key, int | None]) -> Probe | None:
    """The probe with the peak of a real run of its configuration made before the search stopped (a boundary run
    of it, then the cap spent): unconfirmed, it would read as a run that died of memory."""
    if probe is None or probe.measured is not None or peaks.get(_key(probe.config)) is None:
        return probe
    return replace(probe, measured=peaks[_key(probe.config)])


def _check(envelope: Envelope, boundary: str | None, max_real_runs: int, seed: object = 0,
           estimate: object = None, max_examples: object = DEFAULT_EXAMPLES) -> None:
    """A bad boundary, real-run cap, seed, estimate or number of examples, named before any run."""
    if boundary is not None and (not isinstance(boundary, str) or boundary not in envelope.knobs):  # ["b"]: unhashable
        raise ValueError(f"boundary={boundary!r} is not a knob of the envelope (its knobs: {', '.join(envelope.knobs)})")
    if boundary is not None and boundary not in envelope.monotone_knobs():
        raise ValueError(f"boundary={boundary!r} is not among the envelope's monotone knobs "
                         f"({', '.join(envelope.monotone_knobs())}): the boundary search assumes memory grows along it")
    if not isinstance(max_real_runs, int) or isinstance(max_real_runs, bool) or max_real_runs < 1:
        raise ValueError(f"max_real_runs={max_real_runs!r}: expected a whole number >= 1")
    if not isinstance(max_examples, int) or isinstance(max_examples, bool) or max_examples < 1:  # else Hypothesis's
        raise ValueError(f"max_examples={max_examples!r}: expected a whole number >= 1")  # error, after a real run
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):  # True would be seed 1, unsaid
        raise ValueError(f"seed={seed!r}: expected a whole number (or None: random)")
    if estimate is not None and not callable(estimate):  # else met mid-search: "'int' object is not callable"
        raise ValueError(f"estimate={estimate!r}: expected a function of the knobs that returns bytes (or None: the "
                         "estimator's)")


def _folder(database: object) -> Path | None:
    """The example database's folder: a path, a string too; anything else named (it died as "unsupported operand
    type(s) for /" once the search had started)."""
    if database is None:
        return None
    if not isinstance(database, str | os.PathLike):
        raise TypeError(f"database={database!r}: expected a folder (a path), or None: no example database")
    return Path(database)


def _shelf(database: Path | None, name: str, envelope: Envelope, budget: int, metric: str, variant: str = "",
           estimate: Callable[[Config], int] | None = None) -> Path | None:
    """This exploration's own folder of the example database. Every exploration's budget property is one Hypothesis
    test function, so under one key each would replay the others' failures, find them passing and delete them. The
    estimate is keyed here, so explore() called directly keys it too; the estimator's own (_Estimator) adds nothing:
    its folders stay where they were."""
    if database is None:
        return None
    knobs = sorted((knob, repr(spec)) for knob, spec in envelope.knobs.items())
    own = () if estimate is None or isinstance(estimate, _Estimator) else (_estimate_key(estimate),)
    key = (name, metric, budget, knobs, *((variant,) if variant else ()), *own)
    return database / hashlib.sha256(repr(key).encode()).hexdigest()[:16]


def _writable(shelf: Path | None, result: Exploration) -> Path | None:
    """The shelf, made; None, with a problem said, where it cannot be (a file in its way, a read-only folder):
    Hypothesis saves nothing there and says nothing, so the next run would silently not start from the failures."""
    if shelf is None:
        return None
    try:
        shelf.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        result.problems.append(f"the example database {shelf} cannot be written ({exc.strerror or exc}): failing "
                               "examples are not saved, so the next run does not start from them")
        return None
    return shelf


def _variant(scenario: Scenario, envelope: Envelope, scale: str) -> str:
    """What sets an exploration of `scenario` apart from another of the same name: with_fixes() and with_params()
    keep the name, so an as-reported case and its fixed variant (or one scale and another) would share a folder.
    One estimate= and another are told apart by _shelf."""
    rest = {k: v for k, v in scenario.params_for(scale).items() if k not in envelope.knobs}
    return json.dumps({"scale": scale, "fixes": list(scenario.fixes), "params": rest}, sort_keys=True, default=repr)


@dataclass(frozen=True)
class _Estimator:
    """The estimator's prediction of a scenario's peak (knobs -> bytes), where a test gives no estimate= of its own:
    on the training device, the CPU's step peak or the CUDA mode's allocated peak."""

    scenario: Scenario
    scale: str
    cuda: bool

    def __call__(self, knobs: Config) -> int:
        from gpu_budget.estimate import estimate_scenario
        from gpu_budget.estimate.cuda import Device

        found = estimate_scenario(self.scenario.with_params(**knobs), self.scale, device=Device(cuda=self.cuda))
        # on CUDA the metric is max_memory_allocated, which the estimate models through the caching allocator (blocks
        # it leaves unsplit count whole): the figure `estimate --card` holds against a card, not the tensors' peak
        return found.allocated_peak if self.cuda else found.step_peak


def _estimate_key(estimate: Callable[[Config], int]) -> str:
    """An estimate= as a key: its module and name, and its code (a lambda beside a lambda shares a name), never its
    line (an edit above it would move the folder and lose its saved failures); a partial's arguments too."""
    bound = ""
    while isinstance(estimate, functools.partial):
        bound += repr((estimate.args, sorted(estimate.keywords.items())))
        estimate = estimate.func
    name = f"{getattr(estimate, '__module__', '')}:{getattr(estimate, '__qualname__', type(estimate).__qualname__)}"
    code = getattr(estimate, "__code__", None)
    return name + bound + ("" if code is None else ":" + _code_hash(code))


def _code_hash(code: types.CodeType) -> str:
    """A function's code, less its lines: the bytecode, the names it reads and its constants (nested code, so)."""
    consts = [_code_hash(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return hashlib.sha256(code.co_code + repr((code.co_names, consts)).encode()).hexdigest()[:16]


def _unmeasured(config: Config) -> int | None:
    raise _OutOfRuns("no real run can measure this metric here")


def _estimate_only(envelope: Envelope, budget: int, boundary: str | None, predict: _Predictor, result: Exploration,
                   hypothesis: _Hypothesis) -> None:
    """The steps of _search on the estimate alone: the worst case, the smallest configuration over the budget and
    the boundary, each predicted and none run (no calibration: the offset is the estimator's own error)."""
    worst = _worst_case(envelope, predict, result, hypothesis)
    _smallest_failing(envelope, budget, predict, result, hypothesis)
    if boundary is not None:
        result.boundary = Boundary(boundary, {k: v for k, v in worst.items() if k != boundary})
        _predicted_boundary(envelope, budget, predict, result)
        at, knob = result.boundary.at, boundary  # the predictions made on its line: the worst case, the bisection
        line = {dict(k)[knob]: predict(dict(k)) for k in predict.estimates if all(dict(k)[a] == v for a, v in at.items())}
        said = replace(result.boundary, value=result.boundary.predicted_value, peaks=line)
        result.problems += _contradicting(envelope.values(knob), said, budget, "predictions", "the estimate")


def _close_calls(envelope: Envelope, budget: int, predict: _Predictor, result: Exploration,
                 estimate: Callable[[Config], int]) -> None:
    """The configurations an estimate-only search singled out whose margin to the budget is inside the CUDA estimate's
    own error (on_card), said too close to call as `estimate --card` says it, never a plain within or over no run
    verified. The worst case's is a problem: whether anything in the envelope breaks the budget is in doubt. The edges
    (the boundary's value and the one above it, the smallest over) sit near the budget by design along a fine knob:
    noted (close_calls), no problem. A test's own estimate=, or the CPU estimate, has no stated error: no band."""
    from gpu_budget.estimate.on_card import close_call

    if not isinstance(estimate, _Estimator) or not estimate.cuda:
        return
    edges = [result.smallest_failing.config] if result.smallest_failing is not None else []
    b = result.boundary
    if b is not None:
        values = envelope.values(b.knob)
        edge = -1 if b.predicted_value is None else values.index(b.predicted_value)
        line = [{**b.at, b.knob: values[i]} for i in (edge, edge + 1) if 0 <= i < len(values)]
        edges = [{k: c[k] for k in envelope.knobs} for c in line] + edges  # its knobs in the envelope's order
    said: dict[Key, str] = {}
    for config in [result.worst.config] + edges if result.worst is not None else edges:
        why = close_call(predict(config), budget)
        if why is not None and _key(config) not in said:
            said[_key(config)] = f"{config_text(config)}: the estimate, {format_size(predict(config))}, {why}"
    worst = said.pop(_key(result.worst.config), None) if result.worst is not None else None
    result.problems += [f"worst case {worst}"] if worst else []
    result.close_calls = list(said.values())


def _search(envelope: Envelope, budget: int, boundary: str | None, predict: _Predictor, real: _Budgeted,
            result: Exploration, hypothesis: _Hypothesis) -> None:
    """The steps of the module's docstring, in order, each filling `result` (a spent real-run cap stops them)."""
    first = envelope.smallest()
    peak = real(first)
    result.offset = None if peak is None else peak - predict.est(first)
    if peak is None and set(envelope.monotone_knobs()) == set(envelope.knobs):
        _none_fits(envelope, first, boundary, predict, result)
        return
    worst = _worst_case(envelope, predict, result, hypothesis)
    result.worst = replace(result.worst, measured=real(worst))  # a second calibration point
    _smallest_failing(envelope, budget, predict, result, hypothesis)
    if boundary is not None:
        result.boundary = Boundary(boundary, {k: v for k, v in worst.items() if k != boundary})
        _boundary(envelope, budget, predict, real, result)
    if result.smallest_failing is not None:
        result.smallest_failing = replace(result.smallest_failing, measured=real(result.smallest_failing.config))


def _none_fits(envelope: Envelope, first: Config, boundary: str | None, predict: _Predictor,
               result: Exploration) -> None:
    """The smallest configuration died of memory and memory grows along every knob: no configuration fits. It is the
    smallest over the budget, the boundary has no value, and nothing larger is run (each would die too)."""
    result.smallest_failing = Probe(dict(first), predict.est(first))
    if boundary is not None:
        at = {k: v for k, v in envelope.largest().items() if k != boundary}
        result.boundary = Boundary(boundary, at, complete=True)
    result.problems.append(f"the envelope's smallest configuration {config_text(first)} died of memory: memory grows "
                           "along every knob, so no configuration fits the budget; nothing larger was run")


def _worst_case(envelope: Envelope, predict: _Predictor, result: Exploration, hypothesis: _Hypothesis) -> dict[str, Knob]:
    """Hypothesis with target() only (a failing assertion would stop generation), then a climb; checks monotonicity.

    Seeded (hypothesis.seed), so the report repeats. The envelope's top corner is an explicit example: along a
    knob that adds little per step, target() and a climb of one step at a time stop far below its top.
    """
    from hypothesis import Phase, example, given, target
    from hypothesis import seed as hypothesis_seed

    seen: dict[Key, int] = {}
    violations: dict[tuple[str, Key], NotMonotone] = {}
    est = predict.est

    def predicted(config: Config) -> int:
        seen[_key(config)] = predict(config)
        return seen[_key(config)]

    @hypothesis.settings(None, (Phase.explicit, Phase.generate, Phase.target))
    @example(envelope.largest())
    @given(envelope.strategy())
    def towards_worst(config: dict[str, Knob]) -> None:
        result.examples += 1
        target(predicted(config) / 2**20, label="predicted peak (MiB)")
        for knob in envelope.monotone_knobs():
            up = envelope.up(config, knob)
            if up is not None and est(up) < est(config) - 2**20:  # 1 MiB: below that, rounding
                violations.setdefault((knob, _key(config)), NotMonotone(knob, dict(config), up[knob], est(config) - est(up)))

    if hypothesis.seed is not None:
        towards_worst = hypothesis_seed(hypothesis.seed)(towards_worst)
    towards_worst()
    _climb(envelope, seen, predicted)
    result.monotonicity = list(violations.values())
    key = max(seen, key=seen.get)
    result.worst = Probe(dict(key), seen[key])
    return dict(key)


def _smallest_failing(envelope: Envelope, budget: int, predict: Callable[[Config], int], result: Exploration,
                      hypothesis: _Hypothesis) -> None:
    """The budget property on predictions: a failure shrinks to the smallest breaking configuration, kept.

    Not seeded where an example database is kept: a seed stops Hypothesis from saving to it. Where none is, nothing
    is saved either way, so the seed is the worst case's, and the same call finds the same shapes again (unseeded,
    each run shrank to another edge of a two-knob envelope, and ran it for real). Random examples can miss a small
    failing corner (about 1 run in 20 at 40 examples over a 8 x 30 envelope), so when they find nothing while the
    worst case is over the budget, the answer descends from the worst case instead: a finding made once is not
    lost to chance. The worst case is judged as the examples are, by the calibration now (its real run may have
    moved it), never by the prediction it was found with.
    """
    from hypothesis import Phase, given
    from hypothesis import seed as hypothesis_seed
    from hypothesis.database import DirectoryBasedExampleDatabase

    failing: list[tuple[dict[str, Knob], int]] = []

    @hypothesis.settings(DirectoryBasedExampleDatabase(hypothesis.database) if hypothesis.database else None,
                         (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink))
    @given(envelope.strategy())
    def within_budget(config: dict[str, Knob]) -> None:
        result.examples += 1
        predicted = predict(config)
        if predicted > budget:
            failing.append((dict(config), predicted))  # Hypothesis replays the shrunk example last
            raise AssertionError(f"predicted {format_size(predicted)} > budget {format_size(budget)}")

    if hypothesis.database is None and hypothesis.seed is not None:
        within_budget = hypothesis_seed(hypothesis.seed)(within_budget)
    try:
        within_budget()
    except BaseException as exc:  # the property's failure is the finding (an ExceptionGroup too)
        if not failing or isinstance(exc, (KeyboardInterrupt, SystemExit)) or _estimate_failed(exc):
            raise
        config, predicted = failing[-1]
        result.smallest_failing = Probe(config, predicted)
    if result.smallest_failing is None and result.worst is not None and predict(result.worst.config) > budget:
        config = _descend(envelope, result.worst.config, lambda c: predict(c) > budget)
        result.smallest_failing = Probe(config, predict(config))


def _descend(envelope: Envelope, start: Config, over: Callable[[Config], bool]) -> dict[str, Knob]:
    """From a configuration that is `over`, lower each knob in turn to its smallest value still over (bisected),
    until no knob moves: every step stays over, so the answer is a failing configuration no single knob can lower."""
    config = dict(start)
    moved = True
    while moved:
        moved = False
        for knob in envelope.knobs:
            values = envelope.values(knob)
            lo, hi = -1, values.index(config[knob])  # values[hi] is over; values[lo] is not (or out of range)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if over({**config, knob: values[mid]}) else (mid, hi)
            if values[hi] != config[knob]:
                config[knob], moved = values[hi], True
    return config


def _climb(envelope: Envelope, seen: dict[Key, int], predict: Callable[[Config], int], moves: int = 50) -> None:
    """From the largest prediction, step to a neighbour (one knob one value up or down) while it predicts more."""
    config = dict(max(seen, key=seen.get))
    for _ in range(moves):
        neighbours = []
        for knob in envelope.knobs:
            values = envelope.values(knob)
            i = values.index(config[knob])
            neighbours += [{**config, knob: values[j]} for j in (i - 1, i + 1) if 0 <= j < len(values)]
        best = max(neighbours, key=predict, default=None)
        if best is None or predict(best) <= predict(config):
            return
        config = best


def _predicted_boundary(envelope: Envelope, budget: int, predict: Callable[[Config], int], result: Exploration) -> int:
    """The boundary's value as the (monotone) calibrated estimate puts it, bisected and set as its predicted_value;
    returns its index (-1: no value fits)."""
    knob, at = result.boundary.knob, result.boundary.at
    values = envelope.values(knob)
    lo, hi = -1, len(values)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if predict({**at, knob: values[mid]}) <= budget else (lo, mid)
    result.boundary = replace(result.boundary, predicted_value=None if lo < 0 else values[lo])
    return lo


def _boundary(envelope: Envelope, budget: int, predict: Callable[[Config], int], real: _Budgeted,
              result: Exploration) -> None:
    """The largest value of the boundary's knob within the budget, the others at its `at`: predicted, then
    confirmed.

    Updates result.boundary as it goes, so a search cut short by the real-run
    cap still reports its bracket (and complete=False).
    """
    lo = _predicted_boundary(envelope, budget, predict, result)
    knob, at = result.boundary.knob, result.boundary.at
    values = envelope.values(knob)
    peaks = {dict(key)[knob]: peak for key, peak in real.cache.items()  # runs already made on this line (the worst)
             if all(dict(key).get(k) == v for k, v in at.items())}
    result.boundary = replace(result.boundary, peaks=dict(peaks))

    def fits(value: Knob) -> bool:
        peak = real({**at, knob: value})
        result.boundary = replace(result.boundary, peaks={**result.boundary.peaks, value: peak})
        return _fits(peak, budget)

    index = largest_fitting(values, fits, hint=lo)
    value = None if index < 0 else values[index]
    result.boundary = replace(result.boundary, value=value, complete=True)
    if value is not None and result.boundary.peaks.get(value) is not None:  # the estimate's own error there
        result.boundary_error = result.boundary.peaks[value] - predict.est({**at, knob: value})
    result.problems += _contradicting(values, result.boundary, budget)


def _contradicting(values: Sequence[Knob], boundary: Boundary, budget: int, runs: str = "real runs",
                   grows: str = "memory") -> list[str]:
    """The real runs on the boundary's line on the wrong side of it: over the budget at or below the value found,
    or within it above. The search brackets one edge, assuming memory grows along the knob; a run that denies
    that makes its answer unfounded (a problem, never a silent "largest"). On the estimate alone, `runs` are the
    predictions made on the line (`grows`: "the estimate"), which the bisection assumed grow as well."""
    edge = -1 if boundary.value is None else values.index(boundary.value)
    wrong = [f"{boundary.knob}={v}: {peak_text(p)}, " + ("over budget at or below it" if i <= edge else
                                                                   "within budget above it")
             for i, v, p in sorted((values.index(v), v, p) for v, p in boundary.peaks.items())
             if (i <= edge) != _fits(p, budget)]
    if not wrong:
        return []
    value = "none" if boundary.value is None else boundary.value
    return [(f"{runs} along {boundary.knob} contradict its boundary ({value}): {'; '.join(wrong)}; {grows} does "
             f"not grow along {boundary.knob} here, so the boundary is unfounded")]


def _fits(peak: int | None, budget: int) -> bool:
    return peak is not None and peak <= budget


# -- from a test (the gpu_budget fixture's explore()) -----------------------------------------------------

def budget_to_explore(budget: str | int | Mapping[str, str | int] | None, declared: int | None, scale: str,
                      device: str) -> tuple[int | str | None, str | None]:
    """The budget an exploration searches against, or why there is none (the test is skipped with it).

    budget: None (the marker's for this device and scale: `declared`), a size, or {scale: size}; ValueError where
    that names no scale.
    """
    if budget is None:
        if declared is None:
            return None, (f"no {'vram' if device == 'cuda' else 'ram'} budget for this test on {device} at scale "
                          f"{scale!r}: nothing to explore against (the estimator predicts the training device's memory)")
        return declared, None
    if isinstance(budget, Mapping):
        unknown = set(budget) - set(SCALES)  # a typo ("tinny") would read as no budget here: a skip, unsaid
        if unknown:
            raise ValueError(f"budget={budget!r} names unknown scale(s) {sorted(unknown, key=str)} (known: {SCALES})")
        if scale not in budget:
            return None, f"no exploration budget for scale {scale!r}"
        return budget[scale], None
    return budget, None


def card_budget(mark: BudgetMark, budget: object, where: str = "") -> tuple[int, None] | None:
    """The budget of an exploration within the test's card (card=, where no budget= is given): the card's memory less
    the context allowance (model/card.py), as allocated VRAM; None for a test without a card. ValueError, naming the
    card and the allowance, where that leaves nothing: no budget to search below."""
    if mark.card is None or budget is not None:
        return None
    room = mark.card.capacity - CONTEXT_ALLOWANCE
    if room <= 0:
        raise ValueError(f"{where}: card={mark.card.given!r} leaves no memory to explore within: {mark.card.label} "
                         f"holds no more than the {format_size(CONTEXT_ALLOWANCE)} CUDA context allowance an "
                         "exploration takes off a card (docs/estimator.md); give explore() a budget= (allocated VRAM), "
                         "or name a larger card")
    return room, None


def check_input(scenario: Scenario, envelope: Envelope, budget: int | str, scale: str, boundary: str | None,
                max_real_runs: int, given: object = None, seed: object = 0, estimate: object = None) -> None:
    """explore()'s arguments, each refused naming the argument and its value before any run: a TypeError or
    ValueError (the gpu_budget fixture fails the test with it, session/refusal.py). budget: the one searched
    against; given: the test's own budget= (None: the marker's or the card's), whose bare number is refused."""
    if not isinstance(envelope, Envelope):
        raise TypeError(f"envelope={envelope!r}: expected a gpu_budget.search.explore.Envelope")
    _check(envelope, boundary, max_real_runs, seed, estimate)
    _knobs_read(scenario, envelope, scale)
    try:
        parse_size(budget)
    except ValueError as exc:
        raise ValueError(f"budget={budget!r}: {exc}") from None
    for at, size in given.items() if isinstance(given, Mapping) else [(None, given)]:  # the test's own budget=
        refuse_bare("budget", size, "", at)  # refused as a marker's is, not read as bytes


def _knobs_read(scenario: Scenario, envelope: Envelope, scale: str) -> None:
    """A knob the scenario has no param of, named: with_params would add it unread, so every value would run alike.
    A knob an applied fix sets, named: with_params would undo the fix, which the Scenario refuses mid-search."""
    params = scenario.params_for(scale)
    for knob in envelope.knobs:
        if knob not in params:
            raise ValueError(f"envelope knob {knob!r} is not a param of scenario {scenario.name!r} at scale {scale!r} "
                             f"(its params: {', '.join(params)})")
    for fix in fix_library.validate(scenario.fixes, scenario.offered()):
        for knob in (k for k in fix.params if k in envelope.knobs):
            raise ValueError(f"envelope knob {knob!r} is set by fix {fix.name!r} of scenario {scenario.name!r} "
                             f"({knob}={fix.params[knob]!r}): exploring it would undo the fix; leave it out of the "
                             "envelope, or explore the scenario without the fix")
    for knob in envelope.knobs if scenario.command is not None else ():
        _read_by_command(scenario, knob, envelope.values(knob), scale)


def _read_by_command(scenario: Scenario, knob: str, values: Sequence[Knob], scale: str) -> None:
    """A command scenario's knob that no placeholder (nor its prepare) reads, named: every value would run the same
    command line, and the exploration report a boundary along it that no run measured."""
    low, high = (scenario.with_params(**{knob: v}) for v in (values[0], values[-1]))
    if len(values) < 2 or low.command_at(scale, ".") != high.command_at(scale, "."):
        return
    if scenario.prepare and low.prepare_params(scale) != high.prepare_params(scale):
        return
    raise ValueError(f"envelope knob {knob!r} changes nothing in the command of scenario {scenario.name!r}: no "
                     "placeholder of the command, its cwd or env reads it, nor does its prepare (read it, as "
                     f"\"{{{knob}}}\", or leave it out of the envelope)")


def explore_scenario(scenario: Scenario, envelope: Envelope, budget: int | str, peak: Callable[[Scenario], Measurement], *,
                     scale: str, cuda: bool, boundary: str | None = None, max_examples: int = DEFAULT_EXAMPLES,
                     max_real_runs: int = DEFAULT_REAL_RUNS, database: Path | None = None, seed: int | None = 0,
                     estimate: Callable[[Config], int] | None = None, card: str | None = None,
                     verify: bool = True) -> Exploration:
    """Explore `scenario`'s knobs; each real run is peak(scenario with the knobs) -> results.Measurement.

    Where the children train on the CPU the prediction is the CPU estimate and
    the measured metric host RAM (the tree's, as the gate judges); where they
    train on the GPU, the CUDA-mode estimate's allocated peak and vram_allocated (the estimator
    predicts tensors on the training device, never host RAM beside a GPU).
    estimate: a prediction of your own (knobs -> bytes) instead of the
    estimator, for a scenario it has no builder for. card: the budget is this
    card's (its label); verify=False: no real run here can measure the card's
    VRAM (a host without a GPU), so the search stands on the CUDA estimate alone.
    """
    metric = "vram_allocated" if cuda else "ram"
    _knobs_read(scenario, envelope, scale)

    def measure(knobs: Config) -> int | None:
        """The run's peak; None for a run that died of memory (over budget, whatever it would have peaked at);
        any other failure is a problem of the exploration, never a point over the budget."""
        m = peak(scenario.with_params(**knobs))
        if not m.ok:
            if m.died_of_memory:
                return None
            raise RunFailed(knobs, f"failed ({m.error_kind}): {m.error.message[:200]}",
                            m.peaks.vram_allocated if cuda else m.ram)
        value = m.peaks.vram_allocated if cuda else m.ram
        if value is None:  # a run that finished without the metric is no point over the budget
            used = ": its child used no GPU" if cuda else ""
            raise RunFailed(knobs, f"measured no {metric}{used}")
        return value

    return explore(scenario.name, envelope, budget, estimate or _Estimator(scenario, scale, cuda),
                   measure if verify else None, boundary=boundary, max_examples=max_examples,
                   max_real_runs=max_real_runs, database=database, seed=seed, metric=metric, card=card,
                   variant=_variant(scenario, envelope, scale))
