"""Section 5k, growth on periodic buffers: every sawtooth of a grid, each phase, read by the growth rule exactly.

A training loop often holds a buffer that climbs for a few steps and is freed
every p-th step: gradient-accumulation lists, a metrics or logging buffer
flushed every p steps, a replay or evaluation cache. Some keep part of each
flush for good (a history list, a logged tensor not detached). Such a run's
per-step peaks are a sawtooth, over a floor that rises by what each flush keeps:
its true growth is `keep / p` MiB per step, the teeth none of it.

No noise and no pytest session: the rule is a function of the per-step peaks,
so each series is built exactly and judged, for every period, climb, keep,
flush kind, run length and phase (the step of the cycle the run's first step
falls on: a user does not choose it). Each series is judged under
`steps=10,000` and two budgets:

- 1.25x its true figure at step 10,000 (the floor, the top of a tooth, what the
  flushes keep by then): a FAIL here is a false alarm, the rule reading growth
  the run does not have;
- for a series that keeps, one its true growth breaks with room to spare: the
  floor and the tooth plus half of what the rule's own low end adds by step
  10,000 (`keep/p` less the clean allowance, per step). A pass here is a leak
  missed. Keeps below the clean allowance (984 KiB/step) are not asked for.

A verdict may be none: a run too short to tell a buffer it saw freed and
climbing again from growth (measure/freed.py) errs, saying so, and is counted
as such, neither a FAIL nor a pass.

Beside the verdicts, the rule's reading itself: a series over-read is one read
as growing faster than its truth plus the allowance, under-read slower than its
truth less the allowance.

The same grid goes through the rule at `--before` (common.rule_at), side by
side: the totals of both are in the section.

    python -m benchmarks.growth_sawtooths [--before 5fb9374]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import MIB, ROOT, missing, ran, rule_at, write

SECTION = "growth_sawtooths"
FLOOR = 1000.0  # MiB
DECLARED = 10_000
PERIODS = (2, 3, 4, 5, 6, 8)  # steps from one flush to the next
CLIMBS = (1.0, 4.0, 16.0)  # MiB the buffer grows per step between flushes
KEEPS = (0.0, 0.25, 1.0, 2.0)  # what each flush keeps for good, in climbs
LENGTHS = (10, 15, 20, 25, 30, 40)  # optimizer steps a run marks
FLUSHES = ("at the step's start", "at the step's end")  # the flush step holds none of the buffer, or all of it
NOISES = (0.5, 2.0, 5.0)  # MiB: each step's peak uniform in 0..width over its tooth (allocator noise, other work)
SEEDS = 3  # noise drawn afresh for each phase and seed
SHORTEST = range(9, 49)  # run lengths the shortest clean run of each period is sought over (shortest)


@dataclass(frozen=True)
class Tooth:
    """One sawtooth: a buffer climbing `climb` MiB a step, freed every `period` steps, each flush keeping `keep`."""

    period: int
    climb: float
    keep: float  # MiB
    flush: str

    @property
    def rate(self) -> float:
        """Its true growth, MiB per step."""
        return self.keep / self.period

    @property
    def top(self) -> float:
        """The most the buffer holds at once."""
        return self.climb * (self.period - 1 if self.flush == FLUSHES[0] else self.period)

    def series(self, n: int, phase: int, noise: random.Random | None = None, width: float = 0.0) -> list[float]:
        """The per-step peaks (MiB) of a run of `n` steps whose first step is step `phase + 1` of the cycle, each
        with `noise`'s draw in 0..width added where given."""
        out = []
        for k in range(1, n + 1):
            at = k + phase
            held = at % self.period
            if self.flush == FLUSHES[1] and held == 0:
                held = self.period  # freed only as the step ends: it peaked at the whole buffer
            out.append(FLOOR + self.keep * (at // self.period) + self.climb * held
                       + (noise.uniform(0, width) if noise else 0.0))
        return out

    def tops(self, n: int, phase: int) -> int:
        """How many of its teeth's tops the rule reads a run of `n` steps by: among the judged steps (the warm-up and
        the last left out), their last half in a run of rises.LONG judged steps or more (rises._window)."""
        from gpu_budget.measure.rises import LAST, LONG, WARMUP

        judged = range(WARMUP + 1, n - LAST + 1)
        if len(judged) >= LONG:
            judged = judged[len(judged) // 2:]
        top = self.period - 1 if self.flush == FLUSHES[0] else 0  # the step of the cycle each tooth peaks at
        return sum((k + phase) % self.period == top for k in judged)

    def truth(self, at_step: int) -> float:
        """Its peak by step `at_step` (MiB): the floor, what the flushes kept, the whole tooth."""
        return FLOOR + self.rate * at_step + self.top


def teeth() -> Iterator[Tooth]:
    for period in PERIODS:
        for climb in CLIMBS:
            for keep in KEEPS:
                for flush in FLUSHES:
                    yield Tooth(period, climb, keep * climb, flush)


def judge(mib: list[float], budget_mib: float) -> tuple[str, float]:
    """The rule's verdict on one series under `budget_mib` ("fail", "undecided": too few steps to tell, "grows" or
    "pass") and its reading, MiB/step."""
    from gpu_budget.judge import growth
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.figures import Peaks, Step

    recs = [Step(step=k, ram=int(v * MIB), ram_tree=int(v * MIB)) for k, v in enumerate(mib, 1)]
    check = growth.check(recs, Peaks(ram_tree=max(r.ram_tree for r in recs)), Budget(ram=int(budget_mib * MIB)),
                         DECLARED)
    (p,) = check.projections
    verdict = "undecided" if check.problem else "fail" if p.breaks else "grows" if p.growth.grows else "pass"
    return verdict, p.growth.slope / MIB


def allowance_mib() -> float:
    from gpu_budget.judge.growth import RAM_ALLOWANCE

    return RAM_ALLOWANCE / MIB


def budgets(tooth: Tooth, width: float = 0.0) -> tuple[float, float | None]:
    """A series' two budgets (MiB), its noise's width added to each: 1.25x its true figure at DECLARED, and, for one
    that keeps more than the clean allowance per step, one its true growth breaks with room (None otherwise)."""
    allow = allowance_mib()
    tight = FLOOR + tooth.top + width + 0.5 * (tooth.rate - allow) * DECLARED if tooth.rate > allow else None
    return 1.25 * (tooth.truth(DECLARED) + width), tight


def count(row: dict, tooth: Tooth, n: int, phase: int, mib: list[float], width: float = 0.0) -> float:
    """Judge one series into `row`'s counts (false_fail, or undecided: no verdict, too few steps to tell; for a leak,
    missed or leak_undecided, or short and short_failed or short_undecided: a run showing fewer than rises.MIN_TOP
    tops where the rule reads them, too short to tell a leak from two one-off caches by growth in 3 of 5 rises, so
    its verdict is no miss of the rule's); the rule's reading, MiB/step."""
    from gpu_budget.measure.rises import MIN_TOP

    generous, tight = budgets(tooth, width)
    verdict, slope = judge(mib, generous)
    row["false_fail"] += verdict == "fail"
    row["undecided"] += verdict == "undecided"
    if tight is None:
        return slope
    leak = judge(mib, tight)[0]
    if tooth.tops(n, phase) < MIN_TOP:
        row["short"] += 1
        row["short_failed"] += leak == "fail"
        row["short_undecided"] += leak == "undecided"
    else:
        row["missed"] += leak not in ("fail", "undecided")
        row["leak_undecided"] += leak == "undecided"
    return slope


def _row(tooth: Tooth, n: int, **more: object) -> dict:
    """A row's counts, zero, for a tooth and run length (a leak's missed/short counts None where it keeps too little
    to be asked for)."""
    leak = 0 if budgets(tooth)[1] is not None else None
    return {"period": tooth.period, "climb": tooth.climb, "keep": tooth.keep, "flush": tooth.flush, **more, "steps": n,
            "false_fail": 0, "undecided": 0, "missed": leak, "leak_undecided": leak, "short": leak, "short_failed": leak,
            "short_undecided": leak}


def measure() -> list[dict]:
    """One row per tooth and run length: its series over every phase, counted by what the rule made of them (count),
    with its readings, and how many were read off their truth by more than the clean allowance."""
    allow = allowance_mib()
    rows = []
    for tooth in teeth():
        for n in LENGTHS:
            row = _row(tooth, n, phases=tooth.period, over_read=0, under_read=0, readings=[])
            for phase in range(tooth.period):
                slope = count(row, tooth, n, phase, tooth.series(n, phase))
                row["readings"].append(round(slope, 3))
                row["over_read"] += slope > tooth.rate + allow
                row["under_read"] += slope < tooth.rate - allow
            rows.append(row)
    return rows


def measure_noisy(seeds: int = SEEDS) -> list[dict]:
    """One row per tooth, noise width and run length: its series over every phase and seed under that noise, counted
    as measure() counts them (the budgets carry the noise's width)."""
    rows = []
    for tooth in teeth():
        for width in NOISES:
            for n in LENGTHS:
                row = _row(tooth, n, noise=width, series=tooth.period * seeds)
                for phase in range(tooth.period):
                    for seed in range(seeds):
                        count(row, tooth, n, phase, tooth.series(n, phase, random.Random(f"{phase}/{seed}"), width),
                              width)
                rows.append(row)
    return rows


def shortest() -> list[dict]:
    """Per period, the shortest run from which every clean tooth of it (keeping nothing: each climb, flush and phase)
    reads as steady at every length up to SHORTEST's last, exactly built, under 1.25x its true figure; and the run
    the rule's "too few steps" asks of a buffer freed that often (judge/growth.py's tops_run)."""
    from gpu_budget.judge.growth import tops_run

    out = []
    for period in PERIODS:
        clean = [t for t in teeth() if t.period == period and t.keep == 0]
        passing = [all(judge(t.series(n, phase), budgets(t)[0])[0] == "pass" for t in clean
                       for phase in range(period)) for n in SHORTEST]
        first = next((SHORTEST[k] for k in range(len(passing)) if all(passing[k:])), None)
        out.append({"period": period, "steady_from": first, "asked": tops_run(period)})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="5fb9374", help="the revision whose rule is measured beside this one's")
    parser.add_argument("--measure-only", type=Path, help=argparse.SUPPRESS)  # rule_at's subprocess
    args = parser.parse_args()
    if args.measure_only:
        import gpu_budget

        args.measure_only.write_text(json.dumps({"module": gpu_budget.__file__,
                                                 "verdicts": {"exact": measure(), "noisy": measure_noisy()}}))
        return
    from benchmarks.common import short_commit

    earlier = rule_at(args.before, "benchmarks.growth_sawtooths", [])
    path = write(SECTION, {"floor_mib": FLOOR, "declared_steps": DECLARED, "allowance_mib": allowance_mib(),
                           "lengths": LENGTHS, "noises": NOISES, "seeds": SEEDS, "before": short_commit(args.before),
                           "rows_before": earlier["exact"], "rows": measure(),
                           "noisy_before": earlier["noisy"], "noisy": measure_noisy(), "shortest": shortest()})
    print(f"wrote {path.relative_to(ROOT)}")


def _sum(rows: list[dict], key: str) -> int:
    """The rows' count under `key` (0 where a row lacks it: a rule before the count was kept)."""
    return sum(r.get(key) or 0 for r in rows)


def _seen(rows: list[dict]) -> int:
    """The series of leaks whose runs showed enough tops (not `short`)."""
    return sum(r["phases"] - r["short"] for r in rows if r["short"] is not None)


def _by_length(res: dict, title: str, key: str, of) -> list[str]:
    """One table: a line per period, a cell per run length: the series counted under `key` at the rule before and
    the rule in force, of the `of(rows)` it could count (`-`: none)."""
    lengths = res["lengths"]
    out = [title, "", "| period | " + " | ".join(f"{n} steps" for n in lengths) + " |",
           "|---|" + "---|" * len(lengths)]
    for period in sorted({r["period"] for r in res["rows"]}):
        cells = []
        for n in lengths:
            was, now = ([r for r in rows if r["period"] == period and r["steps"] == n]
                        for rows in (res["rows_before"], res["rows"]))
            cells.append(f"{_sum(was, key)} → {_sum(now, key)} of {of(now)}" if of(now) else "-")
        out.append(f"| {period} | " + " | ".join(cells) + " |")
    return out + [""]


def _noisy(res: dict) -> list[str]:
    """The teeth under noise: per noise width and run length, false FAILs, runs with no verdict and leaks missed,
    before and now, and their totals."""
    if "noisy" not in res:
        return []
    lengths, was, now = res["lengths"], res["noisy_before"], res["noisy"]
    out = [(f"**Under noise, all together:** false FAILs {_sum(was, 'false_fail')} → {_sum(now, 'false_fail')} of "
            f"{sum(r['series'] for r in now):,}, too few steps to tell {_sum(was, 'undecided')} → "
            f"{_sum(now, 'undecided')}; leaks missed {_sum(was, 'missed')} → {_sum(now, 'missed')} (in runs that "
            f"show four tops or more; too few steps to tell {_sum(was, 'leak_undecided')} → "
            f"{_sum(now, 'leak_undecided')}, of leaks that failed before); the leaks' runs too short to show four "
            f"tops failed {_sum(was, 'short_failed')} → {_sum(now, 'short_failed')}, too few steps to tell "
            f"{_sum(was, 'short_undecided')} → {_sum(now, 'short_undecided')}."), ""]
    head = "| noise, MiB | teeth | " + " | ".join(f"{n} steps" for n in lengths) + " |"
    kinds = (("that keep nothing", lambda r: r["keep"] == 0), ("that keep", lambda r: r["keep"] > 0))
    for title, key, of, split in (
            (("false FAILs** (a tooth that keeps nothing: a false alarm; one that keeps: a leak whose rate was "
              "over-read past 1.25x its truth)"), "false_fail", lambda rs: sum(r["series"] for r in rs), kinds),
            ("too few steps to tell** (no verdict, neither FAIL nor pass: `measure/freed.py`)", "undecided",
             lambda rs: sum(r["series"] for r in rs), kinds),
            ("leaks missed** (in runs that show four tops or more)", "missed",
             lambda rs: sum(r["series"] - r["short"] for r in rs if r["short"] is not None), kinds[1:])):
        out += [f"**Under noise, {title}, every tooth and phase, {res['seeds']} draws each:", "", head,
                "|---|---|" + "---|" * len(lengths)]
        for width in res["noises"]:
            for kind, which in split:
                cells = []
                for n in lengths:
                    was, now = ([r for r in rows if r["noise"] == width and r["steps"] == n and which(r)]
                                for rows in (res["noisy_before"], res["noisy"]))
                    cells.append(f"{_sum(was, key)} → {_sum(now, key)} of {of(now)}")
                out.append(f"| {width:g} | {kind} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def _worst(res: dict, limit: int = 8) -> list[str]:
    """The teeth the rule reads worst in runs of 20 steps or more: what a user's memtest may meet."""
    long = [r for r in res["rows"] if r["steps"] >= 20 and (r["false_fail"] or r["missed"])]
    short = "" if not long else " (a leak's short runs not counted as missed)"
    long.sort(key=lambda r: (-(r["false_fail"] + (r["missed"] or 0)), r["period"], r["steps"]))
    if not long:
        return ["No tooth of the grid is misjudged in runs of 20 steps or more.", ""]
    out = [("The teeth misjudged in runs of 20 steps or more (the first "
            f"{min(limit, len(long))} of {len(long)}; readings in MiB/step, one per phase{short}):"), "",
           "| period | climb, MiB | keeps, MiB | flushed | steps | truth, MiB/step | readings | false FAILs | missed |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in long[:limit]:
        missed = "-" if r["missed"] is None else f"{r['missed']} of {r['phases'] - r['short']}"
        out.append(f"| {r['period']} | {r['climb']:g} | {r['keep']:g} | {r['flush']} | {r['steps']} | "
                   f"{r['keep'] / r['period']:.3g} | {', '.join(f'{v:g}' for v in r['readings'])} | "
                   f"{r['false_fail']} of {r['phases']} | {missed} |")
    return out + [""]


def section(res: dict | None) -> list[str]:
    """Section 5k from growth_sawtooths.json: false FAILs, leaks missed and misreadings over the grid, before and
    now."""
    out = ["## 5k. Growth on periodic buffers: every sawtooth of a grid, each phase", ""]
    if res is None:
        return out + missing(SECTION, SECTION)
    rows, was = res["rows"], res["rows_before"]
    series = sum(r["phases"] for r in rows)
    keeping = sum(r["phases"] for r in rows if r["missed"] is not None)
    out += [ran(res), "",
            (f"Each series built exactly (`benchmarks/growth_sawtooths.py`): a buffer climbing 1, 4 or 16 MiB a step, "
             f"freed every 2-8 steps at the step's start or its end, each flush keeping 0, 1/4, 1 or 2 climbs for "
             f"good, over a {res['floor_mib']:.0f} MiB floor; runs of {', '.join(map(str, res['lengths']))} marked "
             f"steps, every phase: {series:,} series, judged under `steps={res['declared_steps']:,}`. A false FAIL: "
             "the projection broke a budget 1.25x the series' true figure at that step. A leak missed: a series "
             "that keeps more than the clean allowance per step passed a budget its true growth breaks with room "
             f"(the tooth plus half of what the rule's low end adds), {keeping:,} of the series; of those, a run "
             "showing fewer than four tops where the rule reads them (its last half from 20 judged steps on) is "
             "too short to tell a leak from two one-off caches (growth in 3 of 5 rises), counted apart as short, "
             "whatever it read. Over- and under-read: the reading off its truth by more than the allowance "
             f"({res['allowance_mib']:.2f} MiB/step). Each count: at the rule of `{res['before']}` → the rule in "
             f"force (`{res['run']['commit']}`), the same series, in one run. What changed between them: the reading "
             "with spikes read on their neighbours' line lowers a buffer's top, whose steps climb on as the steps "
             "into them did, onto the line of the fall after it; where two or more tops so lowered repeat to within "
             "64 KiB (a buffer that keeps nothing) and the run's last climb, whose fall lies past its end, passes "
             "none of them, that climb is now read no higher than the step the tops climbed from "
             "(`rises.without_spikes`): left as measured, it rose past the lowered tops, growth such a buffer does "
             "not have (a buffer of 16 MiB a step freed every 6th step, 15 steps, read 2.29 MiB/step). Earlier, "
             "against bf39d5d (this section's report as committed at 76d53e4; false FAILs 141 → 27, too few steps "
             "to tell 0 → 114, leaks missed 5 → 5): a run "
             "whose measured steps (its warm-up's too) end in a climb it fell back from, by more than 1 MiB and a "
             "step's climb, and climbed again as it had (three rises or more alike, to within a quarter of their "
             "mean), not past the top it fell from by more than a step's climb, where the growth read is that "
             "climb's and the run holds fewer steps than four tops of a buffer freed that often need, breaks its "
             "budget on no verdict: it errs, too few steps to tell a periodic buffer from growth "
             "(`measure/freed.py`). Over its judged steps such a run is a leak begun after memory was freed, step "
             "for step: a buffer climbing 4 MiB a step freed every 8th step, over 10 steps, peaks 24, 28, 0, 4, 8, "
             "12, 16, 20, 24, 28 MiB over its floor, and so does a leak of 4 MiB/step begun after a free at step 3; "
             "their 11th steps, 0 and 32, are the first that differ. Counted here apart, as too few steps to tell, "
             "neither a FAIL nor a pass. Earlier still, against "
             "7282db0 (this section's report as committed at e579e78): a climb of three steps or more rising alike "
             "that the run then fell back from and climbed again as it had became a tooth, a reading in blocks "
             "whose blocks between two that rose did not rise was held to the rate from the first to the last, and "
             "where the measured steps repeat every few steps far more closely than from one step to the next "
             "(`measure/cycle.py`) the growth became no more than their largest rise over one period, per step: "
             "false FAILs 461 → 141, leaks missed 17 → 17. The tables under noise add to each step's peak a draw "
             f"uniform in 0..{max(res.get('noises', [0])):g} MiB or less."), "",
            (f"**All together:** false FAILs {_sum(was, 'false_fail')} → {_sum(rows, 'false_fail')} of {series:,}, "
             f"too few steps to tell {_sum(was, 'undecided')} → {_sum(rows, 'undecided')}; "
             f"leaks missed {_sum(was, 'missed')} → {_sum(rows, 'missed')} of the {_seen(rows):,} a run showed "
             f"enough tops of (too few steps to tell {_sum(was, 'leak_undecided')} → "
             f"{_sum(rows, 'leak_undecided')}); of the {keeping - _seen(rows):,} too short, failed all the same "
             f"{_sum(was, 'short_failed')} → {_sum(rows, 'short_failed')} (a climb read as the leak: the verdict "
             f"right, the reading not), too few steps to tell {_sum(was, 'short_undecided')} → "
             f"{_sum(rows, 'short_undecided')}; over-read {_sum(was, 'over_read')} → "
             f"{_sum(rows, 'over_read')}, under-read {_sum(was, 'under_read')} → {_sum(rows, 'under_read')} of "
             f"{series:,}."), ""]
    out += _by_length(res, "**False FAILs** (every tooth, kept or not):", "false_fail",
                      lambda rs: sum(r["phases"] for r in rs))
    out += _by_length(res, ("**Too few steps to tell** (no verdict: a climb fallen from and climbed again, "
                            "`measure/freed.py`; every tooth, kept or not):"), "undecided",
                      lambda rs: sum(r["phases"] for r in rs))
    out += _by_length(res, "**Leaks missed** (teeth keeping more than the allowance per step, in runs that show "
                      "four tops or more; `-`: every such run too short):", "missed", _seen)
    out += _by_length(res, "**Over-read** (read faster than the truth plus the allowance):", "over_read",
                      lambda rs: sum(r["phases"] for r in rs))
    return out + _worst(res) + _shortest(res) + _noisy(res)


def _shortest(res: dict) -> list[str]:
    """Per period, the shortest run its clean teeth read as steady from, and the run "too few steps" asks for."""
    if "shortest" not in res:
        return []
    out = [("**The shortest run per period** (exactly built, keeping nothing, every climb, flush and phase: read as "
            f"steady at every length from it to {SHORTEST[-1]} steps; and the run the \"too few steps\" error asks of "
            "a buffer freed that often, four of its tops where the rule reads them):"), "",
           "| period | steady from | too few steps: a run of |", "|---|---|---|"]
    for r in res["shortest"]:
        out.append(f"| {r['period']} | {r['steady_from'] or '-'} steps | {r['asked']} steps |")
    return out + [""]


if __name__ == "__main__":
    main()
