"""A test's own rows and notes, kept on its item: its reports change its rows where they sit in the session's list,
and an xdist worker ships its notes, with no scan of the session's every row or note per report (such a scan made a
session's reports grow as the square of its cases)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpu_budget.model.result import Note, Result

MEASURED = pytest.StashKey[list[Result]]()  # the item's judged cases, for its report
_AT = pytest.StashKey[list[int]]()  # where the item's rows sit in the session's rows
_NOTES = pytest.StashKey[list[Note]]()
_SHIPPED = pytest.StashKey[tuple[int, int]]()  # how many of the item's judged rows and notes its reports carried


def add(item: pytest.Item, rows: list[Result], row: Result) -> None:
    """Append a case's row to the session's `rows`, noting on its item where it sits."""
    item.stash.setdefault(_AT, []).append(len(rows))
    rows.append(row)


def judged(item: pytest.Item, row: Result) -> None:
    """Keep a case the gate judged (not one it skipped) on its item, for the test's report."""
    item.stash.setdefault(MEASURED, []).append(row)


def measured(item: pytest.Item) -> list[Result]:
    """The cases the item's test had judged."""
    return item.stash.get(MEASURED, [])


def change(item: pytest.Item, rows: list[Result], how: Callable[[Result], Result]) -> None:
    """Change the item's rows, on it and in the session's `rows`, in place: rows are only added while tests run (an
    xdist controller merges and sorts its workers' rows after), so where add() put them they still are."""
    for at in item.stash.get(_AT, []):
        rows[at] = how(rows[at])
    mine = measured(item)
    mine[:] = map(how, mine)


def forget(item: pytest.Item, rows: list[Result], notes: list[Note]) -> list[Result]:
    """Drop what an earlier attempt of the item's test left (a rerun of it starts afresh): its rows, from the session's
    `rows` too, and its notes; returns the rows dropped. The item is the test running, so its rows are the last ones
    added and no other test's place in `rows` moves."""
    dropped = [rows.pop(at) for at in sorted(item.stash.get(_AT, []), reverse=True)][::-1]
    for note in item.stash.get(_NOTES, []):
        notes.remove(note)
    item.stash[_AT], item.stash[MEASURED], item.stash[_NOTES], item.stash[_SHIPPED] = [], [], [], (0, 0)
    return dropped


def add_note(item: pytest.Item, notes: list[Note], note: Note) -> None:
    notes.append(note)
    item.stash.setdefault(_NOTES, []).append(note)


def notes_of(item: pytest.Item) -> list[Note]:
    """The notes the item's test made (gpu_budget.note())."""
    return item.stash.get(_NOTES, [])


def unshipped(item: pytest.Item) -> tuple[list[Result], list[Note]]:
    """The item's judged rows and notes that no report of its test has carried yet, now counted as carried: an xdist
    worker's call report carries the test's, its teardown's those a fixture measured after the call (or without one)."""
    rows, notes = measured(item), notes_of(item)
    done_rows, done_notes = item.stash.get(_SHIPPED, (0, 0))
    item.stash[_SHIPPED] = (len(rows), len(notes))
    return rows[done_rows:], notes[done_notes:]
