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
import re
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpu_budget.declare.params import Json
from gpu_budget.declare.scenario import Scenario
from gpu_budget.estimate.card_room import CardError, CardRoom, card_room, card_workspace
from gpu_budget.estimate.cases import FORM, CaseError, load_case, source
from gpu_budget.estimate.rows import EstimateOutput, EstimateRow
from gpu_budget.estimate.tables import render_output
from gpu_budget.judge.files import replaced_baseline
from gpu_budget.report.outputs import unwritable, write_whole
from gpu_budget.units import EXPECTED, SizeError, format_size, parse_size

if TYPE_CHECKING:
    from gpu_budget.estimate.cuda import Device


def _labelled(arg: str) -> tuple[str, str]:
    """'LABEL=SPEC' -> (LABEL, SPEC); a bare SPEC is its own label."""
    label, eq, spec = arg.partition("=")
    return (label, spec) if eq and ":" not in label else (arg, arg)


def _cases(parser: argparse.ArgumentParser, given: list[str]) -> dict[str, str]:
    """The cases by label; an empty label, or one label for two cases (the table's rows are by label: one would be
    dropped without a word), ends the command with the parser's error. A case given twice is estimated once."""
    cases: dict[str, str] = {}
    for arg in given:
        label, spec = _labelled(arg)
        if not label:
            parser.error(f"case {arg!r}: the LABEL before '=' is empty (give one, or no '=': the case is its own label)")
        if cases.get(label, spec) != spec:
            parser.error(f"label {label!r} names two cases ({cases[label]} and {spec}): give each its own")
        cases[label] = spec
    return cases


@dataclass(frozen=True)
class _Pyproject:
    """What the CLI reads of pyproject.toml: [tool.pytest.ini_options] gpu_budget_preload (None: not set)."""

    preload: tuple[str, ...] | None

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> _Pyproject:
        ini = data.get("tool", {}).get("pytest", {}).get("ini_options", {})
        return cls(None if "gpu_budget_preload" not in ini else tuple(ini["gpu_budget_preload"]))


def _preload(root: Path) -> tuple[str, ...]:
    """The forkserver preload the gate uses here (pyproject's gpu_budget_preload), else the default."""
    from gpu_budget.isolate import forkserver

    try:
        import tomllib

        preload = _Pyproject.from_json(tomllib.loads((root / "pyproject.toml").read_text())).preload
    except (OSError, ImportError, ValueError):
        return forkserver.DEFAULT_PRELOAD
    return forkserver.DEFAULT_PRELOAD if preload is None else preload


def command_advice(scenario: Scenario) -> str:
    """Why a command case gets no estimate, and what to estimate instead: the estimator runs a step of a function
    case's model on fake tensors, and a command (a script, a launcher) hands it no model to build."""
    return (f"scenario {scenario.name!r} is a command case (Scenario(command=...)): the estimator models function "
            "cases only, whose builder builds the model and the step the runner runs. To estimate what the script "
            "trains, declare a function case for it (Scenario(run=\"your.module:run\", ...)) that builds the same "
            "model and runs the same step, and register its builder with gpu_budget.estimate.register(\"your.module:run\", "
            "\"your.module:build\") (docs/estimator.md); the gate measures the command itself as it is")


