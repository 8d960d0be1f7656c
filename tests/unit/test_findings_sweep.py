"""FINDINGS.md's "Across releases": each swept version of a case against the one it ran at, judged by its tolerance."""

import json

from gpu_budget.model.budget import Tolerance
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import EnvironmentRecord, Result, SweepPoint
from gpu_budget.report.findings import main
from gpu_budget.report.findings_sweep import across_releases, sweep_table

MiB = 2**20
TOL = Tolerance(rel=0.005, abs=4 * MiB)  # at 400 MiB: 6.00 MiB either side


def env(version: str) -> EnvironmentRecord:
    return EnvironmentRecord((f"transformers=={version}",), {"transformers": version, "tokenizers": "0.22.2"},
                             {"transformers": version}, "k", "pip", 30.0, False, "/envs/k/bin/python")


def point(package, version, tree, reference=False, status="ok", message=""):
    peaks = None if tree is None else Peaks(ram=tree - MiB, ram_tree=tree)
    return SweepPoint(package, version, reference, status, peaks, {}, message,
                      None if reference or status != "ok" else env(version))


def swept_row(label, *points, tolerance=TOL, nodeid=None):
    return Result(nodeid or f"m.py::t[{label}]", "s", "tiny", "pass", True, "", label=label,
                  tolerance=tolerance, sweep=points)


def test_a_change_is_past_the_tolerance_only_beyond_the_cases_allowance():
    row = swept_row("as-reported",
                    point("transformers", "5.17.0", 407 * MiB),  # +7 MiB: past the 6 MiB allowed
                    point("transformers", "5.23.0", 400 * MiB, reference=True),
                    point("transformers", "4.57.6", 395 * MiB),  # -5 MiB: inside it
                    point("peft", "0.21.2", 400 * MiB, reference=True),
                    point("peft", "0.18.1", None, status="error", message="peft==0.18.1: ImportError:\n  no name"))
    (found,) = across_releases([row, swept_row("plain", nodeid="m.py::plain")]).values()
    assert [(m.package, m.version) for m in found] == [
        ("transformers", "4.57.6"), ("transformers", "5.17.0"), ("transformers", "5.23.0"), ("peft", "0.18.1"),
        ("peft", "0.21.2")]  # versions in order per package, packages as swept; a row without a sweep left out
    by = {(m.package, m.version): m for m in found}
    assert by[("transformers", "5.17.0")].past is True and by[("transformers", "4.57.6")].past is False
    assert by[("transformers", "5.23.0")].past is None and by[("peft", "0.18.1")].past is None
    assert by[("transformers", "4.57.6")].change == -5 / 400
    assert by[("transformers", "4.57.6")].metric == "ram_tree" and by[("transformers", "4.57.6")].allowed == 6 * MiB

    lines = sweep_table(found)
    assert "| as-reported | transformers | 5.17.0 | ram_tree | 407.00 MiB | +1.75% | ±6.00 MiB (1.50%) | past it (1.2x the allowance) |" in lines
    assert "| as-reported | transformers | 4.57.6 | ram_tree | 395.00 MiB | -1.25% | ±6.00 MiB (1.50%) | inside it (0.8x the allowance) |" in lines
    assert "| as-reported | transformers | 5.23.0 | ram_tree | 400.00 MiB | ran at | ±6.00 MiB (1.50%) | - |" in lines
    assert ("| as-reported | peft | 0.18.1 | ram_tree | error: peft==0.18.1: ImportError: no name | - | ±6.00 MiB (1.50%) "
            "| not measured |") in lines
    assert lines[-4:] == [
        ("- transformers 4.57.6 (installs tokenizers==0.22.2 transformers==4.57.6): 0 of 1 cases past the tolerance; "
         "change -1.25% (-5.00 MiB), 0.8x the allowance"),
        ("- transformers 5.17.0 (installs tokenizers==0.22.2 transformers==5.17.0): 1 of 1 cases past the tolerance; "
         "change +1.75% (+7.00 MiB), 1.2x the allowance"),
        "- peft 0.18.1: not measured in 1 case(s): peft==0.18.1: ImportError: no name", ""]


def test_a_row_without_its_own_tolerance_takes_the_scales_default():
    (found,) = across_releases([swept_row("x", point("peft", "0.21.2", 1000 * MiB, reference=True),
                                          point("peft", "0.18.1", 1008 * MiB), tolerance=None)]).values()
    assert found[0].allowed == 0.005 * 1000 * MiB + 4 * MiB and found[0].past is False  # 9 MiB allowed, 8 moved


