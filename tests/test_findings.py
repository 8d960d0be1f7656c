"""FINDINGS.md from JSON reports: pairing each fix with the as-reported run, verdicts, merging scales."""

import json

import pytest

from gpu_budget.findings import fix_verdict, main, pairs

MiB = 2**20


def row(label, fixes, ram, scale="tiny", verdict="pass", message=""):
    return {"scenario": "s", "scale": scale, "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": verdict, "message": message, "peaks": {"ram": ram, "vram_allocated": None}, "info": {}}


def test_verdicts_use_the_gate_tolerance():
    assert fix_verdict(1000 * MiB, 500 * MiB) == "works"
    assert fix_verdict(1000 * MiB, 1001 * MiB) == "no effect"
    assert fix_verdict(1000 * MiB, 1300 * MiB) == "makes it worse"
    assert fix_verdict(None, 1 * MiB) == "not measured"


def test_each_fix_is_paired_with_the_as_reported_run_of_its_scale():
    rows = [row("as-reported", [], 900 * MiB), row("lora", ["lora"], 500 * MiB),
            row("as-reported", [], 9000 * MiB, scale="real"), row("lora", ["lora"], 9000 * MiB, scale="real"),
            row("cuda", ["empty_cache"], None, verdict="skipped", message="needs a CUDA GPU")]
    by = {(e["variant"], e["scale"]): e for e in pairs(rows)["s"]}
    assert by[("lora", "tiny")]["verdict"] == "works" and by[("lora", "tiny")]["before"] == 900 * MiB
    assert by[("lora", "real")]["verdict"] == "no effect"
    assert by[("cuda", "tiny")]["verdict"] == "needs GPU, not measured here"


def test_cli_merges_reports_and_names_a_bad_one(tmp_path, capsys):
    tiny, real = tmp_path / "tiny.json", tmp_path / "real.json"
    tiny.write_text(json.dumps({"version": 1, "hardware": {"key": "cpu-x86_64"},
                                "results": [row("as-reported", [], 900 * MiB), row("lora", ["lora"], 500 * MiB)]}))
    real.write_text(json.dumps({"version": 1, "results": [row("as-reported", [], 9 * 2**30, "real"),
                                                          row("lora", ["lora"], 5 * 2**30, "real")]}))
    out = tmp_path / "F.md"
    assert main([str(tiny), str(real), "-o", str(out)]) == 0
    text = out.read_text()
    assert "| lora | lora | tiny |" in text and "| lora | lora | real |" in text and "cpu-x86_64" in text
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit):
        main([str(tmp_path / "bad.json")])
    assert "bad.json is not a gpu-budget JSON report" in capsys.readouterr().err
