"""Hypothesis exploration of a scenario's knobs: the worst case, the boundary, the smallest breaking configuration.

Real runs cost seconds to minutes each, so Hypothesis searches a *prediction*:
the GPU-free estimate of the step's tensor peak (estimate.py) plus an offset
calibrated by one real run (what the process holds beside its tensors). The
search then stops predicting and measures: the worst case it found, the
boundary along one knob (the largest value within the budget, with the
other knobs at their worst-case values) and the smallest configuration that
breaks the budget are each confirmed by real isolated runs, at most
`max_real_runs` in all.

Properties, per example:
  - the predicted peak is within the budget (a failure shrinks to the
    smallest breaking configuration; Hypothesis keeps it in its example
    database, so the next run tries it first);
  - the estimate is monotone in each monotone knob (one step up never
    predicts less); a violation is reported as a finding, it does not fail.
hypothesis.target(predicted MiB) steers generation towards the worst case.

Opt-in: tests call run() (or explore()) and are skipped unless
--gpu-budget-explore is given; --gpu-budget-explore-examples sets
max_examples. Importing this module imports neither torch nor hypothesis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpu_budget.units import format_size, parse_size

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

    def smallest(self) -> dict:
        return {knob: self.values(knob)[0] for knob in self.knobs}

    def up(self, config: dict, knob: str) -> dict | None:
        """`config` with `knob` one allowed value higher (None at the top)."""
        values = self.values(knob)
        i = values.index(config[knob])
        return None if i + 1 == len(values) else {**config, knob: values[i + 1]}

    def monotone_knobs(self) -> tuple[str, ...]:
        return tuple(self.knobs) if self.monotone is None else self.monotone


@dataclass
class Exploration:
    """What an exploration found. Bytes; `predicted` = estimate + offset, `measured` = a real run's peak."""

    scenario: str
    budget: int
    metric: str
    envelope: dict
    worst: dict | None = None  # {config, predicted, measured}
    boundary: dict | None = None  # {knob, at, value, predicted_value, peaks: {value: measured}}
    smallest_failing: dict | None = None  # {config, predicted, measured}
    monotonicity: list[dict] = field(default_factory=list)
    offset: int | None = None  # measured - estimate at the calibration run
    real_runs: list[dict] = field(default_factory=list)  # {config, peak, seconds}
    estimates: int = 0
    examples: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    def summary(self) -> list[str]:
        """Report lines: the worst case, the boundary, the smallest failing configuration, the cost."""
        lines = [(f"{self.scenario}: {self.examples} Hypothesis examples on {self.estimates} estimates, "
                 f"{len(self.real_runs)} real runs, {self.seconds:.0f} s; budget {format_size(self.budget)} "
                 f"({self.metric}); offset (real - estimate at calibration) {format_size(self.offset)}")]
        if self.worst:
            lines.append(f"worst case {_config(self.worst['config'])}: measured {format_size(self.worst['measured'])} "
                         f"(predicted {format_size(self.worst['predicted'])})")
        b = self.boundary
        if b:
            at = f" at {_config(b['at'])}" if b["at"] else ""
            value = "none" if b["value"] is None else b["value"]
            runs = ", ".join(f"{k}: {format_size(v)}" for k, v in sorted(b["peaks"].items()))
            lines.append(f"largest {b['knob']}{at} within {format_size(self.budget)}: {value} "
                         f"(predicted {b['predicted_value']}; real runs {runs})")
        if self.smallest_failing:
            s = self.smallest_failing
            lines.append(f"smallest configuration over budget (shrunk): {_config(s['config'])}: measured "
                         f"{format_size(s['measured'])} (predicted {format_size(s['predicted'])})")
        for v in self.monotonicity:
            lines.append(f"not monotone in {v['knob']}: {_config(v['config'])} -> {v['knob']}={v['up']} "
                         f"predicts {format_size(v['drop'])} less")
        lines += [f"problem: {p}" for p in self.problems]
        return lines


