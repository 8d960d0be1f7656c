"""docs/estimator.md's figures are its committed reports', checked here, so neither can drift alone.

The validation and estimate tables are rendered from docs/estimator-results/*.json by the CLI's own
renderer; the speed table from benchmarks/results/estimator_speed.json by benchmarks/report.py; every
figure in the prose is recomputed from the same files. README's estimator paragraph quotes the same.
"""

import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MiB, GiB = 2**20, 2**30


def _load(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def _doc() -> str:
    return (ROOT / "docs" / "estimator.md").read_text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def _rows() -> dict:
    return {r["label"]: r for r in _load("docs/estimator-results/tiny-cpu-validation.json")["rows"]}


def _estimates() -> dict:
    return {r["label"]: r for r in _load("docs/estimator-results/real-cuda-estimates.json")["estimates"]}


def test_the_tables_are_rendered_from_the_committed_json():
    from gpu_budget.estimate.tables import error_table, estimate_table
    from gpu_budget.units import format_size

    doc = _doc()
    validation = _load("docs/estimator-results/tiny-cpu-validation.json")
    assert error_table(validation) in doc
    assert f"Floor: {format_size(validation['floor'])}." in doc
    assert estimate_table(_load("docs/estimator-results/real-cuda-estimates.json")["estimates"], cuda=True) in doc


def test_the_savings_table_is_the_validation_rows():
    rows, doc = _rows(), _doc()
    table = doc[doc.index("| fix | estimated saving, MiB |"):].split("\n\n")[0].splitlines()[2:]
    assert len(table) == 5
    for line in table:
        fix, est, real, err = (c.strip() for c in line.strip("|").split("|"))
        scenario = fix.split()[0]
        before, after = rows[f"{scenario} as-reported"], rows[fix]
        est_saving = (before["estimate"] - after["estimate"]) / MiB
        real_saving = (before["measured_step_peak"] - after["measured_step_peak"]) / MiB
        assert abs(float(est.replace(",", "")) - est_saving) <= 0.051, line
        assert abs(float(real.replace(",", "")) - real_saving) <= 0.051, line
        assert abs(float(err) - (est_saving - real_saving)) <= 0.11, line


def test_the_prose_figures_are_the_validation_rows():
    rows, doc = _rows(), _flat(_doc())
    rel = [r["error"] / r["measured_added"] for r in rows.values()]
    assert f"({max(rel) * 100:.0f} % to {min(rel) * 100:.0f} %)" in doc
    pairs = ", ".join(f"S{n} {rows[a]['error'] / MiB:.0f}/{rows[b]['error'] / MiB:.0f} MiB" for n, a, b in (
        (2, "s2 as-reported", "s2 max_duration"), (3, "s3 as-reported", "s3 trainable_token_indices"),
        (4, "s4 as-reported", "s4 fixed"), (5, "s5 as-reported", "s5 smaller_batch")))
    assert f"({pairs})" in doc
    inc = [-r["increment_error"] / MiB for r in rows.values()]
    assert f"within {min(inc):.0f}-{max(inc):.0f} MiB, always under" in doc and min(inc) > 0
    s1 = ((rows["s1 as-reported"]["estimate"] - rows["s1 truncate"]["estimate"])
          - (rows["s1 as-reported"]["measured_step_peak"] - rows["s1 truncate"]["measured_step_peak"])) / MiB
    assert f"S1's savings error ({s1:.0f} MiB)" in doc


def test_the_real_scale_prose_is_the_estimates():
    est, doc = _estimates(), _flat(_doc())
    seconds = [r["estimate_seconds"] for r in est.values()]
    assert f"Each case took {min(seconds):.1f}-{max(seconds):.0f} s" in doc
    gib = {k: r["estimate"] / GiB for k, r in est.items()}
    assert f"in full is estimated at {gib['s3 7B as-reported']:.1f} GiB" in doc
    assert f"{est['s3 7B as-reported']['facts']['trainable_params'] / 1e9:.2f} B trainable" in doc
    assert f"{gib['s3 7B trainable_token_indices']:.1f}" == f"{gib['s3 7B no-embedding-training']:.1f}"
    assert f"at {gib['s3 7B trainable_token_indices']:.1f} GiB" in doc
    assert f"{gib['s4 8B as-reported']:.1f} GiB; PEFT first" in doc and f"on) {gib['s4 8B fixed']:.1f} GiB" in doc
    s2 = est["s2 as-reported"]["at_peak"]
    assert f"{s2['parameters'] / MiB:.0f} MiB of parameters" in doc
    assert f"{s2['optimizer_state'] / MiB:,.0f} MiB of new AdamW" in doc


def test_the_speed_figures_are_the_committed_runs():
    from benchmarks.report import estimator_speed_table

    doc, flat = _doc(), _flat(_doc())
    assert "\n".join(estimator_speed_table(_load("benchmarks/results/estimator_speed.json"))) in doc
    ratios = [r["real_seconds"] / r["estimate_seconds"] for r in _rows().values()]
    assert f"{min(ratios):.1f}x to {max(ratios):.1f}x, median {statistics.median(ratios):.1f}x" in flat
    big = [r["estimate_seconds"] for k, r in _estimates().items() if k.startswith(("s3 7B", "s4 8B"))]
    assert f"a 7B/8B step in {min(big):.1f}-{max(big):.1f} s" in flat


def test_the_readme_estimator_paragraph_is_the_same_reports():
    readme = (ROOT / "README.md").read_text()
    para = _flat(readme[readme.index("## GPU-free estimate and exploration"):readme.index("## Benchmarks")])
    gib = {k: r["estimate"] / GiB for k, r in _estimates().items()}
    assert (f"(S3 as reported: {gib['s3 7B as-reported']:.1f} GiB; S4 wrapped first: {gib['s4 8B as-reported']:.1f} GiB, "
            f"fixed: {gib['s4 8B fixed']:.1f} GiB)") in para
    rows = _rows()
    err = [-r["error"] / MiB for r in rows.values()]
    assert f"the estimate sits {min(err):.0f}-{max(err):.0f} MiB under" in para
    savings = {fix: ((rows[f"{fix.split()[0]} as-reported"]["estimate"] - rows[fix]["estimate"])
                     - (rows[f"{fix.split()[0]} as-reported"]["measured_step_peak"] - rows[fix]["measured_step_peak"])) / MiB
               for fix in ("s1 truncate", "s2 max_duration", "s3 trainable_token_indices", "s4 fixed", "s5 smaller_batch")}
    others = [abs(v) for k, v in savings.items() if k != "s1 truncate"]
    assert (f"predicted within {min(others):.0f}-{max(others):.0f} MiB except on S1 "
            f"({savings['s1 truncate']:.0f} MiB)") in para
