"""The session's fingerprint, typed (`Hardware`): what the gate measured on, as a report and the outputs name it.

Made once per session from the facts measure/host.py collects (`collect`),
kept in the session's data, written to the JSON report whole (`to_json`), and
read back from a report (`from_json`). `facts` holds every field a baseline
entry's fingerprint records (the drift policy compares them one by one); the
fields the outputs name are its typed attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.setup import Fingerprint


@dataclass(frozen=True)
class Hardware:
    """`key`: the baselines' folder (judge/files.py); `facts`: the fingerprint's fields, in the order collected;
    `package_versions`: the imported packages the "packages" digest stands for."""

    key: str | None = None
    facts: Fingerprint = field(default_factory=dict)
    package_versions: Mapping[str, str] | None = None  # None: a report that holds no list
    gpu_name: str | None = None
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    transformers: str | None = None
    peft: str | None = None
    python: str | None = None
    cpu: str | None = None
    cpu_level: str | None = None
    isa: str | None = None
    dispatch: str | None = None
    threads: int | None = None
    malloc: str | None = None
    floor: int | None = None
    preload: str = ""

    @classmethod
    def from_json(cls, data: JsonMapping) -> Hardware:
        """From the fingerprint collect() made, or a report's "hardware" (an older report lacks some fields)."""
        facts = {k: v for k, v in data.items() if k not in ("key", "package_versions")}
        return cls(data.get("key"), facts, _versions(data.get("package_versions")), data.get("gpu_name"),
                   data.get("driver"), data.get("cuda"), data.get("torch"), data.get("transformers"), data.get("peft"),
                   data.get("python"), data.get("cpu"), data.get("cpu_level"), data.get("isa"), data.get("dispatch"),
                   data.get("threads"), data.get("malloc"), data.get("floor"), data.get("preload") or "")

    @classmethod
    def read(cls, data: JsonMapping | None) -> Hardware | None:
        """None for a report that holds no fingerprint (null or empty)."""
        return cls.from_json(data) if data else None

    def to_json(self) -> JsonObject:
        """As collected: the key first, the package list last (a report written from it is the one written before)."""
        return {**({"key": self.key} if self.key is not None else {}), **self.facts,
                **({"package_versions": dict(self.package_versions)} if self.package_versions is not None else {})}

    @property
    def libraries(self) -> str:
        """The fine-tune libraries installed where it measured, with their versions; one not installed is left out
        (a user's project without peft), never written "None"."""
        return ", ".join(f"{name} {version}" for name, version in
                         (("torch", self.torch), ("transformers", self.transformers), ("peft", self.peft)) if version)

    @property
    def card(self) -> str:
        """The card a GPU row was measured on, with its driver, CUDA and libraries."""
        return f"{self.gpu_name}, driver {self.driver}, CUDA {self.cuda}" + (f"; {self.libraries}" if self.libraries else "")


def _versions(data: JsonMapping | None) -> dict[str, str] | None:
    return None if data is None else {str(k): str(v) for k, v in data.items()}
