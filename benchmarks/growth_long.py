"""Section 5g, growth over long runs: clean runs and slow leaks of hundreds of steps, each in fresh pytest sessions.

The catalogue of section 5c runs 10 steps a case, so its clean allowance is
calibrated on 10-step runs and judges the last five steps' rises. A leak
slower than that allowance per step passes as steady however long the run:
a run of hundreds of steps shows it as hundreds of MiB, which no per-step
noise makes up. This runs the clean Trainer cases (S1's Trainer script, S5's
loop, the BERT Trainer script) and the shapes script's flat loop for
`--steps` optimizer steps, and slow leaks beside them (the shapes script's,
and S1's and BERT's scripts with a leak planted), each a command or function
case under `ram="1 GiB", steps=10,000` as section 5c declares them, in fresh
`python -m pytest --gpu-budget -n 2` sessions over a temporary project,
keeping every row's per-step peaks: the rule is re-read from them
(growth_of), so the calibration and the verdicts below are the rule in force.

    python -m benchmarks.growth_long [--runs 5] [--steps 300]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, RESULTS, missing, ran, write
from benchmarks.growth_catalogue import BUDGET, DECLARED, session, write_project

SECTION = "growth_long"
# what each case must get: "pass" (no growth judged), "fail" (the projection breaks the budget)
CLEAN = ("flat", "S1 Trainer script, clean", "S5, clean", "BERT Trainer script evaluating first, clean")
EXPECTED = {
    **{name: "pass" for name in CLEAN},
    "bounded cache over the first half": "pass",
    "slow leak, 0.25 MiB/step": "fail",
    "slow leak, 0.1 MiB/step": "fail",
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
    data = {"runs": args.runs, "declared_steps": DECLARED, "budget": BUDGET, "expected": EXPECTED,
            "sessions": previous.get("sessions", []), "ram_allowance_used": growth.RAM_ALLOWANCE}
    t_start = time.perf_counter()

    def save(done: bool = False) -> None:
        write(SECTION, {**data, "complete": done, "wall_s": round(time.perf_counter() - t_start, 1)})

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
            data["sessions"].append({**session(folder, "long", ["test_long.py"], empty), "steps": steps})
            save()
    save(done=True)
    print(json.dumps(summary(json.loads((RESULTS / f"{SECTION}.json").read_text())), indent=1))


def summary(res: dict) -> dict:
    """Per case: sessions, how many the rule in force failed (re-read from the steps), the growth it read."""
    from benchmarks.growth_catalogue import growth_of

    cases: dict[str, dict] = {}
    for s in res["sessions"]:
        for r in s["rows"]:
            c = cases.setdefault(r["case"], {"sessions": 0, "failed_then": 0, "growth": []})
            c["sessions"] += 1
            c["failed_then"] += bool(r["projection"] and r["projection"]["breaks"])
            c["growth"].append(growth_of(r))
    return cases


def section(res: dict | None) -> list[str]:
    out = ["## 5g. Growth over long runs", ""]
    if res is None or not res.get("sessions"):
        return out + missing(SECTION, SECTION)
    return out + [ran(res), "", f"{len(res['sessions'])} sessions of {res['steps']} steps; {MIB}", ""]


if __name__ == "__main__":
    main()
