"""The result types every module passes: a child's `Measurement`, a judged case's `Result`, and their parts.

All frozen dataclasses, typed to the leaves (model/figures.py: Peaks,
PhaseRecord, Step, RankFigures, Node); JSON only at the edges: a child's
events become a Measurement in isolate/forkserver.py, and a Result becomes a
row of the JSON report (and of an xdist worker's shipment) through `to_json` /
`from_json`. A mapping given for a typed field when one is made (a test's
stand-in measurement, a row read back) is read as that field's JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from signal import SIGKILL
from typing import Any, TypeVar

from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.case_id import strip_label
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Fields, Node, Peaks, PhaseRecord, RankFigures, Step, Versioned
from gpu_budget.model.growth import GrowthRecord
from gpu_budget.model.json_value import Json, JsonMapping, JsonObject
from gpu_budget.model.setup import Setup

NO_PEAKS = Peaks()
T = TypeVar("T")


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


WITHIN = "within budget and baseline"  # a passing case's message when it has nothing more to say
RECORDED = "no baseline yet: recorded"  # how a first run's message ends (its notes, if any, before it)
UPDATED = "baseline updated"  # how an update's message ends where it writes the entry anew
RE_RECORDED = "baseline re-recorded on this setup"  # ... where it writes an entry recorded on another setup
RE_SPREAD = "baseline re-recorded"  # ... where it writes an entry over another number of runs (--gpu-budget-record-runs)
RUNS_RECORDED = re.compile(r"; \d+ fresh runs: .*?(?= \(baseline file |$)", re.DOTALL)  # the runs an entry keeps, after its claim


def written_claim(message: str) -> tuple[int, int, str] | None:
    """Where a row's message says its entry is written (start, end, the claim), the recorded runs' text after it
    included (they describe that entry), or None: a row whose entry is then not written says why in their place."""
    if RECORDED in message:
        start = message.index(RECORDED)
        runs = RUNS_RECORDED.match(message, start + len(RECORDED))
        return start, runs.end() if runs else start + len(RECORDED), RECORDED
    for claim in (RE_RECORDED, UPDATED, RE_SPREAD):  # the longer of two that start alike first
        start = message.rfind(claim)
        runs = RUNS_RECORDED.match(message, start + len(claim)) if start >= 0 else None
        if start >= 0 and (message.endswith(claim) or runs is not None and runs.end() == len(message)):
            return start, len(message), claim
    return None
FAILED_AFTER = "its test failed after measure()"  # why a case the gate passed counts as failed (Result.failed_after)
ERROR_AFTER = "its test had an error after measure()"  # ... where pytest says "error" (a fixture failing at teardown)
# A test failing on a case's verdict says "[gpu-budget VERDICT] why" (report/terminal.failure_text), pytest's
# reason "Failed: " before it: the test failed on the gate's check of one of its cases, not on its own code.
ON_A_VERDICT = re.compile(r"(Failed: )?\[gpu-budget [a-z-]+\] ")


def verdict_failure(verdict: str, message: str) -> str:
    """The first line of a test failing on a case's verdict (ON_A_VERDICT reads it back)."""
    return f"[gpu-budget {verdict}] {message}"


@dataclass(frozen=True)
class Failure(Fields):
    """Why a measured child failed: its kind ("oom", "killed", "timeout", "exception", "missing-dependency", a
    command's "exit", "rank", "command", "leftover", "unmeasured", "stopped": a test's own timeout, such as
    pytest-timeout's, stopped the wait for it), the exception's type, its message and traceback;
    `phase`: the phase a child stopped from outside (killed, timed out) was in, begun and never ended, so a reader
    (a plot) need not parse the message for it; None where none was open, or the child reported its own failure."""

    kind: str
    type: str | None = None
    message: str = ""
    traceback: str | None = None
    phase: str | None = None

    STOPPED = frozenset({"timeout", "killed", "crash", "stopped"})  # kinds of a child ended or found dead from outside

    @property
    def reported(self) -> bool:
        """Whether the child reported its own failure (an exception, an out-of-memory error, its command's exit): it
        closed the phase it failed in, so its row's phases hold where it failed."""
        return self.phase is None and self.kind not in self.STOPPED

    def to_json(self) -> JsonObject:
        return self._json(omit_none=("phase",))  # a row without one reads as it did before the field

    @classmethod
    def from_json(cls, data: JsonMapping) -> Failure:
        return cls(**data)


