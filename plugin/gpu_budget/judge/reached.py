"""Whether a run reached every phase its baseline measured.

A run's peaks are compared with its baseline's as figures of the same run.
One that stopped short of its baseline's phases (a step count cut, a training
loop that ends early, a Trainer told not to train, an evaluation no longer
reached) holds peaks of less of the run: lower, it read "improved" and passed,
and its steps were never gated. Such a run is an error naming what it missed;
one shortened on purpose is re-recorded with --gpu-budget-update. Phases the
run has and its baseline lacks are no such loss (its peaks cover them). Under
--gpu-budget-against the head's runs are held to the phases every base run
reached, where the case's params are unchanged since base (against/verdict.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from gpu_budget.model.figures import FIRST_PHASE

SHOWN = 6  # names of missed phases a message lists before it counts the rest


def unreached(measured: Iterable[str], baseline: Iterable[str]) -> list[str]:
    """The baseline's phases the run did not measure, in the run's order of names (train_step_2 before _10). The
    run after a block ('after eval', 'after eval (2)': meter.Meter.phase) is kept only where it passed the phase
    before by more than noise, and a runner's lead-in ('run': meter.Meter.lead_in) where it passed the phase after
    it, so neither is required where the run reached that block, or any phase."""
    seen = set(measured)
    blocks = {_unnumbered(name) for name in seen}
    return sorted((name for name in baseline if name not in seen and not _after(name, blocks)
                   and not (name == FIRST_PHASE and seen)), key=_order)


def unreached_ranked(measured: Iterable[str], baseline: Sequence[str], last: str | None = None) -> list[str]:
    """unreached() for a launch's rank, or its row (its worst rank's phases): [] where the one phase missed is the
    last: `last`, the phase rank 0 marked last in this run (the node's), else the baseline's last. A rank is in a
    phase rank 0 marked where its processes were seen then, so one that exits as rank 0 marks its last phase is in
    it or not by a race. A baseline read from its file holds its phases in sorted order, not the order run (its
    last there: train_step_9 of ten), hence the run's."""
    missed = unreached(measured, baseline)
    spared = last if last is not None else baseline[-1] if baseline else None
    return [] if missed == [spared] else missed


def _unnumbered(name: str) -> str:
    """A phase's name without the numbers a repeat of it was given ('eval (2)': measure/summary.named_once)."""
    while (found := re.fullmatch(r"(.+) \(\d+\)", name)) is not None:
        name = found.group(1)
    return name


def _after(name: str, blocks: set[str]) -> bool:
    """Whether `name` is the run after a block whose name is among `blocks` (unnumbered)."""
    return name.startswith("after ") and _unnumbered(name.removeprefix("after ")) in blocks


def said(names: Sequence[str]) -> str:
    """`train_step_3..30, eval_epoch_1`: consecutive numbered phases of one stem as a range, the first SHOWN parts."""
    parts: list[str] = []
    for name in names:
        stem, number = _split(name)
        last = parts[-1] if parts else ""
        match = re.fullmatch(rf"{re.escape(stem)}(\d+)(?:\.\.(\d+))?", last) if number is not None else None
        if match and int(match.group(2) or match.group(1)) == number - 1:
            parts[-1] = f"{stem}{match.group(1)}..{number}"
        else:
            parts.append(name)
    shown = ", ".join(parts[:SHOWN])
    return shown + (f" and {len(parts) - SHOWN} more" if len(parts) > SHOWN else "")


UPDATE = "a run that now stops sooner on purpose is re-recorded with --gpu-budget-update"


def message(missed: Sequence[str], measured: Iterable[str], of: int, whose: str = "its baseline",
            then: str = UPDATE) -> str:
    """Why a run short of the phases `whose` run measured is an error, naming them; `then`: what to do if on purpose."""
    return (f"the run did not reach {len(missed)} of the {of} phases {whose} measured ({said(missed)}; it measured "
            f"{said(sorted(measured, key=_order)) or 'none'}): its peaks cover less of the run than {whose}'s, so "
            f"they are not compared; {then}")


def _split(name: str) -> tuple[str, int | None]:
    found = re.fullmatch(r"(.*?)(\d+)", name)
    return (found.group(1), int(found.group(2))) if found else (name, None)


def _order(name: str) -> tuple[str, int]:
    stem, number = _split(name)
    return stem, -1 if number is None else number
