"""docs/gpu-results.md is what benchmarks/gpu_results.py renders from the committed GPU reports, to the byte."""

from doc_checkers import gpu_results_page
from doc_figures import document


def test_the_gpu_results_page_is_rendered_from_the_reports():
    gpu_results_page()


def test_the_page_counts_what_the_reports_hold():
    """The headline counts are the reports' own: a case whose allocated peak moved would not be counted exact."""
    from benchmarks import gpu_results

    first, second = gpu_results.rows(*gpu_results.FIRST), gpu_results.rows(gpu_results.SECOND)
    moved = {k: {**v, "peaks": {**v["peaks"], "vram_allocated": v["peaks"]["vram_allocated"] + 512}}
             for k, v in second.items() if v["peaks"].get("vram_allocated") and v["verdict"] != "error"}
    _, counts = gpu_results.reproduction(first, {**second, **dict(list(moved.items())[:1])})
    _, clean = gpu_results.reproduction(first, second)
    assert counts["exact"] == clean["exact"] - 1 and counts["both"] == clean["both"]


def test_both_sections_count_an_errored_case_by_one_rule():
    """A case that ended in an error in either run is counted apart and left out of the comparison, on the H100
    and on the H200 alike; the page says how many, in the words of both sections."""
    from benchmarks import gpu_results

    page = document("docs/gpu-results.md")
    for first, second in ((gpu_results.rows(*gpu_results.FIRST), gpu_results.rows(gpu_results.SECOND)),
                          (gpu_results.rows(gpu_results.H200[0]), gpu_results.rows(gpu_results.H200[1]))):
        table, n = gpu_results.reproduction(first, second)
        errors = {k for k, r in first.items() if r["peaks"].get("vram_allocated") is not None
                  and "error" in (r["verdict"], second.get(k, {}).get("verdict"))}
        assert n["errored"] == len(errors) > 0 and n["compared"] == n["with_cuda"] - len(errors)
        assert not [k for k in errors if f"| {gpu_results._case(k)} |" in "\n".join(table)]
        assert gpu_results.counted(n) in page
        one = next(k for k, r in second.items() if r["verdict"] != "error" and k in first and k not in errors
                   and first[k]["peaks"].get("vram_allocated") is not None)
        _, broke = gpu_results.reproduction(first, {**second, one: {**second[one], "verdict": "error"}})
        assert (broke["errored"], broke["compared"]) == (n["errored"] + 1, n["compared"] - 1)
