"""Whether a module can be imported in another interpreter (a case's own environment's), found without importing it.

A fix declares the packages it imports (declare/fixes.py, `needs`), and the
remediation search leaves out one whose package is missing. A case that
declares its own environment runs there, not in the running environment:
a package the environment adds is there for its fixes, though this process
cannot find it. The environment's interpreter is asked instead, as
fixes._installed asks this one: a dotted name looked up in its package's
folders, nothing imported (a package's own import may reach for CUDA).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

TIMEOUT = 60  # seconds for one look-up (an interpreter's start)
_FIND = """\
import importlib.machinery, importlib.util, sys
top, *subs = sys.argv[1].split(".")
spec = importlib.util.find_spec(top)
for sub in subs:
    if spec is None or spec.submodule_search_locations is None:
        sys.exit(1)
    spec = importlib.machinery.PathFinder.find_spec(f"{spec.name}.{sub}", spec.submodule_search_locations)
sys.exit(0 if spec is not None else 1)
"""


def importable_in(python: str) -> Callable[[str], bool]:
    """Whether each module named can be imported by `python`, each asked once; an interpreter that cannot be run
    finds none."""
    found: dict[str, bool] = {}

    def installed(module: str) -> bool:
        if module not in found:
            try:
                found[module] = subprocess.run([python, "-c", _FIND, module], capture_output=True, timeout=TIMEOUT,
                                               stdin=subprocess.DEVNULL, check=False).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                found[module] = False
        return found[module]

    return installed