@dataclass(frozen=True)
class SnapshotRun(Fields):
    """The recording re-run of a failing CUDA case (never judged): how it ended, its peaks, its time."""

    status: str
    peaks: Peaks
    error: Failure | None
    wall_seconds: float | None

    def to_json(self) -> JsonObject:
        return {"status": self.status, "peaks": self.peaks.to_json(), "wall_seconds": self.wall_seconds,
                "error": None if self.error is None else self.error.to_json()}

    @classmethod
    def from_json(cls, data: JsonMapping) -> SnapshotRun:
        return cls(data["status"], Peaks.from_json(data.get("peaks")),
                   _maybe(Failure.from_json, data.get("error")), data.get("wall_seconds"))


@dataclass(frozen=True)
class JitRerun(Fields):
    """A child measured again because the CUDA driver compiled kernels during it (measure/compute_cache.py).

    cache_growth: bytes the compute cache grew by during the first run;
    first_peaks: that run's figures, which include the driver's compiler and are
    not judged.
    """

    cache_growth: int
    first_peaks: Peaks

    def to_json(self) -> JsonObject:
        return {"cache_growth": self.cache_growth, "first_peaks": self.first_peaks.to_json()}

    @classmethod
    def from_json(cls, data: JsonMapping) -> JitRerun:
        return cls(int(data["cache_growth"]), Peaks.from_json(data["first_peaks"]))


@dataclass(frozen=True)
class EnvironmentRecord(Fields):
    """The environment a case ran in (isolate/environment.py): what it holds, and what getting it ready cost.

    requirements: the lines it was made from. overlay: the packages installed in it, whose versions differ from
    (or are absent in) the running environment; every other package is the running one. named: each required
    package and the version it runs at. key: the digest of what it holds (its folder's name; "" where the overlay
    is empty and the case runs in the running environment itself). seconds: resolving and making it, or finding
    it made (cached). conflicts: running packages it leaves in place whose own requirements its versions break
    (isolate/environment.py, conflicts): what imports them there may fail. waited: the part of `seconds` spent
    waiting while another process (an xdist worker) made it, or failed to; None where it did not wait (0.0 is a
    wait too short to count in seconds). error: why it could not
    be made (the tool's key line; "" where it was made): then `seconds` is what failing took this time, and
    `remembered` says the failure was read from an earlier session's attempt (isolate/env_failures.py), not tried.
    remade: made in place of a half-made folder (a session killed while it made it), which was removed first.
    """

    requirements: tuple[str, ...]
    overlay: Mapping[str, str]
    named: Mapping[str, str]
    key: str
    tool: str
    seconds: float
    cached: bool
    python: str
    conflicts: tuple[str, ...] = ()
    waited: float | None = None
    error: str = ""
    remembered: bool = False
    remade: bool = False

    def to_json(self) -> JsonObject:
        out = {**self._json(), "requirements": list(self.requirements), "overlay": dict(self.overlay),
               "named": dict(self.named), "conflicts": list(self.conflicts)}
        absent = ("conflicts", "error", "remembered", "remade")
        return {k: v for k, v in out.items()
                if (k not in absent or v) and (k != "waited" or v is not None)}  # absent where none

    @classmethod
    def from_json(cls, data: JsonMapping) -> EnvironmentRecord:
        return cls(tuple(data["requirements"]), dict(data["overlay"]), dict(data["named"]), data["key"], data["tool"],
                   data["seconds"], data["cached"], data["python"], tuple(data.get("conflicts", ())),
                   data.get("waited"), data.get("error", ""), data.get("remembered", False),
                   data.get("remade", False))

    @property
    def described(self) -> str:
        """'huggingface-hub==1.33.0 transformers==5.17.0': what the fingerprint records of it."""
        return " ".join(f"{name}=={version}" for name, version in sorted(self.overlay.items()))


