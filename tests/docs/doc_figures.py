"""Shared by the tests that tie README.md's and docs/*.md's figures to the committed reports.

A *checker* computes the figures of one paragraph or section from a committed report
(benchmarks/results/*.json, docs/estimator-results/*.json) and asserts that the document shows
them; it returns the text it verified, so the sweep (tests/docs/test_figure_sweep.py) can fail on any
figure that no checker verified and no allow-list entry explains.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MiB, GiB = 2**20, 2**30


@cache
def _json_text(path: str) -> str:
    return (ROOT / path).read_text()


def load(path: str) -> dict:
    """A committed report, parsed afresh (checkers may not share mutable state)."""
    return json.loads(_json_text(path))


def flat(text: str) -> str:
    """Whitespace collapsed: the documents wrap their lines anywhere."""
    return " ".join(text.split())


def document(path: str) -> str:
    return (ROOT / path).read_text()


def section(path: str, start: str, end: str | None = None) -> str:
    """The flattened text of `path` from `start` up to `end` (or the end of the file)."""
    text = document(path)
    i = text.index(start)
    return flat(text[i:text.index(end, i)] if end else text[i:])


def shows(text: str, *snippets: str) -> list[str]:
    """Assert that `text` shows each snippet (whitespace-insensitive); return them, as verified."""
    where = flat(text)
    for snippet in snippets:
        assert flat(snippet) in where, f"the document should show:\n{snippet}"
    return list(snippets)


def report(path: str) -> tuple[list, dict]:
    """A committed gate report (benchmarks/results/*.report.json): its rows as Results, and the whole report."""
    from gpu_budget.model.result import Result
    from gpu_budget.report.json_report import READABLE_VERSIONS

    data = load(path)
    assert data["version"] in READABLE_VERSIONS, path
    return [Result.from_json(r) for r in data["results"]], data


PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """Each ```python block of a page (at its line's start), with the line its code begins on."""
    text = page.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1)) for m in PYTHON_BLOCK.finditer(text)]


def words(n: int) -> str:
    """A small count as the prose spells it."""
    return ["none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"][n] if n <= 10 else str(n)


def constant(path: str, name: str):
    """A module-level constant of a source file, read without importing it (some modules import torch)."""
    import ast

    for node in ast.parse((ROOT / path).read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise KeyError(f"{path} assigns no {name}")


# -- the sweep --------------------------------------------------------------------------------------

_NUM = r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?"
_RANGE = rf"{_NUM}(?:\s?(?:-|\.\.|to)\s?{_NUM})?"
FIGURE = re.compile(
    rf"(?<![\w.^/+-]){_RANGE}(?:\s?(?:[KMGT]i?B|%|ms|s|min|h)|\s(?:B|bytes)|x)(?!\w)"  # sizes, shares, durations, ratios
    rf"|\({_NUM} \.\. {_NUM}\)"                                                     # intervals
    rf"|(?<![\w.]){_NUM} of {_NUM}\b"                                                # counts: 7 of 180
    rf"|(?<![\w.]){_NUM} (?:fresh |real |clean |measured )?"
    rf"(?:runs?|sessions|repetitions|cases|passed|skipped|failed|setups|rounds|times)\b"
    rf"|\bmissed (?:of )?{_NUM}")
"""A figure token: a number with a unit (MiB, GB, %, s, min, x, ...), a range or interval, or a count of runs."""


def unsourced(text: str, verified: list[str], allowed: list[str]) -> list[str]:
    """The figure tokens of `text` that lie inside no verified and no allowed snippet, each with its context.

    Every snippet must occur in the text (a checker or allow-list entry that no longer matches
    is stale and fails here); all its occurrences count as covered.
    """
    text, covered = flat(text), []
    for snippet in [*verified, *allowed]:
        s = flat(snippet)
        starts = [m.start() for m in re.finditer(re.escape(s), text)]
        assert starts, f"a verified or allowed snippet is not in the document: {s!r}"
        covered += [(i, i + len(s)) for i in starts]
    return [f"{m.group()!r} in '...{text[max(0, m.start() - 70):m.end() + 30]}...'" for m in FIGURE.finditer(text)
            if not any(a <= m.start() and m.end() <= b for a, b in covered)]

