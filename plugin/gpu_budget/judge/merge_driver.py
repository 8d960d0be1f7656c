"""`python -m gpu_budget baselines merge-driver %O %A %B %P`: git's merge driver for baseline files.

git merges a baseline file's lines, and a merge it finds clean can join one
entry's key to another entry's figures, or move an entry under another scale,
with no conflict for `baselines resolve` to find. Set as the file's merge
driver, this merges the three versions entry by entry (store.merge_driver);
where it cannot (an entry both sides recorded with other figures, a version
that is no baseline file) it leaves git's own conflict markers in the file,
for `baselines resolve --keep ours|theirs` or a hand edit, and exits 1.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from gpu_budget.judge import conflict, store


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The `merge-driver` command's arguments: git's %O %A %B %P."""
    said = ("git's merge driver for baseline files (`merge.gpu-budget-baselines.driver` set to `python -m gpu_budget "
            "baselines merge-driver %O %A %B %P`, and `merge=gpu-budget-baselines` in .gitattributes): merge the "
            "three versions entry by entry into OURS, or leave git's conflict markers there and exit 1")
    driver = sub.add_parser("merge-driver", help=said.replace("%", "%%"), description=said)  # help is %-formatted
    for name, what in (("base", "the merge base's version (%%O)"), ("ours", "ours (%%A), written with the result"),
                       ("theirs", "theirs (%%B)")):
        driver.add_argument(name, type=Path, metavar=name.upper(), help=what)
    driver.add_argument("name", metavar="PATH", help="the file's path in the repository (%%P), which messages name")


def drive(base: Path, ours: Path, theirs: Path, name: str) -> int:
    """0 with the merged file written to `ours`; 1 with git's line merge (its markers) there instead."""
    try:
        merged = store.merge_driver(base, ours, theirs, name)
    except (store.BaselineError, conflict.ConflictError) as exc:
        print(f"python -m gpu_budget baselines merge-driver: {exc}; left git's conflict markers in {name}",
              file=sys.stderr)
        try:
            subprocess.run(["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs", str(ours), str(base),
                           str(theirs)], capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError) as failed:  # ours left as it was: git reports the conflict
            print(f"python -m gpu_budget baselines merge-driver: git merge-file: {failed}", file=sys.stderr)
        return 1
    print(f"{name}: merged entry by entry, {merged.total} in all")
    return 0
