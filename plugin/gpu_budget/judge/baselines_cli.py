"""`python -m gpu_budget baselines drop|resolve|merge-driver ...`: remove one scale's entries from files; merge a file
git left with conflict markers, keeping both sides' entries; merge one as git's merge driver (merge_driver.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gpu_budget.judge import conflict, merge_driver, store
from gpu_budget.judge.store import BaselineError
from gpu_budget.model.budget import SCALES


def main(argv: list[str]) -> int:
    """`python -m gpu_budget baselines drop --scale SCALE FOLDER|FILE ...`: remove one scale's entries.

    Re-recording starts here: --gpu-budget-update then writes every case anew
    (it rewrites only new and changed entries otherwise). Other scales stay.
    `... baselines resolve [--keep ours|theirs] FOLDER|FILE ...`: rewrite each
    file holding git's conflict markers with both sides' entries.
    """
    parser = argparse.ArgumentParser(prog="python -m gpu_budget baselines",
                                     description="change baseline files as a whole: drop a scale, resolve a merge")
    sub = parser.add_subparsers(dest="command", required=True)
    said = "remove one scale's entries from every baseline file in each FOLDER (recursively), or from each FILE named"
    drop = sub.add_parser("drop", help=said, description=f"{said}; --gpu-budget-update then records them anew")
    drop.add_argument("--scale", required=True, help=f"the scale whose entries go: {', '.join(SCALES)}")
    drop.add_argument("paths", type=Path, nargs="+", metavar="FOLDER|FILE",
                      help="a baselines folder (every *.json under it) or one baseline file")
    said = ("rewrite each baseline file left with git's merge conflict markers in each FOLDER (recursively), or each "
            "FILE named, keeping both sides' entries")
    merge = sub.add_parser("resolve", help=said, description=said)
    merge.add_argument("--keep", choices=conflict.SIDES, help="the side whose figures an entry recorded on both sides "
                       "with other figures takes (without it such a file is left as it is, the entries named)")
    merge.add_argument("paths", type=Path, nargs="+", metavar="FOLDER|FILE",
                       help="a baselines folder (every *.json under it) or one baseline file")
    merge_driver.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "merge-driver":
        return merge_driver.drive(args.base, args.ours, args.theirs, args.name)
    if args.command == "drop" and args.scale not in SCALES:  # a usage error, as argparse's own: exit 2
        drop.error(f"--scale {args.scale!r} is not a scale: they are {', '.join(SCALES)}")
    for given in args.paths:
        if not given.is_dir() and not given.is_file():
            parser.error(f"{given} is neither a folder nor a baseline file")
    files, skipped = _gathered(args.paths)
    for path, why in skipped:
        print(f"python -m gpu_budget baselines {args.command}: skipped {path}: no baseline file ({why})", file=sys.stderr)
    if not files:
        print(f"python -m gpu_budget baselines {args.command}: no baseline file (*.json) under "
              f"{', '.join(map(str, args.paths))}{' but those skipped (named above)' if skipped else ''}", file=sys.stderr)
        return 1
    try:
        return _drop(args.scale, files) if args.command == "drop" else _resolve(args.keep, files, args.paths)
    except (BaselineError, conflict.ConflictError) as exc:
        print(f"python -m gpu_budget baselines {args.command}: {exc}", file=sys.stderr)
        return 1


def _gathered(given: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The files to act on: each FILE named, and each *.json under each FOLDER that is a baseline file (or may be: a
    broken one is reported where read), each once where first named (a folder and a file in it); and the *.json of the
    folders that are no baseline file at all, with why: a tool's cache or a hidden file must not block those beside it."""
    once: dict[Path, Path] = {}
    skipped: list[tuple[Path, str]] = []
    for path in given:
        for found in sorted(path.rglob("*.json")) if path.is_dir() else [path]:
            why = store.foreign(found) if found is not path else None
            if why:
                skipped.append((found, why))
            else:
                once.setdefault(found.resolve(), found)
    return list(once.values()), skipped


def _drop(scale: str, files: list[Path]) -> int:
    """Drop `scale` from each file holding it; a scale none holds is a mistake (another folder): exit 1.

    Every file is read before any is written, and where any cannot be read each is named and nothing dropped: a
    file left holding the scale would keep its old entries through the re-recording that follows a drop.
    """
    held, bad = _scales_held(files)
    if bad:
        for problem in bad:
            print(f"python -m gpu_budget baselines drop: {problem}", file=sys.stderr)
        print(f"python -m gpu_budget baselines drop: {len(bad)} of {len(files)} file{'s' if len(files) != 1 else ''} "
              "cannot be read (named above): nothing dropped", file=sys.stderr)
        return 1
    holding = [path for path in files if scale in held[path]]
    if not holding:
        there = sorted(set().union(*held.values()))
        print(f"python -m gpu_budget baselines drop: no entries of scale {scale!r} in the {len(files)} baseline "
              f"file{'s' if len(files) != 1 else ''} given (they hold "
              f"{', '.join(map(repr, there)) if there else 'no entries'}): nothing dropped", file=sys.stderr)
        return 1
    unwritten = []
    for path in holding:
        try:
            store.drop_scale(path, scale)
        except OSError as exc:  # an unwritable folder: the file is left as it was (the write is atomic)
            unwritten.append(path)
            print(f"python -m gpu_budget baselines drop: {path}: {exc}", file=sys.stderr)
            continue
        print(f"{path}: dropped the {scale!r} entries")
    if unwritten:
        print(f"python -m gpu_budget baselines drop: {len(unwritten)} of {len(holding)} file"
              f"{'s' if len(holding) != 1 else ''} left holding {scale!r} (named above)", file=sys.stderr)
    return 1 if unwritten else 0


