"""The fail-safe: a gate must never pass because nothing was measured. Says which case it is.

Plain data in, problems out; the session decides whether they fail the run
(CI, --gpu-budget-require-gpu) or are warnings (by hand).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from gpu_budget.model.result import Result, Verdict

WITHOUT_ROWS = "memory-budget test(s) failed without a row in the table"  # failed_without_rows's problem

# what a case that needed the GPU --gpu-budget-require-gpu asks for says, after why it needed one: the fail-safe counts
# these, whichever the reason (a CUDA-only scale, device="cuda", a reproduction on a VRAM budget alone)
REQUIRED = "--gpu-budget-require-gpu says this runner must have one"


def required(reason: str) -> str:
    """A case's error where it needed the GPU this runner must have: why it needed one, then REQUIRED."""
    return f"{reason}, and {REQUIRED}"


def nothing_measured(*, selected: int, rows: list[Result], probes: int, require_gpu: bool, ci: bool, update: bool,
                     folder: Path | None, hardware_key: str | None, cuda: Callable[[], bool],
                     interrupted: bool = False, collected: int = 0, without_rows: int = 0) -> list[str]:
    """What the fail-safe finds. `probes` counts unjudged children (peak()); `folder` is this hardware's baselines
    folder (None: no hardware read), `hardware_key` its key; `cuda` probes the device lazily; `interrupted`: the
    session was stopped (Ctrl-C, SIGTERM), maybe inside a case's measure(); `collected`: the budget tests collected
    before any deselection (-k, -m), so a selection that left none is not said to have collected none; an
    interrupted xdist controller, whose workers never sent theirs, is not said to have collected none either;
    `without_rows`: the budget tests pytest failed that left no row (failed_without_rows names them): one may have
    died inside measure() (its xdist worker killed), so none is said not to have reached it."""
    found = []
    measured = [r for r in rows if r.measured]  # a measured child ran (even if it crashed)
    if not selected and collected:
        found.append(f"{collected} memory-budget test(s) collected, none selected (-k, -m or another deselection left "
                     "none): the gate measured nothing")
    elif not selected and interrupted:  # an xdist controller knows the selection only from workers that finished
        found.append("the session was interrupted before any memory-budget test reported: the gate measured nothing")
    elif not selected:
        found.append("no memory-budget test was collected (no selected test has the gpu_budget marker "
                     "or fixture): the gate measured nothing")
    elif not measured and not probes:
        reasons = Counter(r.message for r in rows if r.verdict in (Verdict.SKIPPED, Verdict.ERROR))
        stopped = ("the session was interrupted before any case's measurement ended (one stopped mid-measure keeps no "
                   "row)" if interrupted else "none reached measure()")
        said = [f"{n} x {why}" for why, n in reasons.most_common()]
        if without_rows:
            said.append(f"{without_rows} failed without a row in the table (named in the gate's failure)")
        rest = selected - len({r.test_nodeid for r in rows}) - without_rows  # a test that skipped itself before measure()
        if said and rest > 0:
            said.append(f"{rest} not measured: {stopped}" if interrupted else f"{rest} never reached measure()")
        detail = "; ".join(said) or stopped
        found.append(f"{selected} memory-budget test(s) selected, none measured: {detail}")
    if require_gpu and not cuda():
        needed = sum(1 for r in rows if REQUIRED in r.message or "needs a CUDA GPU" in r.message)
        found.append(f"--gpu-budget-require-gpu: the measured children saw no CUDA GPU (hardware key "
                     f"{hardware_key or 'unknown'}, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}); "
                     f"{needed} test(s) needed one")
        return found  # a baselines folder for the wrong hardware would only mislead
    if measured and ci and not update and folder is not None and not folder.is_dir():
        # a file or a dead link on the way: each case's error names it; recording would not help
        blocked = next((p for p in (folder, *folder.parents) if (p.exists() or p.is_symlink()) and not p.is_dir()), None)
        found.append(f"no baselines folder {folder}: {blocked} is a file or a dead link, not a folder" if blocked else
                     f"no baselines folder {folder} for this hardware (CI is set): record one with "
                     f"--gpu-budget-update and commit it")
    return found


def interrupted(selected: int, rows: list[Result], why: str = "Ctrl-C, SIGTERM") -> str:
    """What an interrupted session's reports hold (`why`: a signal, or pytest's reason where it stopped the session
    itself, as after a collection error): the tests that reported before it stopped, of those selected (unknown, 0, to
    an xdist controller none of whose workers finished). Always a problem: a JSON report or step summary without it
    reads as a whole gate's, the case in flight and those after it missing unsaid."""
    reported = len({r.test_nodeid for r in rows})
    of = f" of {selected}" if selected >= reported and selected else ""
    return (f"the session was interrupted ({why}) after {reported}{of} selected memory-budget "
            f"test{'' if (selected or reported) == 1 else 's'} reported: the table, the JSON report and the step "
            "summary hold theirs only")


def without_rows_in(problems: Iterable[str]) -> int:
    """How many budget tests failed without a row, read back from failed_without_rows's line among `problems`."""
    line = next((p for p in problems if f" {WITHOUT_ROWS}: " in p), None)
    return 0 if line is None else int(line.partition(" ")[0])


def failed_without_rows(failed: Mapping[str, str], budget_tests: Iterable[str], rows: list[Result]) -> str | None:
    """The memory-budget tests pytest failed that left no row (`failed`: node id -> the first line of why), or None:
    one that broke before it measured would otherwise be missing from the table, the JSON report and the step summary,
    which then read as a gate that passed."""
    with_rows = {r.test_nodeid for r in rows}
    missing = [nodeid for nodeid in dict.fromkeys(budget_tests) if nodeid in failed and nodeid not in with_rows]
    if not missing:
        return None
    return (f"{len(missing)} {WITHOUT_ROWS}: "
            + "; ".join(f"{nodeid} ({failed[nodeid]})" for nodeid in missing))


def xfailed_without_baseline(rows: Iterable[Result]) -> str | None:
    """The cases failed for want of a baseline (under CI) in a test pytest xfailed, or None: a missing baseline is the
    gate's failure, not the test's, and an xfail mark (strict or not) must not turn it into an exit status of 0."""
    absorbed = [r.nodeid for r in rows if r.verdict == Verdict.NO_BASELINE and not r.passed and r.test_outcome == "xfailed"]
    if not absorbed:
        return None
    return (f"{len(absorbed)} memory-budget case(s) have no baseline (CI is set) in a test pytest xfailed, which does "
            f"not excuse a missing baseline: {', '.join(absorbed)}; record them with --gpu-budget-update and commit them")
