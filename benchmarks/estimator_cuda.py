"""The estimator's CUDA-mode error against the allocated peaks measured on a GPU (issue 28, item 5).

    python -m benchmarks.estimator_cuda             # estimate every CUDA case of the report (here, on the CPU), render
    python -m benchmarks.estimator_cuda --render    # docs/estimator-cuda.md again from the committed estimates
    python -m benchmarks.estimator_cuda --report REPORT --json EST.json --doc PAGE.md   # another GPU run's cases

Each case of the GPU report with an allocated peak is estimated in CUDA mode at the same scale, with the
params its GPU baseline stored (a case whose params differ from today's Scenario is left out, named). The
estimates go to benchmarks/results/estimator-cuda.json; the page sets each against the report's measured
`max_memory_allocated` of the train steps, read from the report itself, and against what each fix saved.
The real-scale section says why each case outside the goal missed, before the estimator's fixes or still:
benchmarks/results/estimator-cuda-misses.json holds each case's estimate before them and the reason, whose
figures are filled in from the estimates and reports at rendering.
tests/docs/test_estimator_cuda.py renders the page again and fails when the committed one differs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugin"))
from gpu_budget.units import format_size

REPORT = "benchmarks/results/gpu-h200-tiny-2.report.json"  # the H200 session the committed baselines come from
ESTIMATES = ROOT / "benchmarks/results/estimator-cuda.json"
DOC = ROOT / "docs/estimator-cuda.md"
# the real-scale parts' estimates (gpu_validation.sh s3, s4 on the H200), a section of the page beside the tiny cases
REAL = tuple(ROOT / f"benchmarks/results/estimator-cuda-{part}.json" for part in ("s3", "s4", "real"))
MISSES = ROOT / "benchmarks/results/estimator-cuda-misses.json"  # why each real-scale miss missed (real_scale())
OUTLIERS = ROOT / "benchmarks/results/int8_outliers.json"  # benchmarks/int8_outliers.py: S4's int8 outlier columns
GOAL = 0.015  # issue 28's goal for the estimate's error (LLMem reports 1.6 % on one GPU)
BASES = {  # scenario name -> the Scenario the report's fixes are added to
    "s1_wav2vec2": "memtests/s1_wav2vec2/scenarios.py:AS_REPORTED",
    "s1_wav2vec2_workers": "memtests/s1_wav2vec2/scenarios.py:WORKERS",
    "s2_paraformer": "memtests/s2_paraformer/scenarios.py:S2",
    "s3_qwen2_audio": "memtests/s3_qwen2_audio/scenarios.py:BASE",
    "s4_wrap_order": "memtests/s4_wrap_order/scenarios.py:BASE",
    "s5_generic_oom": "memtests/s5_generic_oom/scenarios.py:S5",
}
PACKAGES = ("torch", "transformers", "peft", "bitsandbytes", "funasr")
AS_RUN = {"s2_paraformer"}  # its steps differ (dynamic batches): also estimated step by step as the run goes


def cuda_rows(report: dict) -> list[dict]:
    """The report's cases with an allocated peak, in report order."""
    return [r for r in report["results"] if (r.get("peaks") or {}).get("vram_allocated")]


def stored_params(baselines: Path, row: dict) -> dict | None:
    """The params the committed GPU baseline (in the card's folder `baselines`) stored for this row (None: none)."""
    module, _, test = row["nodeid"].partition("::")
    path = baselines / (Path(module).stem + ".json")
    entry = json.loads(path.read_text())["entries"].get(row["scale"], {}).get(test) if path.is_file() else None
    return None if entry is None else entry["params"]


def scenario_for(row: dict):
    from gpu_budget.estimate.cases import load_case

    base = load_case(BASES[row["scenario"]])
    extra = [f for f in row["fixes"] if f not in base.fixes]
    scenario = base.with_fixes(*extra) if extra else base
    if set(scenario.fixes) != set(row["fixes"]):
        raise ValueError(f"{row['nodeid']}: fixes {row['fixes']} cannot be rebuilt from {BASES[row['scenario']]}")
    return scenario


