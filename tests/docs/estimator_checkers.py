"""The checkers of docs/estimator.md's figures: its committed reports', so neither can drift alone.

The validation and estimate tables are rendered from docs/estimator-results/*.json by the CLI's own
renderer; the speed table from benchmarks/results/estimator_speed.json by benchmarks/estimator_speed.py; every
figure in the prose is recomputed from the same files, the summary at the top ("In short") included.
Each checker returns what it verified, for the sweep (test_figure_sweep.py); test_estimator_doc_figures.py
runs each as a test.
"""

import statistics

from doc_figures import GiB, MiB, constant, document, flat, load, section, shows

DOC = "docs/estimator.md"


def _rows() -> dict:
    return {r["label"]: r for r in load("docs/estimator-results/tiny-cpu-validation.json")["rows"]}


def _estimates() -> dict:
    return {r["label"]: r for r in load("docs/estimator-results/real-cuda-estimates.json")["estimates"]}


def _savings_error(fix: str) -> float:
    """Estimated minus measured saving of a fix, in MiB (the fix's row against its scenario's as-reported row)."""
    rows = _rows()
    before, after = rows[f"{fix.split()[0]} as-reported"], rows[fix]
    return ((before["estimate"] - after["estimate"]) - (before["measured_step_peak"] - after["measured_step_peak"])) / MiB


def estimator_tables() -> list[str]:
    from gpu_budget.estimate.rows import EstimateRow, Validation
    from gpu_budget.estimate.tables import error_table, estimate_table
    from gpu_budget.units import format_size

    validation = load("docs/estimator-results/tiny-cpu-validation.json")
    estimates = [EstimateRow.from_json(r) for r in load("docs/estimator-results/real-cuda-estimates.json")["estimates"]]
    tables = [error_table(Validation.from_json(validation)), f"Floor: {format_size(validation['floor'])}.",
              estimate_table(estimates, cuda=True)]
    doc = document(DOC)
    for table in tables:
        assert table in doc, f"docs/estimator.md should show:\n{table}"
    return tables


def estimator_savings() -> list[str]:
    rows, doc = _rows(), document(DOC)
    table = doc[doc.index("| fix | estimated saving, MiB |"):].split("\n\n")[0].splitlines()
    assert len(table) == 2 + 5
    for line in table[2:]:
        fix, est, real, err = (c.strip() for c in line.strip("|").split("|"))
        scenario = fix.split()[0]
        before, after = rows[f"{scenario} as-reported"], rows[fix]
        est_saving = (before["estimate"] - after["estimate"]) / MiB
        real_saving = (before["measured_step_peak"] - after["measured_step_peak"]) / MiB
        assert abs(float(est.replace(",", "")) - est_saving) <= 0.051, line
        assert abs(float(real.replace(",", "")) - real_saving) <= 0.051, line
        assert abs(float(err) - (est_saving - real_saving)) <= 0.11, line
    return ["\n".join(table)]


def estimator_validation_prose() -> list[str]:
    rows = _rows()
    rel = [r["error"] / r["measured_added"] for r in rows.values()]
    pairs = ", ".join(f"S{n} {rows[a]['error'] / MiB:.0f}/{rows[b]['error'] / MiB:.0f} MiB" for n, a, b in (
        (2, "s2 as-reported", "s2 max_duration"), (3, "s3 as-reported", "s3 trainable_token_indices"),
        (4, "s4 as-reported", "s4 fixed"), (5, "s5 as-reported", "s5 smaller_batch")))
    inc = [-r["increment_error"] / MiB for r in rows.values()]
    assert min(inc) > 0  # "always under"
    return shows(section(DOC, "Reading the table:", "## Real-scale estimates"),
                 f"({max(rel) * 100:.0f} % to {min(rel) * 100:.0f} %)", f"({pairs})",
                 f"within {min(inc):.0f}-{max(inc):.0f} MiB, always under",
                 f"S1's savings error ({_savings_error('s1 truncate'):.0f} MiB)")


