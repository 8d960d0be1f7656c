"""A baseline file's data, read once (`Contents`): its entries per scale and key, and the package lists they name.

Each entry is kept as the file holds it (its JSON), so a rewrite of the file
changes no entry it does not write, whatever version of the gate recorded it;
an entry is read as a model/entry.py Entry where it is used (`entry`). Each
entry's fingerprint names the packages it was recorded with by a digest; the
file's top-level "packages" maps each digest to its package list, so a row can
say which packages differ without every entry repeating sixty of them. Fields
of the file the schema does not name are written back as read. The bytes, the
schema and the writing: files.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_budget.judge.fingerprint import Facts
from gpu_budget.model.entry import Entry
from gpu_budget.model.json_value import Json, JsonMapping, JsonObject

SCHEMA = "gpu-budget-baselines/1"

EntryJson = Mapping[str, Json]  # one entry, as a baseline file holds it
ByKey = Mapping[str, EntryJson]  # one scale's entries: key -> entry
Listing = Mapping[str, str]  # a package list: distribution -> version


@dataclass(frozen=True)
class Contents:
    """A validated baseline file: `entries` scale -> key -> entry (as stored), `packages` digest -> package list,
    `schema` its version, `other` any top-level field the schema does not name."""

    entries: Mapping[str, ByKey] = field(default_factory=dict)
    packages: Mapping[str, Listing] = field(default_factory=dict)
    schema: str = SCHEMA
    other: Mapping[str, Json] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: JsonMapping) -> Contents:
        """A validated file's data (files.validate); an empty mapping reads as an empty file."""
        entries = {scale: dict(by_key) for scale, by_key in (data.get("entries") or {}).items()}
        packages = {digest: dict(listing) for digest, listing in (data.get("packages") or {}).items()}
        other = {k: v for k, v in data.items() if k not in ("schema", "entries", "packages")}
        return cls(entries, packages, data.get("schema", SCHEMA), other)

    def to_json(self) -> JsonObject:
        """The file's data to write: "packages" only where a list is left (pruned: no empty map is written)."""
        out: JsonObject = {**self.other, "schema": self.schema,
                                "entries": {scale: dict(by_key) for scale, by_key in self.entries.items()}}
        if self.packages:
            out["packages"] = {digest: dict(listing) for digest, listing in self.packages.items()}
        return out

    def scale(self, scale: str) -> ByKey:
        """One scale's entries (none where the file holds none of it)."""
        return self.entries.get(scale, {})

    def entry(self, scale: str, key: str) -> Entry | None:
        found = self.scale(scale).get(key)
        return None if found is None else Entry.from_json(found)

    def packages_for(self, entry: Entry | None) -> Listing | None:
        """The package list an entry's fingerprint refers to, if the file holds it."""
        digest = Facts.from_json(entry.fingerprint).packages if entry is not None else None
        return self.packages.get(digest) if digest else None

    @property
    def total(self) -> int:
        return sum(len(by_key) for by_key in self.entries.values())
