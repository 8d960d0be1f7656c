"""The baseline store (`BaselineStore`): the one code that finds, reads, writes and prunes baseline files.

A store is made from the baselines folder option and the hardware key. A
case's file is <folder>/<hardware key>/<test module's stem>.json (path_for,
the one place that says so; a relative folder is anchored at the test file's
project root: files.folder_for). `lookup` finds a case's entry in it with the
namesake rule (keys.py); `stage` keeps an entry to write (a `PendingWrite`,
which an xdist worker ships to its controller as JSON, staged there the same
way) and `flush` writes what is staged, one locked, atomic write per file and
scale; `prune` drops the entries of tests no longer collected (`unpruned`: those an update of a selection keeps). files.py's
reading, validation, lock and atomic write are helpers only this module calls.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpu_budget.judge import conflict, files, keys, merge_base
from gpu_budget.judge.contents import Contents, Listing
from gpu_budget.judge.fingerprint import Facts
from gpu_budget.model.case_id import CaseId
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Fields
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping, JsonObject

BaselineError = files.BaselineError


@dataclass(frozen=True)
class Stored:
    """What the store holds for one case: its file, its entry (None: none recorded), the package list the entry's
    fingerprint names (None: not held), or why the file could not be read (`broken`)."""

    path: Path
    entry: Entry | None = None
    packages: Listing | None = None
    broken: str | None = None


@dataclass(frozen=True)
class PendingWrite(Fields):
    """An entry to write: its file, scale and key, the entry, the package list its fingerprint's digest names
    (digest -> list), and the node id of the row that measured it (which says so where its write fails). Crosses
    from an xdist worker to its controller as JSON."""

    path: str
    scale: str
    id: str
    entry: Entry
    packages: Mapping[str, Listing] = field(default_factory=dict)
    row: str | None = None

    def to_json(self) -> JsonObject:
        return {"path": self.path, "scale": self.scale, "id": self.id, "entry": self.entry.to_json(),
                "packages": {digest: dict(listing) for digest, listing in self.packages.items()},
                **({"row": self.row} if self.row is not None else {})}

    @classmethod
    def from_json(cls, data: JsonMapping) -> PendingWrite:
        return cls(data["path"], data["scale"], data["id"], Entry.from_json(data["entry"]), data.get("packages") or {},
                   data.get("row"))


class Staging:
    """The entries waiting to be written, grouped by file and scale; the package lists they name, all together."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], dict[str, Entry]] = {}
        self._packages: dict[str, Listing] = {}

    def stage(self, write: PendingWrite) -> None:
        self._groups.setdefault((write.path, write.scale), {})[write.id] = write.entry
        self._packages.update(write.packages)

    def flush(self, failed: Callable[[str, Exception], None] | None = None) -> Counter[str]:
        """Write what is staged, one locked, atomic write per file and scale; the entries written, per file. A write
        that fails (a broken file, an unwritable folder) is handed to `failed` with its file, else raised."""
        groups, packages = self._groups, self._packages
        self._groups, self._packages = {}, {}
        written: Counter[str] = Counter()
        for (path, scale), entries in groups.items():
            try:
                files.write(Path(path), scale, {key: entry.to_json() for key, entry in entries.items()},
                            packages=packages)
            except (files.BaselineError, OSError) as exc:
                if failed is None:
                    raise
                failed(path, exc)
            else:
                written[path] += len(entries)
        return written


