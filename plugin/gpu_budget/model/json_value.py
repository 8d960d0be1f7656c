"""The one type of a JSON value, for the edges where records become bytes (to_json) and come back (from_json)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeAlias

Json: TypeAlias = "str | int | float | bool | None | list[Json] | dict[str, Json]"  # one JSON value (recursive)
JsonObject: TypeAlias = "dict[str, Json]"  # what a record's to_json writes
JsonMapping: TypeAlias = "Mapping[str, Json]"  # what a from_json reads: a JSON object as json.loads gives it


class DuplicateKey(ValueError):
    """A JSON object that gives one key twice: json.loads alone keeps the last and silently drops the first's value."""

    def __init__(self, key: str) -> None:
        super().__init__(f"gives the key {key!r} twice in one object")
        self.key = key


def unique_keys(pairs: list[tuple[str, Json]]) -> JsonObject:
    """json.loads' object_pairs_hook for files that must lose nothing: a key given twice raises DuplicateKey."""
    obj: JsonObject = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKey(key)
        obj[key] = value
    return obj


class NotJson(ValueError):
    """NaN, Infinity or -Infinity in a file: Python's json reads and writes them back, no strict reader does, so a file
    kept with one is a file other tools (jq, JSON.parse, a dashboard) fail on."""

    def __init__(self, constant: str, where: str) -> None:
        super().__init__(f"{where or 'the file'} is {constant}, which is not JSON (Python reads it; jq, JSON.parse and "
                         f"other strict readers refuse the whole file): write a number or null there")


@dataclass(frozen=True)
class _Constant:
    name: str  # as written: NaN, Infinity, -Infinity


def strict_loads(text: str) -> Json:
    """json.loads of a file that must lose nothing and stay JSON: a key given twice raises DuplicateKey; NaN or
    Infinity raises NotJson naming where it stands (entries.tiny['test_a'].params.lr)."""
    data = json.loads(text, object_pairs_hook=unique_keys, parse_constant=_Constant)
    todo: list[tuple[object, str]] = [(data, "")]  # a stack, not recursion: json.loads nests as deep as Python allows
    while todo:
        value, where = todo.pop()
        if isinstance(value, _Constant):
            raise NotJson(value.name, where)
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value)) if isinstance(value, list) else []
        todo += [(item, _step(where, key)) for key, item in reversed(items)]
    return data


def _step(where: str, key: str | int) -> str:
    """A path one key further in: entries.tiny, then ['test_a.py::test_x'], [0]."""
    if isinstance(key, str) and key.isidentifier():
        return f"{where}.{key}" if where else key
    return f"{where}[{key!r}]"


_NONE = object()  # no key found (None is a key a mapping may have)


def check_strict(value: object, text_keys: bool = True) -> None:
    """TypeError or ValueError where JSON would not give `value` back as it is: what json cannot write (a set), NaN or
    inf (written as no strict reader reads), and where `text_keys`, a mapping's key that is no string (1 is written,
    and read back, "1": a knob a runner reads back so would change; a note's table, read by people, keeps it as
    text)."""
    json.dumps(value, allow_nan=False)
    key = _key_not_text(value) if text_keys else _NONE
    if key is not _NONE:
        raise TypeError(f"a mapping's key {key!r} is no string: JSON writes it, and reads it back, as text")


def _key_not_text(value: object) -> object:
    """The first mapping key within `value` (at any depth) that is no string, or _NONE."""
    if isinstance(value, Mapping):
        bad, inner = next((k for k in value if not isinstance(k, str)), _NONE), value.values()
    elif isinstance(value, list | tuple):
        bad, inner = _NONE, value
    else:
        return _NONE
    for item in inner:
        if bad is not _NONE:
            break
        bad = _key_not_text(item)
    return bad
