"""Hypothesis exploration of a scenario's knobs: the worst case, the boundary, the smallest breaking configuration.

Real runs cost seconds to minutes each, so Hypothesis searches a *prediction*:
the GPU-free estimate of the step's tensor peak (estimate.py), calibrated by
the real runs made so far (measured ~ slope x estimate + intercept: one run
gives an offset, two or more a line, since a process's non-tensor memory can
grow with its tensors). In order, with at most `max_real_runs` real runs:

  1. a real run at the envelope's smallest configuration (calibration);
  2. Hypothesis towards the worst case: hypothesis.target(predicted MiB),
     then a climb to the best neighbour; each example also checks that the
     estimate is monotone in each monotone knob (a drop is reported as a
     finding, it does not fail); the worst case is then run for real (a
     second calibration point);
  3. Hypothesis on the budget property (predicted <= budget): a failure
     shrinks to the smallest breaking configuration and stays in the example
     database, so the next run tries it first;
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

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpu_budget.measure.fit import least_squares
from gpu_budget.model.figures import Fields
from gpu_budget.search.boundary import largest_fitting
from gpu_budget.units import format_mib, format_size, parse_size

DEFAULT_EXAMPLES = 20
DEFAULT_REAL_RUNS = 8
DATABASE_DIR = ".hypothesis/gpu-budget-explore"  # under the rootdir; CI caches it (docs/estimator.md)


@dataclass(frozen=True)
class Envelope:
    """The knobs to explore: name -> (lo, hi) inclusive integer range, or a sequence of allowed values.

    monotone: the knobs memory should not fall along (default: all of them).
    """

    knobs: Mapping[str, tuple[int, int] | Sequence[Any]]
    monotone: tuple[str, ...] | None = None

    def values(self, knob: str) -> list:
        spec = self.knobs[knob]
        if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, int) for v in spec):
            return list(range(spec[0], spec[1] + 1))
        return sorted(spec)

    def strategy(self):
        from hypothesis import strategies as st

        parts = {}
        for knob, spec in self.knobs.items():
            if isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(v, int) for v in spec):
                parts[knob] = st.integers(spec[0], spec[1])
            else:
                parts[knob] = st.sampled_from(sorted(spec))
        return st.fixed_dictionaries(parts)

    def smallest(self) -> dict[str, Any]:
        return {knob: self.values(knob)[0] for knob in self.knobs}

    def up(self, config: dict[str, Any], knob: str) -> dict[str, Any] | None:
        """`config` with `knob` one allowed value higher (None at the top)."""
        values = self.values(knob)
        i = values.index(config[knob])
        return None if i + 1 == len(values) else {**config, knob: values[i + 1]}

    def monotone_knobs(self) -> tuple[str, ...]:
        return tuple(self.knobs) if self.monotone is None else self.monotone


Config = Mapping[str, Any]  # one point of the envelope: knob -> value


@dataclass(frozen=True)
class Probe(Fields):
    """One configuration the search singled out (the worst case, the smallest failing one): its calibrated
    prediction, and a real run's peak once confirmed (None until then, or a run that died of memory)."""

    config: Config
    predicted: int
    measured: int | None = None


@dataclass(frozen=True)
class Boundary(Fields):
    """The largest value of one knob within the budget, the others at `at`: predicted, then confirmed by real runs
    (`peaks`: value -> measured peak). complete=False: the real-run cap cut the search short."""

    knob: str
    at: Config
    value: Any = None
    predicted_value: Any = None
    peaks: Mapping[Any, int | None] = field(default_factory=dict)
    complete: bool = False


@dataclass(frozen=True)
class Calibration(Fields):
    """measured ~ slope * estimate + intercept, fitted to every real run."""

    slope: float
    intercept: int
    points: int


@dataclass(frozen=True)
class NotMonotone(Fields):
    """A step up of a monotone knob that predicts less (by `drop` bytes): the estimate, or the knob, is suspect."""

    knob: str
    config: Config
    up: Any
    drop: int


@dataclass(frozen=True)
class RealRun(Fields):
    """One real run of the search: its configuration, its peak (None: it died of memory), its time."""

    config: Config
    peak: int | None
    seconds: float


