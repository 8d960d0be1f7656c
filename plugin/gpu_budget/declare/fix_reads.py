"""Which fixes of a function case its runner read while it ran, so that one it never read is not shown as applied.

A runner honours a fix by name (`ctx.has(name)`, `name in ctx.fixes`) or
through the params the fix lays over the scenario's knobs (`ctx.params[key]`),
in code the gate does not read; but the gate hands it both, and sees what it
asks of them. A fix never asked about by name, none of whose params was read,
ran the case unchanged: the row's `info["fixes_applied"]` says so for it
(where the runner did not report it itself), as a runner's own "not applied"
does. Going over every param (iterating, copying) counts as reading them all
(`TrainingArguments(**ctx.params)` applies them). Going over the fixes does not
(a runner logs them): each name it hands out counts as read once the runner
compares it with a name (`fix == "lora"`, a `match`, a dict or set lookup) or
calls a method of it; printing, formatting or joining it does not.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from gpu_budget.model.json_value import Json

if TYPE_CHECKING:
    from typing import Self  # Python 3.11: the annotations alone name it (requires-python >= 3.10)

APPLIED = "fixes_applied"  # the runner's facts' {fix: "applied" or why not} (docs/fixes.md)
NOT_READ = "not applied: its runner never read it (ctx.has({name!r}), ctx.fixes, or a param the fix sets)"


class Reads:
    """What a runner read of its fixes and params; `fixes()` and `params()` are what it is handed."""

    def __init__(self, fixes: tuple[str, ...], fix_params: Mapping[str, tuple[str, ...]] | None) -> None:
        self.names, self.fix_params = fixes, fix_params
        self.asked: set[str] = set()
        self.keys: set[str] = set()
        self.everything = False

    def fixes(self) -> tuple[str, ...]:
        return _ReadFixes(self.names, self)

    def params(self, params: Mapping[str, Json]) -> dict[str, Json]:
        return _ReadParams(params, self)

    def unread(self) -> tuple[str, ...]:
        """The fixes it neither asked for by name nor through a param they set (none where their params are not known,
        or it went over them all)."""
        if self.everything or self.fix_params is None:
            return ()
        return tuple(f for f in self.names if f not in self.asked and not set(self.fix_params.get(f, ())) & self.keys)

    def noted(self, info: dict) -> dict:
        """`info` (the runner's facts) with each fix it never read noted not applied, unless it said of it itself."""
        unread, applied = self.unread(), info.get(APPLIED, {})
        if not unread or not isinstance(applied, Mapping):
            return info
        applied = dict(applied)
        for fix in unread:
            applied.setdefault(fix, NOT_READ.format(name=fix))
        return {**info, APPLIED: applied}


class _ReadFixes(tuple):
    """ctx.fixes: a tuple of names that records each one asked for."""

    def __new__(cls, names: tuple[str, ...], reads: Reads) -> Self:
        out = super().__new__(cls, names)
        out._reads = reads
        return out

    def __contains__(self, name: object) -> bool:
        self._reads.asked.add(str(name))
        return super().__contains__(name)

    def __iter__(self) -> Iterator[str]:
        return (_FixName(name, self._reads) for name in super().__iter__())

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return tuple(_FixName(n, self._reads) for n in item) if isinstance(index, slice) else _FixName(item, self._reads)

    def __eq__(self, other: object) -> bool:
        self._reads.everything = True
        return super().__eq__(other)

    __hash__ = tuple.__hash__

    def index(self, *args) -> int:
        self._reads.everything = True
        return super().index(*args)

    def count(self, name: object) -> int:
        self._reads.asked.add(str(name))
        return super().count(name)


class _FixName(str):
    """One name of ctx.fixes handed out by going over them: read once compared equal with a name, or asked of."""

    def __new__(cls, name: str, reads: Reads) -> Self:
        out = super().__new__(cls, name)
        out._reads = reads
        return out

    def _read(self) -> None:
        self._reads.asked.add(str.__str__(self))

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is True:
            self._read()
        return same

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other) if isinstance(other, str) else NotImplemented

    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self  # str(name) == "lora" is still seen

    def __getattribute__(self, name: str):
        if not name.startswith("_"):  # name.startswith("lo"), name.lower(), ...: asked of
            object.__getattribute__(self, "_read")()
        return super().__getattribute__(name)

    def __reduce__(self):
        return str, (str.__str__(self),)  # a plain name in another process


class _ReadParams(dict):
    """ctx.params: the params as a dict that records each key read."""

    def __init__(self, params: Mapping[str, Json], reads: Reads) -> None:
        super().__init__(params)
        self._reads = reads

    def __getitem__(self, key: str) -> Json:
        self._reads.keys.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Json = None) -> Json:
        self._reads.keys.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._reads.keys.add(str(key))
        return super().__contains__(key)

    def _all(self) -> None:
        self._reads.everything = True

    def __iter__(self):
        self._all()
        return super().__iter__()

    def keys(self):
        self._all()
        return super().keys()

    def values(self):
        self._all()
        return super().values()

    def items(self):
        self._all()
        return super().items()

    def copy(self) -> dict[str, Json]:
        self._all()
        return dict(super().items())
