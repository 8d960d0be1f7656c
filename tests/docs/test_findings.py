"""FINDINGS.md from JSON reports: pairing each fix with the as-reported run, verdicts, merging scales, GPU rows."""

import json
import re
from pathlib import Path

import pytest

from gpu_budget.declare.fixes import Control
from gpu_budget.model.result import Result
from gpu_budget.report.findings import fix_verdict, main, pairs, split_lines
from gpu_budget.units import format_size

MiB = 2**20


def row(label, fixes, ram, scale="tiny", verdict="pass", message="", info=None):
    measured = {} if verdict == "skipped" else {"wall_seconds": 1.0}  # a child ran
    return {"scenario": "s", "scale": scale, "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": verdict, "message": message, "peaks": {"ram": ram, "vram_allocated": None}, "info": info or {},
            **measured}


def test_verdicts_use_the_gate_tolerance():
    assert fix_verdict(1000 * MiB, 500 * MiB) == "works"
    assert fix_verdict(1000 * MiB, 1001 * MiB) == "no effect"
    assert fix_verdict(1000 * MiB, 1300 * MiB) == "makes it worse"
    assert fix_verdict(None, 1 * MiB) == "not measured"


def test_each_fix_is_paired_with_the_as_reported_run_of_its_scale():
    rows = [row("as-reported", [], 900 * MiB), row("lora", ["lora"], 500 * MiB),
            row("as-reported", [], 9000 * MiB, scale="real"), row("lora", ["lora"], 9000 * MiB, scale="real"),
            row("cuda", ["empty_cache"], None, verdict="skipped", message="needs a CUDA GPU")]
    by = {(e.variant, e.scale): e for e in pairs([Result.from_json(r) for r in rows])["s"]}
    assert by[("lora", "tiny")].verdict == "works" and by[("lora", "tiny")].before == 900 * MiB
    assert by[("lora", "real")].verdict == "no effect"
    assert by[("cuda", "tiny")].verdict == "needs GPU, not measured here"


def test_a_fix_its_runner_did_not_apply_gets_no_measured_verdict():
    """An unchanged peak of a fix that never ran is not "no effect": the row says it was not applied, and why."""
    amp = row("amp", ["amp"], 900 * MiB, info={"fixes_applied": {"amp": "not applied: CUDA-only"}})
    old = row("amp2", ["amp"], 900 * MiB, info={"amp": "CUDA-only: not applied on CPU"})  # a report before the contract
    noop = row("gc", ["gradient_checkpointing"], 900 * MiB,
               info={"fixes_applied": {"gradient_checkpointing": "not supported: no checkpointing switch"}})
    lora = row("lora", ["lora"], 500 * MiB, info={"fixes_applied": {"lora": "applied"}})
    rows = [row("as-reported", [], 900 * MiB), amp, old, noop, lora]
    by = {e.variant: e for e in pairs([Result.from_json(r) for r in rows])["s"]}
    assert by["amp"].verdict == "not applied here (amp: not applied: CUDA-only)"
    assert by["amp2"].verdict.startswith("not applied here (amp: CUDA-only")
    assert by["gc"].verdict == "not applied here (gradient_checkpointing: not supported: no checkpointing switch)"
    assert by["lora"].verdict == "works"


def test_cli_merges_reports_and_names_a_bad_one(tmp_path, capsys):
    tiny, real = tmp_path / "tiny.json", tmp_path / "real.json"
    tiny.write_text(json.dumps({"version": 1, "hardware": {"key": "cpu-x86_64"},
                                "results": [row("as-reported", [], 900 * MiB), row("lora", ["lora"], 500 * MiB)]}))
    real.write_text(json.dumps({"version": 2, "results": [row("as-reported", [], 9 * 2**30, "real"),
                                                          row("lora", ["lora"], 5 * 2**30, "real")]}))
    out = tmp_path / "F.md"
    assert main([str(tiny), str(real), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| lora | lora | tiny |" in text and "| lora | lora | real |" in text and "cpu-x86_64" in text
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit):
        main([str(tmp_path / "bad.json")])
    assert "bad.json is not a gpu-budget JSON report" in capsys.readouterr().err


def test_the_tree_is_judged_where_both_rows_hold_it_and_the_main_process_stands_beside(tmp_path):
    def tree_row(label, fixes, tree, main):
        r = row(label, fixes, main)
        r["peaks"]["ram_tree"] = tree
        return r

    reported = {**tree_row("as-reported", [], 1200 * MiB, 500 * MiB), "budget": {"ram": 1000 * MiB, "vram": None},
                "growth": {"ram_per_step": 0, "ram_tree_per_step": 3 * MiB}, "verdict": "over-budget"}
    fewer = tree_row("fewer_workers", ["fewer_workers"], 700 * MiB, 500 * MiB)
    old = row("lora", ["lora"], 480 * MiB)  # from a version-1 report: the main process only
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"version": 2, "results": [reported, fewer, old]}))
    out = tmp_path / "F.md"
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| tiny | ram_tree | 1.17 GiB | 500.00 MiB | 1000.00 MiB | +20.0% | 3.00 MiB | over-budget |" in text
    assert "| fewer_workers | fewer_workers | tiny | ram_tree | 1.17 GiB | 700.00 MiB | +41.7% | works | 500.00 MiB, 500.00 MiB |" in text
    assert "| lora | lora | tiny | ram | 500.00 MiB | 480.00 MiB | +4.0% | works | 500.00 MiB, 480.00 MiB |" in text


