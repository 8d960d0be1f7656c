"""Turn one Measurement into a verdict against its budget and its baseline.

Gated metrics: the host RAM peak and the *allocated* GPU peak. Reserved and
NVML device memory are reported but not gated: they depend on the caching
allocator's history and are too noisy to fail a merge on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_budget.baselines import Tolerance
from gpu_budget.scenario import Budget
from gpu_budget.units import format_size

GATED = ("ram", "vram_allocated")
FAILING = {"over-budget", "regression", "error"}
VERDICTS = ("pass", "over-budget", "regression", "improved", "no-baseline", "skipped", "error")


@dataclass
class Judgement:
    verdict: str
    passed: bool
    message: str
    change: dict[str, float | None] = field(default_factory=dict)  # metric -> relative change vs baseline
    write_baseline: bool = False


def budget_breaches(peaks: dict, budget: Budget) -> list[str]:
    out = []
    if budget.ram is not None and peaks.get("ram") is not None and peaks["ram"] > budget.ram:
        out.append(f"host RAM peak {format_size(peaks['ram'])} > budget {format_size(budget.ram)}")
    vram = peaks.get("vram_allocated")
    if budget.vram is not None and vram is not None and vram > budget.vram:
        out.append(f"GPU allocated peak {format_size(vram)} > budget {format_size(budget.vram)}")
    return out


def _seen(peaks: dict) -> str:
    seen = f"host RAM peak seen so far {format_size(peaks.get('ram'))}"
    if peaks.get("vram_allocated") is not None:
        seen += f", GPU allocated {format_size(peaks['vram_allocated'])}"
    return seen


def _died_over_budget(error: dict, peaks: dict, budget: Budget) -> str | None:
    """How a child that died still reproduced an over-budget failure, or None.

    An out-of-memory death is the reported failure itself: the session measures
    a VRAM budget only on a card with at least that much memory (a budget above
    the card is skipped), so running out of the card means needing more than the
    budget. A child killed by SIGKILL (the kernel's OOM killer) reproduces it when
    the peak seen before the kill, a lower bound of its peak, already broke the budget.
    """
    if error["kind"] == "oom":
        return (f"over budget as expected: the child died of out-of-memory ({error['message'][:300]}), the reported "
                f"failure itself; {_seen(peaks)}")
    breaches = budget_breaches(peaks, budget)
    if error["kind"] == "killed" and breaches:
        return f"over budget as expected: {'; '.join(breaches)} before the child was {error['message']}"
    return None


def judge(measurement: dict, budget: Budget, baseline: dict | None, tolerance: Tolerance, *,
          ci: bool, update: bool, expect: str | None = None) -> Judgement:
    """The verdict for one measured case.

    expect="over-budget": the case reproduces a reported failure, so breaking
    the budget is the passing outcome and staying within it fails (the
    reproduction was lost); a child that died of out-of-memory reproduces it
    too. Baseline regressions fail either way.
    """
    peaks = measurement["peaks"]
    if measurement["status"] != "ok":
        error = measurement["error"]
        reproduced = _died_over_budget(error, peaks, budget) if expect == "over-budget" else None
        if reproduced:
            return Judgement("over-budget", True, reproduced)
        return Judgement("error", False, f"measured child failed ({error['kind']}): {error['message']}; {_seen(peaks)}")

    breaches = budget_breaches(peaks, budget)
    notes: list[str] = []
    if expect == "over-budget":
        if not breaches:
            return Judgement("pass", False, "expected this configuration to break its budget (it reproduces a "
                                            "reported failure), but it stayed within it: the reproduction is lost")
        notes.append("over budget as expected: " + "; ".join(breaches))
    elif breaches:
        return Judgement("over-budget", False, "; ".join(breaches))

    if baseline is None:
        if ci and not update:
            return Judgement("no-baseline", False, "no baseline recorded for this test on this hardware; "
                                                   "record one with --gpu-budget-update and commit it")
        verdict = "over-budget" if expect == "over-budget" else "no-baseline"
        return Judgement(verdict, True, "; ".join(notes + ["no baseline yet: recorded"]), write_baseline=True)

    change: dict[str, float | None] = {}
    regressed, improved = [], []
    for metric in GATED:
        now, then = peaks.get(metric), baseline["peaks"].get(metric)
        if now is None or then is None:
            continue
        change[metric] = (now - then) / then if then else None
        if now > tolerance.limit(then):
            regressed.append(f"{metric} {format_size(now)} > baseline {format_size(then)} "
                             f"+{tolerance.rel:.1%} +{format_size(tolerance.abs)}")
        elif now < tolerance.floor(then):
            improved.append(f"{metric} {format_size(now)} < baseline {format_size(then)} "
                            f"-{tolerance.rel:.1%} -{format_size(tolerance.abs)}")
    if regressed:
        if update:
            return Judgement("regression", True, "; ".join(notes + regressed + ["baseline updated"]), change, True)
        return Judgement("regression", False, "; ".join(notes + regressed), change)
    if improved:
        action = "baseline updated" if update else "update the baseline (--gpu-budget-update)"
        return Judgement("improved", True, "; ".join(notes + improved + [action]), change, update)
    verdict = "over-budget" if expect == "over-budget" else "pass"
    return Judgement(verdict, True, "; ".join(notes) or "within budget and baseline", change)
