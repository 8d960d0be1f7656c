"""pytest-gpu-budget: gate real fine-tune steps on peak host RAM and GPU memory.

Public names only; importing this package never imports torch or transformers.
What the `gpu_budget` fixture returns: `Result` (measure) and `Measurement` (peak). The fix
library is `gpu_budget.declare.fixes` (register, get, registered); the remediation search is
`gpu_budget.search.remediate.search`. A runner's own Hugging Face Trainer gets its steps and
evaluations metered by `meter_callback(ctx.meter)`. A user's own script, gated as a command
(`Scenario(command=[...])`), marks phases with `phase("name")` and steps with `step()`: no-ops
that import nothing when the script runs outside the gate.

Each name is imported on first use (PEP 562): a script that only marks its phases, and every
Python process of a gated command (the gate's hook imports this package there), loads the few
modules it uses, not the whole plugin, so the gate adds almost nothing to what it measures.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing's own flag, without importing typing here

_WHERE = {
    "Budget": "model.budget", "Scenario": "declare.scenario", "Fix": "declare.fixes", "FixError": "declare.fixes",
    "Control": "declare.fixes", "Environment": "declare.environment",
    "Measurement": "model.result", "Result": "model.result", "MissingDependency": "requires", "optional_import": "requires",
    "SizeError": "units", "format_size": "units", "parse_size": "units", "meter_callback": "measure.hf_trainer",
    "phase": "script", "step": "script",
}
__all__ = sorted(_WHERE)  # noqa: PLE0605  the names of _WHERE, listed once


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'gpu_budget' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"gpu_budget.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports on first use
    from gpu_budget.declare.environment import Environment  # noqa: F401
    from gpu_budget.declare.fixes import Control, Fix, FixError  # noqa: F401
    from gpu_budget.declare.scenario import Scenario  # noqa: F401
    from gpu_budget.measure.hf_trainer import meter_callback  # noqa: F401
    from gpu_budget.model.budget import Budget  # noqa: F401
    from gpu_budget.model.result import Measurement, Result  # noqa: F401
    from gpu_budget.requires import MissingDependency, optional_import  # noqa: F401
    from gpu_budget.script import phase, step  # noqa: F401
    from gpu_budget.units import SizeError, format_size, parse_size  # noqa: F401
