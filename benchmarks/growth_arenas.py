"""Section 5j, what S1's clean Trainer script grows by: Python's object-allocator arenas, over its first steps.

Section 5c's later calibration batches read S1's clean Trainer script
(memtests/s1_wav2vec2/train.py) growing up to about 1 MiB/step over 10 steps,
with nothing changed. The script's data pipeline hands each 20 s clip to the
collator as a Python list of floats (a `datasets` column read without a
format), which lives in pymalloc's 1 MiB arenas for the step; an arena goes
back to the system only when every object in it is freed, so each step can
leave one more arena mapped, its pages touched, until the arenas held fit a
step's floats. This runs that script in fresh `python -m pytest --gpu-budget
-n 2` sessions over a temporary project (section 5c's, plus the cases below),
each case under `ram="1 GiB", steps=10_000`, with an empty baselines folder
(the verdict is the budget's and the growth rule's):

- as is, at 10, 20 and 30 steps: how long a run is needed for the arenas to stop;
- `PYTHONMALLOC=malloc` (the scenario's env), 10 steps: pymalloc off, the same
  floats in glibc's heap, whose freed chunks the next step reuses;
- arenas counted: the script, imported unchanged by a wrapper whose Trainer
  callback counts pymalloc's arenas at each optimizer step's end
  (`sys._debugmallocstats`), 30 steps, and at 10 steps with the datasets
  handed to the Trainer in numpy format (no Python floats);
- 1.5 MiB/step kept (section 5c's largest leak), 30 steps: a run long enough for
  the arenas still fails a leak of the catalogue's size.

    python -m benchmarks.growth_arenas [--runs 8]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, RESULTS, incomplete, missing, ran, saver, span
from benchmarks.growth_catalogue import BUDGET, DECLARED, session, write_project

SECTION = "growth_arenas"
LEAK_MIB = 1.5
CASES = {  # label -> (steps, how it runs: "as is", "malloc", "counted", "counted numpy", "leak")
    "as is, 10 steps": (10, "as is"), "as is, 20 steps": (20, "as is"), "as is, 30 steps": (30, "as is"),
    "PYTHONMALLOC=malloc, 10 steps": (10, "malloc"), "arenas counted, 30 steps": (30, "counted"),
    "arenas counted, data in numpy format, 10 steps": (10, "counted numpy"),
    f"{LEAK_MIB} MiB/step kept, 30 steps": (30, "leak"),
}

ARENAS_PY = r'''
"""S1's train.py, imported unchanged, with a Trainer callback that counts pymalloc's arenas at each optimizer step's
end (JSON lines to $ARENAS_OUT/<tag>.jsonl). --numpy_data hands the Trainer its datasets in numpy format."""
import json
import os
import re
import sys

sys.path.insert(0, os.getcwd())  # the script's folder (the case's cwd)
import train  # noqa: E402
import transformers  # noqa: E402

tag, numpy_data = sys.argv[1], sys.argv[2] == "numpy"
out = os.path.join(os.environ["ARENAS_OUT"], tag + ".jsonl")


def arenas():
    read, write = os.pipe()
    saved = os.dup(2)
    os.dup2(write, 2)
    os.close(write)
    try:
        sys._debugmallocstats()  # C stdio to fd 2: far less than a pipe holds
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    os.set_blocking(read, False)
    text = b""
    try:
        while chunk := os.read(read, 1 << 16):
            text += chunk
    except BlockingIOError:
        pass
    os.close(read)
    return int(re.search(rb"# arenas allocated current\s*=\s*([\d,]+)", text).group(1).replace(b",", b""))


class Count(transformers.TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        with open(out, "a") as f:
            f.write(json.dumps({"step": state.global_step, "arenas": arenas()}) + "\n")


build = transformers.Trainer.__init__


def with_count(self, *args, **kwargs):
    build(self, *args, **kwargs)
    self.add_callback(Count())


transformers.Trainer.__init__ = with_count
if numpy_data:
    load = train.load_data
    train.load_data = lambda *a, **k: tuple(ds.with_format("numpy") for ds in load(*a, **k))
train.main(sys.argv[3:])
'''

TEST_ARENAS = f'''
"""S1's clean Trainer script as is, longer, without pymalloc, with its arenas counted, and with a leak planted."""
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_s1_script import SCRIPT

HERE = Path(__file__).resolve().parent
CASES = {CASES!r}
S1 = replace(SCRIPT, command=[*SCRIPT.command, "--keep_hidden_mib", "{{keep_hidden_mib}}"],
             params={{**SCRIPT.params, "keep_hidden_mib": 0}})


def scenario(label, steps, how):
    s1 = S1.with_params(max_steps=steps, keep_hidden_mib={LEAK_MIB} if how == "leak" else 0)
    if how == "malloc":
        return replace(s1, env={{"PYTHONMALLOC": "malloc"}})
    if how.startswith("counted"):
        tag = str(list(CASES).index(label))
        return replace(s1, command=[sys.executable, str(HERE / "arenas.py"), tag, how.split()[-1], *s1.command[2:]])
    return s1