@dataclass(frozen=True)
class SweepPoint(Versioned):
    """One version of a swept package, measured for one case: its peaks and change against the reference.

    reference: the version the case runs at without the sweep (gated as usual); the others are reported only.
    status: "ok", "error" (failed to resolve, install, import or run: `message` names it) or "skipped" (it needs
    what this host cannot give, `message` says what). change: per gated metric, against the reference's peaks.
    over_budget: how its peaks break the case's budget, each breach named (empty: within it); reported, not judged.
    A point read from an earlier report without it writes back without it (Versioned).
    """

    package: str
    version: str
    reference: bool
    status: str
    peaks: Peaks | None = None
    change: Mapping[str, float | None] = field(default_factory=dict)
    message: str = ""
    environment: EnvironmentRecord | None = None
    over_budget: tuple[str, ...] = ()
    read_keys: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> JsonObject:
        out = {**self._json(), "change": dict(self.change)}
        if "over_budget" in out:
            out["over_budget"] = list(self.over_budget)
        return out

    @classmethod
    def from_json(cls, data: JsonMapping) -> SweepPoint:
        env = data.get("environment")
        return cls(data["package"], data["version"], data["reference"], data["status"],
                   None if data.get("peaks") is None else Peaks.from_json(data["peaks"]), dict(data.get("change") or {}),
                   data.get("message", ""), None if env is None else EnvironmentRecord.from_json(env),
                   tuple(data.get("over_budget") or ()), read_keys=tuple(data))


# the names of a function case's facts (Measurement.info) that are the gate's own: those its measuring child writes
# there (its allocator, start method, tensor count, card cap, NVML and tree methods) and those the gate reads back
# from any row (its notes and ignored marks: judge/compare.py; a launch's accelerate facts: report/row_fields.py). A
# runner's returned facts share the mapping, so a fact of one of these names stood in for the gate's ("notes":
# "hello" read as five notes, "h; e; l; l; o"): isolate/child.py refuses it, naming it. A command's facts are all
# the gate's (isolate/command.py).
GATE_FACTS = frozenset({
    "malloc", "start_method", "tensor_bytes", "card", "nvml_method", "vram_tree_method",
    "notes", "ignored_marks", "distributed_type", "fsdp_requested",
})


def gate_fact_refusal(what: str, names) -> str:
    """The one message refusing a runner's fact named as the gate's (`what`: where it was given)."""
    return (f"{what} {', '.join(map(repr, sorted(names)))}: a name of the gate's own facts of the row, which yours "
            "would stand in for: name yours otherwise")