@dataclass
class Exploration:
    """What an exploration found. Bytes; `predicted` = estimate + offset, `measured` = a real run's peak.

    Filled as the search goes (so a search cut short by the real-run cap still
    reports what it found); its parts are frozen records.
    """

    scenario: str
    budget: int
    metric: str
    envelope: Mapping[str, list[Any]]
    worst: Probe | None = None
    boundary: Boundary | None = None
    smallest_failing: Probe | None = None
    monotonicity: list[NotMonotone] = field(default_factory=list)
    offset: int | None = None  # measured - estimate at the calibration run
    calibration: Calibration | None = None
    real_runs: list[RealRun] = field(default_factory=list)
    estimates: int = 0
    examples: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-able; the boundary's peaks as [value, peak] pairs (a knob's values need not be strings)."""
        def plain(record: Fields | None) -> dict[str, Any] | None:
            return None if record is None else {k: dict(v) if isinstance(v, Mapping) else v for k, v in record.items()}

        data = {"scenario": self.scenario, "budget": self.budget, "metric": self.metric,
                "envelope": {k: list(v) for k, v in self.envelope.items()}, "worst": plain(self.worst),
                "boundary": plain(self.boundary), "smallest_failing": plain(self.smallest_failing),
                "monotonicity": [plain(v) for v in self.monotonicity], "offset": self.offset,
                "calibration": plain(self.calibration), "real_runs": [plain(r) for r in self.real_runs],
                "estimates": self.estimates, "examples": self.examples, "seconds": self.seconds,
                "problems": list(self.problems)}
        if self.boundary is not None:
            data["boundary"]["peaks"] = [[v, p] for v, p in self.boundary.peaks.items()]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Exploration:
        def probe(value: Mapping[str, Any] | None) -> Probe | None:
            return None if value is None else Probe(**value)

        boundary = data.get("boundary")
        return cls(data["scenario"], data["budget"], data["metric"], dict(data["envelope"]), probe(data.get("worst")),
                   None if boundary is None else Boundary(**{**boundary, "peaks": {v: p for v, p in boundary["peaks"]}}),
                   probe(data.get("smallest_failing")), [NotMonotone(**v) for v in data.get("monotonicity") or ()],
                   data.get("offset"), None if data.get("calibration") is None else Calibration(**data["calibration"]),
                   [RealRun(**r) for r in data.get("real_runs") or ()], data.get("estimates", 0),
                   data.get("examples", 0), data.get("seconds", 0.0), list(data.get("problems") or ()))

    def _side(self, measured: int | None) -> str:
        return _side_of(measured, self.budget)

    def summary(self) -> list[str]:
        """Report lines: the worst case, the boundary, the smallest failing configuration, the cost."""
        lines = [(f"{self.scenario}: {self.examples} Hypothesis examples on {self.estimates} estimates, "
                 f"{len(self.real_runs)} real runs, {self.seconds:.0f} s; budget {format_mib(self.budget)} "
                 f"({self.metric}); offset (real - estimate at calibration) {format_mib(self.offset)}")]
        if self.worst:
            lines.append(f"worst case {_config(self.worst.config)}: measured {format_mib(self.worst.measured)}"
                         f"{self._side(self.worst.measured)} (predicted {format_mib(self.worst.predicted)})")
        b = self.boundary
        if b:
            at = f" at {_config(b.at)}" if b.at else ""
            value = ("none" if b.value is None else b.value) if b.complete else "not settled"
            runs = ", ".join(f"{k}: {format_mib(v)}" for k, v in sorted(b.peaks.items()))
            lines.append(f"largest {b.knob}{at} within {format_mib(self.budget)}: {value} "
                         f"(predicted {b.predicted_value}; real runs {runs})")
        if self.smallest_failing:
            s = self.smallest_failing
            lines.append(f"smallest configuration predicted over budget (shrunk): {_config(s.config)}: measured "
                         f"{format_mib(s.measured)}{self._side(s.measured)} (predicted {format_mib(s.predicted)})")
        if self.calibration:
            c = self.calibration
            lines.append(f"calibration over {c.points} real runs: measured = {c.slope:.3f} x estimate + "
                         f"{format_mib(c.intercept)}")
        runs = "; ".join(f"{_config(r.config)}: {format_mib(r.peak)}" for r in self.real_runs)
        lines.append(f"real runs: {runs}")
        for v in self.monotonicity:
            lines.append(f"not monotone in {v.knob}: {_config(v.config)} -> {v.knob}={v.up} "
                         f"predicts {format_mib(v.drop)} less")
        lines += [f"problem: {p}" for p in self.problems]
        return lines


def _side_of(measured: int | None, budget: int) -> str:
    if measured is None:
        return ""
    return ", over budget" if measured > budget else ", within budget"


def _config(config: Config) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


class _Budgeted:
    """Real runs, cached by configuration and counted against a cap."""

    def __init__(self, measure: Callable[[Config], int | None], cap: int, log: list[RealRun]) -> None:
        self.measure, self.cap, self.log, self.cache = measure, cap, log, {}

    def __call__(self, config: Config) -> int | None:
        key = tuple(sorted(config.items()))
        if key not in self.cache:
            if len(self.log) >= self.cap:
                raise _OutOfRuns(f"the real-run cap ({self.cap}) is spent")
            t0 = time.perf_counter()
            peak = self.measure(config)
            self.cache[key] = peak
            self.log.append(RealRun(dict(config), peak, round(time.perf_counter() - t0, 1)))
        return self.cache[key]


class _OutOfRuns(Exception):
    pass


class RunFailed(Exception):
    """A real run that failed other than by running out of memory: the exploration stops and reports it."""


MEMORY_DEATHS = ("oom", "killed")  # out-of-memory, and SIGKILL (the kernel's OOM killer)


class _Calibration:
    """measured ~ slope * estimate + intercept, least squares over the real runs so far.

    One run: the estimate plus a constant offset (slope 1). More: the fitted
    line, since a process's non-tensor memory can grow with its tensors (a
    Trainer's input pipeline does).
    """

    def __init__(self) -> None:
        self.points: list[tuple[int, int]] = []

    def add(self, estimate: int, measured: int | None) -> None:
        if measured is not None:
            self.points.append((estimate, measured))

    def line(self) -> tuple[float, float]:
        xs, ys = [p[0] for p in self.points], [p[1] for p in self.points]
        fitted = least_squares(xs, ys)
        if fitted is not None:
            return fitted
        if not xs:
            return 1.0, 0.0
        return 1.0, sum(ys) / len(ys) - sum(xs) / len(xs)  # one point (or one estimate): an offset

    def __call__(self, estimate: int) -> int:
        slope, intercept = self.line()
        return int(slope * estimate + intercept)


def explore(name: str, envelope: Envelope, budget: int | str, estimate: Callable[[dict], int],
            measure: Callable[[dict], int | None], boundary: str | None = None, max_examples: int = DEFAULT_EXAMPLES,
            max_real_runs: int = DEFAULT_REAL_RUNS, database: Path | None = None, seed: int | None = 0,
            metric: str = "ram") -> Exploration:
    """Search `envelope` with Hypothesis on estimate(config) + offset, then confirm with measure(config).

    estimate(config) -> predicted tensor bytes (cheap); measure(config) -> a real
    run's peak in bytes, or None for a run that failed (counted as over budget).
    boundary: the knob whose largest value within the budget is found (others
    at the worst case's values). seed: Hypothesis' seed for the worst-case
    search (None: random); the budget run is never seeded, as a seed stops
    Hypothesis from saving to the example database.
    """
    budget = parse_size(budget) if isinstance(budget, str) else int(budget)
    t0 = time.perf_counter()
    result = Exploration(name, budget, metric, {k: list(v) for k, v in envelope.knobs.items()})
    estimates: dict[tuple, int] = {}
    calibration = _Calibration()

    def est(config: dict[str, Any]) -> int:
        key = tuple(sorted(config.items()))
        if key not in estimates:
            estimates[key] = estimate(config)
        return estimates[key]

    def measured(config: dict[str, Any]) -> int | None:
        peak = measure(config)
        calibration.add(est(config), peak)
        return peak

    def predict(config: dict[str, Any]) -> int:
        return calibration(est(config))

    real = _Budgeted(measured, max_real_runs, result.real_runs)
    settings = _settings(max_examples, seed)
    try:
        first = envelope.smallest()
        peak = real(first)
        result.offset = None if peak is None else peak - est(first)
        worst = _worst_case(envelope, est, predict, result, settings)
        result.worst = replace(result.worst, measured=real(worst))  # a second calibration point
        _smallest_failing(envelope, budget, predict, result, settings, database)
        if boundary is not None:
            result.boundary = Boundary(boundary, {k: v for k, v in worst.items() if k != boundary})
            _boundary(envelope, budget, predict, real, result)
        if result.smallest_failing is not None:
            result.smallest_failing = replace(result.smallest_failing, measured=real(result.smallest_failing.config))
    except (_OutOfRuns, RunFailed) as exc:
        result.problems.append(str(exc))
    slope, intercept = calibration.line()
    result.calibration = Calibration(slope, int(intercept), len(calibration.points))
    result.estimates, result.seconds = len(estimates), round(time.perf_counter() - t0, 1)
    return result


def _settings(max_examples: int, seed: int | None) -> dict[str, Any]:
    from hypothesis import HealthCheck

    return {"max_examples": max_examples, "deadline": None, "derandomize": False, "print_blob": False,
            "suppress_health_check": list(HealthCheck), "seed": seed}


def _worst_case(envelope: Envelope, est, predict, result: Exploration, common: dict[str, Any]) -> dict[str, Any]:
    """Hypothesis with target() only (a failing assertion would stop generation), then a climb; checks monotonicity.

    Seeded (common["seed"]), so the report repeats.
    """
    from hypothesis import Phase, given, settings, target
    from hypothesis import seed as hypothesis_seed

    seen: dict[tuple, int] = {}
    violations: dict[tuple, NotMonotone] = {}

    def predicted(config: dict[str, Any]) -> int:
        seen[tuple(sorted(config.items()))] = predict(config)
        return seen[tuple(sorted(config.items()))]

    @settings(database=None, phases=(Phase.generate, Phase.target),
              **{k: v for k, v in common.items() if k != "seed"})
    @given(envelope.strategy())
    def towards_worst(config):
        result.examples += 1
        target(predicted(config) / 2**20, label="predicted peak (MiB)")
        for knob in envelope.monotone_knobs():
            up = envelope.up(config, knob)
            if up is not None and est(up) < est(config) - 2**20:  # 1 MiB: below that, rounding
                violations.setdefault((knob, tuple(sorted(config.items()))),
                                      NotMonotone(knob, dict(config), up[knob], est(config) - est(up)))

    if common["seed"] is not None:
        towards_worst = hypothesis_seed(common["seed"])(towards_worst)
    towards_worst()
    _climb(envelope, seen, predicted)
    result.monotonicity = list(violations.values())
    key = max(seen, key=seen.get)
    result.worst = Probe(dict(key), seen[key])
    return dict(key)


def _smallest_failing(envelope: Envelope, budget: int, predict, result: Exploration, common: dict[str, Any],
                      database: Path | None) -> None:
    """The budget property on predictions: a failure shrinks to the smallest breaking configuration, kept.

    Not seeded: a seed stops Hypothesis from saving to the example database.
    """
    from hypothesis import Phase, given, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    failing: list[tuple[dict[str, Any], int]] = []

    @settings(database=DirectoryBasedExampleDatabase(database) if database else None,
              phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
              **{k: v for k, v in common.items() if k != "seed"})
    @given(envelope.strategy())
    def within_budget(config):
        result.examples += 1
        predicted = predict(config)
        if predicted > budget:
            failing.append((dict(config), predicted))  # Hypothesis replays the shrunk example last
            raise AssertionError(f"predicted {format_size(predicted)} > budget {format_size(budget)}")

    try:
        within_budget()
    except BaseException as exc:  # the property's failure is the finding (an ExceptionGroup too)
        if not failing or isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        config, predicted = failing[-1]
        result.smallest_failing = Probe(config, predicted)


def _climb(envelope: Envelope, seen: dict[str, Any], predict, moves: int = 50) -> None:
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


def _boundary(envelope: Envelope, budget: int, predict, real: _Budgeted, result: Exploration) -> None:
    """The largest value of the boundary's knob within the budget, the others at its `at`: predicted, then
    confirmed.

    Updates result.boundary as it goes, so a search cut short by the real-run
    cap still reports its bracket (and complete=False).
    """
    knob, at = result.boundary.knob, result.boundary.at
    values = envelope.values(knob)
    lo, hi = -1, len(values)  # the prediction: bisect the (monotone) calibrated estimate
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if predict({**at, knob: values[mid]}) <= budget else (lo, mid)
    peaks = {dict(key)[knob]: peak for key, peak in real.cache.items()  # runs already made on this line (the worst)
             if all(dict(key).get(k) == v for k, v in at.items())}
    result.boundary = replace(result.boundary, predicted_value=None if lo < 0 else values[lo], peaks=dict(peaks))

    def fits(value) -> bool:
        peak = real({**at, knob: value})
        result.boundary = replace(result.boundary, peaks={**result.boundary.peaks, value: peak})
        return _fits(peak, budget)

    index = largest_fitting(values, fits, hint=lo)
    result.boundary = replace(result.boundary, value=None if index < 0 else values[index], complete=True)


def _fits(peak: int | None, budget: int) -> bool:
    return peak is not None and peak <= budget


# -- from a test (the gpu_budget fixture's explore()) -----------------------------------------------------

def budget_to_explore(budget: str | int | Mapping[str, str | int] | None, declared: int | None, scale: str,
                      device: str) -> tuple[int | str | None, str | None]:
    """The budget an exploration searches against, or why there is none (the test is skipped with it).

    budget: None (the marker's for this device and scale: `declared`), a size, or {scale: size}.
    """
    if budget is None:
        if declared is None:
            return None, (f"no {'vram' if device == 'cuda' else 'ram'} budget for this test on {device} at scale "
                          f"{scale!r}: nothing to explore against (the estimator predicts the training device's memory)")
        return declared, None
    if isinstance(budget, Mapping):
        if scale not in budget:
            return None, f"no exploration budget for scale {scale!r}"
        return budget[scale], None
    return budget, None


def explore_scenario(scenario, envelope: Envelope, budget: int | str, peak: Callable, *, scale: str, cuda: bool,
                     boundary: str | None = None, max_examples: int = DEFAULT_EXAMPLES,
                     max_real_runs: int = DEFAULT_REAL_RUNS, database: Path | None = None, seed: int | None = 0,
                     estimate: Callable[[dict], int] | None = None) -> Exploration:
    """Explore `scenario`'s knobs; each real run is peak(scenario with the knobs) -> results.Measurement.

    Where the children train on the CPU the prediction is the CPU estimate and
    the measured metric host RAM (the tree's, as the gate judges); where they
    train on the GPU, the CUDA-mode estimate and vram_allocated (the estimator
    predicts tensors on the training device, never host RAM beside a GPU).
    estimate: a prediction of your own (knobs -> bytes) instead of the
    estimator, for a scenario it has no builder for.
    """
    metric = "vram_allocated" if cuda else "ram"

    def measure(knobs: dict[str, Any]) -> int | None:
        """The run's peak; None for a run that died of memory (over budget, whatever it would have peaked at);
        any other failure is a problem of the exploration, never a point over the budget."""
        m = peak(scenario.with_params(**knobs))
        if not m.ok:
            if m.error_kind in MEMORY_DEATHS:
                return None
            raise RunFailed(f"real run {_config(knobs)} failed ({m.error_kind}): {m.error.message[:200]}")
        return m.peaks.vram_allocated if cuda else m.ram

    def estimated(knobs: dict[str, Any]) -> int:
        from gpu_budget.estimate import estimate_scenario
        from gpu_budget.estimate.cuda import Device

        return estimate_scenario(scenario.with_params(**knobs), scale, device=Device(cuda=cuda)).step_peak

    return explore(scenario.name, envelope, budget, estimate or estimated, measure, boundary=boundary,
                   max_examples=max_examples, max_real_runs=max_real_runs, database=database, seed=seed,
                   metric=metric)
