"""Where the driver's compute cache is, and its size read from outside (measure/compute_cache.py)."""

from pathlib import Path

from gpu_budget.measure import compute_cache


def test_the_folder_is_cuda_cache_path_else_the_drivers_default_under_home():
    assert compute_cache.folder({"CUDA_CACHE_PATH": "/x/cache", "HOME": "/h"}) == Path("/x/cache")
    assert compute_cache.folder({"HOME": "/h"}) == Path("/h/.nv/ComputeCache")
    assert compute_cache.folder({"CUDA_CACHE_PATH": "", "HOME": "/h"}) == Path("/h/.nv/ComputeCache")


def test_the_size_counts_every_file_below_and_is_0_for_a_missing_folder(tmp_path):
    assert compute_cache.size(tmp_path / "absent") == 0
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "index").write_bytes(b"1" * 100)
    (tmp_path / "a" / "b" / "kernel").write_bytes(b"2" * 4000)
    assert compute_cache.size(tmp_path) == 4100