def _estimate_rows(scenarios: dict[str, Scenario], scale: str, device: Device, steps: int,
                   as_run: bool = False) -> tuple[list[EstimateRow], dict[str, str]]:
    """The estimated cases' rows, and why each of the others could not be estimated (said on stderr too)."""
    from gpu_budget.estimate import estimate_scenario

    rows, failed = [], {}
    for label, scenario in scenarios.items():
        t0 = time.perf_counter()
        why = command_advice(scenario) if scenario.command is not None else None
        if why is None:
            try:
                est = estimate_scenario(scenario, scale, device=device, steps=steps, as_run=as_run)
            except Exception as exc:  # noqa: BLE001  one case that cannot be estimated must not hide the others
                why = f"{type(exc).__name__}: {exc}"
        if why is not None:
            print(f"{label}: no estimate ({why})", file=sys.stderr)
            failed[label] = why
            continue
        rows.append(EstimateRow(
            label=label, scenario=scenario.name, fixes=tuple(scenario.fixes), scale=scale, metric=est.metric,
            estimate=est.step_peak, at_peak=est.at_peak, estimate_phase=est.peak_phase,
            estimate_seconds=round(time.perf_counter() - t0, 1), device_peak=est.device_peak, notes=tuple(est.notes),
            assumed=est.assumed, facts=est.facts, allocated_peak=est.allocated_peak, reserved_peak=est.reserved_peak,
            per_step=tuple(est.per_step)))
        extra = f", with the CUDA context {format_size(est.device_peak)}" if est.device_peak else ""
        print(f"{label}: {format_size(est.step_peak)} (estimate{extra}) in {rows[-1].estimate_seconds} s",
              file=sys.stderr)
    return rows, failed


def _steps(value: str) -> int:
    """--steps: a whole number of optimizer steps, 1 or more (0 would estimate no step at all)."""
    try:
        steps = int(value)
    except ValueError:
        steps = 0
    if steps < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of optimizer steps (1 or more)")
    return steps


def _size(unit: str) -> Callable[[str], str]:
    """--cuda-context, --cublas-workspace: a size with its unit, as a marker's budget is (parse_size reads a bare
    number as bytes: `--cuda-context 500` would add 500 bytes without a word); 0 is 0 in any unit. Read here, so an
    unreadable size's error names its option."""

    def given(value: str) -> str:
        if not value.strip():
            raise argparse.ArgumentTypeError(f"{value!r} is no size: give one with its unit, e.g. '500 {unit}', "
                                             "or leave the option out")
        if re.fullmatch(r"\s*(\d+(\.\d*)?|\.\d+)\s*", value) and float(value) != 0:
            raise argparse.ArgumentTypeError(f"{value!r} is a bare number: give it a unit, e.g. '{value.strip()} {unit}'")
        try:
            parse_size(value)
        except SizeError as exc:  # parse_size's hint offers bytes, which this option refuses above
            said = str(exc).replace(EXPECTED, f"(give a size with its unit, e.g. '500 {unit}')")
            raise argparse.ArgumentTypeError(said) from None
        return value

    return given


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gpu_budget estimate", description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"[LABEL=]{FORM}")
    parser.add_argument("--scale", choices=("tiny", "real"), default="tiny",
                        help="the params each case's Scenario gives at this scale (default tiny)")
    parser.add_argument("--cuda", action="store_true", help="model the step as CUDA would run it (an estimate)")
    parser.add_argument("--cuda-context", type=_size("MiB"), default=None, metavar="SIZE",
                        help="CUDA context size measured on your GPU (e.g. '500 MiB'); added to a device figure (--cuda)")
    parser.add_argument("--cublas-workspace", type=_size("KiB"), default=None, metavar="SIZE",
                        help="one cuBLAS workspace (a step takes two: forward and backward threads); default 32 MiB, "
                             "torch's on compute capability 9 and later; '8320 KiB' before it (with --card, the card's own); '0' leaves "
                             "them out (--cuda)")
    parser.add_argument("--card", default=None, metavar="NAME",
                        help="a card of docs/cards.md (or its memory, '24 GiB'), as card= names it: each estimate against "
                             "the card less the CUDA context (--cuda-context, else an allowance), and whether it fits (--cuda)")
    parser.add_argument("--validate", action="store_true",
                        help="also run each case for real in a measured child and report the error (CPU, tiny)")
    parser.add_argument("--steps", type=_steps, default=None,
                        help="optimizer steps to estimate (1 or more, default 2; 2 or more reach the steady state)")
    parser.add_argument("--as-run", action="store_true",
                        help="the run's own steps in order, where its builder gives them (S2's dynamic batches): "
                             "each step's peaks, through the allocator in CUDA mode, go to --json's per_step")
    parser.add_argument("-o", "--output", default=None, help="write the markdown tables here")
    parser.add_argument("--json", default=None, help="write the raw rows here")
    parser.add_argument("--render", default=None, metavar="JSON",
                        help="print the tables of a saved --json file (and write them to -o); nothing is estimated")
    return parser