@dataclass(frozen=True)
class Measurement:
    """What one measured child found; a child that died is a measurement too (status "error", the peak so far).

    peaks: the run's peak per metric (None where not measured: every GPU figure
    on a CPU host). phases: each phase's record by name, in the order run.
    steps: the train steps' figures in order. growth: "<metric>_per_step", the
    growth per step rises.py reads. info: facts the runner reported
    (JSON). error: why a failed child failed, else None.
    """

    status: str
    peaks: Peaks
    phases: Mapping[str, PhaseRecord] = field(default_factory=dict)
    step_peaks: Peaks | None = None
    steps: tuple[Step, ...] = ()
    growth: Mapping[str, float | None] = field(default_factory=dict)
    info: JsonMapping = field(default_factory=dict)
    error: Failure | None = None
    cuda: bool = False
    ram_method: str | None = None
    ram_tree_method: str | None = None
    ram_tree_bound: str | None = None
    wall_seconds: float | None = None
    exitcode: int | None = None
    snapshot: str | None = None  # a memory snapshot the child dumped (a recording run only)
    # a launcher case (torchrun, accelerate launch): each rank's figures (measure/ranks.py); `peaks`, `phases` and
    # `steps` are then the worst rank's, and `node` holds the whole node's
    ranks: tuple[RankFigures, ...] = ()
    node: Node | None = None
    jit_rerun: JitRerun | None = None  # this is the second run: the first one's driver compiled kernels
    environment: EnvironmentRecord | None = None  # the environment it ran in, where the case declares one

    def __post_init__(self) -> None:
        if self.status not in ("ok", "error"):
            raise ValueError(f"Measurement status {self.status!r}: expected 'ok' or 'error'")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def error_kind(self) -> str | None:
        """"oom", "killed", "timeout", "exception", "missing-dependency", ...; None for a child that finished."""
        return None if self.error is None else self.error.kind

    @property
    def died_of_memory(self) -> bool:
        """Whether the child died of out-of-memory: torch's error, or SIGKILL, what the kernel's OOM killer sends (a
        child killed by another signal, SIGSEGV or SIGABRT, crashed)."""
        if self.error is None or self.error.kind not in ("oom", "killed"):
            return False
        return self.error.kind == "oom" or self.exitcode == -SIGKILL or "SIGKILL" in self.error.message

    @property
    def ram(self) -> int | None:
        """The gated host-RAM peak: the process tree's, or the main process's where no tree was read."""
        return self.peaks.gated_ram

    def _row_fields(self) -> JsonObject:
        """This measurement's fields as a JSON report row holds them."""
        return {"peaks": self.peaks.to_json(),
                "step_peaks": None if self.step_peaks is None else self.step_peaks.to_json(),
                "growth": dict(self.growth), "phases": {name: p.to_json() for name, p in self.phases.items()},
                "steps": [s.to_json() for s in self.steps],
                "info": dict(self.info), "error": None if self.error is None else self.error.to_json(),
                "ram_method": self.ram_method, "ram_tree_method": self.ram_tree_method,
                "ram_tree_bound": self.ram_tree_bound, "wall_seconds": self.wall_seconds,
                **({"ranks": [r.to_json() for r in self.ranks],
                    "node": None if self.node is None else self.node.to_json()} if self.ranks else {}),
                **({"jit_rerun": self.jit_rerun.to_json()} if self.jit_rerun is not None else {}),
                **({"environment": self.environment.to_json()} if self.environment is not None else {})}

    @classmethod
    def _from_row(cls, row: JsonMapping) -> Measurement:
        peaks = Peaks.from_json(row["peaks"])
        return cls(status="ok" if row.get("error") is None else "error", peaks=peaks,
                   phases={name: PhaseRecord.from_json({"name": name, **p}) for name, p in (row.get("phases") or {}).items()},
                   step_peaks=_maybe(Peaks.from_json, row.get("step_peaks")),
                   steps=tuple(Step.from_json(s) for s in row.get("steps") or ()),
                   growth=row.get("growth") or {}, info=row.get("info") or {}, error=_maybe(Failure.from_json, row.get("error")),
                   cuda=peaks.vram_allocated is not None, ram_method=row.get("ram_method"),
                   ram_tree_method=row.get("ram_tree_method"), ram_tree_bound=row.get("ram_tree_bound"),
                   wall_seconds=row.get("wall_seconds"), ranks=tuple(RankFigures.from_json(r) for r in row.get("ranks") or ()),
                   node=_maybe(Node.from_json, row.get("node")), jit_rerun=_maybe(JitRerun.from_json, row.get("jit_rerun")),
                   environment=_maybe(EnvironmentRecord.from_json, row.get("environment")))

    def to_json(self) -> JsonObject:
        """The whole measurement, as it crosses a process (a helper in another environment, isolate/remote.py)."""
        return {**self._row_fields(), "status": self.status, "exitcode": self.exitcode, "snapshot": self.snapshot,
                "cuda": self.cuda}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Measurement:
        return replace(cls._from_row(data), status=data["status"], exitcode=data.get("exitcode"),
                       snapshot=data.get("snapshot"), cuda=bool(data.get("cuda")))


