"""`python -m gpu_budget baselines drop --scale SCALE FOLDER|FILE ...`: remove one scale's entries from files."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpu_budget.judge.files import load, write


def main(argv: list[str]) -> int:
    """`python -m gpu_budget baselines drop --scale SCALE FOLDER|FILE ...`: remove one scale's entries.

    Re-recording starts here: --gpu-budget-update then writes every case anew
    (it rewrites only new and changed entries otherwise). Other scales stay.
    """
    parser = argparse.ArgumentParser(prog="python -m gpu_budget baselines")
    sub = parser.add_subparsers(dest="command", required=True)
    drop = sub.add_parser("drop", help="remove one scale's entries from every baseline file in each FOLDER "
                                       "(recursively), or from each FILE named")
    drop.add_argument("--scale", required=True)
    drop.add_argument("paths", type=Path, nargs="+", metavar="FOLDER|FILE")
    args = parser.parse_args(argv)
    files = []
    for given in args.paths:
        if given.is_dir():
            files += sorted(given.rglob("*.json"))
        elif given.is_file():
            files.append(given)
        else:
            parser.error(f"{given} is neither a folder nor a baseline file")
    for path in files:
        if args.scale in load(path)["entries"]:
            write(path, args.scale, {}, prune_except=set())
            print(f"{path}: dropped the {args.scale!r} entries")
    return 0