def estimate_all(report_path: Path, today: bool = False) -> dict:
    """Estimate every CUDA case of the report, with and without cuBLAS's workspaces; params must be the baseline's.

    today: a case without a GPU baseline (one that failed its expectation records none) is estimated at today's
    params, and says so ("params": "scenario"); only for a report made from the scenarios as they are now.
    """
    from gpu_budget.estimate import estimate_scenario
    from gpu_budget.estimate.cuda import Device

    report = json.loads(report_path.read_text())
    with_ws, without_ws = Device(cuda=True), Device(cuda=True, cublas_workspace=0)
    baselines = ROOT / "baselines" / report["hardware"]["key"]  # committed (gpu-validation.md)
    rows, left_out = [], {}
    for r in cuda_rows(report):
        scenario = scenario_for(r)
        stored = stored_params(baselines, r)
        if stored is None and not today:
            left_out[r["nodeid"]] = "no GPU baseline"
            continue
        if stored is not None and scenario.to_json(r["scale"])["params"] != stored:
            left_out[r["nodeid"]] = "params differ from the GPU baseline's"
            continue
        t0 = time.perf_counter()
        est = estimate_scenario(scenario, r["scale"], device=with_ws)
        seconds = round(time.perf_counter() - t0, 1)
        bare = estimate_scenario(scenario, r["scale"], device=without_ws)
        as_run = [s.to_json() for s in estimate_scenario(scenario, r["scale"], device=with_ws, as_run=True).per_step] \
            if r["scenario"] in AS_RUN else None
        rows.append({"nodeid": r["nodeid"], "scenario": r["scenario"], "label": r["label"], "fixes": r["fixes"],
                     "scale": r["scale"], "estimate": est.step_peak, "without_workspaces": bare.step_peak,
                     "allocated": est.allocated_peak, "reserved": est.reserved_peak, "as_run": as_run,
                     "at_peak": est.at_peak, "phase": est.peak_phase, "seconds": seconds, "notes": est.notes,
                     "per_step": [s.to_json() for s in est.per_step],
                     "params": "baseline" if stored is not None else "scenario"})
        print(f"{r['nodeid']}: {format_size(est.step_peak)} in {seconds} s", file=sys.stderr)
    return {"report": str(report_path.relative_to(ROOT)), "kind": "estimate", "device": "cuda (modelled)",
            "cublas_workspace": with_ws.workspace, "estimated_with": {p: _version(p) for p in PACKAGES},
            "left_out": left_out, "estimates": rows}


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def measured_step(row: dict, figure: str = "vram_allocated") -> int:
    """The largest peak of a measured row's train-step phases (allocated, or reserved): the step the estimator models."""
    return max(p[figure] for p in row["phases"].values() if p.get("step") is not None and p.get(figure))


def unmodelled(row: dict) -> str:
    """What the estimate says it leaves out of this case (its 'not modelled' notes), or ''."""
    return "; ".join(n.split(":")[0] for n in row["notes"] if "not modelled" in n)


def joined(data: dict, report: dict) -> list[dict]:
    """Each estimate beside the report's measured step peak for the same case."""
    report = {r["nodeid"]: r for r in report["results"]}
    out = []
    for e in data["estimates"]:
        step, reserved = measured_step(report[e["nodeid"]]), measured_step(report[e["nodeid"]], "vram_reserved")
        out.append({**e, "measured": step, "error": e["estimate"] - step, "rel": (e["estimate"] - step) / step,
                    "bare_rel": (e["without_workspaces"] - step) / step, "unmodelled": unmodelled(e),
                    "measured_reserved": reserved, "allocated_rel": (e["allocated"] - step) / step,
                    "reserved_rel": (e["reserved"] - reserved) / reserved})
    return out