@dataclass(frozen=True)
class Trial(Fields):
    """One real run of the remediation search: the fixes it added, its verdict against the budget, its peaks."""

    fixes: tuple[str, ...]
    verdict: str  # "pass", "over-budget" or "error"
    peaks: Peaks | None
    message: str = ""
    seconds: float | None = None
    crashed: bool = False  # its child failed of something other than memory: no larger set holding these is run
    # its fixes the runner reports it did not apply (info["fixes_applied"]), with its note: a pass of it is no remedy
    not_applied: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {"fixes": list(self.fixes), "verdict": self.verdict,
                "peaks": None if self.peaks is None else self.peaks.to_json(), "message": self.message,
                "seconds": self.seconds, **({"crashed": True} if self.crashed else {}),  # only where set: older
                **({"not_applied": dict(self.not_applied)} if self.not_applied else {})}  # reports read back unchanged

    @classmethod
    def from_json(cls, data: JsonMapping) -> Trial:
        return cls(tuple(data["fixes"]), data["verdict"], None if data.get("peaks") is None else
                   Peaks.from_json(data["peaks"]), data.get("message", ""), data.get("seconds"),
                   bool(data.get("crashed")), dict(data.get("not_applied") or {}))


COUNT_CAP = 100_000  # candidate sets counted (never run) to say how many the bound left untried; past it, "more than"


@dataclass(frozen=True)
class Remediation(Fields):
    """The remediation search's answer (search/remediate.py), as a case's row holds it."""

    status: str  # "found", "not-needed" (it passes as it is), "none-passes", "bound-reached" or "no-candidates"
    found: tuple[str, ...] | None  # the fixes the search added (None: no passing set; (): none needed)
    fixes: tuple[str, ...] | None  # every fix of the passing configuration
    removed: tuple[str, ...]  # fixes of the failing configuration the passing one replaced
    peaks: Peaks | None  # the passing configuration's peaks
    runs: int  # real runs it took
    bound: int  # max_runs
    tried: tuple[Trial, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)  # fix -> why it was left out of the lattice
    lattice: tuple[str, ...] = ()  # the fixes it combined, cheapest first
    untried: int = 0  # candidate sets the bound left unrun; above COUNT_CAP: more than it (counted no further)
    pruned: Mapping[str, int] = field(default_factory=dict)  # a crashed set ("a+b") -> sets holding it not run
    unapplied: Mapping[str, int] = field(default_factory=dict)  # a fix not applied when run alone -> sets holding it not run

    def to_json(self) -> JsonObject:
        def names(value: tuple[str, ...] | None) -> list[str] | None:
            return None if value is None else list(value)

        return {"status": self.status, "found": names(self.found), "fixes": names(self.fixes),
                "removed": list(self.removed), "peaks": None if self.peaks is None else self.peaks.to_json(),
                "runs": self.runs, "bound": self.bound, "tried": [t.to_json() for t in self.tried],
                "skipped": dict(self.skipped), "lattice": list(self.lattice), "untried": self.untried,
                **({"pruned": dict(self.pruned)} if self.pruned else {}),  # only where any: as `crashed`
                **({"unapplied": dict(self.unapplied)} if self.unapplied else {})}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Remediation:
        def names(value: list[str] | None) -> tuple[str, ...] | None:
            return None if value is None else tuple(value)

        return cls(data["status"], names(data.get("found")), names(data.get("fixes")), tuple(data.get("removed") or ()),
                   None if data.get("peaks") is None else Peaks.from_json(data["peaks"]), data["runs"], data["bound"],
                   tuple(Trial.from_json(t) for t in data.get("tried") or ()), dict(data.get("skipped") or {}),
                   tuple(data.get("lattice") or ()), data.get("untried", 0), dict(data.get("pruned") or {}),
                   dict(data.get("unapplied") or {}))


