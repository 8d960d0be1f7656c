"""A baseline file left with git's merge conflict markers: both branches recorded entries in it.

Deleting such a file and re-recording drops one branch's baselines, so the
file is named as a merge conflict, and `python -m gpu_budget baselines resolve`
keeps both sides: git's conflict regions (`<<<<<<<`, diff3's `|||||||`,
`=======`, `>>>>>>>`) are split back into the two sides' texts, each read as a
baseline file, and their entries merged. Where every region holds diff3's base
section (or git's index holds the base: merge_base.py), the base is rebuilt
too and each entry merged as git merges lines: an entry one side deleted or
changed while the other held it as the base did takes that side's change (a deleted test's entry stays deleted). An entry both
sides re-recorded alike but for the date takes the later date. An entry both sides
hold with other figures, neither the base's, is a real conflict: it is refused,
naming each, unless the caller says which side to keep. Pure text and data here;
the file itself: files.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpu_budget.judge.contents import ByKey, Contents, EntryJson
from gpu_budget.model.entry import Entry
from gpu_budget.model.json_value import DuplicateKey, Json, NotJson, strict_loads
from gpu_budget.model.metric import SHOWN
from gpu_budget.units import format_size

OURS, BASE, THEIRS, END = "<", "|", "=", ">"  # each marker: its character, git's conflict-marker-size times
SIZE = 7  # git's marker size, where no conflict-marker-size attribute names another (merge_base.marker_size)
SIDES = ("ours", "theirs")


class ConflictError(ValueError):
    """A conflicted baseline file that cannot be merged as it is; the message names the file and what to do."""


@dataclass(frozen=True)
class Sides:
    """The two texts git merged, rebuilt from a conflicted file, and the labels git gave them (HEAD, a branch);
    `base` the merge base's text where every region held diff3's base section (None where any did not)."""

    ours: str
    theirs: str
    ours_label: str
    theirs_label: str
    base: str | None = None


@dataclass(frozen=True)
class Merged:
    """Both sides' entries in one file's data, and what the merge decided: `only_ours` and `only_theirs` count the
    entries one side alone held (as committed, or its side of the conflict regions), `kept` names the (scale, key) both
    held with other figures and the side kept; `labels` are git's names of the sides; `deleted` names the (scale, key)
    one side deleted while the other held it as the base did, left out, and the side that deleted it; `text_differs`
    the (scale, key) merged from the sides as committed (git's index) that the file's conflict regions read
    otherwise; `revived` the (scale, key) one side deleted and the other changed from the base's, kept, and the side
    that deleted it; `dated` the (scale, key) both sides re-recorded alike but for the date, the side whose later
    date was kept, and that date."""

    data: Contents
    only_ours: int
    only_theirs: int
    labels: tuple[str, str]
    kept: tuple[tuple[str, str, str], ...] = ()
    deleted: tuple[tuple[str, str, str], ...] = ()
    text_differs: tuple[tuple[str, str], ...] = ()
    revived: tuple[tuple[str, str, str], ...] = ()
    dated: tuple[tuple[str, str, str, str], ...] = ()

    @property
    def total(self) -> int:
        return self.data.total


def _marker(line: str, marker: str, size: int = SIZE) -> bool:
    return line.startswith(marker * size) and line[size:size + 1] in ("", " ", "\n", "\r")


def has_markers(text: str, size: int = SIZE) -> bool:
    """Whether the text holds a conflict region: a line opening one and a line closing one, of `size` characters."""
    lines = text.splitlines()
    return any(_marker(line, OURS, size) for line in lines) and any(_marker(line, END, size) for line in lines)


def split(text: str, where: str, size: int = SIZE) -> Sides:
    """The two sides of every conflict region, each with the lines outside the regions; ConflictError naming the line
    where the regions do not nest as git writes them. `size`: the markers' length (git's conflict-marker-size)."""
    ours: list[str] = []
    theirs: list[str] = []
    base: list[str] = []
    regions = with_base = 0
    ours_label = theirs_label = ""
    state = "common"
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if state == "common" and _marker(line, OURS, size):
            state, ours_label, regions = "ours", ours_label or line[size + 1:].strip(), regions + 1
        elif state == "ours" and _marker(line, BASE, size):
            state, with_base = "base", with_base + 1
        elif state in ("ours", "base") and _marker(line, THEIRS, size):
            state = "theirs"
        elif state == "theirs" and _marker(line, END, size):
            state, theirs_label = "common", theirs_label or line[size + 1:].strip()
        elif any(_marker(line, m, size) for m in (OURS, BASE, THEIRS, END)):
            raise ConflictError(f"{where}: line {number} ({line.strip()!r}) is a conflict marker out of place: "
                                "resolve the file by hand, keeping both sides' entries")
        else:
            if state in ("common", "ours"):
                ours.append(line)
            if state in ("common", "theirs"):
                theirs.append(line)
            if state in ("common", "base"):
                base.append(line)
    if state != "common":
        raise ConflictError(f"{where}: a conflict region is not closed (no {END * size} line): resolve the file by hand, "
                            "keeping both sides' entries")
    return Sides("".join(ours), "".join(theirs), ours_label or "ours", theirs_label or "theirs",
                 "".join(base) if with_base == regions else None)


def parse_side(text: str, side: str, label: str, where: str) -> Json:
    """One side's text as JSON; ConflictError naming the side where git's regions left it unreadable or a key twice."""
    try:
        return strict_loads(text)
    except DuplicateKey as exc:
        raise ConflictError(f"{where}: the {side} side ({label}) {exc} once rebuilt from the conflict regions: resolve "
                            "the file by hand, keeping both sides' entries") from None
    except NotJson as exc:
        raise ConflictError(f"{where}: the {side} side ({label}): {exc}") from None
    except ValueError as exc:
        raise ConflictError(f"{where}: the {side} side ({label}) is not valid JSON once rebuilt from the conflict "
                            f"regions ({exc}): resolve the file by hand, keeping both sides' entries") from None


def _figures(entry: EntryJson) -> str:
    read = Entry.from_json(entry)
    shown = [f"{m} {format_size(read.peaks.figure(m))}" for m in SHOWN if read.peaks.figure(m) is not None]
    return ", ".join(shown) + (f" (recorded {read.recorded})" if read.recorded else "")


_NONE = object()  # a field a side does not hold


def _fields(ours: Contents, theirs: Contents, base: Contents | None, where: str, labels: tuple[str, str],
            keep: str | None) -> dict[str, Json]:
    """The top-level fields the schema does not name, of both sides (written back as read, as every write does): one
    side's change from the base's taken; one both changed otherwise, the `keep` side's, else ConflictError."""
    out: dict[str, Json] = {}
    for name in sorted({*ours.other, *theirs.other}):
        mine, other = ours.other.get(name, _NONE), theirs.other.get(name, _NONE)
        was = base.other.get(name, _NONE) if base is not None else _NONE
        if mine == was or mine is _NONE:  # ours left it (or deleted it while theirs changed it: kept)
            value = other if mine == was or other != was else _NONE
        elif other == was or other is _NONE or other == mine:
            value = mine
        else:
            if keep is None:
                raise ConflictError(f"{where}: both sides hold the top-level field {name!r} with other values "
                                    f"({labels[0]}: {json.dumps(mine)}, {labels[1]}: {json.dumps(other)}), left as it "
                                    f"is. Keep one side's with --keep ours ({labels[0]}) or --keep theirs ({labels[1]})")
            value = mine if keep == "ours" else other
        if value is not _NONE:
            out[name] = value
    return out