def test_each_failure_mode_shows_its_peak_against_its_budget_and_notes_follow(tmp_path):
    reported = {**row("as-reported", [], 1100 * MiB, verdict="over-budget"),
                "budget": {"ram": 1000 * MiB, "vram": None}, "growth": {"ram_per_step": 47 * MiB}}
    real = {**row("as-reported", [], 15 * 2**30, scale="real", verdict="over-budget"),
            "budget": {"ram": 12 * 2**30, "vram": None}, "growth": {}}
    note = {"nodeid": "m.py::test_search", "scenario": "s", "scale": "tiny", "text": "largest batch: 12", "data": {}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"version": 1, "results": [reported, real, row("lora", ["lora"], 500 * MiB)],
                                "notes": [note]}))
    out = tmp_path / "F.md"
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| tiny | ram | 1.07 GiB | 1.07 GiB | 1000.00 MiB | +10.0% | 47.00 MiB | over-budget |" in text
    assert "| real | ram | 15.00 GiB | 15.00 GiB | 12.00 GiB | +25.0% | - | over-budget |" in text
    assert "- tiny: largest batch: 12 (`m.py::test_search`)" in text
    assert f"`{path}`" in text  # the sources are named


NOTED = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("n", [1, 2])
def test_search(gpu_budget, n):
    found = gpu_budget.peak(S.with_params(mib=8 * n)).peaks.ram
    gpu_budget.note(S, f"probe {n}", n=n, peak=found)

@pytest.mark.gpu_budget(ram="2 GiB")
def test_bad_note(gpu_budget):
    gpu_budget.note(S, "a set", values={1, 2})
