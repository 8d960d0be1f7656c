"""benchmarks/gpu_compare.py: the GPU validation's table sets each estimate beside the figure it estimates."""

from benchmarks.gpu_compare import table

MiB = 2**20


def test_each_estimate_is_set_against_the_figure_it_estimates():
    """The tensors' estimate and the allocator's allocated peak against the measured allocated peak, the reserved
    estimate against the measured reserved peak; run 2's allocated peak against run 1's."""
    row = {"scenario": "s", "fixes": [], "scale": "real", "verdict": "no-baseline", "info": {"nvml_method": "pid"},
           "peaks": {"vram_allocated": 100 * MiB, "vram_reserved": 120 * MiB, "vram_device": 600 * MiB}}
    again = {**row, "peaks": {**row["peaks"], "vram_allocated": 100 * MiB + 512}}
    estimate = {"scenario": "s", "fixes": [], "scale": "real", "estimate": 98 * MiB, "allocated_peak": 99 * MiB,
                "reserved_peak": 126 * MiB}
    text = table({"m.py::t::a": row}, {"m.py::t::a": again}, {("s", (), "real"): estimate})
    cells = [c.strip() for c in text.splitlines()[2].strip("|").split("|")]
    assert cells == ["t::a", "no-baseline", "100.00 MiB", "100.00 MiB", "+512 B", "120.00 MiB", "600.00 MiB", "pid",
                     "yes", "98.00 MiB", "-2.0%", "99.00 MiB", "-1.0%", "126.00 MiB", "+5.0%"]
    unestimated = table({"m.py::t::a": row}, {}, {})
    assert unestimated.splitlines()[2].endswith("| - | - | - | - | - | - |")
