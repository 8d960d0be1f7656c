"""The environment variables that start a coverage tracer in every new Python process, kept from measured ones.

pytest-cov measuring subprocesses (coverage's `patch = subprocess`, or
COVERAGE_PROCESS_START; pytest-cov before 7: COV_CORE_*) sets them in the
session's environment, and coverage's .pth file starts tracing in any Python
process that finds one: the forkserver, so every function case's child, and a
command's processes. Its tracer and data are RAM the measured run does not
hold outside a coverage run, so the same case measured a higher peak under
--cov than the baseline recorded without it.
"""

from __future__ import annotations

from collections.abc import Mapping

STARTERS = ("COVERAGE_PROCESS_START", "COVERAGE_PROCESS_CONFIG", "COV_CORE_SOURCE", "COV_CORE_CONFIG",
            "COV_CORE_DATAFILE")


def untraced(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without the variables that would start coverage in a process started with it."""
    return {name: value for name, value in environ.items() if name not in STARTERS}
