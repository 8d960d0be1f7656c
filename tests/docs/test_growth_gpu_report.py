"""benchmarks/growth_gpu.py's derivation on real measurements: the GPU kit's committed command-part rows, and its own
CPU dry run.

The only GPU runs of S1's Trainer script so far (gpu-command-1, clean, and
gpu-command-3, 1.5 MiB/step kept on the GPU; an H200) measured 8 optimizer
steps: the growth rule needs rises.MIN_STEPS (9), so it reads neither, and the
GPU allowance cannot be derived from them. What they do show, read the way the
module reads every row: the clean run's allocated peak flat to the byte over
its judged steps, and the leak's running peak rising about 1.45 MiB a step
against the 1.5 MiB planted, which the gate of the day (its recorded
projection) failed. The CPU dry run (growth-gpu-cpu-dryrun.json: no GPU
figure) proves the rest of the pipeline: the rule as this module re-applies
it agrees with the gate's own verdicts on every row.
"""

import pytest
from doc_figures import load

from benchmarks.growth_gpu import FLOOR, advice, from_reports, judged, mean_rise, series, summary
from gpu_budget.judge import growth
from gpu_budget.judge.compare import SPREAD_MULTIPLE
from gpu_budget.measure import rises

CLEAN, LEAK = "benchmarks/results/gpu-command-1.report.json", "benchmarks/results/gpu-command-3.report.json"
DRY_RUN = "benchmarks/results/growth-gpu-cpu-dryrun.json"
MiB = 2**20


@pytest.fixture(scope="module")
def gpu() -> dict:
    return from_reports("cuda", [load(CLEAN), load(LEAK)])


def rows(data: dict) -> list[dict]:
    return [r for s in data["sessions"] for r in s["rows"]]


def test_the_committed_gpu_rows_are_one_clean_and_one_planted_run_of_8_steps(gpu):
    clean, leak = rows(gpu)
    assert (clean["planted_mib"], leak["planted_mib"]) == (0.0, 1.5)  # from the measured command's --keep_hidden_mib
    assert clean["device"] == leak["device"] == "cuda" and clean["declared_steps"] == leak["declared_steps"] == 10_000
    assert [s["step"] for s in clean["steps"]] == [s["step"] for s in leak["steps"]] == list(range(1, 9))
    assert len(clean["steps"]) < rises.MIN_STEPS == 9


def test_the_rule_reads_neither_so_no_gpu_allowance_rests_on_them(gpu):
    """8 steps: no growth on any metric, nothing past any allowance, and nothing to set."""
    clean, leak = rows(gpu)
    assert all(g is None for r in (clean, leak) for g in r["growth"].values())
    s = summary(gpu)
    allocated = s["metrics"]["vram_allocated"]
    assert allocated["allowance"] == {"current": growth.ALLOWANCE["vram_allocated"], "derived": None,
                                      "derived_basis": "no clean run long enough for the rule to read (it needs 9 "
                                                       "steps)"}
    assert allocated["clean"]["current"] == allocated["leaking"]["current"] == {"past_allowance": 0, "failed": 0,
                                                                                 "unread": 1, "of": 1}
    assert advice(s).startswith("growth-gpu: nothing to set")


def test_the_clean_allocated_peak_is_flat_and_the_leak_rises_near_its_planted_size(gpu):
    clean, leak = rows(gpu)
    assert clean["mean_rise"]["vram_allocated"] == 0  # flat to the byte over steps 3-7
    assert leak["mean_rise"]["vram_allocated"] == 1_522_048  # 1.45 MiB/step
    planted = summary(gpu)["metrics"]["vram_allocated"]["planted_bytes_per_step"]
    assert planted == [round(1.5 * MiB)] and 0.95 < leak["mean_rise"]["vram_allocated"] / planted[0] < 1
    assert mean_rise(series(leak, "vram_allocated")[:rises.WARMUP + 1 + rises.LAST]) is None  # one judged step: none


def test_the_gate_of_the_day_failed_the_leak_and_passed_the_clean_run(gpu):
    """Their recorded projections (the rule of 2026-11-26, which read 8 steps): the leak's allocated growth broke
    the 1 GiB budget at step 10,000; the clean run's read 0."""
    clean, leak = rows(gpu)
    allocated = {r["label"] + str(r["planted_mib"]): next(p for p in r["projection"]["projections"]
                                                          if p["metric"] == "vram_allocated") for r in (clean, leak)}
    assert allocated["script0.0"]["slope"] == 0 and not allocated["script0.0"]["breaks"]
    assert allocated["script1.5"]["breaks"] and allocated["script1.5"]["budget"] == 2**30


def test_the_dry_run_is_labelled_and_measured_no_gpu_figure():
    data = load(DRY_RUN)
    assert data["device"] == "cpu" and data["dry_run"] and data["complete"]
    assert all(s[m] is None for r in rows(data) for s in r["steps"] for m in ("vram_allocated", "vram_reserved"))
    s = summary(data)
    assert not s["metrics"]["vram_allocated"]["measured"] and advice(s).startswith("growth-gpu: a CPU dry run")


def test_the_rule_re_applied_agrees_with_the_gate_on_every_dry_run_row():
    """judged() with the allowance the session ran under gives the growth, 'grows' and 'breaks' the gate
    recorded for host RAM: summary()'s counts are the rule's."""
    data = load(DRY_RUN)
    for row in rows(data):
        recorded = next(p for p in row["projection"]["projections"] if p["metric"] == "ram_tree")
        again = judged(row, "ram_tree", data["allowance_used"]["ram_tree"])
        assert (again["growth"], again["grows"], again["breaks"]) == \
            (recorded["slope"], recorded["grows"], recorded["breaks"]), row["label"]


def test_the_dry_run_summary_reads_sensibly():
    """Clean runs: no failure, and 6x their largest growth stays below host RAM's committed allowance (or they read
    exactly 0), so the derived one is that floor. A 0.25 MiB leak on host RAM is below the same allowance (984
    KiB/step) and is never caught there: RSS grows in lumps of pages (growth_catalogue's ladder caught 0.25 MiB in 0
    of 10 sessions). On the GPU the leak is kept in allocated memory, whose clean peak is flat to the byte (above)."""
    data = load(DRY_RUN)
    ram = summary(data)["metrics"]["ram_tree"]
    assert ram["clean"]["current"]["failed"] == ram["clean"]["derived"]["failed"] == 0
    assert SPREAD_MULTIPLE * ram["largest_clean_growth"] < FLOOR["ram_tree"] == growth.RAM_ALLOWANCE
    basis = ram["allowance"]["derived_basis"]
    assert ram["allowance"]["derived"] == growth.RAM_ALLOWANCE and ("below the floor" in basis or "exactly 0" in basis)
    assert ram["planted_bytes_per_step"] == [MiB // 4] and len(ram["leak_growth"]) == data["runs"] == 2
    assert all(g <= growth.RAM_ALLOWANCE for g in ram["leak_growth"]), ram["leak_growth"]
    assert ram["leaking"]["current"]["failed"] == ram["leaking"]["derived"]["failed"] == 0
