"""Baseline entries whose write failed: their rows say so, and the gate names each file once.

A write fails for its whole file (a folder where the file or its lock should
be, a full disk, no permission). Serially each entry is written as its test
reports, so one unwritable file fails once per entry: the gate names it once,
with how many entries it lost, and each of those rows says its entry was not
recorded, in place of a verdict's claim that it was ("no baseline yet:
recorded", "baseline updated", "baseline re-recorded on this setup").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpu_budget.model.result import RECORDED, Result, written_claim


@dataclass
class Unwritten:
    """The files whose write failed (file -> why, the first failure's), the entries each lost, and their rows."""

    why: dict[str, str] = field(default_factory=dict)
    lost: Counter[str] = field(default_factory=Counter)
    rows: dict[str, str] = field(default_factory=dict)  # a row's node id -> why its entry was not written

    def note(self, path: str, exc: Exception, rows: Iterable[str | None], entries: int = 1) -> str:
        """A failed write of `entries` entries to `path` (measured by `rows`); what their rows say of it."""
        why = self.why.setdefault(path, str(exc))
        self.lost[path] += entries
        self.rows.update({row: why for row in rows if row is not None})
        return why

    def problems(self) -> list[str]:
        """One line per file whose write failed: the gate's failure."""
        return [f"could not write baselines to {path}: {why} ({_entries(self.lost[path])} not written)"
                for path, why in self.why.items()]

    def given(self, row: Result) -> Result:
        """`row`, saying its entry was not written where its write failed."""
        why = self.rows.get(row.nodeid)
        return row if why is None else unwritten_row(row, why)


def unwritten_row(row: Result, why: str) -> Result:
    """The row of a case whose entry's write failed: its message says the entry was not written (and why) in place of
    what the verdict said it would write, else after it."""
    said = f"not recorded, the write failed ({why})"
    found = written_claim(row.message)
    if found is not None:
        start, end, claim = found
        said = f"no baseline yet: {said}" if claim == RECORDED else f"baseline {said}"
        return row.but(message=row.message[:start] + said + row.message[end:])
    return row.but(message=f"{row.message}; baseline {said}" if row.message else f"baseline {said}")


def _entries(count: int) -> str:
    return f"{count} entr{'y' if count == 1 else 'ies'}"
