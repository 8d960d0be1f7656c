"""Kernel dispatch pinned for the measured children: the same kernels, so the same peaks, on any x86-64 host.

ATen, oneDNN and MKL each pick their kernels by the CPU's features, and the
kernels differ in the memory they hold: the same S1 tiny step added 34 MiB
more on an AVX-512 host than on an AVX2 one. Capping all three at AVX2, which
every x86-64 CI runner of the last decade has, makes an AVX-512 host run the
kernels an AVX2 host runs (measured: the peaks of every tiny case then matched
across the two within the same-machine spread; benchmarks/RESULTS.md).

The caps are environment variables each library reads once, at its first use;
they are set in the forkserver's environment when it starts, so every measured
child inherits them and the pytest process is left as it was. A variable the
environment already sets is left as it is (a runner that caps lower, or a
developer emulating another machine); the probe child reports the capability
in force, which goes in the fingerprint. `--gpu-budget-cpu-dispatch=native`
leaves the libraries to pick.
"""

from __future__ import annotations

import os
import platform

MODES = ("avx2", "native")
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def pin_env(mode: str, machine: str | None = None, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment variables to add for `mode` on this machine (empty: nothing pinned).

    Only x86-64 has the levels to pin; elsewhere the libraries pick, and the
    fingerprint's capability says what they picked. Variables `environ` (the
    process environment by default) already sets are not overridden.
    """
    if mode not in MODES:
        raise ValueError(f"--gpu-budget-cpu-dispatch={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "native" or (machine or platform.machine()) not in ("x86_64", "AMD64"):
        return {}
    environ = os.environ if environ is None else environ
    return {k: v for k, v in AVX2.items() if k not in environ}