class BaselineStore:
    """The baseline files of one hardware key under one baselines folder option."""

    def __init__(self, root: Path, hardware_key: str, package_versions: Listing | None = None) -> None:
        self.root = Path(root)
        self.hardware_key = hardware_key
        self.package_versions = package_versions  # this session's package list, which its entries' digests name
        self.staging = Staging()

    @classmethod
    def of(cls, root: Path, hardware: Hardware) -> BaselineStore:
        """The store of a session measuring on `hardware` (its key names the folder; its package list is what its
        entries' digests name)."""
        return cls(root, hardware.key, hardware.package_versions)

    def path_for(self, case: CaseId) -> Path:
        """The case's baseline file."""
        return self._file(case.module)

    def _file(self, module: str | Path) -> Path:
        return files.path_for(self.root, self.hardware_key, str(module))

    def folder(self, module: str | Path | None = None) -> Path:
        """This hardware's folder of the baselines of a test module's project (of the working folder's, with none)."""
        return files.folder_for(self.root, None if module is None else str(module)) / self.hardware_key

    def namesakes(self, module: str, collected: Iterable[str]) -> tuple[str, ...]:
        """The other test files of `collected` whose baselines share this module's file (one stem, one folder)."""
        folder = files.folder_for(self.root, module)
        return tuple(m for m in collected if m != module and Path(m).stem == Path(module).stem
                     and files.folder_for(self.root, m) == folder)

    def lookup(self, case: CaseId, scale: str, namesakes: Iterable[str | Path] = (), path: Path | None = None) -> Stored:
        """The case's entry at `scale` and the package list it names, found with the namesake rule (keys.find_case);
        a file that cannot be read is said, not raised. `path`: the case's file, where path_for already said it."""
        path = self.path_for(case) if path is None else path
        try:
            contents = read(path)
        except files.BaselineError as exc:
            return Stored(path, broken=str(exc))
        found = keys.find_case(contents.scale(scale), case, namesakes)[1]
        entry = None if found is None else Entry.from_json(found)
        return Stored(path, entry, contents.packages_for(entry))

    def with_packages(self, write: PendingWrite) -> PendingWrite:
        """The write with this session's package list under the digest its entry's fingerprint names."""
        digest = Facts.from_json(write.entry.fingerprint).packages
        if not digest or self.package_versions is None:
            return write
        return replace(write, packages={digest: self.package_versions})

    def stage(self, write: PendingWrite) -> None:
        self.staging.stage(write)

    def flush(self, failed: Callable[[str, Exception], None] | None = None) -> Counter[str]:
        return self.staging.flush(failed)

    def prune(self, collected: Mapping[str, Iterable[str]], scale: str, finished: Iterable[CaseId] = (),
              dropped: dict[str, list[str]] | None = None) -> list[str]:
        """Drop the entries at `scale` of tests no longer collected (`collected`: module -> test names), and of labels
        a test that ran to its end (`finished`: the cases such tests measured) no longer measures, file by file
        (keys.kept_on_prune: a legacy entry goes once its case has a keyed one). The other files of the
        folders inside the project lose the entries of test files deleted (a module renamed); such a file left empty
        goes (a folder outside it may hold another project's). A broken file is left (one of a deleted test file is named
        among the returned lines: no test reports it). `dropped` gets, per file
        pruned, the keys it lost: the summary names them, since no row is left to say so. Returns a line per file
        whose write failed (a read-only folder, a full disk), naming it: the gate's failure, the other files pruned."""
        finished, failed, by_file = tuple(finished), [], self._by_file(collected)
        anchors = {files.anchor_of(str(module), self.root) for module in collected}
        folders = {p.parent for p in by_file if any(p.is_relative_to(anchor) for anchor in anchors)}  # the project's
        others = {path for folder in folders for path in folder.glob("*.json")} - set(by_file)
        for path in [*by_file, *sorted(others)]:
            try:
                held = set(read(path).scale(scale))
            except files.BaselineError as exc:  # a broken file is never rewritten
                if path in others:  # no test of it ran to report it: its module is gone
                    failed.append(f"left as it is, a baseline file no test collected uses (its test file is gone): {exc}")
                continue  # else already reported as its tests' error
            keep = keys.kept_on_prune(held, by_file.get(path, {}), self.root, anchors if path in others else None,
                                      finished)
            if keep != held:
                try:
                    files.write(path, scale, {}, drop=held - keep, drop_empty=path in others and not path.is_symlink())
                except (files.BaselineError, OSError) as exc:
                    lost = len(held - keep)
                    failed.append(f"could not drop {lost} entr{'y' if lost == 1 else 'ies'} from {path}: {exc}")
                else:
                    if dropped is not None:
                        dropped[str(path)] = sorted(held - keep)
        return failed

    def _by_file(self, collected: Mapping[str, Iterable[str]]) -> dict[Path, dict[str, Iterable[str]]]:
        """The collected test modules (module -> test names) grouped by the baseline file each one's entries are in."""
        by_file: dict[Path, dict[str, Iterable[str]]] = {}
        for module, names in collected.items():
            by_file.setdefault(self._file(module), {})[module] = names
        return by_file

    def unpruned(self, collected: Mapping[str, Iterable[str]], scale: str, finished: Iterable[CaseId],
                 whole: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
        """The entries at `scale` that an update of a selection keeps and one of the whole suite drops (`prune`), of
        the tests the selection collected whole (`whole`: module -> scopes, session/collection.whole_scopes): a
        parametrize id renamed or removed, a label a test that ran to its end no longer measures; per file, for the
        summary to name, since no row says they stay. Nothing is written; a broken file is passed over (its tests
        report it)."""
        finished, by_file = tuple(finished), self._by_file(collected)
        scopes = {keys.module_path(module, self.root): tuple(names) for module, names in whole.items()}
        out = {}
        for path, modules in by_file.items():
            try:
                held = set(read(path).scale(scale))
            except files.BaselineError:
                continue
            lost = held - keys.kept_on_prune(held, modules, self.root, None, finished)
            if named := sorted(key for key in lost if keys.in_scope(key, scopes)):
                out[str(path)] = named
        return out


def read(path: Path) -> Contents:
    """A baseline file's validated data (an empty file's where it does not exist); BaselineError where it is broken."""
    return Contents.from_json(files.load(path))


# -- whole files, named by path: `python -m gpu_budget baselines drop|resolve` (baselines_cli.py) ----------------

def scales_held(path: Path) -> set[str]:
    """The scales a file holds entries of."""
    return {scale for scale, entries in read(path).entries.items() if entries}


def drop_scale(path: Path, scale: str) -> None:
    """Remove one scale's entries from a file."""
    files.write(path, scale, {}, prune_except=set())


def foreign(path: Path) -> str | None:
    """Why a *.json in a baselines folder is no baseline file at all (files.foreign), or None."""
    return files.foreign(path)


def conflicted(path: Path) -> bool:
    """Whether a baseline file holds git's merge conflict markers."""
    return files.conflicted(path)


def unmerged_whole(path: Path) -> str | None:
    """What is wrong with a baseline file git left unmerged whole (deleted on one side, changed on the other), and
    what to do; None where it is not (merge_base.unmerged_whole)."""
    return merge_base.unmerged_whole(path)


def resolve(path: Path, keep: str | None = None) -> conflict.Merged:
    """Rewrite a file git left with conflict markers, keeping both sides' entries (files.resolve)."""
    return files.resolve(path, keep)


def merge_driver(base: Path, ours: Path, theirs: Path, name: str) -> conflict.Merged:
    """Merge the three versions of a baseline file git hands its merge driver, entry by entry (files.merge_driver)."""
    return files.merge_driver(base, ours, theirs, name)
