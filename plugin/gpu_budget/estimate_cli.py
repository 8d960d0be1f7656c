"""`python -m gpu_budget estimate`: the estimator's table per scenario, and its error against real runs.

    python -m gpu_budget estimate                       # tiny scale, CPU: every default case
    python -m gpu_budget estimate --scale real --cuda   # the 7B/8B cases, CUDA mode (an estimate)
    python -m gpu_budget estimate --validate -o docs/estimator-results.md --json est.json

Cases name scenario constants in memtests/*_scenarios.py ("module:NAME", fixes
after "+"); the folder is put on sys.path (--scenarios). Every figure printed
is an estimate of tensor bytes; --validate adds real measured runs beside it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import warnings
from pathlib import Path

from gpu_budget.units import format_size, parse_size

TINY_CASES = {
    "s1 as-reported": "s1_scenarios:AS_REPORTED",
    "s1 truncate": "s1_scenarios:AS_REPORTED+truncate",
    "s2 as-reported": "s2_scenarios:S2",
    "s2 max_duration": "s2_scenarios:S2+max_duration",
    "s3 as-reported": "s3_scenarios:AS_REPORTED",
    "s3 trainable_token_indices": "s3_scenarios:TOKEN_ROWS",
    "s4 as-reported": "s4_scenarios:AS_REPORTED",
    "s4 fixed": "s4_scenarios:FIXED",
    "s5 as-reported": "s5_scenarios:S5",
    "s5 smaller_batch": "s5_scenarios:S5+smaller_batch",
}
REAL_CASES = {  # what the GPU validation measures (benchmarks/gpu_validation.sh); S3/S4 are 7B/8B, GPU-only
    "s1 as-reported": "s1_scenarios:AS_REPORTED",
    "s1 truncate": "s1_scenarios:AS_REPORTED+truncate",
    "s2 as-reported": "s2_scenarios:S2",
    "s2 max_duration": "s2_scenarios:S2+max_duration",
    "s3 7B as-reported": "s3_scenarios:AS_REPORTED",
    "s3 7B trainable_token_indices": "s3_scenarios:TOKEN_ROWS",
    "s3 7B trainable_token_indices_dict": "s3_scenarios:TOKEN_ROWS_BOTH",
    "s3 7B no-embedding-training": "s3_scenarios:NO_EMBEDDING_TRAINING",
    "s4 8B as-reported": "s4_scenarios:AS_REPORTED",
    "s4 8B fixed": "s4_scenarios:FIXED",
    "s5 as-reported": "s5_scenarios:S5",
    "s5 smaller_batch": "s5_scenarios:S5+smaller_batch",
}
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations")


def load_case(ref: str):
    """'module:NAME+fix+fix' -> the Scenario constant with those fixes added."""
    target, *fixes = ref.split("+")
    module, _, name = target.partition(":")
    scenario = getattr(importlib.import_module(module), name)
    return scenario.with_fixes(*fixes) if fixes else scenario


def _mib(value) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f}"


def estimate_table(rows: list[dict], cuda: bool) -> str:
    metric = "estimated allocated GPU peak (CUDA mode)" if cuda else "estimated tensor peak (CPU)"
    head = f"| case | {metric}, MiB | " + " | ".join(CATEGORIES) + " | at | seconds |"
    lines = [head, "|---" * (len(CATEGORIES) + 4) + "|"]
    for r in rows:
        split = " | ".join(_mib(r["at_peak"][c]) for c in CATEGORIES)
        lines.append(f"| {r['label']} | {_mib(r['estimate'])} | {split} | {r['estimate_phase']} | "
                     f"{r['estimate_seconds']} |")
    return "\n".join(lines)


def error_table(result: dict) -> str:
    """Absolute: estimate vs measured step peak minus the floor. Increment: what the steps add, on both sides."""
    lines = [("| case | estimate (tensors), MiB | measured step peak, MiB | minus floor, MiB | error, MiB | error "
             "| step increment: estimated, MiB | measured, MiB | error, MiB | estimate s | real run s |"),
             "|---" * 11 + "|"]
    for r in result["rows"]:
        added, error = r["measured_added"], r["error"]
        rel = "-" if not added else f"{error / added:+.0%}"
        est_inc = r["estimate"] - r["estimate_at_step_start"]
        real_inc = None if r["measured_entering_steps"] is None or r["measured_step_peak"] is None \
            else r["measured_step_peak"] - r["measured_entering_steps"]
        lines.append(f"| {r['label']} | {_mib(r['estimate'])} | {_mib(r['measured_step_peak'])} | {_mib(added)} | "
                     f"{_signed(error)} | {rel} | {_mib(est_inc)} | {_mib(real_inc)} | {_signed(r['increment_error'])} "
                     f"| {r['estimate_seconds']} | {r['real_seconds']} |")
    return "\n".join(lines)


def _signed(value) -> str:
    return "-" if value is None else f"{value / 2**20:+,.1f}"


def render(data: dict) -> str:
    """The markdown of a saved --json file (validation or estimates)."""
    if "rows" in data:
        return (f"Floor (an empty measured child, same forkserver preload): {_mib(data['floor'])} MiB.\n\n"
                + error_table(data))
    return estimate_table(data["estimates"], data["device"] != "cpu")


def _preload(root: Path) -> tuple[str, ...]:
    """The forkserver preload the gate uses here (pyproject's gpu_budget_preload), else the default."""
    from gpu_budget import isolate

    try:
        import tomllib

        ini = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
        return tuple(ini["gpu_budget_preload"])
    except (OSError, KeyError, ImportError, ValueError):
        return isolate.DEFAULT_PRELOAD


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_budget estimate", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=("tiny", "real"), default="tiny")
    parser.add_argument("--cuda", action="store_true", help="model the step as CUDA would run it (an estimate)")
    parser.add_argument("--cuda-context", default=None, metavar="SIZE",
                        help="CUDA context size measured on your GPU (e.g. '500 MiB'); added to a device figure")
    parser.add_argument("--case", action="append", default=[], metavar="LABEL=module:NAME[+fix]",
                        help="a case to estimate (repeatable; default: the built-in cases for the scale)")
    parser.add_argument("--validate", action="store_true",
                        help="also run each case for real in a measured child and report the error (CPU, tiny)")
    parser.add_argument("--scenarios", default="memtests", help="folder holding the *_scenarios.py modules")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps to estimate (>= 2: steady state)")
    parser.add_argument("-o", "--output", default=None, help="write the markdown tables here")
    parser.add_argument("--json", default=None, help="write the raw rows here")
    parser.add_argument("--render", default=None, metavar="JSON", help="print the tables of a saved --json file")
    args = parser.parse_args(argv)
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0
    if args.validate and (args.cuda or args.scale != "tiny"):
        parser.error("--validate measures real CPU runs: it needs --scale tiny and no --cuda")
    sys.path.insert(0, str(Path(args.scenarios).resolve()))
    warnings.filterwarnings("ignore")
    from gpu_budget.estimate import estimate_scenario
    from gpu_budget.estimate_cuda import Device

    device = Device(cuda=args.cuda, cuda_context=parse_size(args.cuda_context) if args.cuda_context else None)
    cases = dict(c.split("=", 1) for c in args.case) or (REAL_CASES if args.scale == "real" else TINY_CASES)
    scenarios = {label: load_case(ref) for label, ref in cases.items()}
    out: dict = {"scale": args.scale, "device": device.name, "kind": "estimate", "cases": cases}
    if args.validate:
        from gpu_budget import estimate_validate

        result = estimate_validate.compare(scenarios, args.scale, preload=_preload(Path.cwd()))
        out.update(result)
        text = render(out)
    else:
        rows = []
        for label, scenario in scenarios.items():
            t0 = time.perf_counter()
            try:
                est = estimate_scenario(scenario, args.scale, device=device, steps=args.steps)
            except Exception as exc:  # noqa: BLE001  one case that cannot be estimated must not hide the others
                print(f"{label}: no estimate ({type(exc).__name__}: {exc})", file=sys.stderr)
                continue
            rows.append({"label": label, "scenario": scenario.name, "fixes": list(scenario.fixes),
                         "scale": args.scale, "metric": est.metric, "estimate": est.step_peak,
                         "at_peak": est.at_peak, "estimate_phase": est.peak_phase,
                         "estimate_seconds": round(time.perf_counter() - t0, 1), "device_peak": est.device_peak,
                         "notes": est.notes, "assumed": est.assumed, "facts": est.facts})
            extra = f", with the CUDA context {format_size(est.device_peak)}" if est.device_peak else ""
            print(f"{label}: {format_size(est.step_peak)} (estimate{extra}) in {rows[-1]['estimate_seconds']} s",
                  file=sys.stderr)
        out["estimates"] = rows  # benchmarks/gpu_compare.py matches them by (scenario, fixes, scale)
        text = estimate_table(rows, args.cuda)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str) + "\n")
    return 0
