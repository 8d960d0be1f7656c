"""`python -m gpu_budget estimate CASE ...`: the estimator's table for the Scenarios given, and its error against real runs.

    python -m gpu_budget estimate memtests/s5_generic_oom/scenarios.py:S5 \\
        "batch 16=memtests/s5_generic_oom/scenarios.py:S5+smaller_batch"        # tiny scale, CPU
    python -m gpu_budget estimate --scale real --cuda memtests/s3_qwen2_audio/scenarios.py:AS_REPORTED
    python -m gpu_budget estimate --validate -o table.md --json v.json CASE ...  # real measured runs beside them
    python -m gpu_budget estimate --render v.json                               # the tables of a saved --json

A CASE is `[LABEL=]path/to/module.py:NAME[+fix...]` or `[LABEL=]module:NAME[+fix...]`
(cases.py). Every figure printed is an estimate of tensor bytes; --validate
adds real measured runs beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from gpu_budget.estimate.cases import FORM, CaseError, load_case
from gpu_budget.estimate.tables import render
from gpu_budget.units import SizeError, format_size, parse_size


def _labelled(arg: str) -> tuple[str, str]:
    """'LABEL=SPEC' -> (LABEL, SPEC); a bare SPEC is its own label."""
    label, eq, spec = arg.partition("=")
    return (label, spec) if eq and ":" not in label else (arg, arg)


def _preload(root: Path) -> tuple[str, ...]:
    """The forkserver preload the gate uses here (pyproject's gpu_budget_preload), else the default."""
    from gpu_budget.isolate import forkserver

    try:
        import tomllib

        ini = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
        return tuple(ini["gpu_budget_preload"])
    except (OSError, KeyError, ImportError, ValueError):
        return forkserver.DEFAULT_PRELOAD


def _estimate_rows(scenarios: dict[str, Any], scale: str, device, steps: int, as_run: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    """The estimated cases' rows, and the labels of those that could not be estimated (each said why on stderr)."""
    from gpu_budget.estimate import estimate_scenario

    rows, failed = [], []
    for label, scenario in scenarios.items():
        t0 = time.perf_counter()
        try:
            est = estimate_scenario(scenario, scale, device=device, steps=steps, as_run=as_run)
        except Exception as exc:  # noqa: BLE001  one case that cannot be estimated must not hide the others
            print(f"{label}: no estimate ({type(exc).__name__}: {exc})", file=sys.stderr)
            failed.append(label)
            continue
        rows.append({"label": label, "scenario": scenario.name, "fixes": list(scenario.fixes), "scale": scale,
                     "metric": est.metric, "estimate": est.step_peak, "at_peak": est.at_peak,
                     "estimate_phase": est.peak_phase, "estimate_seconds": round(time.perf_counter() - t0, 1),
                     "device_peak": est.device_peak, "notes": est.notes, "assumed": est.assumed, "facts": est.facts,
                     "allocated_peak": est.allocated_peak, "reserved_peak": est.reserved_peak,
                     "per_step": est.per_step})
        extra = f", with the CUDA context {format_size(est.device_peak)}" if est.device_peak else ""
        print(f"{label}: {format_size(est.step_peak)} (estimate{extra}) in {rows[-1]['estimate_seconds']} s",
              file=sys.stderr)
    return rows, failed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_budget estimate", description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"[LABEL=]{FORM}")
    parser.add_argument("--scale", choices=("tiny", "real"), default="tiny")
    parser.add_argument("--cuda", action="store_true", help="model the step as CUDA would run it (an estimate)")
    parser.add_argument("--cuda-context", default=None, metavar="SIZE",
                        help="CUDA context size measured on your GPU (e.g. '500 MiB'); added to a device figure")
    parser.add_argument("--cublas-workspace", default=None, metavar="SIZE",
                        help="one cuBLAS workspace (a step takes two: forward and backward threads); default 32 MiB, "
                             "torch's on compute capability 9 and later; '8320 KiB' before it; '0' leaves them out")
    parser.add_argument("--validate", action="store_true",
                        help="also run each case for real in a measured child and report the error (CPU, tiny)")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps to estimate (>= 2: steady state)")
    parser.add_argument("--as-run", action="store_true",
                        help="the run's own steps in order, where its builder gives them (S2's dynamic batches): "
                             "each step's peaks, through the allocator in CUDA mode, go to --json's per_step")
    parser.add_argument("-o", "--output", default=None, help="write the markdown tables here")
    parser.add_argument("--json", default=None, help="write the raw rows here")
    parser.add_argument("--render", default=None, metavar="JSON", help="print the tables of a saved --json file")
    args = parser.parse_args(argv)
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0
    if not args.cases:
        parser.error(f"name at least one CASE: {FORM}")
    if args.validate and (args.cuda or args.scale != "tiny"):
        parser.error("--validate measures real CPU runs: it needs --scale tiny and no --cuda")
    try:
        context = parse_size(args.cuda_context) if args.cuda_context else None
        workspace = None if args.cublas_workspace is None else parse_size(args.cublas_workspace)
        cases = dict(map(_labelled, args.cases))
        scenarios = {label: load_case(spec) for label, spec in cases.items()}
    except (CaseError, SizeError) as exc:
        parser.error(str(exc))
    warnings.filterwarnings("ignore")
    from gpu_budget.estimate.cuda import Device

    device = Device(cuda=args.cuda, cuda_context=context, cublas_workspace=workspace)
    out: dict[str, Any] = {"scale": args.scale, "device": device.name, "kind": "estimate", "cases": cases}
    failed: list[str] = []
    if args.cuda:
        out["cublas_workspace"] = device.workspace
    if args.validate:
        from gpu_budget.estimate import validate

        out.update(validate.compare(scenarios, args.scale, preload=_preload(Path.cwd())))
    else:
        # benchmarks/gpu_compare.py matches the rows by (scenario, fixes, scale)
        out["estimates"], failed = _estimate_rows(scenarios, args.scale, device, args.steps, args.as_run)
    text = render(out)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n")
    if failed:  # a missing figure is a failure, never an exit 0 a script reads as estimated
        print(f"not estimated: {len(failed)} of {len(scenarios)} case(s) ({', '.join(failed)}): see above", file=sys.stderr)
        return 1
    return 0