def merge(ours: Contents, theirs: Contents, where: str, labels: tuple[str, str], keep: str | None = None,
          base: Contents | None = None) -> Merged:
    """Every entry of both sides (validated baseline files), but, with the `base` (diff3's), each entry one side
    deleted or changed while the other held it as the base did takes that side's change. An entry both hold with
    other figures takes the `keep` side's; without `keep`, ConflictError naming each such entry and both sides'
    figures."""
    entries: dict[str, ByKey] = {}
    only_ours = only_theirs = 0
    differing: list[tuple[str, str]] = []
    deleted: list[tuple[str, str, str]] = []
    revived: list[tuple[str, str, str]] = []
    dated: list[tuple[str, str, str, str]] = []
    for scale in sorted({*ours.entries, *theirs.entries}):
        mine, other = ours.scale(scale), theirs.scale(scale)
        was = base.scale(scale) if base is not None else {}
        by_key = entries[scale] = {}
        for key in sorted({*mine, *other}):
            if key in was and was[key] in (mine.get(key), other.get(key)):  # one side left it as it was: the other's
                side, changed = (labels[1], other) if was[key] == mine.get(key) else (labels[0], mine)
                if key in changed:
                    by_key[key] = changed[key]
                else:
                    deleted.append((scale, key, side))
            elif key not in other:
                by_key[key], only_ours = mine[key], only_ours + 1
                if key in was:  # deleted on theirs, changed on ours: kept (nothing lost), named
                    revived.append((scale, key, labels[1]))
            elif key not in mine:
                by_key[key], only_theirs = other[key], only_theirs + 1
                if key in was:
                    revived.append((scale, key, labels[0]))
            elif mine[key] == other[key]:
                by_key[key] = mine[key]
            elif _but_for_the_date(mine[key], other[key]):  # both re-recorded the same figures: the later date
                later = int(_recorded(other[key]) > _recorded(mine[key]))
                dated.append((scale, key, labels[later], _recorded(by_key.setdefault(key, (mine, other)[later][key]))))
            else:
                differing.append((scale, key))
                by_key[key] = (mine if keep == "ours" else other)[key]
    if differing and keep is None:
        listed = "; ".join(f"{key!r} (scale {scale!r}): {labels[0]}: {_figures(ours.scale(scale)[key])}, "
                           f"{labels[1]}: {_figures(theirs.scale(scale)[key])}" for scale, key in differing)
        raise ConflictError(f"{where}: both sides recorded {len(differing)} entr{'y' if len(differing) == 1 else 'ies'} "
                            f"with other figures, left as it is: {listed}. Keep one side's for them with --keep ours "
                            f"({labels[0]}) or --keep theirs ({labels[1]}), then run the gate on the merged code "
                            "(--gpu-budget-update re-records those that moved)")
    data = Contents({s: by for s, by in entries.items() if by}, {**theirs.packages, **ours.packages}, ours.schema,
                    _fields(ours, theirs, base, where, labels, keep))
    return Merged(data, only_ours, only_theirs, labels, tuple((scale, key, keep) for scale, key in differing),
                  tuple(deleted), revived=tuple(revived), dated=tuple(dated))


def _recorded(entry: EntryJson) -> str:
    """The date an entry was recorded (ISO, so later sorts after), "" where it holds none."""
    return Entry.from_json(entry).recorded or ""


def _but_for_the_date(mine: EntryJson, other: EntryJson) -> bool:
    """Whether two entries hold the same figures and facts, only their `recorded` dates other: one test re-recorded
    alike on two branches, no conflict of figures to choose between."""
    return ({k: v for k, v in mine.items() if k != "recorded"} == {k: v for k, v in other.items() if k != "recorded"})
