"""Section 5g, growth over long runs: clean runs and slow leaks of 40 to 200 steps, each in fresh pytest sessions.

The catalogue of section 5c runs 10 steps a case, so its clean allowance is
calibrated on 10-step runs. A run's last five steps alone read a leak slower
per step than that allowance as steady however long the run, though over
hundreds of steps it adds up to more than any step's noise; judge/growth.py
reads a long run in blocks of steps too. This runs the clean Trainer cases
(S1's Trainer script, S5's loop, the BERT Trainer script) and the shapes
script's flat loop for each `--steps` length, and slow leaks beside them (the
shapes script's, and S1's and BERT's scripts with a leak planted), each a
command or function case under `ram="1 GiB", steps=10,000` as section 5c
declares them, in fresh `python -m pytest --gpu-budget -n 2` sessions over a
temporary project, keeping every row's per-step peaks and its session's
commit: the figures re-read the steps with the rule in force (readings,
verdict), and the sessions run at the rule's commit (RULE_COMMITS) show the
gate's own verdicts.

    python -m benchmarks.growth_long [--runs 4] [--steps 40 80 200] [--append]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, RESULTS, incomplete, missing, ran, saver, short_commit
from benchmarks.growth_catalogue import BUDGET, DECLARED, session, write_project

SECTION = "growth_long"
# what each case must get in a run of the longest length: "pass" (steady), "grows" (read as growth, its projection's
# low end within the budget: 0.1 MiB/step less the allowance of blocks of 16, over 9,800 steps, is under 1 GiB),
# "fail" (the projection's low end breaks the budget). Shorter runs are counted, not required: they show how long a
# run a slow leak needs.
CLEAN = ("flat", "S1 Trainer script, clean", "S5, clean", "BERT Trainer script evaluating first, clean")
EXPECTED = {
    **{name: "pass" for name in CLEAN},
    "bounded cache over the first half": "pass",
    "slow leak, 0.25 MiB/step": "fail",
    "slow leak, 0.1 MiB/step": "grows",
    "slow leak in the last quarter, 0.5 MiB/step": "fail",
    "S1 Trainer script, 0.25 MiB/step kept": "fail",
    "BERT Trainer script evaluating first, 0.25 MiB/step kept": "fail",
}
SHAPES = [n for n in EXPECTED if not n.startswith(("S1", "S5", "BERT"))]

TEST_LONG = '''
"""The long runs: each shape, S1's and BERT's Trainer scripts and S5 for {steps} optimizer steps."""
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from s5_generic_oom.scenarios import S5
from test_s1_script import SCRIPT

from gpu_budget import Scenario

HERE = Path(__file__).resolve().parent
STEPS = {steps}
S1 = replace(SCRIPT, command=[*SCRIPT.command, "--keep_hidden_mib", "{{keep_hidden_mib}}"],
             params={{**SCRIPT.params, "keep_hidden_mib": 0}}).with_params(max_steps=STEPS)


@pytest.mark.gpu_budget(ram="{budget}", steps={declared})
@pytest.mark.parametrize("name", {shapes!r})
def test_shape(gpu_budget, name):
    gpu_budget.measure(Scenario(name="shape", command=[sys.executable, str(HERE / "shapes.py"), name, str(STEPS)]),
                       label=name)


@pytest.mark.gpu_budget(ram="{budget}", steps={declared})
@pytest.mark.parametrize("mib", [0.0, 0.25])
def test_s1_script(gpu_budget, mib):
    label = "S1 Trainer script, clean" if mib == 0 else f"S1 Trainer script, {{mib}} MiB/step kept"
    gpu_budget.measure(S1.with_params(keep_hidden_mib=mib), label=label)


@pytest.mark.gpu_budget(ram="{budget}", steps={declared})
def test_s5(gpu_budget):
    gpu_budget.measure(S5.with_params(steps=STEPS), label="S5, clean")


@pytest.mark.gpu_budget(ram="{budget}", steps={declared})
@pytest.mark.parametrize("mib", [0.0, 0.25])
def test_bert_script(gpu_budget, mib):
    label = "BERT Trainer script evaluating first, " + ("clean" if mib == 0 else f"{{mib}} MiB/step kept")
    gpu_budget.measure(Scenario(name="bert", command=[sys.executable, str(HERE / "bert.py"), "--keep_mib", str(mib),
                                                      "--max_steps", str(STEPS)]), label=label)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4, help="fresh sessions per run length")
    parser.add_argument("--steps", type=int, nargs="+", default=[40, 80, 200], help="the run lengths, in steps")
    parser.add_argument("--append", action="store_true", help="keep the sessions the report already holds")
    parser.add_argument("--keep", type=Path, default=None, help="a folder to keep the project in (assets reused)")
    args = parser.parse_args()
    from gpu_budget.judge import growth

    previous = json.loads((RESULTS / f"{SECTION}.json").read_text()) if args.append else {}
    for earlier in previous.get("sessions", []):  # each session keeps the commit it ran at, its rule's words
        earlier.setdefault("commit", previous["run"]["commit"])
    data = {"runs": args.runs, "declared_steps": DECLARED, "budget": BUDGET, "expected": EXPECTED,
            "sessions": previous.get("sessions", []), "ram_allowance_used": growth.RAM_ALLOWANCE}
    save = saver(SECTION, data)

    folder = args.keep or Path(tempfile.mkdtemp(prefix="growth-long-"))
    folder.mkdir(parents=True, exist_ok=True)
    write_project(folder)
    for i in range(args.runs):
        for steps in args.steps:  # interleaved: each length meets the machine's load alike
            print(f"growth_long: session {i + 1} of {args.runs}, {steps} steps ({time.strftime('%H:%M')})", flush=True)
            (folder / "test_long.py").write_text(TEST_LONG.format(steps=steps, budget=BUDGET, declared=DECLARED,
                                                                   shapes=SHAPES))
            empty = folder / "baselines-empty"
            shutil.rmtree(empty, ignore_errors=True)
            data["sessions"].append({**session(folder, "long", ["test_long.py"], empty), "steps": steps,
                                     "commit": short_commit()})
            save()
    save(done=True)
    print("\n".join(section(json.loads((RESULTS / f"{SECTION}.json").read_text()))))


# -- the figures, from the JSON (RESULTS.md section 5g; tests/docs/test_growth_long_report.py asserts them) ---------

def rows(res: dict) -> list[tuple[int, dict]]:
    """Every session's rows, each with its session's run length."""
    return [(s["steps"], r) for s in res["sessions"] for r in s["rows"]]


def readings(row: dict) -> dict[int, float]:
    """Block size -> the growth per step the rule in force reads at it (measure/rises.py scales), of ram_tree."""
    from gpu_budget.measure import rises

    steps = [s["step"] for s in row["steps"]]
    return {r.scale: r.growth for r in rises.scales(steps, [s["ram_tree"] for s in row["steps"]])}


def verdict(row: dict, blocks: bool = True) -> tuple[str, int, float]:
    """The rule in force on the row's steps, as the gate judges it (judge/growth.py check, `ram="1 GiB",
    steps=10,000`): "pass", "grows" or "fail" (as EXPECTED), the block size it judged and the growth it read there.
    `blocks` False: its steps alone, as the rule read every run before it read blocks."""
    from gpu_budget.judge import growth
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.figures import Peaks, Step
    from gpu_budget.units import parse_size

    records = [Step(step=s["step"], ram=s["ram"], ram_tree=s["ram_tree"]) for s in row["steps"]]
    checked = growth.check(records, Peaks(ram=row["peaks"]["ram"], ram_tree=row["peaks"]["ram_tree"]),
                           Budget(ram=parse_size(BUDGET)), DECLARED, scaled=growth.SCALED if blocks else ())
    g = checked.projections[0].growth
    return "fail" if checked.breaches else "grows" if g.grows else "pass", g.window.scale, g.slope


def calibration(res: dict) -> dict[int, dict]:
    """Per block size: the clean runs read at it, the largest growth they read, and the allowance the rule holds a
    block of that size to (judge/growth.py: the steps' own over the block size)."""
    from gpu_budget.judge import growth

    out: dict[int, dict] = {}
    for _, row in rows(res):
        if row["case"] in CLEAN:
            for size, read in readings(row).items():
                c = out.setdefault(size, {"runs": 0, "largest": 0.0, "allowance": growth.RAM_ALLOWANCE / size})
                c["runs"] += 1
                c["largest"] = max(c["largest"], read)
    return dict(sorted(out.items()))


def summary(res: dict) -> dict[tuple[str, int], dict]:
    """Per case and run length: sessions, the rule in force's verdicts (verdict), the block sizes it judged at and
    the growth it read; and the gate's own failures in the sessions run at the rule's commits (RULE_COMMITS)."""
    out: dict[tuple[str, int], dict] = {}
    for s in res["sessions"]:
        for r in s["rows"]:
            c = out.setdefault((r["case"], s["steps"]), {"sessions": 0, "verdicts": [], "scales": set(), "growth": [],
                                                         "gate_sessions": 0, "gate_failed": 0, "steps_alone": []})
            said, scale, slope = verdict(r)
            c["sessions"] += 1
            c["verdicts"].append(said)
            c["scales"].add(scale)
            c["growth"].append(slope)
            c["steps_alone"].append(verdict(r, blocks=False)[0])
            if s.get("commit") in RULE_COMMITS:
                c["gate_sessions"] += 1
                c["gate_failed"] += bool(r["projection"] and r["projection"]["breaks"])
    return dict(sorted(out.items(), key=lambda kv: (list(EXPECTED).index(kv[0][0]), kv[0][1])))


RULE_COMMITS: tuple[str, ...] = ("1414a64",)  # the commits whose sessions ran the rule in force (their rows are its verdicts)


def section(res: dict | None) -> list[str]:
    """Section 5g from growth_long.json: the clean runs at every block size, and each case's verdicts."""
    out = ["## 5g. Growth over long runs: reading a run in blocks of steps", ""]
    if res is None or not res.get("sessions"):
        return out + missing(SECTION, SECTION)
    lengths = sorted({s["steps"] for s in res["sessions"]})
    per = {n: sum(s["steps"] == n for s in res["sessions"]) for n in lengths}
    partial = incomplete(res)
    out += [ran(res) + partial, "",
            ("Fresh `python -m pytest --gpu-budget -n 2` sessions over a temporary project "
             "(`benchmarks/growth_long.py`, the scripts in `benchmarks/growth_shapes.py`), "
             + ", ".join(f"{per[n]} of {n} steps" for n in lengths) + "; every case declares "
             f"`ram=\"{res['budget']}\", steps={res['declared_steps']:,}`. The rule (`gpu_budget/measure/rises.py` "
             f"`scales`, `judge/growth.py` `fit`) reads a run's judged steps one by one and, where the run is long "
             f"enough, in blocks of 2, 4, 8, ... judged steps counted back from the last (each block's top at the step "
             f"it was measured) while the last five blocks lie within the run's last half; a block of L steps is "
             f"allowed what one step is, the clean allowance over L per step, and the reading that grows past its "
             f"allowance by the most is judged. Every figure below is the rule in force re-reading each row's "
             f"measured steps."), ""]
    cal = calibration(res)
    out += [("**Clean runs at every block size** (S1's Trainer script, S5, the BERT Trainer script and the flat "
             "loop; growth read in KiB/step):"), "",
            "| block size (judged steps) | clean runs read | largest growth | 6x the largest | the rule's allowance |",
            "|---|---|---|---|---|"]
    for size, c in cal.items():
        out.append(f"| {size} | {c['runs']} | {c['largest'] / 1024:.2f} | {6 * c['largest'] / 1024:.2f} | "
                   f"{c['allowance'] / 1024:.1f} |")
    gate = " and the gate's own verdicts in the sessions run at the rule's commit" if RULE_COMMITS else ""
    gate += "; the last column reads the steps alone, as the rule did before it read blocks"
    out += ["", f"**Verdicts**, by the rule re-reading each session's steps{gate}:", "",
            ("| case | steps | expected | sessions | steady | read as growth, within the budget | failed by the rule | "
             "block sizes judged | growth read, MiB/step (min .. max) | failed by the gate | failed by the steps alone |"),
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for (case, steps), c in summary(res).items():
        sizes = ", ".join(str(x) for x in sorted(c["scales"]))
        grown = f"{min(c['growth']) / MIB:.3f} .. {max(c['growth']) / MIB:.3f}"
        by_gate = f"{c['gate_failed']} of {c['gate_sessions']}" if c["gate_sessions"] else "-"
        expected = EXPECTED[case] if steps == lengths[-1] else "(counted)"
        out.append(f"| {case} | {steps} | {expected} | {c['sessions']} | {c['verdicts'].count('pass')} | "
                   f"{c['verdicts'].count('grows')} | {c['verdicts'].count('fail')} | {sizes} | {grown} | {by_gate} | "
                   f"{c['steps_alone'].count('fail')} |")
    return out + [""]


if __name__ == "__main__":
    main()
