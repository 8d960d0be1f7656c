"""pytest-gpu-budget: gate real fine-tune steps on peak host RAM and GPU memory.

Public names only; importing this package never imports torch or transformers.
What the `gpu_budget` fixture returns: `Result` (measure) and `Measurement` (peak). The fix
library is `gpu_budget.fixes` (register, get, registered); the remediation search is
`gpu_budget.remediate.search`. A runner's own Hugging Face Trainer gets its steps and
evaluations metered by `meter_callback(ctx.meter)`. A user's own script, gated as a command
(`Scenario(command=[...])`), marks phases with `phase("name")` and steps with `step()`: no-ops
that import nothing when the script runs outside the gate.
"""

from gpu_budget.fixes import Fix, FixError
from gpu_budget.hf_trainer import meter_callback
from gpu_budget.requires import MissingDependency, optional_import
from gpu_budget.results import Measurement, Result
from gpu_budget.scenario import Budget, Scenario
from gpu_budget.script import phase, step
from gpu_budget.units import SizeError, format_size, parse_size

__all__ = ["Budget", "Fix", "FixError", "Measurement", "MissingDependency", "Result", "Scenario", "SizeError",
           "format_size", "meter_callback", "optional_import", "parse_size", "phase", "step"]