def test_the_sweep_of_an_earlier_report_stays_in_findings_md_when_a_later_one_replaces_its_row(tmp_path):
    def as_json(result, peak):
        data = result.to_json()
        data.update(wall_seconds=1.0, peaks={"ram": peak, "ram_tree": peak, "vram_allocated": None})
        return data

    reported = swept_row("as-reported", point("transformers", "5.23.0", 900 * MiB, reference=True),
                         point("transformers", "5.17.0", 950 * MiB))
    lora = swept_row("lora", point("transformers", "5.23.0", 500 * MiB, reference=True),
                     point("transformers", "5.17.0", 501 * MiB))
    lora = Result(**{**lora.__dict__, "fixes": ("lora",)})
    sweep, later = tmp_path / "sweep.json", tmp_path / "suite.json"
    sweep.write_text(json.dumps({"version": 2, "results": [as_json(reported, 900 * MiB), as_json(lora, 500 * MiB)]}))
    plain = [{**as_json(r, peak), "sweep": []} for r, peak in ((reported, 910 * MiB), (lora, 400 * MiB))]
    later.write_text(json.dumps({"version": 2, "results": plain}))
    out = tmp_path / "F.md"
    assert main([str(sweep), str(later), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| lora | lora | tiny | ram_tree | 910.00 MiB | 400.00 MiB |" in text  # the later report's figures above
    assert "| as-reported | transformers | 5.17.0 | ram_tree | 950.00 MiB | +5.56% |" in text  # the sweep's below
    assert "| lora | transformers | 5.17.0 | ram_tree | 501.00 MiB | +0.20% | ±6.50 MiB (1.30%) | inside it (0.2x the allowance) |" in text
    assert text.index("| lora | lora | tiny |") < text.index("Across releases") < text.index("| lora | transformers |")
    assert ("- transformers 5.17.0 (installs tokenizers==0.22.2 transformers==5.17.0): 1 of 2 cases past the tolerance; "
            "change +0.20% .. +5.56% (+1.00 MiB .. +50.00 MiB), 0.2 .. 5.9x the allowance") in text


def test_a_version_is_not_compared_against_a_reference_that_failed():
    row = swept_row("crashed", point("transformers", "5.23.0", 50 * MiB, reference=True, status="error",
                                     message="exception: boom"),  # the peak so far of the crashed run
                    point("transformers", "5.17.0", 407 * MiB))
    (found,) = across_releases([row]).values()
    other = next(m for m in found if not m.reference)
    assert (other.change, other.past, other.ratio) == (None, None, None)
    lines = sweep_table(found)
    assert "| crashed | transformers | 5.17.0 | ram_tree | 407.00 MiB | - | - | not compared |" in lines
    assert ("- transformers 5.17.0 (installs tokenizers==0.22.2 transformers==5.17.0): not compared in 1 case(s): the "
            "version it ran at was not measured") in lines


def test_a_report_of_a_sweep_alone_is_written(tmp_path, capsys):
    # a user's own cases swept across releases, no fix measured beside them: the sweep is the finding
    row = swept_row("mine", point("transformers", "5.23.0", 400 * MiB, reference=True),
                    point("transformers", "5.17.0", 407 * MiB), nodeid="t.py::test_train")
    data = {**row.to_json(), "wall_seconds": 1.0, "peaks": {"ram": 400 * MiB, "ram_tree": 400 * MiB,
                                                             "vram_allocated": None}}
    path, out = tmp_path / "sweep.json", tmp_path / "F.md"
    path.write_text(json.dumps({"version": 2, "results": [data]}))
    assert main([str(path), "-o", str(out)]) == 0, capsys.readouterr().err
    assert "| mine | transformers | 5.17.0 | ram_tree | 407.00 MiB | +1.75% |" in out.read_text()


def test_a_pipe_in_a_case_or_its_reason_stays_in_its_cell():
    import re

    row = swept_row("lr[1e-4|bf16]", point("transformers", "5.23.0", 400 * MiB, reference=True),
                    point("transformers", "5.17.0", None, status="error",
                          message="transformers==5.17.0: exception: unsupported operand type(s) for |: 'int' and 'str'"))
    (found,) = across_releases([row]).values()
    rows = [line for line in sweep_table(found) if line.startswith("| lr[")]
    assert [len(re.split(r"(?<!\\)\|", line)) for line in rows] == [10, 10]  # 8 cells between 9 pipes
    assert r"| lr[1e-4\|bf16] | transformers | 5.17.0 | ram_tree | error: transformers==5.17.0: exception: " \
           r"unsupported operand type(s) for \|: 'int' and 'str' | - |" in rows[0]


def test_a_version_over_the_cases_budget_is_flagged_in_its_cell_and_line():
    """The terminal table and the JSON flag a swept version whose peak breaks the case's budget; FINDINGS.md's
    table did not: a reader of the findings saw 'inside it (0.8x the allowance)' beside a peak over the budget."""
    from dataclasses import replace

    breach = "host RAM peak 420.00 MiB (ram_tree) > budget 410.00 MiB"
    row = swept_row("as-reported",
                    point("transformers", "5.23.0", 400 * MiB, reference=True),
                    replace(point("transformers", "5.24.0", 420 * MiB), over_budget=(breach,)))
    (found,) = across_releases([row]).values()
    lines = sweep_table(found)
    assert "| as-reported | transformers | 5.24.0 | ram_tree | 420.00 MiB OVER BUDGET | +5.00% | ±6.00 MiB (1.50%) " \
           "| past it (3.3x the allowance) |" in lines, lines
    assert "| as-reported | transformers | 5.23.0 | ram_tree | 400.00 MiB | ran at | ±6.00 MiB (1.50%) | - |" in lines
    assert lines[-2].endswith(f"1 of 1 cases past the tolerance; change +5.00% (+20.00 MiB), 3.3x the allowance; "
                              f"over budget in 1 case(s): {breach}"), lines[-2]


def test_a_change_from_a_reference_of_0_says_what_it_grew_by_and_is_judged():
    def vram(version, allocated, reference=False):
        return SweepPoint("torch", version, reference, "ok", Peaks(ram=100 * MiB, vram_allocated=allocated), {}, "",
                          None if reference else env(version))

    found = across_releases([swept_row("cpu", vram("2.9.0", 0, reference=True), vram("2.10.0", 12 * MiB))])["s"]
    lines = sweep_table(found)  # raised ZeroDivisionError on the allowance's share of 0
    assert ("| cpu | torch | 2.10.0 | vram_allocated | 12.00 MiB | +12.00 MiB from 0 B | ±4.00 MiB "
            "| past it (3.0x the allowance) |") in lines
    assert lines[-2].endswith("1 of 1 cases past the tolerance; change +12.00 MiB, 3.0x the allowance")
