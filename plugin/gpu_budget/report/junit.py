"""The gate's own failure in pytest's JUnit XML (--junitxml).

A session-level problem (the fail-safe under CI, a baseline or report that
could not be written, an xdist worker that never finished) fails the run with
no test failing: the XML pytest wrote said every test passed, and a CI that
reads it alone showed a green run. Once pytest has written the file, it gets one
more testcase, `gpu-budget::gate`, failed, naming the problems.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

CLASSNAME, NAME = "gpu-budget", "gate"


def record_gate_failure(config: pytest.Config, failed: str, problems: list[str]) -> bool:
    """Where the session (not an xdist worker: the controller writes the XML) had `problems`, its failure (`failed`,
    the words before them) in the XML `--junitxml` had pytest write as the session finished; whether it was added."""
    path = xml_path(getattr(config.option, "xmlpath", None), Path(config.invocation_params.dir))
    if not problems or hasattr(config, "workerinput") or path is None:
        return False
    return add_gate_failure(path, failed + "; ".join(problems), problems)


def xml_path(given: str | None, invoked: Path) -> Path | None:
    """Where pytest wrote the XML of `--junitxml=given`, as it reads the path (~ and $VARS expanded, relative to the
    folder pytest was invoked in); None without the option."""
    return invoked / os.path.expanduser(os.path.expandvars(given)) if given else None


def add_gate_failure(path: Path, why: str, problems: list[str]) -> bool:
    """Add the gate's failed testcase to the XML at `path` (its message `why`, its text a problem per line) and count
    it in its testsuite; False where there is no readable XML of pytest's there (pytest wrote none) or it cannot be
    rewritten."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return False
    root = tree.getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return False
    case = ET.SubElement(suite, "testcase", classname=CLASSNAME, name=NAME, time="0.000")
    ET.SubElement(case, "failure", message=why).text = "\n".join(problems)
    for count in ("failures", "tests"):
        suite.set(count, str(int(suite.get(count) or 0) + 1))
    try:
        tree.write(path, encoding="utf-8", xml_declaration=True)
    except OSError:
        return False
    return True