def savings(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(as reported, fixed) pairs of one scenario whose measured step peaks differ: what a fix saves."""
    base = {r["scenario"]: r for r in rows if r["label"] == "as-reported"}
    return [(base[r["scenario"]], r) for r in rows
            if r["scenario"] in base and r is not base[r["scenario"]] and r["measured"] != base[r["scenario"]]["measured"]]


def savings_table(rows: list[dict]) -> list[str]:
    """Each fix's estimated saving against its measured one (savings())."""
    lines = ["| scenario | fix | estimated saving, MiB | measured saving, MiB | error, MiB |", "|---|---|---|---|---|"]
    for b, f in savings(rows):
        est, real = b["estimate"] - f["estimate"], b["measured"] - f["measured"]
        lines.append(f"| {b['scenario']} | {f['label']} | {_mib(est)} | {_mib(real)} | {_mib(est - real)} |")
    return lines


def _mib(n: float) -> str:
    return f"{n / 2**20:+,.1f}"


def step_by_step(rows: list[dict], report: dict) -> list[str]:
    """The cases estimated as the run goes, step by step against the measured train-step phases."""
    ran = [r for r in rows if r.get("as_run")]
    if not ran:
        return []
    phases = {r["nodeid"]: {p["step"]: p for p in r["phases"].values() if p.get("step") is not None}
              for r in report["results"]}
    lines = ["", "## Step by step, as the run goes", "",
             "S2 trains one step per dynamic batch, each of another size: estimated with the run's batches in order",
             "(`as_run`: each made at its step and dropped after it, the cache emptied after each step where",
             "empty_cache asks), against each measured train-step phase. Reserved memory is the write-up's complaint.",
             "", "| case | step | allocated: estimate | measured | error | reserved: estimate | measured | error |",
             "|---|---|---|---|---|---|---|---|"]
    allocated, reserved = [], []
    for r in ran:
        for est in r["as_run"]:
            m = phases[r["nodeid"]].get(est["step"])
            if m is None:
                continue
            allocated.append((est["allocated"] - m["vram_allocated"]) / m["vram_allocated"])
            if "expandable_segments" not in r["fixes"]:
                reserved.append((est["reserved"] - m["vram_reserved"]) / m["vram_reserved"])
            lines.append(f"| {r['label']} | {est['step']} | {format_size(est['allocated'])} | {format_size(m['vram_allocated'])} "
                         f"| {(est['allocated'] - m['vram_allocated']) / m['vram_allocated']:+.1%} "
                         f"| {format_size(est['reserved'])} | {format_size(m['vram_reserved'])} "
                         f"| {(est['reserved'] - m['vram_reserved']) / m['vram_reserved']:+.1%} |")
    summary = (f"Over the {len(allocated)} steps the allocated peak is {_spread(allocated)}. The reserved peak, "
               f"leaving out expandable_segments (its segments grow in place, page by page, which the replay "
               f"does not model): {_spread(reserved)}.")
    lines[7:7] = [summary, ""]
    return lines


def _expandable_gap(rows: list[dict]) -> str:
    """S2's measured allocated peak without expandable_segments above the one with it: the allocator's splitting."""
    s2 = {r["label"]: r for r in rows if r["scenario"] == "s2_paraformer"}
    if not {"as-reported", "expandable_segments"} <= set(s2):
        return ""
    gap = s2["as-reported"]["measured"] - s2["expandable_segments"]["measured"]
    return (f"; S2 with expandable_segments, which splits blocks at 512 bytes, measured {format_size(gap)} less "
            "allocated than S2 without it, where the tensors' estimate is the same for both")


def _spread(rel: list[float]) -> str:
    """How many of these errors are within the goal and within 5 %, and their range and median."""
    return (f"within {GOAL * 100:.1f} % in {sum(abs(x) <= GOAL for x in rel)} of {len(rel)}, within 5 % in "
            f"{sum(abs(x) <= 0.05 for x in rel)}; from {min(rel):+.1%} to {max(rel):+.1%}, median {statistics.median(rel):+.1%}")


def _step_errors(row: dict, report: dict) -> str:
    """Each estimated optimizer step's tensors against the measured train-step phase of the same step, in MiB."""
    measured = {p["step"]: p["vram_allocated"] for p in report["phases"].values()
                if p.get("step") is not None and p.get("vram_allocated")}
    return ", ".join(f"step {s['step']} {_mib(s['tensors'] - measured[s['step']])} MiB"
                     for s in row.get("per_step", ()) if s["step"] in measured)


def _int8_outliers(path: Path = OUTLIERS) -> str:
    """What benchmarks/int8_outliers.py drew: the outlier columns of S4's int8 layers' inputs at initialisation."""
    if not path.is_file():
        return ""
    d = json.loads(path.read_text())
    down, normed = d["down_proj_input"], d["normed_input"]
    return (f"{down['outlier_columns']:,} of {down['columns']:,} columns of down_proj's input and "
            f"{normed['outlier_columns']:,} of {normed['columns']:,} of the normed input q/k/v and gate/up read "
            f"reach {d['threshold']:g} in {d['rows']:,} rows drawn at the checkpoint's initialisation, "
            f"`{path.relative_to(ROOT)}`")


def _why(row: dict, rows: list[dict], reports: dict[str, dict], why: str) -> str:
    """A miss's reason with its figures filled in from the estimates and reports: {error}, {rel},
    {allocated_rel}, {step_errors} (each step against its measured phase), {expandable_gap} (the scenario's
    measured peak without expandable_segments above the one with it, where both ran), {int8_outliers}."""
    same = {r["label"]: r for r in rows if r["scenario"] == row["scenario"]}
    gap = row["measured"] - same["expandable_segments"]["measured"] if "expandable_segments" in same else None
    report = {r["nodeid"]: r for r in reports[row["report"]]["results"]}[row["nodeid"]]
    return why.format(error=f"{_mib(row['error'])} MiB", rel=f"{row['rel']:+.1%}",
                      allocated_rel=f"{row['allocated_rel']:+.1%}", step_errors=_step_errors(row, report),
                      expandable_gap="" if gap is None else f"{gap / 2**20:,.1f} MiB", int8_outliers=_int8_outliers())


def misses(rows: list[dict], reports: dict[str, dict], path: Path = MISSES) -> list[str]:
    """Each case outside the goal before the estimator's fixes (the file's `before` estimates) or now: its error
    then and now, and why (the file's reason, its figures filled in); a miss without one says so."""
    explained = json.loads(path.read_text()) if path.is_file() else {"cases": {}}
    lines = []
    for r in rows:
        case = explained["cases"].get(r["nodeid"])
        before = None if case is None else (case["before"] - r["measured"]) / r["measured"]
        if abs(r["rel"]) <= GOAL and (before is None or abs(before) <= GOAL):
            continue
        then = "" if before is None else \
            f"{before:+.1%} ({_mib(case['before'] - r['measured'])} MiB) before {explained['before']}, "
        lines.append(f"  - {r['nodeid'].removeprefix('memtests/')}: {then}{r['rel']:+.1%} ({_mib(r['error'])} MiB) "
                     f"now, {r['allocated_rel']:+.1%} through the allocator. "
                     + (_why(r, rows, reports, case["why"]) if case else "Not explained here."))
    return lines


def real_scale(paths: Sequence[Path], explained: Path = MISSES) -> list[str]:
    """The real-scale cases, each estimate (in its own file) against its own report: the independent test."""
    rows: list[dict] = []
    reports: dict[str, dict] = {}
    for path in paths:
        data = json.loads(path.read_text())
        reports[data["report"]] = json.loads((ROOT / data["report"]).read_text())
        rows += [{**r, "report": data["report"], "source": str(path.relative_to(ROOT))}
                 for r in joined(data, reports[data["report"]])]
    if not rows:
        return []
    why = misses(rows, reports, explained)
    lines = [
        "",
        "## At real scale: the write-ups' own sizes",
        "",
        ("The same comparison on the cases measured at real scale (docs/gpu-results.md), estimated on the CPU "
         "machine in CUDA mode as above, from " + ", ".join(sorted({f"`{r['source']}`" for r in rows})) + " against "
         + ", ".join(sorted({f"`{r['report']}`" for r in rows})) + ". Nothing in CUDA mode was fitted to them; "
         "the fixes named below came from reading their misses against torch's, transformers' and bitsandbytes' "
         "code, so for those rules these runs are no longer an independent test. A "
         "case whose test failed its expectation recorded no GPU baseline; it is estimated at its scenario's "
         "params of today (the run was made from them), and says so."),
        "",
        (f"- {len(rows)} cases: the error is {_spread([r['rel'] for r in rows])}. Through the allocator: "
         f"{_spread([r['allocated_rel'] for r in rows])}. The reserved peak: {_spread([r['reserved_rel'] for r in rows])}."),
        ("- Outside the goal before the estimator's fixes of `benchmarks/results/estimator-cuda-misses.json`, or "
         "now, and why (each figure from the estimates and reports):" if why else "- Every case within the goal."),
        *why,
        "",
        ("| case | params | estimate | measured step peak | error, MiB | error | through the allocator | error "
         "| reserved: estimate | measured | error |"),
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        params = {"baseline": "the GPU baseline's", "scenario": "today's scenario"}[r.get("params", "baseline")]
        lines.append(f"| {r['nodeid'].removeprefix('memtests/')} | {params} | {format_size(r['estimate'])} "
                     f"| {format_size(r['measured'])} | {_mib(r['error'])} | {r['rel']:+.1%} | {format_size(r['allocated'])} "
                     f"| {r['allocated_rel']:+.1%} | {format_size(r['reserved'])} | {format_size(r['measured_reserved'])} "
                     f"| {r['reserved_rel']:+.1%} |")
    return lines + ["", *savings_table(rows)]


def render(data: dict, source: str = str(ESTIMATES.relative_to(ROOT)), at_real_scale: Sequence[Path] = REAL) -> str:
    """The page for the estimates in `data` (read from `source`) against their report's measured figures, and the
    real-scale estimates `at_real_scale` (each file against its own report) in a section of their own."""
    report = json.loads((ROOT / data["report"]).read_text())
    hw, rows = report["hardware"], joined(data, report)
    modelled = [r for r in rows if not r["unmodelled"]]
    bare_gap = [r["measured"] - r["without_workspaces"] for r in rows]
    env = ", ".join(f"{k} {v}" for k, v in data["estimated_with"].items() if v)
    seconds = [r["seconds"] for r in rows]
    lines = [
        "# The estimator against CUDA: its error on the measured GPU cases",
        "",
        f"Rendered by `python -m benchmarks.estimator_cuda` from `{source}` (the",
        f"estimates, made on the CPU machine in CUDA mode with {env}) and `{data['report']}`",
        f"(the measured figures: {hw['gpu_name']}, driver {hw['driver']}, CUDA {hw['cuda']}, torch {hw['torch']},",
        f"transformers {hw['transformers']}, peft {hw['peft']}, bitsandbytes {hw['bitsandbytes']});",
        "tests/docs/test_estimator_cuda.py renders it again. Issue 28's fifth item: the estimate of",
        "`max_memory_allocated` against the measured one on every case measured with a CUDA figure, each at the params",
        "its GPU baseline stored. The measured figure is the largest allocated peak of the train-step phases, the",
        f"step the estimator models. Scale: {', '.join(sorted({r['scale'] for r in rows}))}.",
        "",
        "## In short",
        "",
        (f"- {len(rows)} cases, each estimated in {min(seconds)}-{max(seconds)} s on the CPU. The error (estimate "
         f"minus measured) is {_spread([r['rel'] for r in rows])}."),
        (f"- Without the cuBLAS workspaces (`--cublas-workspace 0`; {format_size(data['cublas_workspace'])} per "
         f"thread that runs a matmul, two threads per step) the estimate was under the measured peak in "
         f"{sum(g > 0 for g in bare_gap)} of {len(rows)}, by {format_size(min(bare_gap))} to "
         f"{format_size(max(bare_gap))} (median {format_size(statistics.median(bare_gap))}): "
         f"{_spread([r['bare_rel'] for r in rows])}."),
        (f"- The same log through the caching allocator's rules (estimate/allocator.py: 512-byte rounding, "
         f"segments, best fit, splitting, merging): the allocated peak is "
         f"{_spread([r['allocated_rel'] for r in rows])}. The reserved peak against the measured reserved one: "
         f"{_spread([r['reserved_rel'] for r in rows])}."),
        (f"- {len(rows) - len(modelled)} cases run what their estimate says it does not model "
         f"({', '.join(sorted({r['unmodelled'] for r in rows if r['unmodelled']}))}). The other {len(modelled)}: "
         f"{_spread([r['rel'] for r in modelled])}." if len(modelled) < len(rows) else
         "- No estimate says it leaves out something its case runs."),
        "",
        "Three parts of CUDA mode were added after a first comparison against these runs: the cuBLAS workspaces",
        "(their size is torch's default on this compute capability, aten/src/ATen/cuda/CublasHandlePool.cpp),",
        "autocast (CUDA's cast policies of aten/src/ATen/autocast_mode.h, estimate/autocast.py), which the S1",
        "Trainer's fp16 and S5's amp run, and the caching allocator's replay (the rules of",
        f"c10/cuda/CUDACachingAllocator.cpp{_expandable_gap(rows)}). None was fitted to",
        "these runs, but these runs are not an independent test of them; the real-scale runs below are. Three more",
        "came from the real-scale misses (below): a run's own step count where it stops early, transformers' path",
        "of a real run on fake tensors (no materialised mask where every token is attended), and grouped-query",
        "attention read in place by the flash kernel; the tiny S4 cases, over by their masks before, test the second.",
        "What is left is not explained here: cuDNN's convolution workspaces, for one, are not modelled (S5's two",
        "misses have their estimated peak where a convolution's backward starts, as at real scale), and the allocator",
        "replay starts at the step's build, not at the run's loading and evaluation, which also shape the cache.",
        "",
        "| scenario | cases | error, MiB | error | median | through the allocator | reserved |",
        "|---|---|---|---|---|---|---|",
    ]
    by_scenario: dict[str, list[dict]] = {}
    for r in rows:
        by_scenario.setdefault(r["scenario"], []).append(r)
    for name, group in by_scenario.items():
        err, rel = [r["error"] for r in group], [r["rel"] for r in group]
        through, reserved = [r["allocated_rel"] for r in group], [r["reserved_rel"] for r in group]
        lines.append(f"| {name} | {len(group)} | {_mib(min(err))} .. {_mib(max(err))} | {min(rel):+.1%} .. {max(rel):+.1%} "
                     f"| {statistics.median(rel):+.1%} | {min(through):+.1%} .. {max(through):+.1%} "
                     f"| {min(reserved):+.1%} .. {max(reserved):+.1%} |")
    lines += [
        "",
        "## Every case",
        "",
        ("| case | estimate | measured step peak | error, MiB | error | without workspaces | through the allocator "
         "| error | reserved: estimate | measured | error | peak at (estimate) | not modelled |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['nodeid'].removeprefix('memtests/')} | {format_size(r['estimate'])} | {format_size(r['measured'])} "
                     f"| {_mib(r['error'])} | {r['rel']:+.1%} | {r['bare_rel']:+.1%} | {format_size(r['allocated'])} "
                     f"| {r['allocated_rel']:+.1%} | {format_size(r['reserved'])} | {format_size(r['measured_reserved'])} "
                     f"| {r['reserved_rel']:+.1%} | {r['phase']} | {r['unmodelled'] or '-'} |")
    lines += step_by_step(rows, report)
    lines += [
        "",
        "## What a fix saves",
        "",
        "Each fix against its scenario's as-reported case, where the measured step peaks differ: the estimated",
        "saving against the measured one.",
        "",
        *savings_table(rows),
    ]
    if data["left_out"]:
        lines += ["", "Left out: " + "; ".join(f"{k} ({v})" for k, v in data["left_out"].items()) + "."]
    lines += real_scale(at_real_scale)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.estimator_cuda", description=__doc__.split("\n")[0])
    parser.add_argument("--render", action="store_true", help="only render the page from the committed estimates")
    parser.add_argument("--report", default=REPORT, help="the GPU report whose cases are estimated (in the repository)")
    parser.add_argument("--json", type=Path, default=ESTIMATES, help="where the estimates go (and are read from)")
    parser.add_argument("--doc", type=Path, default=DOC, help="where the page goes")
    parser.add_argument("--today-params", action="store_true",
                        help="estimate a case without a GPU baseline at today's params (a report of today's scenarios)")
    args = parser.parse_args(argv)
    estimates = args.json.resolve()
    if not args.render:
        sys.path.insert(0, str(ROOT / "memtests"))
        data = estimate_all((ROOT / args.report).resolve(), today=args.today_params)
        estimates.write_text(json.dumps(data, indent=1) + "\n")
    source = estimates.relative_to(ROOT) if estimates.is_relative_to(ROOT) else estimates
    real = REAL if args.doc.resolve() == DOC else ()  # another part's page holds its own cases alone
    args.doc.write_text(render(json.loads(estimates.read_text()), str(source), real))
    print(f"wrote {args.doc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
