"""A scenario's knobs as the values they are: plain JSON, since they cross into a measured child and a baseline as JSON."""

from __future__ import annotations

from typing import TypeAlias

from gpu_budget.model.json_value import Json

Params: TypeAlias = "dict[str, Json]"  # knob name -> value (batch size, clip seconds, a model name, ...)
