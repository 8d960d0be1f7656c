"""Section 5i, the CPU gate's growth case: S5 over 44 steps under `steps=10_000`, clean and with a leak planted.

memtests/test_s5_growth.py is the one case of the CPU gate whose verdict
reads host RAM growth per step. A clean run must read steady with room to
spare under the clean allowance, and a planted leak must fail with room to
spare over it, in fresh sessions: each here is a fresh `python -m pytest
--gpu-budget` process over that memtest, unchanged, with an empty baselines
folder (so no baseline comparison: the verdict is the budget's and the growth
rule's), `GPU_BUDGET_PLANT_LEAK_MIB` set in the planted ones (the loop keeps
that many MiB of each step's conv features). Clean and planted sessions are
interleaved, so each meets the machine's load alike. Every row's per-step
figures are kept; the readings are re-read with the rule in force.

    python -m benchmarks.growth_s5 [--clean 10] [--planted 5] [--leak-mib 0.5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, RESULTS, ROOT, incomplete, missing, one_case_session, ran, saver, span

SECTION = "growth_s5"
MEMTEST = "memtests/test_s5_growth.py"
LEAK_VAR = "GPU_BUDGET_PLANT_LEAK_MIB"
KIB = 1024


def _row(row: dict, exit_code: int, wall: float) -> dict:
    """What the section keeps of a report row: its verdict, peak, per-step figures and the growth rule's projection."""
    projection = next(iter((row.get("growth_projection") or {}).get("projections") or []), None)
    return {"verdict": row["verdict"], "passed": row["passed"], "exit_code": exit_code, "wall_s": round(wall, 1),
            "child_wall_s": row.get("wall_seconds"), "ram_tree": row["peaks"]["ram_tree"],
            "declared_steps": (row.get("growth_projection") or {}).get("steps"),
            "steps": [{k: s.get(k) for k in ("step", "ram", "ram_tree")} for s in row.get("steps") or []],
            "projection": projection, "message": row.get("message")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", type=int, default=10, help="fresh sessions of the clean case")
    parser.add_argument("--planted", type=int, default=5, help="fresh sessions with the leak planted")
    parser.add_argument("--leak-mib", type=float, default=0.5, help="MiB each planted step keeps")
    args = parser.parse_args()
    from gpu_budget.judge import growth

    data = {"memtest": MEMTEST, "leak_mib": args.leak_mib, "ram_allowance_used": growth.RAM_ALLOWANCE,
            "sessions": []}
    save = saver(SECTION, data)
    folder = Path(tempfile.mkdtemp(prefix="growth-s5-"))
    kinds = interleaved(args.clean, args.planted)
    for n, kind in enumerate(kinds, start=1):
        print(f"growth_s5: session {n} of {len(kinds)}, {kind} ({time.strftime('%H:%M')})", flush=True)
        shutil.rmtree(folder / "baselines", ignore_errors=True)  # no baseline: the budget and the growth rule judge
        env = {LEAK_VAR: str(args.leak_mib if kind == "planted" else 0)}
        row, code, wall, _ = one_case_session(folder, kind, [str(ROOT / MEMTEST), "-p", "no:randomly"], [], env)
        data["sessions"].append({"kind": kind, **_row(row, code, wall)})
        save()
    save(done=True)
    shutil.rmtree(folder, ignore_errors=True)
    print("\n".join(section(json.loads((RESULTS / f"{SECTION}.json").read_text()))))


def interleaved(clean: int, planted: int) -> list[str]:
    """The sessions' kinds in the order run: the planted ones spread evenly among the clean ones."""
    at = [(k / (clean + 1), "clean") for k in range(1, clean + 1)] + [(k / (planted + 1), "planted")
                                                                       for k in range(1, planted + 1)]
    return [kind for _, kind in sorted(at)]


# -- the figures, from the JSON (RESULTS.md section 5i; tests/docs/test_growth_s5_report.py asserts them) -------------

def reading(session: dict) -> tuple[float, bool, bool, int]:
    """The rule in force on the session's steps (judge/growth.py check, its declared steps and the memtest's
    budget): the growth it judged (bytes/step), whether that is growth, whether it breaks the budget, and the budget."""
    from gpu_budget.judge import growth
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.figures import Peaks, Step

    budget = session["projection"]["budget"]
    records = [Step(step=s["step"], ram=s["ram"], ram_tree=s["ram_tree"]) for s in session["steps"]]
    checked = growth.check(records, Peaks(ram=session["ram_tree"], ram_tree=session["ram_tree"]), Budget(ram=budget),
                           session["declared_steps"])
    g = checked.projections[0].growth
    return g.slope, g.grows, bool(checked.breaches), budget


def nearest(session: dict) -> tuple[int, float, float]:
    """The reading nearest its allowance, or furthest past it, of those the rule makes of the session's steps (steps
    one by one, and blocks of 2, 4, ... judged steps, rises.scales): its block size, growth and allowance per step
    (the clean allowance over the block's steps, judge/growth.py fit)."""
    from gpu_budget.judge import growth
    from gpu_budget.measure import rises

    steps = [s["step"] for s in session["steps"]]
    read = [(w.scale, w.growth, growth.RAM_ALLOWANCE / w.scale)
            for w in rises.scales(steps, [s["ram_tree"] for s in session["steps"]])]
    return max(read, key=lambda r: r[1] / r[2])


def summary(res: dict) -> dict:
    """The margin both ways: the clean runs' reading nearest its allowance, the planted runs' least past it, the
    smallest growth this case's budget fails at (the allowance of its largest blocks plus the budget's headroom over
    the run's peak, spread over the steps from the last judged one to the declared one), and the limit the default
    tolerance puts over the highest clean peak (what a peak's comparison with a clean baseline would fail past)."""
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE
    from gpu_budget.measure import rises

    allowance = res["ram_allowance_used"]
    out: dict = {"allowance": allowance}
    for kind in ("clean", "planted"):
        rows = [s for s in res["sessions"] if s["kind"] == kind]
        read, near = [reading(s) for s in rows], [nearest(s) for s in rows]
        out[kind] = {"sessions": len(rows), "growth": [r[0] for r in read], "grows": sum(r[1] for r in read),
                     "failed_by_rule": sum(r[2] for r in read), "failed_by_gate": sum(not s["passed"] for s in rows),
                     "nearest": [r[1] for r in near], "ratio": [r[1] / r[2] for r in near],
                     "past": [r[1] - r[2] for r in near], "blocks": sorted({r[0] for r in near}),
                     "peaks": [s["ram_tree"] for s in rows], "child_wall_s": [s["child_wall_s"] for s in rows],
                     "low_ends": [s["projection"]["at_step"] and _low_end(s) for s in rows]}
    clean = res["sessions"][0] if res["sessions"] else None
    if clean is not None:
        budget, declared = clean["projection"]["budget"], clean["declared_steps"]
        last, marks = clean["projection"]["steps_fitted"][1], len(clean["steps"])
        block = rises.largest_block(marks)  # the largest blocks the run is read in: allowed allowance / block a step
        highest = max(out["clean"]["peaks"]) if out["clean"]["peaks"] else clean["ram_tree"]
        out.update(budget=budget, declared=declared, last_judged=last, marks=marks, block=block,
                   smallest_failing=allowance / block + (budget - highest) / (declared - last),
                   tolerance_limit=DEFAULT_TOLERANCE.limit(highest))
    return out


def _low_end(session: dict) -> int:
    """The projection's low end at the declared step: the peak plus (growth less the allowance) per step to it."""
    p = session["projection"]
    return max(session["ram_tree"], round(session["ram_tree"] + p["interval"][0] * (p["at_step"] - p["steps_fitted"][1])))


def section(res: dict | None) -> list[str]:
    """Section 5i from growth_s5.json: each session's reading and verdict, then the margin both ways."""
    if res is None or not res.get("sessions"):
        return ["## 5i. The CPU gate's growth case, clean and with a leak planted", "", *missing(SECTION, SECTION)]
    s = summary(res)
    out = [f"## 5i. The CPU gate's growth case: S5 over {s['marks']} steps, clean and with a leak planted", ""]
    partial = incomplete(res)
    out += [ran(res) + partial, "",
            (f"Fresh `python -m pytest --gpu-budget` sessions of `{res['memtest']}` unchanged (`benchmarks/growth_s5.py`), "
             f"each with an empty baselines folder, so the verdict is the budget's ({s['budget'] / MIB:.0f} MiB) and "
             f"the growth rule's at `steps={s['declared']:,}`; the planted sessions set "
             f"`{LEAK_VAR}={res['leak_mib']}` (each step keeps {res['leak_mib']} MiB of its conv features). Growth is "
             f"the rule in force re-reading each session's steps (the median rise of the running peak of `ram_tree` "
             f"over the last five judged steps, steps {clean_window(res)}, and over the last five blocks of 2 and "
             f"{s['block']} judged steps, each held to the clean allowance of {s['allowance'] / KIB:.0f} KiB/step over "
             f"its block's steps); the growth judged is the reading past its allowance by the most, else the steps' "
             f"own, and the reading nearest its allowance is shown beside it."), "",
            ("| session | kind | growth judged, KiB/step | nearest its allowance: blocks of | its growth of its "
             "allowance, KiB/step | read as | peak RAM tree, MiB | projection's low end at the declared step, GiB | "
             "gate's verdict | child wall time |"),
            "|---|---|---|---|---|---|---|---|---|---|"]
    for n, row in enumerate(res["sessions"], start=1):
        slope, grows, breaks, _ = reading(row)
        block, near, allowed = nearest(row)
        said = "fail" if breaks else "growth" if grows else "steady"
        low = f"{_low_end(row) / 2**30:.2f}" if grows else "-"
        out.append(f"| {n} | {row['kind']} | {slope / KIB:.1f} | {block} | {near / KIB:.1f} of {allowed / KIB:.0f} | "
                   f"{said} | {row['ram_tree'] / MIB:.1f} | {low} | {row['verdict']} | {row['child_wall_s']:.1f} s |")
    c, p = s["clean"], s["planted"]
    out += ["",
            (f"**Clean**: {c['sessions'] - c['grows']} of {c['sessions']} read steady and {c['failed_by_gate']} failed; "
             f"growth judged {span([g / KIB for g in c['growth']], '.1f')} KiB/step; the reading nearest its "
             f"allowance at most {100 * max(c['ratio']):.1f} % of it; peaks {span([x / MIB for x in c['peaks']], '.1f')} MiB, under the budget by "
             f"{(s['budget'] - max(c['peaks'])) / MIB:.1f} MiB or more. "
             f"**Planted**: {p['failed_by_gate']} of {p['sessions']} failed ({p['failed_by_rule']} by the rule "
             f"re-read); growth judged {span([g / KIB for g in p['growth']], '.1f')} KiB/step, in blocks of "
             f"{' and '.join(map(str, p['blocks']))} judged steps, the least {min(p['past']) / KIB:.0f} KiB/step "
             f"past its allowance; the projection's low end at "
             f"step {s['declared']:,} {span([x / 2**30 for x in p['low_ends']], '.2f')} GiB against the budget's "
             f"{s['budget'] / MIB:.0f} MiB; their peaks {span([x / MIB for x in p['peaks']], '.1f')} MiB, past the "
             f"{s['tolerance_limit'] / MIB:.1f} MiB the default tolerance allows over the highest clean peak, so "
             f"against a clean baseline their peaks' comparison fails them too. The smallest growth this case fails (the allowance of its blocks of "
             f"{s['block']} judged steps, {s['allowance'] / s['block'] / KIB:.0f} KiB/step, plus the budget's room "
             f"over the highest clean peak spread over steps {s['last_judged']}-{s['declared']:,}): "
             f"{s['smallest_failing'] / KIB:.1f} KiB/step; a slower leak reads steady at {s['marks']} steps. "
             f"Child wall time {span(c['child_wall_s'] + p['child_wall_s'], '.1f')} s."), ""]
    return out


def clean_window(res: dict) -> str:
    """The judged steps the readings come from, as the first session's projection names them."""
    first, last = res["sessions"][0]["projection"]["steps_fitted"]
    return f"{first}-{last}"


if __name__ == "__main__":
    main()
