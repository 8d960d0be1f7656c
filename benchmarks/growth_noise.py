"""Section 5h, growth on noisy steps: how often the rule calls a clean run's noise growth, and how often it still
catches a leak under that noise, the rule in force beside an earlier revision's, in one run.

The growth rule (gpu_budget/measure/rises.py, judge/growth.py) reads the rise of
a run's running peak. Steps whose peaks scatter (allocator noise, a data loader's
odd large batch) set new tops by chance, and a 10-step run cannot always tell
those from a leak. This feeds the rule series a user could meet, each drawn afresh
for every seed, no pytest session needed (the rule is a function of the per-step
peaks): clean shapes under noise of each width (every step's peak uniform in
0..width MiB over a 1000 MiB floor) and leaks under the same noise, at each run
length, each judged under `steps=10,000` and a budget a user would set: 1.25x the
highest a clean run of that shape can peak (the floor, the noise, its largest
evaluation or jump). A clean series read as growth is a false "grows"; one whose
projection breaks the budget a false FAIL; a leak that fails is caught. A run
too short to tell a buffer it saw freed and climbing again from growth
(measure/freed.py) has no verdict: counted as such, neither FAIL nor pass.

The same series go through the rule at `--before` (its `plugin/` extracted with
`git archive`, run in a subprocess) and the rule in force, side by side.

    python -m benchmarks.growth_noise [--seeds 200] [--before 5fb9374]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import MIB, ROOT, missing, ran, rule_at, write

SECTION = "growth_noise"
FLOOR = 1000.0  # MiB
WIDTHS = (0, 2, 5, 10, 20)  # MiB of noise: each step's peak uniform in 0..width over the floor
LENGTHS = (10, 20, 24, 40, 100)  # optimizer steps a run measures
DECLARED = 10_000
Shape = Callable[[int, int, random.Random], float]  # (step k, run length n, draw) -> MiB over the floor, noise aside

CLEAN: dict[str, tuple[Shape, float]] = {  # name -> (shape, the most it adds over the noise: the budget's headroom)
    "allocator noise": (lambda k, n, r: 0.0, 0.0),
    "evaluation every 10 steps, 60 MiB": (lambda k, n, r: 60.0 if k % 10 == 0 else 0.0, 60.0),
    "one-off jump of 50 MiB a third in": (lambda k, n, r: 50.0 if 3 * k >= n else 0.0, 50.0),
    "data loader jitter: 1 step in 5 holds 0-30 MiB more": (lambda k, n, r: r.uniform(0, 30) if r.random() < 0.2
                                                            else 0.0, 30.0),
}
LEAKS: dict[str, tuple[Shape, float]] = {
    "linear, 1.5 MiB/step": (lambda k, n, r: 1.5 * k, 0.0),
    "late, 3 MiB/step over the last third": (lambda k, n, r: 3.0 * max(0.0, k - 2 * n / 3), 0.0),
    "every 4th step keeps 6 MiB": (lambda k, n, r: 6.0 * (k // 4), 0.0),
    "sawtooth of 40 MiB over a floor leaking 1.5 MiB/step": (lambda k, n, r: 1.5 * k + (40.0 if k % 2 == 0 else 0.0),
                                                            40.0),
    "geometric: step k keeps 1.05^k MiB": (lambda k, n, r: sum(1.05**j for j in range(1, k + 1)), 0.0),
}


def series(shape: Shape, n: int, width: float, seed: int) -> list[float]:
    draw = random.Random(seed)
    return [FLOOR + shape(k, n, draw) + draw.uniform(0, width) for k in range(1, n + 1)]


def verdict(mib: list[float], budget_mib: float) -> str:
    """The rule's verdict on one series: "fail" (its projection breaks the budget), "undecided" (too few steps to
    tell, no verdict), "grows" (read as growth, within the budget) or "pass"; with whatever gpu_budget this process
    imports."""
    from gpu_budget.judge import growth
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.figures import Peaks, Step

    recs = [Step(step=k, ram=int(v * MIB), ram_tree=int(v * MIB)) for k, v in enumerate(mib, 1)]
    check = growth.check(recs, Peaks(ram_tree=max(r.ram_tree for r in recs)), Budget(ram=int(budget_mib * MIB)),
                         DECLARED)
    (p,) = check.projections
    return "undecided" if check.problem else "fail" if p.breaks else "grows" if p.growth.grows else "pass"


def measure(seeds: int) -> dict[str, dict[str, int]]:
    """'kind|shape|width|steps' -> verdict -> seeds, for every shape, width and length."""
    out = {}
    for kind, shapes in (("clean", CLEAN), ("leak", LEAKS)):
        for name, (shape, headroom) in shapes.items():
            for width in WIDTHS:
                budget = 1.25 * (FLOOR + width + headroom)
                for n in LENGTHS:
                    counts = {"pass": 0, "grows": 0, "fail": 0, "undecided": 0}
                    for seed in range(seeds):
                        counts[verdict(series(shape, n, width, seed), budget)] += 1
                    out[f"{kind}|{name}|{width}|{n}"] = counts
    return out


def before(rev: str, seeds: int) -> dict[str, dict[str, int]]:
    """measure() with the rule at `rev` (common.rule_at)."""
    return rule_at(rev, "benchmarks.growth_noise", ["--seeds", str(seeds)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--before", default="5fb9374", help="the revision whose rule is measured beside this one's")
    parser.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)  # before()'s subprocess
    args = parser.parse_args()
    if args.measure_only:
        import gpu_budget

        args.measure_only.write_text(json.dumps({"module": gpu_budget.__file__, "verdicts": measure(args.seeds)}))
        return
    from benchmarks.common import short_commit

    earlier = before(args.before, args.seeds)
    now = measure(args.seeds)
    path = write(SECTION, {"seeds": args.seeds, "floor_mib": FLOOR, "declared_steps": DECLARED, "widths": WIDTHS,
                           "lengths": LENGTHS, "before": short_commit(args.before), "verdicts_before": earlier,
                           "verdicts": now})
    print(f"wrote {path.relative_to(ROOT)}")


def _rate(counts: dict[str, int], which: tuple[str, ...]) -> int:
    """The seeds of a cell given any of the verdicts `which` (0 for one a rule before it did not give)."""
    return sum(counts.get(w, 0) for w in which)


def _totals(res: dict, lengths: list[int], was: dict, now: dict) -> list[str]:
    """Every shape and noise width summed per run length: clean runs failed, leaks caught, before and now."""
    clean, leaks = (len(shapes) * len(res["widths"]) * res["seeds"] for shapes in (CLEAN, LEAKS))
    out = [(f"**All shapes and widths together** (clean runs failed, of {clean}; leaks caught, of {leaks}; each "
            "with no verdict, too few steps to tell):"), "",
           "| | " + " | ".join(f"{n} steps" for n in lengths) + " |", "|---|" + "---|" * len(lengths)]
    for kind, title, verdict_ in (("clean", "clean runs failed", "fail"), ("clean", "clean: too few steps to tell",
                                                                            "undecided"),
                                  ("leak", "leaks caught", "fail"), ("leak", "leaks: too few steps to tell",
                                                                     "undecided")):
        cells = []
        for n in lengths:
            keys = [k for k in now if k.startswith(f"{kind}|") and k.endswith(f"|{n}")]
            cells.append(f"{sum(_rate(was[k], (verdict_,)) for k in keys)} → "
                         f"{sum(_rate(now[k], (verdict_,)) for k in keys)}")
        out.append(f"| {title} | " + " | ".join(cells) + " |")
    return out + [""]


def section(res: dict | None) -> list[str]:
    """Section 5h from growth_noise.json: false FAILs and false "grows" on clean shapes, leaks caught, before and
    now."""
    out = ["## 5h. Growth on noisy steps: false alarms and leaks caught", ""]
    if res is None:
        return out + missing(SECTION, SECTION)
    seeds, lengths, was, now = res["seeds"], res["lengths"], res["verdicts_before"], res["verdicts"]
    out += [ran(res), "",
            (f"Series drawn afresh for each of {seeds} seeds (`benchmarks/growth_noise.py`), each step's peak uniform in "
             f"0..width MiB over a {res['floor_mib']:.0f} MiB floor plus its shape, judged by the rule under "
             f"`steps={res['declared_steps']:,}` and a budget of 1.25x the highest a clean run of that shape can peak. "
             f"Each cell: seeds out of {seeds} at the rule of `{res['before']}` → the rule in force "
             f"(`{res['run']['commit']}`), the same series, in one run. What changed between them: where a buffer's "
             "tops, lowered onto the line of the fall after them in the reading without spikes, repeat, the run's "
             "last climb is read no higher than the step they climbed from (`rises.without_spikes`, section 5k). "
             "Earlier, against bf39d5d (this report as committed at 76d53e4, the same seeds; clean runs failed "
             "257 → 255 at 10 steps, 2 with no verdict, every other cell and every leak caught as before): a run "
             "whose measured steps end in a climb it fell back from and climbed again as it had, in too few steps "
             "to tell a buffer freed that often from growth, breaks its budget on no verdict: it errs, saying so "
             "(`measure/freed.py`, section 5k), counted here apart. Earlier still, against b8fefa1 (this report as "
             "committed at e579e78, the same seeds; clean runs failed 257 → 257 at 10 steps, 311 → 262 at 20, "
             "660 → 145 at 24, 467 → 88 at 40, 612 → 53 at 100; leaks caught 2699 → 2699, 3977 → 3962, "
             "4621 → 4259, 4664 → 4651, 5000 → 5000): in a run of 20 "
             "judged steps or more (23 marked; `rises.LONG`), the window's tops are taken from its last half, so a "
             "top set by chance early in a longer run is no longer read as growth still going on; a shorter run "
             "reads as before, since there its last steps held too few of a noisy leak's tops (taking them from the "
             "last 10 of a 20-step run's judged steps lost more leaks than it spared clean runs: 410 of 5000 for 229 "
             "of 4000, as this section's report committed in 4dd8bcc measured). Since then, too, a window that ends in "
             "steps back at the top after dips, holding it since its last rise, counts each of them for the steps it "
             "held the top over (a sawtooth's tops after its first climb): against the rule before it (this report "
             "as committed at 93a455d, the same seeds) that spared clean runs under noise (false FAILs 262 for 311 "
             "at 20 steps, 145 for 149 at 24, 88 for 92 at 40) for a few leaks (caught 3962 for 3977 at 20 steps, "
             "4259 for 4266 at 24, 4651 for 4654 at 40). The rules of section 5k since, against this report as "
             "committed at d096df1, before them, the same seeds: reading a freed tooth's climb as no growth changed "
             "no verdict; holding a block reading where a block between did not rise spared one clean run (data "
             "loader jitter under 5 MiB of noise at 100 steps: 4 false FAILs, now 3) and read one leak (every 4th "
             "step keeps 6 MiB, 20 MiB of noise, 24 steps) as steady that had read as growth within its budget: "
             "no leak caught before is missed. Holding the growth to the most a run's repeating steps rose over "
             "one period (section 5k), against this report as committed at 39d91ed, the same seeds: clean runs "
             "failed 54 → 53 at 100 steps (a one-off jump of 50 MiB under 20 MiB of noise), every other cell as "
             "before, and every leak caught as before. What it all cost shows in those totals: leaks under 10-20 "
             "MiB of noise in runs just long enough for the rule were caught less often."), ""]
    out += _totals(res, lengths, was, now)
    head = " | ".join(f"{n} steps" for n in lengths)
    for kind, title, which in (("clean", "**Clean shapes: false FAILs** (the projection broke the budget)", ("fail",)),
                               ("clean", "**Clean shapes: read as growth** (false \"grows\", failing or not)",
                                ("grows", "fail")),
                               ("leak", "**Leaks: caught** (the projection broke the budget)", ("fail",))):
        out += [title + ":", "", f"| shape | noise, MiB | {head} |", "|---|---|" + "---|" * len(lengths)]
        names = CLEAN if kind == "clean" else LEAKS
        for name in names:
            for width in res["widths"]:
                cells = [f"{_rate(was[k], which)} → {_rate(now[k], which)}"
                         for k in (f"{kind}|{name}|{width}|{n}" for n in lengths)]
                out.append(f"| {name} | {width} | " + " | ".join(cells) + " |")
        out.append("")
    return out


if __name__ == "__main__":
    main()