@dataclass(frozen=True)
class _Request:
    """The command line read: the cases by label (their specs and Scenarios) and the sizes given."""

    cases: dict[str, str]
    scenarios: dict[str, Scenario]
    cuda_context: int | None
    cublas_workspace: int | None
    card: CardRoom | None = None


def _request(parser: argparse.ArgumentParser, args: argparse.Namespace) -> _Request:
    """The cases and sizes of the command line; a bad one ends the command with the parser's error."""
    if not args.cases:
        parser.error(f"name at least one CASE: {FORM}")
    for option, path in (("-o", args.output), ("--json", args.json)):  # refused now, not after a long validation
        others = [("the -o output", args.output)] if option == "--json" and args.output else []
        refused = None if path is None else (unwritable(path, others, code=False)  # a case's module: named below
                                             or replaced_baseline(Path(path)))
        if refused is not None:
            parser.error(f"{option} {path}: {refused}")
    if args.validate and (args.cuda or args.scale != "tiny"):
        parser.error("--validate measures real CPU runs: it needs --scale tiny and no --cuda")
    for option, given in (("--steps", args.steps is not None), ("--as-run", args.as_run)):
        if args.validate and given:  # the validation estimates each case as its real run is measured
            parser.error(f"{option} does not apply to --validate: each case is estimated as its real run is measured")
    if args.as_run and args.steps is not None:  # the run's own steps, however many --steps says
        parser.error("--steps does not apply to --as-run: it estimates the run's own steps (StepPlan.sequence)")
    for option, size in (("--cuda-context", args.cuda_context), ("--cublas-workspace", args.cublas_workspace)):
        if size is not None and not args.cuda:  # a CPU estimate is host RAM: a GPU size added to it means nothing
            parser.error(f"{option} {size!r} is a GPU size: it needs --cuda")
    if args.card is not None and not args.cuda:  # host RAM held against a GPU's memory would answer nothing
        parser.error(f"--card {args.card!r} holds a GPU estimate against the card: it needs --cuda (without it the "
                     "estimate is host RAM)")
    try:
        context = parse_size(args.cuda_context) if args.cuda_context else None
        workspace = None if args.cublas_workspace is None else parse_size(args.cublas_workspace)
        card = None if args.card is None else card_room(args.card, args.scale, context)  # card='s lookup and errors
        if card is not None and workspace is None:  # torch's own on that card, not the H200's
            workspace = card_workspace(card.card)
        cases = _cases(parser, args.cases)
        scenarios = {label: load_case(spec) for label, spec in cases.items()}
    except (CaseError, SizeError, CardError) as exc:
        parser.error(str(exc))
    modules = [(f"the module of case {spec}", source(spec)) for spec in cases.values()]
    for option, path in (("-o", args.output), ("--json", args.json)):  # the case's own source, replaced by a table
        refused = None if path is None else unwritable(path, [(what, file) for what, file in modules if file])
        if refused is not None:
            parser.error(f"{option} {path}: {refused}")
    commands = [label for label, scenario in scenarios.items() if scenario.command is not None]
    if args.validate and commands:
        parser.error(f"{commands[0]}: {command_advice(scenarios[commands[0]])}")
    return _Request(cases, scenarios, context, workspace, card)


def _run(args: argparse.Namespace, request: _Request) -> tuple[EstimateOutput, list[str]]:
    """Estimate (or validate) every case; returns the results and the labels of the cases not estimated."""
    warnings.filterwarnings("ignore")
    from gpu_budget.estimate.cuda import Device

    device = Device(cuda=args.cuda, cuda_context=request.cuda_context, cublas_workspace=request.cublas_workspace)
    workspace = device.workspace if args.cuda else None
    if args.validate:
        from gpu_budget.estimate import validate

        validation = validate.compare(request.scenarios, args.scale, preload=_preload(Path.cwd()),
                                      progress=lambda line: print(line, file=sys.stderr))  # stdout: the tables only
        # a case left out of the rows could not be estimated; a real run that crashed or ran out of memory has no figure
        kept = {r.label: r for r in validation.rows}
        failed = [label for label in request.cases if label not in kept or kept[label].failure is not None]
        return EstimateOutput(args.scale, device.name, request.cases, workspace, validation=validation), failed
    steps = 2 if args.steps is None else args.steps
    rows, failed = _estimate_rows(request.scenarios, args.scale, device, steps, args.as_run)
    return EstimateOutput(args.scale, device.name, request.cases, workspace, estimates=tuple(rows),
                          card=request.card, not_estimated=failed), list(failed)


