"""memtests/test_s2_paraformer.py's claims about where a step's peak comes from hold on the committed reports.

Its as-reported test asserted on every host that the step with the longest clip
holds the peak; on the H200 at real scale pytest failed it in both runs (the
logs in benchmarks/results/gpu-logs/). These tests read the committed rows
through the test's own predicates: the longest-clip claim where the activations
set the peak, the optimizer update's where they do not.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

from benchmarks.gpu_reports import load

ROOT = Path(__file__).resolve().parents[2]
AS_REPORTED = "memtests/test_s2_paraformer.py::test_as_reported::as-reported"


@pytest.fixture(scope="module")
def s2():
    """The memtest module itself (its runners' package, memtests/, on the path as pytest puts it)."""
    sys.path.insert(0, str(ROOT / "memtests"))
    try:
        spec = importlib.util.spec_from_file_location("s2_claims_memtest", ROOT / "memtests/test_s2_paraformer.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "memtests"))


def row(stem: str, nodeid: str = AS_REPORTED) -> dict:
    return next(r for r in load(stem)["results"] if r["nodeid"] == nodeid)


def series(r: dict) -> tuple[list[int], list[float]]:
    metric = "ram" if r["device"] == "cpu" else "vram_allocated"
    return [s[metric] for s in r["steps"]], [s["longest_s"] for s in r["info"]["steps"]]


@pytest.mark.parametrize("stem", ["gpu-real-1", "gpu-real-2"])
def test_on_cuda_at_real_scale_the_update_sets_the_peak_not_the_longest_clip(s2, stem):
    """What failed on the H200 (test_s2_paraformer.py's old assertion) is false there; what it asserts now holds,
    for as reported and for the allocator's fixes alike."""
    r = row(stem)
    assert (r["device"], r["scale"]) == ("cuda", "real")
    peaks, longest = series(r)
    assert not s2.longest_clip_sets_the_peak(peaks, longest)
    for fixed in ("test_cuda_fix[empty_cache]::empty_cache", "test_cuda_fix[expandable_segments]::expandable_segments"):
        other = row(stem, f"memtests/test_s2_paraformer.py::{fixed}")
        assert s2.update_sets_the_peak(series(other)[0], other["info"]["params"])
    assert s2.update_sets_the_peak(peaks, r["info"]["params"])


@pytest.mark.parametrize("stem", ["suite-real-test_s2_paraformer", "suite-tiny-all", "gpu-h200-tiny-2", "gpu-tiny-1a"])
def test_where_the_activations_set_the_peak_the_longest_clip_holds_it(s2, stem):
    """On the CPU at both scales and on CUDA at tiny scale the longest clip's step peaks, and the steps are not flat:
    the real-scale CUDA assertion would fail there, so the two claims tell the cases apart."""
    r = row(stem)
    peaks, longest = series(r)
    assert s2.longest_clip_sets_the_peak(peaks, longest)
    assert max(peaks) - min(peaks) > s2.FLAT * max(peaks)
