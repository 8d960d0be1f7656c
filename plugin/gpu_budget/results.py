"""The two result types every module passes: a child's `Measurement` and a judged case's `Result`.

Both are frozen dataclasses; JSON only at the edges: a child's events become a
Measurement in isolate/forkserver.py, and a Result becomes a row of the JSON report (and
of an xdist worker's shipment) through `to_json` / `from_json`. Peaks, phases,
steps and growth stay byte-count mappings keyed as the child writes them
(meter.PEAK_KEYS: "ram", "ram_tree", "ram_tensor", "vram_allocated", ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from gpu_budget.measure.meter import PEAK_KEYS, ram_gated

# the metrics every row holds; a command's tree GPU figure (vram_tree), added later, only where its run read it,
# so a row of an earlier report reads back into the same row
NO_PEAKS: Mapping[str, int | None] = dict.fromkeys(k for k in PEAK_KEYS if k != "vram_tree")


class Verdict(str, Enum):
    """What a judged case came to. A str, so a JSON row holds its value and a row read back compares equal."""

    PASS = "pass"
    OVER_BUDGET = "over-budget"
    REGRESSION = "regression"
    IMPROVED = "improved"
    NO_BASELINE = "no-baseline"
    SKIPPED = "skipped"
    ERROR = "error"

    __str__ = str.__str__
    __format__ = str.__format__


@dataclass(frozen=True)
class Measurement:
    """What one measured child found; a child that died is a measurement too (status "error", the peak so far).

    peaks: the run's peak per metric, in bytes (None where not measured: every
    GPU figure on a CPU host). phases: each phase's record by name, in the order
    run (ram_peak, ram_tree_peak, vram_allocated, ..., step for a train step).
    steps: the train steps' records in order. growth: "<metric>_per_step", the
    least-squares slope over the steady steps. info: facts the runner reported.
    error: {kind, type, message, traceback} of a failed child, else None.
    """

    status: str
    peaks: Mapping[str, int | None]
    phases: Mapping[str, dict] = field(default_factory=dict)
    step_peaks: Mapping[str, int | None] | None = None
    steps: tuple[dict, ...] = ()
    growth: Mapping[str, float | None] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    error: Mapping[str, Any] | None = None
    cuda: bool = False
    ram_method: str | None = None
    ram_tree_method: str | None = None
    ram_tree_bound: str | None = None
    wall_seconds: float | None = None
    exitcode: int | None = None
    snapshot: str | None = None  # a memory snapshot the child dumped (a recording run only)
    # a launcher case (torchrun, accelerate launch): each rank's figures (measure/ranks.py); `peaks`, `phases` and
    # `steps` are then the worst rank's, and `node` holds the whole node's: {"peaks": {"ram": the launcher's
    # process, "ram_tree": every process, "vram_tree": every process's GPU memory}, "phases", "steps"}
    ranks: tuple[dict, ...] = ()
    node: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in ("ok", "error"):
            raise ValueError(f"Measurement status {self.status!r}: expected 'ok' or 'error'")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def error_kind(self) -> str | None:
        """"oom", "killed", "timeout", "exception", "missing-dependency", ...; None for a child that finished."""
        return None if self.error is None else self.error.get("kind")

    @property
    def ram(self) -> int | None:
        """The gated host-RAM peak: the process tree's, or the main process's where no tree was read."""
        return ram_gated(self.peaks)

    @classmethod
    def from_child(cls, summary: Mapping, **rest: Any) -> Measurement:
        """From meter.summarize's dict (its phases a list) and what isolate/forkserver.py adds (status, info, error, ...)."""
        phases = {p["name"]: dict(p) for p in summary["phases"]}
        return cls(peaks=dict(summary["peaks"]), phases=phases, step_peaks=summary.get("step_peaks"),
                   steps=tuple(summary.get("steps", ())), growth=dict(summary.get("growth", {})),
                   cuda=bool(summary.get("cuda")), ram_method=summary.get("ram_method"),
                   ram_tree_method=summary.get("ram_tree_method"), ram_tree_bound=summary.get("ram_tree_bound"),
                   ranks=tuple(summary.get("ranks") or ()), node=summary.get("node"), **rest)

    def _row_fields(self) -> dict:
        """This measurement's fields as a JSON report row holds them."""
        return {"peaks": dict(self.peaks), "step_peaks": None if self.step_peaks is None else dict(self.step_peaks),
                "growth": dict(self.growth), "phases": dict(self.phases), "steps": list(self.steps),
                "info": dict(self.info), "error": None if self.error is None else dict(self.error),
                "ram_method": self.ram_method, "ram_tree_method": self.ram_tree_method,
                "ram_tree_bound": self.ram_tree_bound, "wall_seconds": self.wall_seconds,
                **({"ranks": list(self.ranks), "node": dict(self.node or {})} if self.ranks else {})}

    @classmethod
    def _from_row(cls, row: Mapping) -> Measurement:
        return cls(status="ok" if row.get("error") is None else "error", peaks={**NO_PEAKS, **row["peaks"]},
                   phases=row.get("phases") or {}, step_peaks=row.get("step_peaks"), steps=tuple(row.get("steps") or ()),
                   growth=row.get("growth") or {}, info=row.get("info") or {}, error=row.get("error"),
                   cuda=row["peaks"].get("vram_allocated") is not None, ram_method=row.get("ram_method"),
                   ram_tree_method=row.get("ram_tree_method"), ram_tree_bound=row.get("ram_tree_bound"),
                   wall_seconds=row.get("wall_seconds"), ranks=tuple(row.get("ranks") or ()), node=row.get("node"))


