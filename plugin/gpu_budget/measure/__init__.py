"""Measure: the meter (per-phase peaks), the process tree, tensor bytes, NVML, the Trainer callback."""
