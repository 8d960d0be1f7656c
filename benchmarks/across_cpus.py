"""Section 7b, another CPU model: the tiny gate against baselines recorded on a CPU of another model.

The committed CPU baselines were recorded on one runner of this pool; a CI job
may land on a runner of another CPU model (the same x86-64 level, the same AVX2
pin, kernel, glibc and packages: only `cpu` differs in the fingerprint). Fresh
gate sessions here (`pytest --gpu-budget memtests -n 2`, CI=true, against the
committed baselines, nothing written: benchmarks/setups.py's `gate`) give each
case's host RAM change from its baseline with the import floor's difference
taken off, as the gate compares it, beside how far the same case moved between
the sessions on this one host. A move shared by every session and larger than
that spread is the CPU model's, not noise. Detection: how many cases a +2 %
regression (of the baseline's peak, retained for the whole run) would still
fail on this host, the clean change plus 2 % against the case's allowance.

    python -m benchmarks.across_cpus [--sessions 3] [--python VENV/bin/python --venv WHAT --add]

`--add` keeps the committed sessions and adds those of another venv (a fresh
clone's, made by the README command): a move two venvs share on one host is
not the venv's.
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.common import MIB, RESULTS, fingerprint, ran, span, write
from benchmarks.setups import gate

SECTION = "across_cpus"
PLANT = 0.02  # the planted regression RESULTS.md sections 5, 5d and 7 plant


def measure(sessions: int, python: str, venv: str, earlier: list[dict]) -> dict:
    """`sessions` fresh gate sessions of `python` (its venv named `venv`), after the `earlier` ones of another run."""
    runs, stamp = list(earlier), fingerprint()
    ran = f"{stamp['date']} at {stamp['commit']}" + (", with uncommitted edits" if (stamp["git"] or {}).get("dirty") else "")
    for k in range(sessions):
        runs.append({**gate(f"across-cpus {k + 1}", python, {}, []), "venv": venv, "ran": ran})
        print(f"across_cpus: session {k + 1} of {sessions} done", flush=True)
    return {**fingerprint(), "sessions": runs}


def cases(data: dict) -> list[dict]:
    """Per case measured in every session: the baseline's CPU, the change per session (MiB, floor taken off, and as a
    share of the baseline), the allowance, and whether a +2 % plant would still pass the allowance."""
    by_case: dict[str, list[dict]] = {}
    for run in data["sessions"]:
        for row in run["rows"]:
            if (row.get("change") or {}).get("ram_tree") is not None and row.get("baseline"):
                by_case.setdefault(row["nodeid"], []).append(row)
    out = []
    for nodeid, rows in by_case.items():
        if len(rows) != len(data["sessions"]):
            continue
        base = rows[0]["baseline"]["ram_tree"]
        shares = [r["change"]["ram_tree"] for r in rows]
        tolerance = rows[0].get("tolerance") or {"rel": 0.005, "abs": 4 * MIB}
        allowance = base * tolerance["rel"] + tolerance["abs"]
        worst = min(shares)  # the plant lands on the lowest clean reading first
        module, _, rest = nodeid.removeprefix("memtests/").partition("::")
        out.append({"case": f"{module.removesuffix('.py')}::{rest.rsplit('::', 1)[0]}", "baseline_mib": base / MIB,
                    "changes_mib": [s * base / MIB for s in shares], "shares": shares,
                    "allowance_mib": allowance / MIB, "verdicts": sorted({r["verdict"] for r in rows}),
                    "quiet": sorted({q for r in rows for q in ((r.get("setup") or {}).get("quiet") or [])}),
                    "policy": sorted({(r.get("setup") or {}).get("policy") or "-" for r in rows}),
                    "plant_margin_mib": ((worst + PLANT) * base - allowance) / MIB,
                    "plant_caught": (worst + PLANT) * base > allowance})
    return sorted(out, key=lambda c: min(c["shares"]))


def _venvs(data: dict) -> str:
    """'3 in this checkout's venv (run 2026-11-30 08:38 at 992ca04), 2 in a fresh clone's venv (...)': the venvs the
    sessions ran in, in order, and when (a run with --add keeps the earlier run's sessions)."""
    runs: list[list] = []
    for run in data["sessions"]:
        venv = (run.get("venv", "this checkout's venv"), run.get("ran", f"{data['run']['date']} at {data['run']['commit']}"))
        if runs and runs[-1][1] == venv:
            runs[-1][0] += 1
        else:
            runs.append([1, venv])
    return ", ".join(f"{n} in {venv} (run {ran})" for n, (venv, ran) in runs)


def section(data: dict) -> list[str]:
    rows = cases(data)
    host = data["sessions"][0]["hardware"].get("cpu")
    quiet = sorted({q for c in rows for q in c["quiet"]})
    lines = [
        "## 7b. Another CPU model: the gate against baselines recorded on another",
        "",
        ran(data),
        "",
        (f"Fresh sessions of the whole tiny gate (`benchmarks/across_cpus.py`; {len(data['sessions'])} sessions, "
         f"`CI=true`, `-n 2`; their venvs in order: {_venvs(data)}) on this host ({host}) against the committed CPU "
         "baselines, nothing written. The "
         f"fingerprint differs in {', '.join(quiet) or 'nothing'} alone. The change is the gate's: host RAM with "
         "the import floor's difference taken off, against the baseline; the allowance is the case's tolerance "
         "over its baseline; a +2 % plant is caught where the lowest clean reading plus 2 % of the baseline is past "
         "the allowance."),
        "",
        ("| case | baseline, MiB | change per session, MiB | change, % | spread between sessions, MiB | allowance, MiB "
         "| verdicts | a +2 % plant past the allowance by, MiB |"),
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in rows:
        changes = c["changes_mib"]
        lines.append(f"| {c['case']} | {c['baseline_mib']:.1f} | {', '.join(f'{x:+.2f}' for x in changes)} | "
                     f"{span([100 * s for s in c['shares']], '+.2f')} | {max(changes) - min(changes):.2f} | "
                     f"{c['allowance_mib']:.2f} | {', '.join(c['verdicts'])} | {c['plant_margin_mib']:+.2f}"
                     f"{'' if c['plant_caught'] else ' (missed)'} |")
    every = [x for c in rows for x in c["changes_mib"]]
    shares = [100 * s for c in rows for s in c["shares"]]
    spreads = [max(c["changes_mib"]) - min(c["changes_mib"]) for c in rows]
    missed = [c["case"] for c in rows if not c["plant_caught"]]
    lines += ["", (f"**Summary.** Over {len(rows)} cases measured in every session, host RAM moved "
                   f"{min(every):+.2f} .. {max(every):+.2f} MiB ({min(shares):+.2f}% .. {max(shares):+.2f}%) from "
                   f"baselines recorded on the other CPU model, while each case moved at most {max(spreads):.2f} MiB "
                   f"between sessions here (median {sorted(spreads)[len(spreads) // 2]:.2f}): the CPU model moves the "
                   f"peak itself, past the import floor. A +2 % plant would pass {len(missed)} of {len(rows)} cases "
                   f"on this host{': ' + ', '.join(missed) if missed else ''}; "
                   f"{sum(0 < c['plant_margin_mib'] < 1 for c in rows)} more would catch it by less than 1 MiB."), ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="the interpreter of the venv the gate runs in")
    parser.add_argument("--venv", default="this checkout's venv", help="what that venv is, for the report (\"a fresh clone's venv\")")
    parser.add_argument("--add", action="store_true", help="keep the committed run's sessions and add these")
    args = parser.parse_args()
    earlier = json.loads((RESULTS / f"{SECTION}.json").read_text())["sessions"] if args.add else []
    write(SECTION, measure(args.sessions, args.python, args.venv, earlier))


if __name__ == "__main__":
    main()