def _scales_held(files: list[Path]) -> tuple[dict[Path, set[str]], list[str]]:
    """The scales each file holds, and the error of each file that cannot be read or is no valid baseline file."""
    held, bad = {}, []
    for path in files:
        try:
            held[path] = store.scales_held(path)
        except BaselineError as exc:
            bad.append(str(exc))
    return held, bad


def _resolve(keep: str | None, files: list[Path], given: list[Path]) -> int:
    """Resolve each file named, and each file of a folder that holds conflict markers; 1 where any is left or broken.

    A file that cannot be read or resolved is named with its error and the
    others still resolved: one broken file must not hide the rest.
    """
    todo, bad, clean = _conflicted(files, {path.resolve() for path in given if path.is_file()})
    tried = len(todo) + len(bad)  # the files a message counts: those with markers, and those that cannot be read
    for path in clean:  # named, yet resolved already (a second run) or never conflicted: done, not a failure
        print(f"{path}: holds no merge conflict markers: nothing to resolve")
    if not todo and not bad:
        if folders := [str(path) for path in given if path.is_dir()]:
            print(f"no baseline file under {', '.join(folders)} holds merge conflict markers: nothing to resolve")
        return 0
    for path in todo:
        try:
            merged = store.resolve(path, keep)
        except (BaselineError, conflict.ConflictError) as exc:
            bad.append(str(exc))
            continue
        except OSError as exc:  # an unwritable folder: the file is left as it was (the write is atomic)
            bad.append(f"{path}: {exc}")
            continue
        ours, theirs = merged.labels
        kept = "".join(f"; {test_id!r} (scale {scale!r}) differed on both sides: kept the {side} side's entry (--keep {side})"
                       for scale, test_id, side in merged.kept)
        kept += "".join(f"; {test_id!r} (scale {scale!r}) deleted on {side}'s side and as it was on "
                        f"{theirs if side == ours else ours}'s: left out" for scale, test_id, side in merged.deleted)
        kept += "".join(f"; {test_id!r} (scale {scale!r}) deleted on {side}'s side and re-recorded on "
                        f"{theirs if side == ours else ours}'s: kept (where its test is gone, the next "
                        "--gpu-budget-update drops it)" for scale, test_id, side in merged.revived)
        kept += "".join(f"; {test_id!r} (scale {scale!r}) recorded alike on both sides but for the date: kept {side}'s, "
                        f"the later ({day})" for scale, test_id, side, day in merged.dated)
        kept += "".join(f"; {test_id!r} (scale {scale!r}) taken as the branches committed it: the file's conflict "
                        "regions read it otherwise (git's line merge joined lines of two entries, or an edit since "
                        "the merge)" for scale, test_id in merged.text_differs)
        print(f"{path}: kept both sides' entries, {merged.total} in all ({merged.only_ours} from {ours}'s side of "
              f"the conflict alone, {merged.only_theirs} from {theirs}'s alone){kept}; review it, then `git add` it")
    for problem in bad:
        print(f"python -m gpu_budget baselines resolve: {problem}", file=sys.stderr)
    if bad:
        share = "the file" if tried == 1 else f"all {tried} files" if len(bad) == tried else f"{len(bad)} of the {tried} files"
        print(f"python -m gpu_budget baselines resolve: {share} holding conflict markers, unmerged or unreadable left as "
              f"{'they were' if len(bad) != 1 else 'it was'} (named above)", file=sys.stderr)
    return 1 if bad else 0


def _conflicted(files: list[Path], named: set[Path]) -> tuple[list[Path], list[str], list[Path]]:
    """The files to resolve (those holding markers), the error of each other file that cannot be read or is no valid
    baseline file (named now, where the next gate run would fail its cases on it), and the valid files named that hold
    no markers (said to have nothing to resolve: a second `resolve FILE` is no failure)."""
    todo, bad, clean = [], [], []
    for path in files:
        try:
            if store.conflicted(path):
                todo.append(path)
                continue
            store.read(path)
        except BaselineError as exc:
            bad.append(str(exc))
            continue
        if whole := store.unmerged_whole(path):  # no markers, yet git holds it unmerged: not resolved, not clean
            bad.append(whole)
        elif path.resolve() in named:
            clean.append(path)
    return todo, bad, clean
