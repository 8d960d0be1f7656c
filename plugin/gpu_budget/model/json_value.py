"""The one type of a JSON value, for the edges where records become bytes (to_json) and come back (from_json)."""

from __future__ import annotations

from collections.abc import Mapping
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
