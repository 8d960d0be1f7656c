"""benchmarks/RESULTS.md is what benchmarks/report.py makes of the committed JSON, byte for byte."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_results_md_is_generated_from_the_committed_json():
    from benchmarks import report

    assert report.render(report.load()) == (ROOT / "benchmarks" / "RESULTS.md").read_text()
