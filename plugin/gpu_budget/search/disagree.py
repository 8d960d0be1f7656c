"""Real runs of an exploration that deny memory growing along its knobs, said as a problem of the exploration.

The search assumes memory does not fall along a monotone knob. A run over the budget (or dead of memory) below one
within it, that one at least as high along every monotone knob and the same along the others, denies it: a
measurement's noise (an RSS reading a few MiB high) or a knob memory falls along. The boundary line's runs are
judged against the boundary (explore.py); these are the others, the calibration run among them, which the search
would report as its smallest breaking configuration.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpu_budget.search.envelope import Envelope
from gpu_budget.search.exploration import Boundary, Config, RealRun, config_text, peak_text


def disagreeing(envelope: Envelope, runs: Sequence[RealRun], budget: int, boundary: Boundary | None) -> list[str]:
    """One problem naming each run over the budget that lies below a run within it, or none."""
    measured = [r for r in runs if r.failed is None]  # a failed run's peak is where it stopped: no measurement
    wrong = []
    for over in (r for r in measured if not _fits(r.peak, budget)):
        above = next((r for r in measured if _fits(r.peak, budget) and _below(envelope, over.config, r.config)
                      and not _judged(boundary, over.config, r.config)), None)
        if above is not None:
            wrong.append(f"{config_text(over.config)}: {peak_text(over.peak)}, over budget, below "
                         f"{config_text(above.config)}: {peak_text(above.peak)}, within it")
    if not wrong:
        return []
    return [(f"real runs contradict memory growing along {', '.join(envelope.monotone_knobs())}: {'; '.join(wrong)}; "
             "a measurement's noise, or memory that falls along a knob: the findings that rest on these runs are "
             "unfounded")]


def _below(envelope: Envelope, low: Config, high: Config) -> bool:
    """Whether `high` is another configuration at least as high as `low` along every monotone knob, the same along
    the others."""
    if dict(low) == dict(high):
        return False
    monotone = envelope.monotone_knobs()
    for knob in envelope.knobs:
        values = envelope.values(knob)
        if knob in monotone and values.index(low[knob]) > values.index(high[knob]):
            return False
        if knob not in monotone and low[knob] != high[knob]:
            return False
    return True


def _judged(boundary: Boundary | None, a: Config, b: Config) -> bool:
    """Whether both runs lie on a settled boundary's line: its own check (explore.py) has judged them."""
    if boundary is None or not boundary.complete:
        return False
    return all(all(c.get(k) == v for k, v in boundary.at.items()) for c in (a, b))


def _fits(peak: int | None, budget: int) -> bool:
    return peak is not None and peak <= budget
