"""The one type of a JSON value, for the edges where records become bytes (to_json) and come back (from_json)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

Json: TypeAlias = "str | int | float | bool | None | list[Json] | dict[str, Json]"  # one JSON value (recursive)
JsonObject: TypeAlias = "dict[str, Json]"  # what a record's to_json writes
JsonMapping: TypeAlias = "Mapping[str, Json]"  # what a from_json reads: a JSON object as json.loads gives it
