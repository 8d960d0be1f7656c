"""pytest-gpu-budget: gate real fine-tune steps on peak host RAM and GPU memory.

Public types only; importing this package never imports torch.
"""

from gpu_budget.scenario import Budget, Scenario
from gpu_budget.units import SizeError, format_size, parse_size

__all__ = ["Budget", "Scenario", "SizeError", "format_size", "parse_size"]