def _config(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


class _Budgeted:
    """Real runs, cached by configuration and counted against a cap."""

    def __init__(self, measure: Callable[[dict], int | None], cap: int, log: list[dict]) -> None:
        self.measure, self.cap, self.log, self.cache = measure, cap, log, {}

    def __call__(self, config: dict) -> int | None:
        key = tuple(sorted(config.items()))
        if key not in self.cache:
            if len(self.log) >= self.cap:
                raise _OutOfRuns(f"the real-run cap ({self.cap}) is spent")
            t0 = time.perf_counter()
            peak = self.measure(config)
            self.cache[key] = peak
            self.log.append({"config": dict(config), "peak": peak, "seconds": round(time.perf_counter() - t0, 1)})
        return self.cache[key]


class _OutOfRuns(Exception):
    pass


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
    real = _Budgeted(measure, max_real_runs, result.real_runs)
    estimates: dict[tuple, int] = {}

    def est(config: dict) -> int:
        key = tuple(sorted(config.items()))
        if key not in estimates:
            estimates[key] = estimate(config)
        return estimates[key]

    try:
        calibration = envelope.smallest()
        measured = real(calibration)
        result.offset = 0 if measured is None else measured - est(calibration)
        seen = _search(envelope, budget, est, result, max_examples, database, seed)
        _confirm(envelope, budget, est, real, result, seen, boundary)
    except _OutOfRuns as exc:
        result.problems.append(str(exc))
    result.estimates, result.seconds = len(estimates), round(time.perf_counter() - t0, 1)
    return result


def _search(envelope: Envelope, budget: int, est, result: Exploration, max_examples: int, database, seed) -> dict:
    """Two Hypothesis runs on predictions: towards the worst case, then the budget property (shrunk, kept).

    A failing property stops generation, so the worst case is searched by a
    run of its own (target() only, then a climb to the best neighbour while
    the prediction grows); the budget run then shrinks a failure to the
    smallest breaking configuration and keeps it in the example database.
    Returns {config key: predicted} of every configuration predicted.
    """
    from hypothesis import HealthCheck, Phase, given, settings, target
    from hypothesis import seed as hypothesis_seed
    from hypothesis.database import DirectoryBasedExampleDatabase

    seen: dict[tuple, int] = {}
    failing: list[dict] = []
    violations: dict[tuple, dict] = {}

    def predict(config: dict) -> int:
        key = tuple(sorted(config.items()))
        seen[key] = est(config) + result.offset
        return seen[key]

    def seeded(test):
        return hypothesis_seed(seed)(test) if seed is not None else test

    common = {"max_examples": max_examples, "deadline": None, "derandomize": False, "print_blob": False,
              "suppress_health_check": list(HealthCheck)}

    @seeded
    @settings(database=None, phases=(Phase.generate, Phase.target), **common)
    @given(envelope.strategy())
    def towards_worst(config):
        result.examples += 1
        target(predict(config) / 2**20, label="predicted peak (MiB)")
        for knob in envelope.monotone_knobs():
            up = envelope.up(config, knob)
            if up is not None and est(up) < est(config) - 2**20:  # 1 MiB: below that, rounding
                violations.setdefault((knob, tuple(sorted(config.items()))), {
                    "knob": knob, "config": dict(config), "up": up[knob], "drop": est(config) - est(up)})

    @settings(database=DirectoryBasedExampleDatabase(database) if database else None,  # no seed: it disables saving
              phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink), **common)
    @given(envelope.strategy())
    def within_budget(config):
        result.examples += 1
        predicted = predict(config)
        if predicted > budget:
            failing.append(dict(config))  # Hypothesis replays the shrunk example last
            raise AssertionError(f"predicted {format_size(predicted)} > budget {format_size(budget)}")

    towards_worst()
    _climb(envelope, seen, predict)
    try:
        within_budget()
    except BaseException as exc:  # the property's failure is the finding (an ExceptionGroup too)
        if not failing or isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        shrunk = failing[-1]
        result.smallest_failing = {"config": shrunk, "predicted": seen[tuple(sorted(shrunk.items()))],
                                   "measured": None}
    result.monotonicity = list(violations.values())
    return seen


def _climb(envelope: Envelope, seen: dict, predict, moves: int = 50) -> None:
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


def _confirm(envelope: Envelope, budget: int, est, real: _Budgeted, result: Exploration, seen: dict,
             boundary: str | None) -> None:
    """Real runs: the worst case, the boundary along `boundary`, the smallest failing configuration."""
    worst_key = max(seen, key=seen.get)
    worst = dict(worst_key)
    result.worst = {"config": worst, "predicted": seen[worst_key], "measured": real(worst)}
    if boundary is not None:
        result.boundary = _boundary(envelope, budget, est, real, result, worst, boundary)
    if result.smallest_failing is not None:
        result.smallest_failing["measured"] = real(result.smallest_failing["config"])