@dataclass(frozen=True)
class Note:
    """A test's measured finding that is not one case's peak (gpu_budget.note()): its scenario, scale and text."""

    nodeid: str
    scenario: str
    scale: str
    text: str
    data: JsonMapping = field(default_factory=dict)

    def to_json(self) -> JsonObject:
        return {"nodeid": self.nodeid, "scenario": self.scenario, "scale": self.scale, "text": self.text,
                "data": dict(self.data)}

    @classmethod
    def from_json(cls, data: JsonMapping) -> Note:
        return cls(data["nodeid"], data["scenario"], data["scale"], data["text"], dict(data.get("data") or {}))


@dataclass(frozen=True)
class Result:
    """One judged case: what was asked (budget, expectation), what was measured, and the verdict.

    measurement: None where no child ran (skipped, or an error found before
    measuring). verdict: "pass", "over-budget", "regression", "improved", "no-baseline",
    "error" or "skipped"; passed: the gate's word, whether the case passes on its
    verdict (its test fails where it does not). test_outcome: pytest's word on the
    test around it, "passed", "failed", "error", "skipped", "xfailed" or "xpassed"
    (the words of pytest's summary line: "error" a failed setup or teardown), set once the test's call has reported (session/held.py;
    None before, or where it never reported); a test can fail on its own assertion
    after measure() returned a row the gate passed. test_failure: where the test
    failed, the first line of pytest's reason. budget: the declared limits (None:
    not declared); tolerance: the baseline tolerance. baseline: the stored entry
    compared against ({peaks, recorded, fingerprint, phases, spread}); change: relative
    change per metric against it.
    """

    nodeid: str
    scenario: str
    scale: str
    verdict: Verdict
    passed: bool
    message: str
    label: str | None = None
    fixes: tuple[str, ...] = ()
    # the knobs the case ran with (its scenario's params at its scale, its fixes' included), so a reader tells a fix
    # of a scenario from a variant of it; None in a row of a report written before rows carried them
    params: JsonMapping | None = None
    device: str | None = None
    budget: Budget = field(default_factory=Budget)
    expect: str | None = None
    budget_origin: str | None = None  # where the budget's figure comes from (marks.ORIGINS): FINDINGS.md says what it shows
    # False: a row of a report written before rows carried budget_origin (a recorded None is a mark that declared none)
    origin_recorded: bool = True
    tolerance: Tolerance | None = None
    measurement: Measurement | None = None
    baseline: Entry | None = None  # the stored entry compared against
    baseline_file: str | None = None  # the file it was read from (or looked for in, recorded in)
    change: Mapping[str, float | None] = field(default_factory=dict)
    fingerprint_changed: tuple[str, ...] = ()
    setup: Setup | None = None  # against the baseline's setup
    remediation: Remediation | None = None  # the remediation search's answer
    snapshot_run: SnapshotRun | None = None  # the recording re-run of a failing CUDA case
    snapshot: str | None = None  # its memory snapshot, kept
    growth_projection: GrowthRecord | None = None  # the growth rule's answer, where the mark declared steps=
    plot: str | None = None
    worker: JsonMapping | None = None  # an xdist worker's placement (isolate/placement.py Placement.to_json)
    sweep: tuple[SweepPoint, ...] = ()  # --gpu-budget-sweep: the case at each version swept, reported beside its verdict
    unchecked: tuple[str, ...] = ()  # budgets declared but not checked on this host, each with why (a VRAM one on a CPU)
    card: str | None = None  # the card the case ran as on (card=, on CUDA): its label
    card_key: str | None = None  # ... and its key, one for every spelling of the card (Card.key)
    test_outcome: str | None = None  # pytest's word for the test around the case: "passed", "failed", "error", "skipped", ...
    test_failure: str | None = None  # where that test failed: the first line of pytest's reason

    # what was measured, read through: a case that ran no child has no peaks, phases or facts
    @property
    def peaks(self) -> Peaks:
        return self.measurement.peaks if self.measurement else NO_PEAKS

    @property
    def phases(self) -> Mapping[str, PhaseRecord]:
        return self.measurement.phases if self.measurement else {}

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.measurement.steps if self.measurement else ()

    @property
    def growth(self) -> Mapping[str, float | None]:
        return self.measurement.growth if self.measurement else {}

    @property
    def ranks(self) -> tuple[RankFigures, ...]:
        return self.measurement.ranks if self.measurement else ()

    @property
    def info(self) -> JsonMapping:
        return self.measurement.info if self.measurement else {}

    @property
    def error(self) -> Failure | None:
        return self.measurement.error if self.measurement else None

    @property
    def environment(self) -> EnvironmentRecord | None:
        return self.measurement.environment if self.measurement else None

    @property
    def test_failed(self) -> bool:
        """pytest failed the test around the case: on its verdict, or on the test's own code after measure() (an
        "error" where a fixture failed at its setup or teardown)."""
        return self.test_outcome in ("failed", "error")

    @property
    def failed_after(self) -> str | None:
        """Why a case the gate passed counts among the failed: its test failed after measure() returned it (its own
        assertion), with pytest's reason; None for any other case, and for one whose test failed on another of its
        cases' verdicts (that case's row says why; this one passed its check and no code of the test failed)."""
        if not self.passed or not self.test_failed or ON_A_VERDICT.match(self.test_failure or ""):
            return None
        said = ERROR_AFTER if self.test_outcome == "error" else FAILED_AFTER
        return f"{said}: {self.test_failure or 'pytest reports why'}"

    @property
    def measured(self) -> bool:
        """A child ran for this case (even if it crashed): the fail-safe counts it."""
        return self.measurement is not None

    @property
    def test_nodeid(self) -> str:
        """The pytest node id this result belongs to (a labelled measurement adds '::label': model/case_id.py)."""
        return strip_label(self.nodeid, self.label)

    def but(self, **changes: Any) -> Result:
        """A copy with `changes` (a verdict amended, a plot attached)."""
        return replace(self, **changes)

    def to_json(self) -> JsonObject:
        """The JSON report's row (report/json_report.py REPORT_VERSION)."""
        row: JsonObject = {
            "nodeid": self.nodeid, "scenario": self.scenario, "label": self.label, "scale": self.scale,
            "fixes": list(self.fixes), "device": self.device, "budget": self.budget.to_json(), "expect": self.expect,
            "budget_origin": self.budget_origin, "tolerance": None if self.tolerance is None else self.tolerance.to_json(),
            "peaks": NO_PEAKS.to_json(), "phases": {}, "steps": [], "growth": {}, "baseline": None, "change": {},
            "info": {},
        }
        if self.worker is not None:
            row["worker"] = dict(self.worker)
        if self.measurement is not None:
            row.update(self.measurement._row_fields(), fingerprint_changed=list(self.fingerprint_changed),
                       setup=None if self.setup is None else self.setup.to_json())
        row.update(baseline=None if self.baseline is None else self.baseline.to_row_json(), change=dict(self.change),
                   verdict=str(self.verdict), passed=self.passed, message=self.message, test_outcome=self.test_outcome)
        optional = {"remediation": None if self.remediation is None else self.remediation.to_json(),
                    "snapshot_run": None if self.snapshot_run is None else self.snapshot_run.to_json(),
                    "snapshot": self.snapshot, "baseline_file": self.baseline_file, "growth_projection": None if self.growth_projection is None else self.growth_projection.to_json(), "plot": self.plot,
                    "sweep": [p.to_json() for p in self.sweep] or None, "unchecked": list(self.unchecked) or None,
                    "card": self.card, "card_key": self.card_key, "test_failure": self.test_failure,
                    "params": None if self.params is None else dict(self.params)}
        row.update({k: v for k, v in optional.items() if v is not None})
        return row

    @classmethod
    def from_json(cls, row: Mapping) -> Result:
        """A report row back (any readable report version: version 1 rows lack the tree's fields)."""
        try:
            return cls(
                nodeid=row["nodeid"], scenario=row["scenario"], scale=row["scale"], verdict=_verdict(row["verdict"]),
                passed=row.get("passed", True), message=row.get("message", ""), label=row.get("label"),
                fixes=tuple(row.get("fixes") or ()), params=_params(row.get("params")), device=row.get("device"),
                budget=Budget.from_json(row.get("budget")), expect=row.get("expect"),
                budget_origin=row.get("budget_origin"), origin_recorded="budget_origin" in row, tolerance=_maybe(Tolerance.from_json, row.get("tolerance")),
                measurement=Measurement._from_row(row) if "wall_seconds" in row else None,
                baseline=_maybe(Entry.from_json, row.get("baseline")), baseline_file=row.get("baseline_file"),
                change=row.get("change") or {}, fingerprint_changed=tuple(row.get("fingerprint_changed") or ()),
                setup=_maybe(Setup.from_json, row.get("setup")),
                remediation=None if row.get("remediation") is None else Remediation.from_json(row["remediation"]),
                snapshot_run=None if row.get("snapshot_run") is None else SnapshotRun.from_json(row["snapshot_run"]),
                snapshot=row.get("snapshot"), growth_projection=_maybe(GrowthRecord.from_json, row.get("growth_projection")), plot=row.get("plot"),
                worker=row.get("worker"), sweep=tuple(SweepPoint.from_json(p) for p in row.get("sweep") or ()), unchecked=tuple(row.get("unchecked") or ()),
                card=row.get("card"), card_key=row.get("card_key"), test_outcome=row.get("test_outcome"),
                test_failure=row.get("test_failure"))
        except KeyError as exc:
            raise ValueError(f"not a gpu-budget result row (no {exc.args[0]!r}): {dict(row)!r:.200}") from None