@dataclass(frozen=True)
class Result:
    """One judged case: what was asked (budget, expectation), what was measured, and the verdict.

    measurement: None where no child ran (skipped, or an error found before
    measuring). verdict: "pass", "over-budget", "regression", "improved", "no-baseline",
    "error" or "skipped"; passed: whether the test passes on it. budget:
    {"ram", "vram"} in bytes (None: not declared); tolerance: {"rel", "abs"}.
    baseline: the stored entry compared against ({peaks, recorded, fingerprint,
    phases}); change: relative change per metric against it.
    """

    nodeid: str
    scenario: str
    scale: str
    verdict: Verdict
    passed: bool
    message: str
    label: str | None = None
    fixes: tuple[str, ...] = ()
    device: str | None = None
    budget: Mapping[str, int | None] = field(default_factory=lambda: {"ram": None, "vram": None})
    expect: str | None = None
    budget_origin: str | None = None  # where the budget's figure comes from (marks.ORIGINS): FINDINGS.md says what it shows
    tolerance: Mapping[str, float | int] | None = None
    measurement: Measurement | None = None
    baseline: Mapping[str, Any] | None = None
    change: Mapping[str, float | None] = field(default_factory=dict)
    fingerprint_changed: tuple[str, ...] = ()
    setup: Mapping[str, Any] | None = None  # {policy, floor_shift} against the baseline's setup (compare.Setup)
    remediation: Mapping[str, Any] | None = None  # remediate.Remedy.to_json()
    snapshot_run: Mapping[str, Any] | None = None  # the recording re-run of a failing CUDA case
    snapshot: str | None = None  # its memory snapshot, kept
    growth_projection: Mapping[str, Any] | None = None  # judge/growth.py's Check, where the mark declared steps=
    plot: str | None = None
    worker: Mapping[str, Any] | None = None  # an xdist worker's placement

    # what was measured, read through: a case that ran no child has no peaks, phases or facts
    @property
    def peaks(self) -> Mapping[str, int | None]:
        return self.measurement.peaks if self.measurement else NO_PEAKS

    @property
    def phases(self) -> Mapping[str, dict]:
        return self.measurement.phases if self.measurement else {}

    @property
    def steps(self) -> tuple[dict, ...]:
        return self.measurement.steps if self.measurement else ()

    @property
    def growth(self) -> Mapping[str, float | None]:
        return self.measurement.growth if self.measurement else {}

    @property
    def info(self) -> Mapping[str, Any]:
        return self.measurement.info if self.measurement else {}

    @property
    def error(self) -> Mapping[str, Any] | None:
        return self.measurement.error if self.measurement else None

    @property
    def measured(self) -> bool:
        """A child ran for this case (even if it crashed): the fail-safe counts it."""
        return self.measurement is not None

    @property
    def test_nodeid(self) -> str:
        """The pytest node id this result belongs to (a labelled measurement adds '::label')."""
        return self.nodeid[: -len(self.label) - 2] if self.label else self.nodeid

    def but(self, **changes: Any) -> Result:
        """A copy with `changes` (a verdict amended, a plot attached)."""
        return replace(self, **changes)

    def to_json(self) -> dict:
        """The JSON report's row (report/json_report.py REPORT_VERSION)."""
        row: dict[str, Any] = {
            "nodeid": self.nodeid, "scenario": self.scenario, "label": self.label, "scale": self.scale,
            "fixes": list(self.fixes), "device": self.device, "budget": dict(self.budget), "expect": self.expect,
            "budget_origin": self.budget_origin, "tolerance": None if self.tolerance is None else dict(self.tolerance),
            "peaks": dict(NO_PEAKS), "phases": {}, "steps": [], "growth": {}, "baseline": None, "change": {}, "info": {},
        }
        if self.worker is not None:
            row["worker"] = dict(self.worker)
        if self.measurement is not None:
            row.update(self.measurement._row_fields(), fingerprint_changed=list(self.fingerprint_changed),
                       setup=None if self.setup is None else dict(self.setup))
        row.update(baseline=None if self.baseline is None else dict(self.baseline), change=dict(self.change),
                   verdict=str(self.verdict), passed=self.passed, message=self.message)
        optional = {"remediation": self.remediation, "snapshot_run": self.snapshot_run, "snapshot": self.snapshot,
                    "growth_projection": self.growth_projection, "plot": self.plot}
        row.update({k: v for k, v in optional.items() if v is not None})
        return row

    @classmethod
    def from_json(cls, row: Mapping) -> Result:
        """A report row back (any readable report version: version 1 rows lack the tree's fields)."""
        try:
            return cls(
                nodeid=row["nodeid"], scenario=row["scenario"], scale=row["scale"], verdict=_verdict(row["verdict"]),
                passed=row.get("passed", True), message=row.get("message", ""), label=row.get("label"),
                fixes=tuple(row.get("fixes") or ()), device=row.get("device"),
                budget=row.get("budget") or {"ram": None, "vram": None}, expect=row.get("expect"),
                budget_origin=row.get("budget_origin"), tolerance=row.get("tolerance"),
                measurement=Measurement._from_row(row) if "wall_seconds" in row else None,
                baseline=row.get("baseline"), change=row.get("change") or {},
                fingerprint_changed=tuple(row.get("fingerprint_changed") or ()), setup=row.get("setup"),
                remediation=row.get("remediation"), snapshot_run=row.get("snapshot_run"),
                snapshot=row.get("snapshot"), growth_projection=row.get("growth_projection"), plot=row.get("plot"),
                worker=row.get("worker"))
        except KeyError as exc:
            raise ValueError(f"not a gpu-budget result row (no {exc.args[0]!r}): {dict(row)!r:.200}") from None


def _verdict(value: str) -> Verdict:
    try:
        return Verdict(value)
    except ValueError:
        raise ValueError(f"verdict {value!r}: expected one of {', '.join(v.value for v in Verdict)}") from None