def _boundary(envelope: Envelope, budget: int, est, real: _Budgeted, result: Exploration, worst: dict,
              knob: str) -> dict:
    """The largest `knob` value within the budget, others at the worst case: predicted, then confirmed for real."""
    values = envelope.values(knob)
    at = {k: v for k, v in worst.items() if k != knob}
    lo, hi = -1, len(values)  # the prediction: bisect the (monotone) estimate
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if est({**at, knob: values[mid]}) + result.offset <= budget else (lo, mid)
    found = confirm_largest(values, lambda v: _fits(real({**at, knob: v}), budget), hint=lo)
    peaks = {config[knob]: p for key, p in real.cache.items()
             if knob in (config := dict(key)) and all(config.get(k) == v for k, v in at.items())}
    return {"knob": knob, "at": at, "value": None if found < 0 else values[found],
            "predicted_value": None if lo < 0 else values[lo], "peaks": peaks}


def _fits(peak: int | None, budget: int) -> bool:
    return peak is not None and peak <= budget


def confirm_largest(values: Sequence, fits: Callable[[Any], bool], hint: int) -> int:
    """Index of the largest value that fits (-1: none), assuming fitting values form a prefix.

    `hint` is the predicted index: a right prediction costs two calls (it fits,
    the next does not); a wrong one is bisected from there.
    """
    good, bad = -1, len(values)  # values[good] fits, values[bad] does not (virtual ends -1 and len)
    first = max(hint, 0)
    if fits(values[first]):
        good = first
        if first + 1 < len(values):
            good, bad = (first + 1, bad) if fits(values[first + 1]) else (good, first + 1)
    else:
        bad = first
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(values[mid]) else (good, mid)
    return good


# -- pytest glue ---------------------------------------------------------------------------------------

def run(gpu_budget, request, scenario, envelope: Envelope, budget: str | int | Mapping[str, str | int],
        boundary: str | None = None,
        max_real_runs: int = DEFAULT_REAL_RUNS, seed: int | None = 0,
        estimate: Callable[[dict], int] | None = None) -> Exploration:
    """Explore `scenario` from a memtest: skipped without --gpu-budget-explore; real runs via gpu_budget.peak().

    On a host without CUDA the prediction is the CPU estimate and the measured
    metric host RAM; on a GPU host the CUDA-mode estimate and vram_allocated.
    budget: a size, or {scale: size} (a scale without one is skipped).
    estimate: a prediction of your own (knobs -> bytes) instead of the
    estimator, for a scenario it has no builder for.
    """
    import pytest

    config = request.config
    if not config.getoption("gpu_budget_explore", False):
        pytest.skip("exploration is opt-in: run with --gpu-budget --gpu-budget-explore")

    scale = config.getoption("gpu_budget_scale")
    if isinstance(budget, Mapping):
        if scale not in budget:
            pytest.skip(f"no exploration budget for scale {scale!r}")
        budget = budget[scale]
    seen = {"cuda": None}

    def measure(knobs: dict) -> int | None:
        m = gpu_budget.peak(scenario.with_params(**knobs))  # skips, with the reason, where it cannot run
        seen["cuda"] = m["peaks"].get("vram_allocated") is not None if m["status"] == "ok" else seen["cuda"]
        return m["peaks"]["vram_allocated" if seen["cuda"] else "ram"] if m["status"] == "ok" else None

    def estimated(knobs: dict) -> int:
        from gpu_budget.estimate import estimate_scenario
        from gpu_budget.estimate_cuda import Device

        device = Device(cuda=bool(seen["cuda"]))
        return estimate_scenario(scenario.with_params(**knobs), scale, device=device).step_peak

    result = explore(scenario.name, envelope, budget, estimate or estimated, measure, boundary=boundary,
                     max_examples=config.getoption("gpu_budget_explore_examples") or DEFAULT_EXAMPLES,
                     max_real_runs=max_real_runs, database=Path(str(config.rootpath)) / DATABASE_DIR, seed=seed)
    result.metric = "vram_allocated" if seen["cuda"] else "ram"
    _report(config, request.node, result)
    return result


def _report(config, item, result: Exploration) -> None:
    """The exploration's lines go to the terminal summary (a section of their own) and the test's properties."""
    reporter = config.pluginmanager.get_plugin("gpu-budget-explore")
    if reporter is None:
        reporter = _Reporter()
        config.pluginmanager.register(reporter, "gpu-budget-explore")
    reporter.results.append((item.nodeid, result))
    item.user_properties.append(("gpu_budget_exploration", result.to_json()))


class _Reporter:
    """Prints every exploration of the session at the end (registered on first use)."""

    def __init__(self) -> None:
        self.results: list[tuple[str, Exploration]] = []

    def pytest_terminal_summary(self, terminalreporter) -> None:
        terminalreporter.section("gpu-budget exploration")
        for nodeid, result in self.results:
            terminalreporter.write_line(nodeid)
            for line in result.summary():
                terminalreporter.write_line(f"  {line}")
