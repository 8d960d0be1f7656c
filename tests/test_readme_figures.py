"""README figures that come from a committed report are checked against it, so neither can drift alone."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MiB, GiB = 2**20, 2**30


def _size(text: str) -> int:
    number, unit = text.split()
    return round(float(number) * {"MiB": MiB, "GiB": GiB}[unit])


def _close(text: str, nbytes: int) -> bool:
    """A size as the README prints it (one or two decimals) against the report's bytes."""
    step = 0.05 * MiB if text.endswith("MiB") else 0.005 * GiB
    return abs(_size(text) - nbytes) <= step


def test_the_remediation_table_is_the_committed_reports():
    report = json.loads((ROOT / "benchmarks/results/remediation-tiny.report.json").read_text())
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("| scenario | budget | as reported | passing set found |"):].split("\n\n")[0]
    lines = table.splitlines()[2:]
    assert len(lines) == len(report["results"])
    for line, row in zip(lines, report["results"], strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        rem = row["remediation"]
        peak = row["peaks"].get("ram_tree") or row["peaks"]["ram"]
        assert _close(cells[1].removeprefix("RAM "), row["budget"]["ram"]), (cells, row["nodeid"])
        assert _close(cells[2], peak), (cells, row["nodeid"])
        assert re.findall(r"`([^`]+)`", cells[3].split(" replacing ")[0]) == rem["found"]
        assert _close(cells[4], rem["peaks"].get("ram_tree") or rem["peaks"]["ram"])
        assert cells[5] == f"{rem['runs']} ({rem['bound']})"
        for tried in rem["tried"][:-1]:
            shown = f"{'+'.join(tried['fixes'])} {(tried['peaks'].get('ram_tree') or tried['peaks']['ram']) / MiB:.1f}"
            assert shown in cells[6], (shown, cells[6])


def _section(text: str, start: str, end: str) -> str:
    """The text between two headings, whitespace collapsed (the README wraps its lines anywhere)."""
    return " ".join(text[text.index(start):text.index(end, text.index(start))].split())


def _repeat_peaks(case: str, malloc: str = "steady") -> list[int]:
    rep = json.loads((ROOT / "benchmarks/results/repeatability.json").read_text())
    return [r["peaks"]["ram"] for r in rep["runs"] if r["case"] == case and r["malloc"] == malloc]


def _median(xs: list[int]) -> float:
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def test_the_allocator_paragraph_is_the_repeatability_report():
    para = _section((ROOT / "README.md").read_text(), "### Why peaks repeat", "### Across machines")
    system, steady = _repeat_peaks("s1 as-reported", "system"), _repeat_peaks("s1 as-reported")
    assert f"{min(system) / MiB:.1f}-{max(system) / MiB:.1f} MiB over {len(system)} fresh sessions" in para
    assert f"{min(steady) / MiB:.1f}-{max(steady) / MiB:.1f} MiB over {len(steady)} fresh sessions" in para
    fell = 1 - _median(steady) / _median(system)
    fell_truncated = 1 - _median(_repeat_peaks("s1 truncate")) / _median(_repeat_peaks("s1 truncate", "system"))
    assert f"fell {fell * 100:.1f} % (S1 truncated: {fell_truncated * 100:.1f} %)" in para
    assert f"+{(_median(system) / _median(steady) - 1) * 100:.1f} % at the median" in para


def test_the_real_scale_spreads_are_the_repeatability_report():
    from gpu_budget.marks import default_tolerance

    text = _section((ROOT / "README.md").read_text(), "## Baselines and tolerance", "### Why peaks repeat")
    rep = json.loads((ROOT / "benchmarks/results/repeatability.json").read_text())["real"]
    names = {"s1 truncate": "S1 truncated", "s2 as-reported": "S2 as reported", "s5 as-reported": "S5 as reported"}
    tol, ratios = default_tolerance("real"), []
    assert f"section 4, \"Real scale\": {rep['sessions']} fresh" in text
    for case, name in names.items():
        peaks = [r["peaks"]["ram"] for r in rep["runs"] if r["case"] == case]
        spread, median = max(peaks) - min(peaks), _median(peaks)
        assert f"{name} {spread / MiB:.1f} MiB ({spread / median * 100:.2f} % of {median / GiB:.2f} GiB)" in text
        ratios.append((tol.limit(median) - median) / spread)
    assert f"same **{tol.rel * 100:.1f} % + {tol.abs / MiB:.0f} MiB**" in text
    assert f"it allows each case at least {min(ratios):.1f}x its spread" in text


def overhead_sentence() -> str:
    """README's overhead figures, as benchmarks/report.py computes them from the committed overhead.json."""
    from benchmarks.report import _iv, _order, overhead_ratios

    ov = json.loads((ROOT / "benchmarks/results/overhead.json").read_text())
    ratios, parts = overhead_ratios(ov), []
    for scale in ("real", "tiny"):
        res, tools = ov["scales"][scale], ratios[scale]
        reps = len({r["rep"] for r in res["runs"]})
        loads = [r["load_average"] for r in res["runs"] if "load_average" in r]
        where = f"{reps} repetitions, {_order(res)} order" + (f", load {min(loads):.1f}-{max(loads):.1f}" if loads else "")
        named = {"meter": "the meter", "memray": "memray", "tracker": "`TrainerMemoryTracker`'s busy loop"}
        parts.append(f"at {scale} scale ({where}) " + ", ".join(f"{named[t]} {_iv(tools[t]['step_iv'])}"
                                                                for t in named if t in tools))
    return "; ".join(parts) + "."


def test_the_overhead_figures_are_the_overhead_report():
    text = _section((ROOT / "README.md").read_text(), "## Benchmarks", "## Layout")
    assert overhead_sentence() in text
