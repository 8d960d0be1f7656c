"""The JSON report: every judged case's row, the hardware, the gate's problems, notes and explorations, in one file.

Versions: 3 adds `explorations` (each {nodeid, exploration}:
explore.Exploration.to_json); 2 adds `ram_tree` beside `ram` (peaks,
step_peaks, steps; `ram_tree_peak` and `tree` in phases) and
`ram_tree_method`; version 1 reports hold the main process only. Added
within version 3, which a reader may do without: `environments` (each
environment a case declared or a sweep made, as each session process got it
ready: results.EnvironmentRecord, its `seconds` and whether it was `cached`;
one that could not be made has its `error`, the tool's key line, `seconds`
being what failing took, and `remembered`: true where the failure was read
from an earlier run's attempt, not tried: isolate/env_failures.py), and a
row's `environment` and `sweep` (results.SweepPoint); `git`, the commit the
session measured and whether its tree was dirty ({"commit", "dirty"}:
report.revision.state), null where git cannot tell; a row's `test_outcome`,
pytest's word on the test around the case ("passed", "failed", "error",
"skipped", "xfailed", "xpassed"; null
where it never reported, and in rows written before), beside `passed`, the
gate's word on the case alone, and `test_failure`, the first line of pytest's
reason where the test failed (session/held.py); a row's `params`, the knobs
the case ran with (its scenario's at its scale, its fixes' included; absent
in rows written before, read back as None); an exploration's `envelope` knob
as {"range": [lo, hi]} or {"values": [...]} (written before as a bare list,
either of the two unsaid, read back as {"listed": [...]} and written back
as it was).
Rows are results.Result.to_json(). Written atomically (a temp file of this write's own + rename: outputs.write_whole).
"""

from __future__ import annotations

import json
from pathlib import Path

from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.result import EnvironmentRecord, Result
from gpu_budget.report.outputs import write_whole

REPORT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)



def write_json(path: str | Path, rows: list[Result], hardware: JsonMapping | None, problems: list[str] = (),
               notes: list[JsonMapping] = (), explorations: list[JsonMapping] = (),
               environments: list[EnvironmentRecord] = (), git: JsonMapping | None = None) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # gate_problems: session-level failures (the fail-safe: nothing measured, no GPU, no baselines folder)
    # notes: measured findings that are not one case's peak (a bisection's boundary), from gpu_budget.note()
    # explorations: what each gpu_budget.explore() found (explore.Exploration.to_json)
    # git: the commit measured and whether the tree was dirty (revision.state), None where git cannot tell
    data = {"version": REPORT_VERSION, "hardware": hardware, "git": git, "gate_problems": list(problems),
            "results": [r.to_json() for r in rows],
            "notes": list(notes), "explorations": list(explorations),
            "environments": [e.to_json() for e in environments]}
    write_whole(path, json.dumps(data, indent=2) + "\n")  # a failed write leaves no half-written file beside it