'''


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")], ids=["serial", "xdist"])
def test_notes_reach_the_json_report_from_workers_too(project, xdist):
    pytester = project(NOTED)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget",
                                           "--gpu-budget-json=report.json", *xdist)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_bad_note: gpu_budget.note() data must be JSON-able*set*"])
    notes = json.loads((pytester.path / "report.json").read_text())["notes"]
    assert sorted(n["text"] for n in notes) == ["probe 1", "probe 2"]
    assert {n["scenario"] for n in notes} == {"alloc"} and all(n["data"]["peak"] > 8 * MiB for n in notes)


def test_a_later_report_replaces_a_re_run_row(tmp_path):
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    first.write_text(json.dumps({"version": 1, "results": [row("as-reported", [], 900 * MiB), row("lora", ["lora"], 500 * MiB)]}))
    note = {"nodeid": "m.py::test_search", "scenario": "s", "scale": "tiny", "data": {}}
    first.write_text(json.dumps({**json.loads(first.read_text()), "notes": [{**note, "text": "first try"}]}))
    again.write_text(json.dumps({"version": 1, "results": [row("as-reported", [], 1000 * MiB)],
                                 "notes": [{**note, "text": "second try"}]}))
    out = tmp_path / "F.md"
    assert main([str(first), str(again), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| lora | lora | tiny | ram | 1000.00 MiB | 500.00 MiB | +50.0% | works |" in text
    assert "second try" in text and "first try" not in text


def test_a_gpu_only_scale_says_so_in_both_tables(tmp_path):
    skipped = {"verdict": "skipped", "message": "scenario 's' at scale 'real' needs a CUDA GPU; this host has none"}
    rows = [row("as-reported", [], 900 * MiB), row("lora", ["lora"], 500 * MiB),
            {**row("as-reported", [], None, scale="real"), **skipped, "budget": {"ram": None, "vram": 24 * 2**30}},
            {**row("lora", ["lora"], None, scale="real"), **skipped}]
    path, out = tmp_path / "r.json", tmp_path / "F.md"
    path.write_text(json.dumps({"version": 1, "results": rows}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| real | - | - | - | 24.00 GiB | - | - | needs GPU, not measured here |" in text
    assert "| lora | lora | real | - | - | - | - | needs GPU, not measured here |" in text
    assert text.count("as-reported") == 0  # the reference is not listed as its own variant
    assert text.index("| lora | lora | tiny |") < text.index("| lora | lora | real |")


def test_each_budget_says_where_it_comes_from_and_what_its_verdict_shows(tmp_path):
    tiny = {**row("as-reported", [], 1100 * MiB, verdict="over-budget"), "budget_origin": "measured-gap",
            "budget": {"ram": 1000 * MiB, "vram": None}, "growth": {}}
    real = {**row("as-reported", [], 15 * 2**30, scale="real", verdict="over-budget"),
            "budget_origin": "write-up", "budget": {"ram": 12_700_000_000, "vram": None}, "growth": {}}
    path, out = tmp_path / "r.json", tmp_path / "F.md"
    path.write_text(json.dumps({"version": 2, "results": [tiny, real, row("lora", ["lora"], 500 * MiB)]}))
    assert main([str(path), "-o", str(out)]) == 0
    text = out.read_text()
    assert "- tiny: 1000.00 MiB, measured-gap (" in text and "not that the reported failure is reproduced" in text
    assert "- real: 11.83 GiB (12.7 GB), write-up (the write-up's own figure): over budget reproduces" in text


def test_an_older_row_takes_the_origin_its_memtest_declares_now_and_says_so(tmp_path, monkeypatch):
    (tmp_path / "memtests").mkdir()
    (tmp_path / "memtests" / "test_m.py").write_text(
        "import pytest\n\n@pytest.mark.gpu_budget(ram={'real': '12.7 GB'}, origin={'real': 'write-up'})\n"
        "def test_as_reported(gpu_budget):\n    pass\n")
    old = {**row("as-reported", [], 15 * 2**30, scale="real", verdict="over-budget"),
           "nodeid": "memtests/test_m.py::test_as_reported::as-reported", "budget": {"ram": 12.7 * 2**30, "vram": None}}
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.json").write_text(json.dumps({"version": 2, "results": [old, row("lora", ["lora"], 2**30, scale="real")]}))
    assert main(["r.json", "-o", "F.md"]) == 0
    text = (tmp_path / "F.md").read_text()
    assert ("- real: 11.83 GiB (12.7 GB), write-up (the write-up's own figure): over budget reproduces the reported failure "
            "against the write-up's own limit (origin as `memtests/test_m.py` declares it now; the run predates recorded "
            "origins, and was judged against 12.70 GiB)") in text


def test_quantization_is_split_into_freezing_and_8_bit_storage():
    rows = [row("as-reported", [], 1000 * MiB), row("quantization", ["quantization"], 600 * MiB),
            row("freeze_fp32", ["freeze_fp32"], 700 * MiB)]
    split = Control("quantization", "freezing alone (the same weights frozen, kept fp32)", "freezing alone",
                    "8-bit storage on top")
    (line,) = split_lines(pairs([Result.from_json(r) for r in rows])["s"], {"freeze_fp32": split})
    assert line == ("- tiny: quantization's saving split (ram): as reported 1000.00 MiB; freezing alone (the same weights "
                    "frozen, kept fp32) 700.00 MiB, saving 300.00 MiB (+30.0%, works); 8-bit storage on top: quantization "
                    "600.00 MiB, 100.00 MiB lower than freezing alone (saving +10.0% of as reported, works)")


def test_a_split_part_inside_the_tolerance_is_judged_no_effect_as_in_the_table():
    """Before, a part inside the gate's tolerance read as a saving ("saving 1.00 MiB (+0.1%)", "1.00 MiB lower than
    freezing alone") while the fix table above judged both rows "no effect"; now as within the noise, no figure."""
    rows = [row("as-reported", [], 1000 * MiB), row("quantization", ["quantization"], 998 * MiB),
            row("freeze_fp32", ["freeze_fp32"], 999 * MiB)]
    split = Control("quantization", "freezing alone", "freezing alone", "8-bit storage on top")
    entries = pairs([Result.from_json(r) for r in rows])["s"]
    assert {e.verdict for e in entries} == {"no effect"}
    (line,) = split_lines(entries, {"freeze_fp32": split})
    assert "saving within noise (" in line and ", no effect; 8-bit storage on top: quantization 998.00 MiB, within " \
        "noise (" in line and line.endswith(") of freezing alone (no effect)")


ROOT = Path(__file__).resolve().parents[2]
REPORT = r"`(benchmarks/results/[^`]+\.report\.json)`"


def _header() -> str:
    """FINDINGS.md's text above its first scenario: the reports it names, CPU and GPU."""
    return (ROOT / "FINDINGS.md").read_text().split("\n## ", 1)[0]


def test_findings_md_is_generated_from_the_committed_reports(tmp_path, monkeypatch):
    """FINDINGS.md is what `python -m gpu_budget findings` makes of the reports its header names, byte for byte:
    the CPU reports, the GPU report picked for each card and the GPU reports passed over."""
    from gpu_budget.report import findings, findings_gpu

    committed = (ROOT / "FINDINGS.md").read_text()
    sources = re.findall(REPORT, _header())
    assert sources and all((ROOT / s).is_file() for s in sources), _header()
    gpu = [s for s in sources if findings_gpu.is_gpu(json.loads((ROOT / s).read_text()))]
    assert gpu, "FINDINGS.md names the GPU reports its GPU rows come from"
    monkeypatch.chdir(ROOT)  # the header names the reports relative to the repository, as the command was run
    assert findings.main([*sources, "-o", str(tmp_path / "FINDINGS.md")]) == 0
    assert (tmp_path / "FINDINGS.md").read_text() == committed
    cpu = [s for s in sources if s not in gpu]  # their order matters (a later row replaces an earlier); the GPU ones' not
    assert findings.main([*reversed(gpu), *cpu, "-o", str(tmp_path / "again.md")]) == 0
    assert (tmp_path / "again.md").read_text() == committed


def test_findings_md_gpu_rows_are_the_picked_reports_own_figures():
    """S2's CUDA-only fixes, which the CPU host cannot measure, stand in FINDINGS.md as each picked GPU report holds
    them (read here from the JSON, not through the renderer), under the card, driver and libraries it names, at tiny."""
    committed = (ROOT / "FINDINGS.md").read_text()
    picked = re.findall(REPORT + r" for [^`]*?, tiny scale \(", _header())
    assert len(picked) >= 2, "a tiny GPU report picked for each of the H100 and the H200"
    for path in picked:
        report = json.loads((ROOT / path).read_text())
        hw = report["hardware"]
        card = (f"{hw['gpu_name']}, driver {hw['driver']}, CUDA {hw['cuda']}; torch {hw['torch']}, "
                f"transformers {hw['transformers']}, peft {hw['peft']}")
        s2 = {r["label"]: r["peaks"] for r in report["results"] if r["scenario"] == "s2_paraformer"}
        before = s2["as-reported"]
        for fix in ("empty_cache", "expandable_segments"):
            after = s2[fix]
            row = (f"| {card} | {fix} | {fix} | tiny | vram_allocated | {format_size(before['vram_allocated'])} "
                   f"| {format_size(after['vram_allocated'])} | ")
            reserved = f"| {format_size(before['vram_reserved'])}, {format_size(after['vram_reserved'])} ("
            assert [line for line in committed.splitlines() if line.startswith(row) and reserved in line], row


def test_each_fix_table_says_what_its_fixes_did_in_the_fix_librarys_words():
    """A verdict is of the fix as it ran: where a fix departs from what its write-up proposed (S5's pruning reaches
    the dense head's Linear layers too), the reader meets that under the table, from the fix's own doc."""
    from gpu_budget.declare import fixes
    from gpu_budget.report.memtests import memtest

    memtest(str(ROOT / "memtests/test_s5_generic_oom.py"))  # registers S5's fixes, as rendering does
    section = (ROOT / "FINDINGS.md").read_text().split("\n## s5_generic_oom\n", 1)[1].split("\n## ", 1)[0]
    said = section.split("What each fix does, as it ran (the fix library's words), and whose it is:\n\n", 1)[1]
    said = said.split("\n\n", 1)[0]
    assert f"- pruning: (proposed by S5) {fixes.get('pruning').doc}" in said.splitlines()
    assert "the write-up prunes conv layers only" in said
