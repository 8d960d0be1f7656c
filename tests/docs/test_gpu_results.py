"""docs/gpu-results.md is what benchmarks/gpu_results.py renders from the committed GPU reports, to the byte."""

from doc_figures import document


def gpu_results_page() -> list[str]:
    from benchmarks.gpu_results import render

    page = document("docs/gpu-results.md")
    assert page == render(), "docs/gpu-results.md is stale: python -m benchmarks.gpu_results"
    return [page]


def test_the_gpu_results_page_is_rendered_from_the_reports():
    gpu_results_page()


def test_the_page_counts_what_the_reports_hold():
    """The headline counts are the reports' own: a case whose allocated peak moved would not be counted exact."""
    from benchmarks import gpu_results

    first, second = gpu_results.rows(*gpu_results.FIRST), gpu_results.rows(gpu_results.SECOND)
    moved = {k: {**v, "peaks": {**v["peaks"], "vram_allocated": v["peaks"]["vram_allocated"] + 512}}
             for k, v in second.items() if v["peaks"].get("vram_allocated")}
    _, counts = gpu_results.reproduction(first, {**second, **dict(list(moved.items())[:1])})
    _, clean = gpu_results.reproduction(first, second)
    assert counts["exact"] == clean["exact"] - 1 and counts["both"] == clean["both"]