def _maybe(read: Callable[[JsonMapping], T], data: JsonMapping | None) -> T | None:
    """A typed field read from its JSON, where the JSON holds one."""
    return None if data is None else read(data)


def param_changes(before: Mapping, after: Mapping) -> tuple[tuple[str, str, str], ...]:
    """The knobs two runs of a case ran at other values, by name: (name, value before, value after), each value as
    JSON, as an entry stores it (a tuple reads as the list it was saved as; "unset" where a run lacks the knob): what
    tells a variant of a case (another batch size) from the case, and a params change from a code change."""
    unset = object()
    out = []
    for name in sorted(set(before) | set(after), key=str):
        shown = ["unset" if value is unset else json.dumps(value, sort_keys=True, default=str)
                 for value in (before.get(name, unset), after.get(name, unset))]
        if shown[0] != shown[1]:
            out.append((name, shown[0], shown[1]))
    return tuple(out)


def _params(value: Json) -> JsonMapping | None:
    """A row's params: None where the row has none (written before rows carried them), else its knobs."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"a row's params {value!r:.200}: expected an object of knob name to value")  # noqa: TRY004  a bad row is a ValueError, as every bad field of one
    return dict(value)


def _verdict(value: str) -> Verdict:
    try:
        return Verdict(value)
    except ValueError:
        raise ValueError(f"verdict {value!r}: expected one of {', '.join(v.value for v in Verdict)}") from None