@pytest.mark.gpu_budget(ram="{BUDGET}", steps={DECLARED})
@pytest.mark.parametrize("label", list(CASES))
def test_s1_script(gpu_budget, label):
    gpu_budget.measure(scenario(label, *CASES[label]), label=label)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="fresh sessions")
    parser.add_argument("--keep", type=Path, default=None, help="a folder to keep the project in (assets reused)")
    args = parser.parse_args()
    from gpu_budget.judge import growth

    data = {"runs": args.runs, "declared_steps": DECLARED, "budget": BUDGET, "cases": CASES, "leak_mib": LEAK_MIB,
            "ram_allowance_used": growth.RAM_ALLOWANCE, "sessions": []}
    save = saver(SECTION, data)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="growth-arenas-"))
    folder.mkdir(parents=True, exist_ok=True)
    write_project(folder)
    (folder / "arenas.py").write_text(ARENAS_PY)
    (folder / "test_arenas.py").write_text(TEST_ARENAS)
    for i in range(args.runs):
        print(f"growth_arenas: session {i + 1} of {args.runs} ({time.strftime('%H:%M')})", flush=True)
        counts, empty = folder / "arenas", folder / "baselines-empty"
        for gone in (counts, empty):
            shutil.rmtree(gone, ignore_errors=True)
        counts.mkdir()
        done = session(folder, "arenas", ["test_arenas.py"], empty, env={"ARENAS_OUT": str(counts)})
        for row in done["rows"]:
            tag = counts / f"{list(CASES).index(row['case'])}.jsonl"
            row["arenas"] = [json.loads(line)["arenas"] for line in tag.read_text().splitlines()] if tag.exists() else None
        data["sessions"].append(done)
        save()
    save(done=True)
    print("\n".join(section(json.loads((RESULTS / f"{SECTION}.json").read_text()))))


# -- the figures, from the JSON (RESULTS.md section 5j; tests/docs/test_growth_arenas_report.py asserts them) ------

def reading(row: dict, declared: int) -> tuple[float, bool, bool]:
    """The rule in force on the row's steps (judge/growth.py check under the row's budget and `declared`): the growth
    it judged (bytes/step), whether that is growth past its allowance, and whether it breaks the budget."""
    from gpu_budget.judge import growth
    from gpu_budget.model.budget import Budget
    from gpu_budget.model.figures import Peaks, Step

    records = [Step(step=s["step"], ram=s["ram"], ram_tree=s["ram_tree"]) for s in row["steps"]]
    peak = row["peaks"]["ram_tree"]
    checked = growth.check(records, Peaks(ram=peak, ram_tree=peak), Budget(ram=row["projection"]["budget"]), declared)
    g = checked.projections[0].growth
    return g.slope, g.grows, bool(checked.breaches)


def most_at(arenas: list[int]) -> int:
    """The step at which the arena count first reached the most it held in the run."""
    return arenas.index(max(arenas)) + 1


def summary(res: dict) -> dict:
    """Per case: sessions, the growth the rule reads, how many read growth and how many break the budget, the peaks,
    how far the steps rose over step 2's (the first after the optimizer state's); for counted cases the most arenas
    held over step 1's count, the step that count was first reached at, and the arenas held at step 10 over step 1's."""
    out = {}
    for label in res["cases"]:
        rows = [r for s in res["sessions"] for r in s["rows"] if r["case"] == label]
        read = [reading(r, res["declared_steps"]) for r in rows]
        counted = [r["arenas"] for r in rows if r.get("arenas")]
        out[label] = {"sessions": len(rows), "growth": [g for g, _, _ in read], "grows": sum(x for _, x, _ in read),
                      "breaks": sum(b for _, _, b in read), "failed": sum(not r["passed"] for r in rows),
                      "peaks": [r["peaks"]["ram_tree"] for r in rows],
                      "plateau": [max(s["ram_tree"] for s in r["steps"][-5:]) for r in rows],
                      "rise": [max(s["ram_tree"] for s in r["steps"][1:]) - r["steps"][1]["ram_tree"] for r in rows],
                      "added": [max(a) - a[0] for a in counted], "most_at": [most_at(a) for a in counted],
                      "by_10": [a[9] - a[0] for a in counted if len(a) >= 10]}
    return out


def section(res: dict | None) -> list[str]:
    """Section 5j from growth_arenas.json: each case's reading over the sessions, and the arenas counted."""
    out = ["## 5j. Growth: what S1's clean Trainer script grows by (Python's arenas)", ""]
    if res is None or not res.get("sessions"):
        return out + missing(SECTION, SECTION)
    s = summary(res)
    partial = incomplete(res)
    out += [ran(res) + partial, "",
            (f"Fresh `python -m pytest --gpu-budget -n 2` sessions (`benchmarks/growth_arenas.py`), each case S1's "
             f"Trainer script under `ram=\"{res['budget']}\", steps={res['declared_steps']:,}` with no baseline, read "
             f"by the rule in force against the host-RAM allowance of {res['ram_allowance_used'] / 1024:.0f} KiB/step. "
             "Arenas: pymalloc's, counted at each optimizer step's end by a Trainer callback of a wrapper that "
             "imports the script unchanged."), "",
            ("| case | sessions | growth read, MiB/step (min .. max) | read as growth | failed by the rule | "
             "peak RAM tree, MiB | its last 5 steps' top, MiB | top over step 2's, MiB | arenas added over step 1's, at the "
             "most | step of the most |"),
            "|---|---|---|---|---|---|---|---|---|---|"]
    for label, c in s.items():
        out.append(f"| {label} | {c['sessions']} | {span([g / MIB for g in c['growth']], '.3f')} | {c['grows']} | "
                   f"{c['breaks']} | {span([p / MIB for p in c['peaks']], '.1f')} | "
                   f"{span([p / MIB for p in c['plateau']], '.1f')} | {span([r / MIB for r in c['rise']], '.1f')} | "
                   f"{span(c['added'], 'd')} | "
                   f"{span(c['most_at'], 'd')} |")
    return out + [""]


if __name__ == "__main__":
    main()