def estimator_real_prose() -> list[str]:
    est = _estimates()
    seconds = [r["estimate_seconds"] for r in est.values()]
    gib = {k: r["estimate"] / GiB for k, r in est.items()}
    reserved = {k: r["reserved_peak"] / GiB for k, r in est.items()}
    s2 = est["s2 as-reported"]["at_peak"]
    return shows(section(DOC, "## Real-scale estimates", "## Speed"),
                 f"Each case took {min(seconds):.1f}-{max(seconds):.0f} s",
                 f"the estimated tensors reach {max(gib.values()):.0f} GiB",
                 f"in full is estimated at {gib['s3 7B as-reported']:.1f} GiB",
                 f"{est['s3 7B as-reported']['facts']['trainable_params'] / 1e9:.2f} B trainable",
                 f"at {gib['s3 7B trainable_token_indices']:.1f} GiB (no embeddings: "
                 f"{gib['s3 7B no-embedding-training']:.1f} GiB)",
                 f"{gib['s4 8B as-reported']:.1f} GiB; PEFT first", f"on) {gib['s4 8B fixed']:.1f} GiB",
                 f"the step reserves {reserved['s3 7B as-reported']:.1f} GiB as reported and "
                 f"{reserved['s3 7B trainable_token_indices']:.1f} GiB training the new rows only",
                 f"reserved through the allocator's rules, {reserved['s4 8B as-reported']:.1f} GiB and "
                 f"{reserved['s4 8B fixed']:.1f} GiB",
                 f"{s2['parameters'] / MiB:.0f} MiB of parameters", f"{s2['optimizer_state'] / MiB:,.0f} MiB of new AdamW")


def estimator_speed() -> list[str]:
    from benchmarks.estimator_speed import estimator_speed_table

    table = "\n".join(estimator_speed_table(load("benchmarks/results/estimator_speed.json")))
    ratios = [r["real_seconds"] / r["estimate_seconds"] for r in _rows().values()]
    big = [r["estimate_seconds"] for k, r in _estimates().items() if k.startswith(("s3 7B", "s4 8B"))]
    return shows(section(DOC, "## Speed", "## Exploration"), table,
                 f"{min(ratios):.1f}x to {max(ratios):.1f}x, median {statistics.median(ratios):.1f}x",
                 f"a 7B/8B step in {min(big):.1f}-{max(big):.1f} s")


def estimator_cuda_rounding() -> list[str]:
    granule = constant("plugin/gpu_budget/estimate/cuda.py", "CUDA_GRANULE")
    workspace = constant("plugin/gpu_budget/estimate/cuda.py", "CUBLAS_WORKSPACE")
    allocator = {name: constant("plugin/gpu_budget/estimate/allocator.py", name) // MiB
                 for name in ("SMALL_BUFFER", "LARGE_BUFFER", "SMALL")}
    return shows(flat(document(DOC)), f"every block rounded up to {granule} bytes",
                 f"{workspace // MiB} MiB each on compute capability 9 and later",
                 f"{allocator['SMALL_BUFFER']} MiB and {allocator['LARGE_BUFFER']} MiB segments",
                 f"split only when more than {allocator['SMALL']} MiB would remain")


def estimator_summary() -> list[str]:
    gib = {k: r["estimate"] / GiB for k, r in _estimates().items()}
    err = [-r["error"] / MiB for r in _rows().values()]
    fixes = ("s1 truncate", "s2 max_duration", "s3 trainable_token_indices", "s4 fixed", "s5 smaller_batch")
    others = [abs(_savings_error(f)) for f in fixes if f != "s1 truncate"]
    return shows(section(DOC, "## In short", "## What the estimator does"),
                 f"(S3 as reported: {gib['s3 7B as-reported']:.1f} GiB; S4 wrapped first: {gib['s4 8B as-reported']:.1f} GiB, "
                 f"fixed: {gib['s4 8B fixed']:.1f} GiB)",
                 f"the estimate sits {min(err):.0f}-{max(err):.0f} MiB under",
                 f"predicted within {min(others):.0f}-{max(others):.0f} MiB except on S1 "
                 f"({_savings_error('s1 truncate'):.0f} MiB)")


ESTIMATOR_CHECKERS = (estimator_summary, estimator_tables, estimator_savings, estimator_validation_prose,
                      estimator_real_prose, estimator_speed, estimator_cuda_rounding)
