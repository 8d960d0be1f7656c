"""A scenario's knobs as the values they are: plain JSON, since they cross into a measured child and a baseline as JSON."""

from __future__ import annotations

from typing import TypeAlias

from gpu_budget.model.json_value import Json

Params: TypeAlias = "dict[str, Json]"  # knob name -> value (batch size, clip seconds, a model name, ...)
# the params of planted regressions (prove the gate can fail), read by a runner's measured child (isolate/child.py):
# retained, touched bytes for the whole run, as a bytes object (host RAM sees it) or as a tensor made under the
# tracker (host RAM and tensor bytes see it)
PLANT_BYTES, PLANT_TENSOR_BYTES = "plant_bytes", "plant_tensor_bytes"
