"""Whether the kernel's OOM killer ended a process of a command case whose own process exited 0 (a script that runs
a worker with subprocess.run and no check=, `sh -c "python worker.py; echo done"`, a Pool that replaces its worker):
such a case would pass with a peak short of what the run needed.

Only the kernel's count of OOM kills (measure/oom_kills.py) says an OOM kill
happened: a SIGKILL the tree saw (a zombie of SIGKILL its parent had not yet
reaped) may be the script's own, on purpose. A rise of the counter fails the
case where a process of the case was also found gone without an exit report:
the cgroup may hold other processes than the case's (a runner's), and the
machine's counter counts every kill on it. A SIGKILL seen without a rise is a
note.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from gpu_budget.measure import oom_kills
from gpu_budget.measure.oom_kills import OomKills, rose
from gpu_budget.oom import OOM_KILLER


@dataclass(frozen=True)
class Verdict:
    """`failure`: why the case fails (after "exited 0, but", or "returned, but"), or None; `note`: what its row says
    where it does not fail, or None."""

    failure: str | None = None
    note: str | None = None


def _named(sigkilled: Mapping[int, tuple[str, ...] | None]) -> str:
    return ", ".join(f"process {pid}" + (f" ({shlex.join(argv)[:200]})" if argv else "")
                     for pid, argv in sorted(sigkilled.items()))


def judge(before: OomKills | None, after: OomKills | None, vanished: int,
          sigkilled: Mapping[int, tuple[str, ...] | None]) -> Verdict:
    """What the counter's two reads around the case, the descendants found gone without an exit report
    (`vanished`) and those of them found killed by SIGKILL say of a command that exited 0."""
    kills = rose(before, after)
    seen = f" ({_named(sigkilled)} of the case was killed by SIGKILL while it ran)" if sigkilled else ""
    if kills and after is not None and vanished:
        scope = f"{'on this machine' if after.machine else 'in its cgroup'}, and {vanished} process(es) of the case " \
            "ended without reporting an exit"
        return Verdict(failure=f"the kernel's OOM killer killed {kills} process(es) {scope} while it "
                               f"ran (oom_kill in {after.path} went from {before.kills} to {after.kills}: a kill by "
                               f"SIGKILL){seen}; a run that lost a process to memory, its peak short of what it needed")
    if not sigkilled:
        return Verdict()
    said = (f"but the kernel's count of OOM kills ({after.path}) did not rise: the script's own kill, the peak stands"
            if after is not None and before is not None else
            "and no count of the kernel's OOM kills could be read: if the kernel killed it, the peak is short of "
            "what the run needed")
    return Verdict(note=f"{_named(sigkilled)} of the case was killed by SIGKILL while the case ran{OOM_KILLER}, {said}")


def after_case(counted: OomKills | None, tree) -> Verdict:
    """The verdict once a case's own process ended well: the counter read again, against `counted` (read as it
    started), with its process tree's (measure/tree.py ProcessTree, or None) descendants found gone and SIGKILLed."""
    return judge(counted, oom_kills.read(), tree.vanished if tree else 0, tree.sigkilled if tree else {})
