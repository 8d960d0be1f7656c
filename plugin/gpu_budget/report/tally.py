"""Summary lines on what a session did beside its verdicts: the baseline entries it wrote or withheld, the cases it skipped.

The table says `no-baseline` per case and pytest says only "10 skipped"; a new user
asked what was written where, and what the skips are, without knowing `-rs`.
The lines are plain strings from plain data, so a serial run and an xdist
controller print the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from gpu_budget.model.result import RECORDED, Result, Verdict, written_claim

# why a case was skipped, matched on the skip's reason (session.py and session/case.py write them), first match
# wins: (needle, one, several, why); a group with no fixed why quotes the reason where its cases share one
SKIP_GROUPS: tuple[tuple[str, str, str, str | None], ...] = (
    ("--gpu-budget-probes", "probe", "probes", "opt-in: --gpu-budget-probes"),
    ("--gpu-budget-explore", "exploration", "explorations", "opt-in: --gpu-budget-explore"),
    ("--gpu-budget-gpus-per-worker", "needing more GPUs", "needing more GPUs", "--gpu-budget-gpus-per-worker"),
    ("CUDA GPU", "CUDA-only", "CUDA-only", "no CUDA GPU here"),
    ("above this GPU's total memory", "over this card", "over this card", "a VRAM budget above its memory"),
    ("install", "missing a package", "missing a package", None),
    ("", "other", "other", None),
)

DROPPED_NAMED = 5  # keys named per file in the line on pruned entries; the rest counted


def _shown(path: str, here: Path) -> str:
    """A baseline file relative to the working folder where it lies under it, else absolute."""
    try:
        return str(Path(path).relative_to(here))
    except ValueError:
        return path


def _entries(count: int) -> str:
    return f"{count} {'entry' if count == 1 else 'entries'}"


def written_line(written: Mapping[str, int], update: bool, here: Path, new: int = 0) -> str | None:
    """What the session wrote to which baseline file, or None when it wrote nothing.

    Without --gpu-budget-update only a case with no baseline is written, so every entry is new and must be
    committed: a CI run fails a case without one. An update says which of the entries it wrote are `new` (a case
    with none) and which it updated: a new entry is one to check whole, an updated one a diff to read.
    """
    counts = {path: n for path, n in written.items() if n}
    if not counts:
        return None
    total = sum(counts.values())
    new = min(new, total)
    if not update:
        done, entries = "recorded", f"{total} new {'entry' if total == 1 else 'entries'}"
    elif new in (0, total):
        done = "wrote" if new else "updated"
        entries = f"{total} {'new ' if new else ''}{'entry' if total == 1 else 'entries'} (--gpu-budget-update)"
    else:
        done, entries = "wrote", f"{_entries(total)} (--gpu-budget-update: {new} new, {total - new} updated)"
    where = _shown(next(iter(counts)), here) if len(counts) == 1 else \
        f"{len(counts)} files: " + ", ".join(f"{_shown(p, here)} ({n})" for p, n in sorted(counts.items()))
    action = "review the diff and commit it" if update else \
        f"commit {'it' if len(counts) == 1 else 'them'}: under CI a case without a baseline fails"
    return f"baselines: {done} {entries} in {where}; {action}"


def unchanged_line(count: int) -> str | None:
    """The entries an update left as they were (their cases passed within their baselines), or None: an update whose
    cases all held printed no baselines line at all, and a user could not tell it from one that wrote nothing."""
    if not count:
        return None
    return (f"baselines: left {_entries(count)} unchanged (--gpu-budget-update): within tolerance of their baseline "
            "on the same setup, so not rewritten")


def written_kinds(rows: Iterable[Result]) -> tuple[int, int]:
    """Of an update's rows, how many say they recorded a new entry, and how many left theirs unchanged: a case with
    a baseline whose test passed and whose row claims no write (a withheld or failed write says so in its place)."""
    claims = [(row, written_claim(row.message)) for row in rows]
    new = sum(1 for _, claim in claims if claim is not None and claim[2] == RECORDED)
    unchanged = sum(1 for row, claim in claims if claim is None and row.baseline is not None and row.passed
                    and row.verdict not in (Verdict.ERROR, Verdict.SKIPPED) and row.test_outcome in (None, "passed"))
    return new, unchanged


def _keys_where(by_file: Mapping[str, Sequence[str]], here: Path) -> tuple[int, str] | None:
    """How many keys, and where they are ("FILE (KEY, ...)", or "N files: ..."), the first DROPPED_NAMED of each
    file named; None where there are none."""
    counts = {path: keys for path, keys in by_file.items() if keys}
    if not counts:
        return None

    def named(keys: Sequence[str]) -> str:
        shown = ", ".join(keys[:DROPPED_NAMED])
        return shown + (f" and {len(keys) - DROPPED_NAMED} more" if len(keys) > DROPPED_NAMED else "")

    where = (f"{_shown(next(iter(counts)), here)} ({named(next(iter(counts.values())))})" if len(counts) == 1 else
             f"{len(counts)} files: " + ", ".join(f"{_shown(p, here)} ({named(k)})" for p, k in sorted(counts.items())))
    return sum(map(len, counts.values())), where


def dropped_line(dropped: Mapping[str, Sequence[str]], here: Path) -> str | None:
    """The entries an --gpu-budget-update of the whole suite pruned (tests deleted, labels no longer measured), per
    file, or None: no row is left to say they went, and a reviewer reads the diff for them otherwise."""
    if (said := _keys_where(dropped, here)) is None:
        return None
    total, where = said
    return (f"baselines: dropped {total} {'entry' if total == 1 else 'entries'} no longer measured (--gpu-budget-update) "
            f"from {where}; review the diff and commit it")


def kept_line(kept: Mapping[str, Sequence[str]], here: Path) -> str | None:
    """The entries an --gpu-budget-update of a selection kept though the tests it collected whole no longer measure
    them (a parametrize id renamed, a label dropped), per file, or None: an update of a selection drops none, and no
    row says they stay."""
    if (said := _keys_where(kept, here)) is None:
        return None
    total, where = said
    return (f"baselines: kept {total} {'entry' if total == 1 else 'entries'} no longer measured in {where}: this "
            f"update ran a selection (-k, -m, node ids or deselection), so it drops none; an update of the whole "
            f"suite drops them")


def withheld_line(withheld: list[str], update: bool) -> str | None:
    """The cases whose entry was not written because their test did not pass (session/held.py), or None."""
    if not withheld:
        return None
    count = f"{len(withheld)} {'entry' if len(withheld) == 1 else 'entries'}"
    return (f"baselines: {count} not {'written' if update else 'recorded'}, {'its' if len(withheld) == 1 else 'their'} "
            f"test did not pass after measuring ({', '.join(withheld)}): only a passing test records its baseline")


def skipped_line(reasons: Iterable[str]) -> str | None:
    """The gate's skipped cases grouped by why (pytest's skip reasons), or None when none was skipped."""
    counts: Counter[int] = Counter()
    seen: dict[int, set[str]] = {}
    for reason in reasons:
        reason = reason.removeprefix("Skipped: ")
        group = next(i for i, (needle, *_) in enumerate(SKIP_GROUPS) if needle in reason)
        counts[group] += 1
        seen.setdefault(group, set()).add(reason)
    if not counts:
        return None
    parts = []
    for group in sorted(counts):
        _, one, several, why = SKIP_GROUPS[group]
        if why is None:
            why = next(iter(seen[group])) if len(seen[group]) == 1 else "-rs lists why"
        parts.append(f"{counts[group]} {one if counts[group] == 1 else several} ({why})")
    return f"skipped {counts.total()}: " + ", ".join(parts)
