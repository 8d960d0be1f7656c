"""The committed benchmarks/results/tree_sum.json (RESULTS.md section 1c) meets every case's threshold, run by run.

The truth is recomputed here from what the processes read of themselves (each group of children alive together:
the main process's RSS + the children's USS; the largest group), not taken from the benchmark's own verdict, so a
re-run that misses a threshold fails this test.
"""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MiB = 2**20
RUNS = 5  # at least, per case and mode


@pytest.fixture(scope="module")
def rows():
    return json.loads((ROOT / "benchmarks" / "results" / "tree_sum.json").read_text())["rows"]


def truth(facts: dict) -> tuple[int, int, int]:
    """(the true peak, the main process's RSS in its group, the group's children) of the largest group."""
    groups = [(g["main_rss"] + sum(c["uss"] for c in g["children"]), g["main_rss"], sum(c["uss"] for c in g["children"]))
              for g in facts["groups"]]
    return max(groups)


def cases(rows, case):
    chosen = [r for r in rows if r["case"] == case]
    for mode in ("command", "meter"):
        assert sum(r["mode"] == mode for r in chosen) >= RUNS, (case, mode)
    return chosen


def test_sequential_subprocesses_are_one_at_a_time(rows):
    """10 sequential 300-400 MiB subprocesses: the gate's figure within 1.05x of the true peak (one of them at a
    time); the sum of per-process peaks, the loose bound, counts all ten."""
    for r in cases(rows, "sequential"):
        true, main, _ = truth(r["facts"])
        assert len(r["facts"]["groups"]) == 10
        assert 1 / 1.05 <= r["ram_tree"] / true <= 1.05, r
        everyone = main + sum(c["uss"] for g in r["facts"]["groups"] for c in g["children"])
        assert r["loose"] >= 0.95 * everyone, r


def test_concurrent_workers_add_up(rows):
    """2 DataLoader workers holding 300 MiB together: the gate's figure >= 0.95x the true sum, and what it added
    over the main process >= 0.95x the workers' USS."""
    for r in cases(rows, "concurrent"):
        true, main, children = truth(r["facts"])
        assert [len(g["children"]) for g in r["facts"]["groups"]] == [2]
        assert r["ram_tree"] >= 0.95 * true, r
        assert r["ram_tree"] - main >= 0.95 * children, r


def test_a_shell_out_spike_is_counted(rows):
    """A 400 MiB spike held 50 ms in a shell-out: within 5 MiB of the truth."""
    for r in cases(rows, "spike"):
        true, _, children = truth(r["facts"])
        assert children >= 400 * MiB
        assert abs(r["ram_tree"] - true) <= 5 * MiB, r


def test_per_epoch_workers_are_not_tripled(rows):
    """3 epochs of 2 non-persistent workers x 200 MiB: one epoch's workers (within 1.05x of the truth, the addition
    under 1.5 epochs' workers), where the sum of per-process peaks counts about three."""
    for r in cases(rows, "per_epoch"):
        true, main, children = truth(r["facts"])
        assert [len(g["children"]) for g in r["facts"]["groups"]] == [2, 2, 2]
        assert 1 / 1.05 <= r["ram_tree"] / true <= 1.05, r
        assert (r["ram_tree"] - main) / children < 1.5, r
        assert (r["loose"] - main) / children > 2.5, r


def test_an_idle_workers_inherited_pages_count_once_the_parent_copies_them(rows):
    """A worker blocked on a pipe while its parent rewrites the 300 MiB it inherited: both copies are resident, the
    worker's with no fault of its own; the gate's figure within 1.05x of the truth."""
    for r in cases(rows, "idle_worker"):
        true, _, children = truth(r["facts"])
        assert children >= 290 * MiB
        assert 1 / 1.05 <= r["ram_tree"] / true <= 1.05, r


def test_shared_memory_readers_count_the_segment_once(rows):
    """A parent fills a 300 MiB segment, two forked readers map it, read it together and unmap it: the segment once,
    within 1.05x of the truth (before, each reader counted it as its own after its close())."""
    for r in cases(rows, "shm_readers"):
        true, _, _ = truth(r["facts"])
        assert 1 / 1.05 <= r["ram_tree"] / true <= 1.05, r


def test_a_dataloaders_queued_batches_count_though_no_process_maps_them(rows):
    """2 workers x 4 batches of 32 MiB in a DataLoader's queue, held by descriptors in shared memory no process maps:
    /dev/shm holds them all, and the gate's figure is within 1.05x of the truth (before, they counted only while
    their worker mapped them: 34.7 MiB of 128 in tests/unit/test_tree_held.py's runner case)."""
    for r in cases(rows, "queued"):
        true, _, _ = truth(r["facts"])
        (in_flight,) = [c for c in r["facts"]["groups"][0]["children"] if c.get("in_flight")]
        assert in_flight["uss"] >= 256 * MiB, r
        assert 1 / 1.05 <= r["ram_tree"] / true <= 1.05, r
        assert r["tree"]["held"] >= 256 * MiB, r["tree"]


def test_the_benchmarks_verdicts_agree(rows):
    assert all(r["passed"] for r in rows)