def _saved(parser: argparse.ArgumentParser, path: str) -> dict[str, Json]:
    """The --render file read: what `estimate --json` wrote, else the parser's error naming the file and why."""
    try:
        text = Path(path).read_text()
        data = json.loads(text)
    except OSError as exc:
        parser.error(f"--render {path}: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:  # a ValueError too: before the one below, which reads the text it has not got
        parser.error(f"--render {path}: not UTF-8 text ({exc.reason} at byte {exc.start}): not a file `estimate --json` "
                     "wrote")
    except ValueError as exc:
        if not text.strip():
            parser.error(f"--render {path}: an empty file: nothing to render")
        parser.error(f"--render {path}: not JSON ({exc})")
    if not isinstance(data, dict) or not ("estimates" in data or "rows" in data):
        parser.error(f"--render {path}: not a file `estimate --json` wrote (no 'estimates' or 'rows')")
    return data


def _render(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """--render: print a saved file's tables (and write them to -o); a case or an option that measures is refused,
    since nothing is estimated here."""
    ignored = [name for name, given in (("CASE", args.cases), ("--scale", args.scale != "tiny"), ("--cuda", args.cuda),
                                        ("--cuda-context", args.cuda_context), ("--cublas-workspace", args.cublas_workspace),
                                        ("--card", args.card),
                                        ("--validate", args.validate), ("--steps", args.steps), ("--as-run", args.as_run),
                                        ("--json", args.json)) if given]
    if ignored:
        parser.error(f"--render prints a saved file's tables: {', '.join(ignored)} "
                     f"{'does' if len(ignored) == 1 else 'do'} not apply to it")
    refused = None if args.output is None else unwritable(args.output, [("an input", args.render)])
    if refused is not None:
        parser.error(f"-o {args.output}: {refused}")
    try:
        saved = EstimateOutput.from_json(_saved(parser, args.render))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # rows `estimate --json` never writes
        parser.error(f"--render {args.render}: not a file `estimate --json` wrote (a malformed row: "
                     f"{type(exc).__name__}: {exc})")
    if not (saved.estimates if saved.validation is None else saved.validation.rows) and not saved.left_out:
        # a table of headers alone, with no case said to be left out of it
        what = "estimate" if saved.validation is None else "validation row"
        parser.error(f"--render {args.render}: no {what} in it: nothing to render")
    tables = render_output(saved)
    print(tables)
    if args.output:
        try:
            write_whole(args.output, tables + "\n")
        except OSError as exc:
            print(f"python -m gpu_budget estimate: error: -o {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.render:
        return _render(parser, args)
    request = _request(parser, args)
    output, failed = _run(args, request)
    text = render_output(output)
    print(text)
    unwritten = []
    for option, path, content in (("-o", args.output, text + "\n"),
                                  ("--json", args.json, json.dumps(output.to_json(), indent=1, default=str) + "\n")):
        try:
            if path:
                write_whole(path, content)
        except OSError as exc:  # one output that cannot be written must not lose the other
            print(f"python -m gpu_budget estimate: error: {option} {path}: {exc.strerror or exc}", file=sys.stderr)
            unwritten.append(option)
    if failed:  # a missing figure is a failure, never an exit 0 a script reads as estimated
        what = "validated" if args.validate else "estimated"
        print(f"not {what}: {len(failed)} of {len(request.scenarios)} case(s) ({', '.join(failed)}): see above",
              file=sys.stderr)
        return 1
    return 1 if unwritten else 0
