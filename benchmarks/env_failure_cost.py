"""What a sweep environment that cannot be made costs a session: tried, remembered, and tried again on update.

`python -m benchmarks.env_failure_cost` (JSON `benchmarks/results/env_failure_cost.json`). Per rep, a new
environments folder and four pytest sessions of one tiny function case, in this order:

  tried       `--gpu-budget-sweep transformers==4.20.0`: the first session tries to make that environment, and fails
              (it needs tokenizers 0.12.1, which has no wheel for Python 3.11; its source build fails);
  remembered  the same again: the failure is read from the folder, not tried;
  retried     the same with --gpu-budget-update: tried again. The resolution is kept from the first session, so this
              is also what every later session paid before failures were remembered (the install alone);
  plain       the case without a sweep: the session's own wall time, for scale.

Each row keeps the session's wall seconds and the failed environment as the JSON report lists it (its `seconds`,
`error`, `remembered`). The registry is the machine's own (network and pip's configuration as they are).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from benchmarks.common import one_case_session, write

REQUIREMENT = "transformers==4.20.0"
KINDS = (("tried", True, ()), ("remembered", True, ()), ("retried", True, ("--gpu-budget-update",)),
         ("plain", False, ()))

RUNNER = '''
def small(ctx):
    with ctx.meter.phase("load"):
        held = b"\\x01" * (4 << 20)
    return {}
'''

TEST = '''
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="4 GiB")
def test_small(gpu_budget):
    gpu_budget.measure(Scenario(name="small", run="runner:small"))
'''


def _project(folder: Path) -> None:
    (folder / "runner.py").write_text(RUNNER)
    (folder / "test_small.py").write_text(TEST)
    (folder / "pytest.ini").write_text("[pytest]\ngpu_budget_preload =\n")


def _listed(folder: Path, kind: str) -> dict | None:
    """The swept environment as the session's JSON report lists it (None for the plain session)."""
    report = max(folder.glob(f"report-{kind}-*.json"), key=lambda p: p.stat().st_mtime)
    found = [e for e in json.loads(report.read_text())["environments"] if e["requirements"] == [REQUIREMENT]]
    return found[0] if found else None


def sessions(reps: int) -> list[dict]:
    out = []
    for rep in range(reps):
        with tempfile.TemporaryDirectory(prefix="env-failure-cost-") as tmp:
            folder = Path(tmp)
            _project(folder)
            for kind, swept, more in KINDS:
                args = ["--gpu-budget-envs", str(folder / "envs"), "-p", "no:randomly", *more]
                if swept:
                    args += ["--gpu-budget-sweep", REQUIREMENT]
                row, code, wall, _ = one_case_session(folder, kind, args, [str(folder)], {})
                env = _listed(folder, kind)
                point = next((p for p in row.get("sweep") or [] if p["version"] == "4.20.0"), None)
                out.append({"rep": rep, "kind": kind, "exit": code, "wall_s": round(wall, 3),
                            "environment": env, "point_status": None if point is None else point["status"]})
                said = "" if env is None else f", environment {env['seconds']} s, remembered {env.get('remembered')}"
                print(f"rep {rep} {kind}: session {wall:.1f} s{said}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    t0 = time.monotonic()
    found = sessions(args.reps)
    write("env_failure_cost", {"requirement": REQUIREMENT, "sessions": found,
                               "total_s": round(time.monotonic() - t0, 1)})


if __name__ == "__main__":
    main()
