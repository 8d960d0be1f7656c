"""FINDINGS.md's GPU rows: read from the GPU reports given, one per card, each row naming its card, at its scale."""

import json

from gpu_budget.report.findings import main

MiB = 2**20
CARD = {"key": "nvidia-test-80gb", "gpu_name": "NVIDIA Test 80GB", "driver": "999.1.2", "cuda": "13.9",
        "torch": "2.99.0", "transformers": "5.99.0", "peft": "0.99.0"}
NAMED = "NVIDIA Test 80GB, driver 999.1.2, CUDA 13.9; torch 2.99.0, transformers 5.99.0, peft 0.99.0"


def row(label, fixes, *, ram=None, allocated=None, reserved=None, scale="tiny", verdict="pass", message="", device="cpu"):
    measured = {} if verdict == "skipped" else {"wall_seconds": 1.0}
    return {"scenario": "s2", "scale": scale, "label": label, "fixes": fixes, "nodeid": f"m.py::t::{label}",
            "verdict": verdict, "message": message, "device": device, "info": {}, **measured,
            "peaks": {"ram": ram, "ram_tree": ram, "vram_allocated": allocated, "vram_reserved": reserved}}


def cpu_report(path):
    """The CPU side: a measured fix, and a CUDA-only fix the CPU host skipped."""
    rows = [row("as-reported", [], ram=900 * MiB), row("max_duration", ["max_duration"], ram=700 * MiB),
            row("empty_cache", ["empty_cache"], verdict="skipped", message="needs a CUDA GPU; this host has none")]
    path.write_text(json.dumps({"version": 3, "hardware": {"key": "cpu-x86_64", "torch": "2.13.0+cpu"}, "results": rows}))
    return str(path)


def gpu_report(path, hardware=CARD, scale="tiny", empty_cache=300 * MiB, extra=0):
    rows = [row("as-reported", [], ram=2000 * MiB, allocated=400 * MiB, reserved=500 * MiB, scale=scale, device="cuda"),
            row("empty_cache", ["empty_cache"], ram=2000 * MiB, allocated=empty_cache, reserved=350 * MiB, scale=scale,
                device="cuda")]
    rows += [{**row(f"more{i}", ["lora"], allocated=400 * MiB, reserved=500 * MiB, device="cuda"), "scenario": "s9"}
             for i in range(extra)]
    path.write_text(json.dumps({"version": 3, "hardware": hardware, "results": rows}))
    return str(path)


def render(tmp_path, *reports):
    out = tmp_path / "F.md"
    assert main([*reports, "-o", str(out)]) == 0
    return out.read_text()


def test_a_gpu_row_names_its_card_driver_and_libraries_and_its_scale(tmp_path):
    text = render(tmp_path, cpu_report(tmp_path / "cpu.json"), gpu_report(tmp_path / "gpu.json"))
    assert (f"| {NAMED} | empty_cache | empty_cache | tiny | vram_allocated | 400.00 MiB | 300.00 MiB | +25.0% | works "
            "| 500.00 MiB, 350.00 MiB (+30.0%) |") in text
    assert "On a GPU (tiny scale;" in text and "Every GPU figure here is tiny scale" in text
    assert f"`{tmp_path / 'gpu.json'}` for {NAMED}, tiny scale (2 cases on CUDA)" in text


def test_a_figure_at_another_scale_is_not_called_tiny(tmp_path):
    text = render(tmp_path, cpu_report(tmp_path / "cpu.json"), gpu_report(tmp_path / "gpu.json", scale="real"))
    assert f"| {NAMED} | empty_cache | empty_cache | real | vram_allocated |" in text
    assert "tiny scale" not in text and "GPU figures at scale real; each row names its own." in text


def test_the_cpu_rows_stay_as_the_cpu_reports_make_them(tmp_path):
    """The GPU report adds lines; every line of the CPU-only file stands, in order, and the skip row keeps its words."""
    cpu = cpu_report(tmp_path / "cpu.json")
    alone = render(tmp_path, cpu).splitlines()
    both = render(tmp_path, cpu, gpu_report(tmp_path / "gpu.json")).splitlines()
    rest = iter(both)
    assert all(line in rest for line in alone) and len(both) > len(alone)
    assert "| empty_cache | empty_cache | tiny | - | - | - | - | needs GPU, not measured here | - |" in alone
    assert "| max_duration | max_duration | tiny | ram_tree | 900.00 MiB | 700.00 MiB | +22.2% | works |" in "\n".join(both)


def test_a_gpu_report_given_first_is_not_merged_into_the_cpu_rows(tmp_path):
    """Its rows share node ids with the CPU report's; a merge would replace the CPU rows and name its card as the host."""
    gpu, cpu = gpu_report(tmp_path / "gpu.json"), cpu_report(tmp_path / "cpu.json")
    assert render(tmp_path, gpu, cpu) == render(tmp_path, cpu, gpu)
    assert "from real runs on `cpu-x86_64`" in render(tmp_path, gpu, cpu)


def test_one_report_per_card_the_one_with_the_most_cases_on_cuda_whatever_the_order(tmp_path):
    small = gpu_report(tmp_path / "b-small.json", empty_cache=390 * MiB)
    large = gpu_report(tmp_path / "a-large.json", empty_cache=300 * MiB, extra=2)
    other = gpu_report(tmp_path / "c-other.json", hardware={**CARD, "key": "nvidia-other", "gpu_name": "NVIDIA Other"})
    cpu = cpu_report(tmp_path / "cpu.json")
    text = render(tmp_path, cpu, small, large, other)
    assert text == render(tmp_path, cpu, other, large, small)
    assert f"| {NAMED} | empty_cache | empty_cache | tiny | vram_allocated | 400.00 MiB | 300.00 MiB |" in text
    assert "390.00 MiB" not in text  # the passed-over report's figure
    assert f"Given and passed over: `{small}`." in text
    assert text.index("| NVIDIA Other, driver 999.1.2") < text.index(f"| {NAMED} | empty_cache")  # in key order


def test_on_a_tie_the_later_path_is_picked(tmp_path):
    first = gpu_report(tmp_path / "gpu-1.json", empty_cache=390 * MiB)
    second = gpu_report(tmp_path / "gpu-2.json", empty_cache=300 * MiB)
    cpu = cpu_report(tmp_path / "cpu.json")
    text = render(tmp_path, cpu, first, second)
    assert text == render(tmp_path, cpu, second, first)
    assert "| 400.00 MiB | 300.00 MiB |" in text and f"Given and passed over: `{first}`." in text


def test_gpu_reports_alone_make_a_findings_file(tmp_path):
    text = render(tmp_path, gpu_report(tmp_path / "gpu.json"))
    assert "from GPU reports only." in text and f"| {NAMED} | empty_cache |" in text


def test_each_real_scale_part_shows_its_own_scenario_beside_the_cards_tiny_report(tmp_path):
    """A real-scale part measures one scenario per report: each is shown for its scenario, at its scale, with the
    as-reported run against its GPU budget (over or under, figure by figure) and the test's outcome."""
    tiny = gpu_report(tmp_path / "gpu-tiny.json", extra=3)
    s2 = gpu_report(tmp_path / "gpu-s2.json", scale="real", empty_cache=250 * MiB)
    rows = [{**row("as-reported", [], allocated=900 * MiB, reserved=1100 * MiB, scale="real", device="cuda",
                   message="expected this configuration to break its budget, but it stayed within it"),
             "scenario": "s9", "passed": False, "budget": {"ram": None, "vram": 1000 * MiB}, "budget_origin": "write-up"},
            {**row("lora", ["lora"], allocated=600 * MiB, reserved=700 * MiB, scale="real", device="cuda"), "scenario": "s9"}]
    (tmp_path / "gpu-s9.json").write_text(json.dumps({"version": 3, "hardware": CARD, "results": rows}))
    text = render(tmp_path, tiny, s2, str(tmp_path / "gpu-s9.json"))
    assert text == render(tmp_path, str(tmp_path / "gpu-s9.json"), s2, tiny)
    # two cases each: the later path is the card's real-scale pick, the other is shown for its own scenario
    assert f"`{tmp_path / 'gpu-s9.json'}` for {NAMED}, real scale (2 cases on CUDA)" in text
    assert f"`{s2}` for {NAMED}, real scale, s2 (2 cases on CUDA)" in text
    assert f"| {NAMED} | empty_cache | empty_cache | real | vram_allocated | 400.00 MiB | 250.00 MiB |" in text
    assert f"| {NAMED} | lora | lora | real | vram_allocated | 900.00 MiB | 600.00 MiB | +33.3% | works |" in text
    assert (f"- real, as reported on {NAMED}: allocated 900.00 MiB (under), reserved 1.07 GiB (over) against the "
            "budget 1000.00 MiB") in text and "the test failed: expected this configuration to break" in text
    assert "Given and passed over" not in text


def capped_report(path, card="RTX 3090 (23.69 GiB)"):
    """A run under a smaller card's cap on the same host: its as-reported run died of out-of-memory at step 1."""
    oom = {"kind": "oom", "type": "torch.OutOfMemoryError",
           "message": f"out of memory as on {card}, in phase train_step_1 (step 1): the caching allocator was capped"}
    dead = {**row("as-reported", [], allocated=400 * MiB, reserved=500 * MiB, scale="real", device="cuda",
                  verdict="over-budget"), "error": oom, "budget": {"vram": 450 * MiB}, "card": card, "passed": True}
    fixed = {**row("empty_cache", ["empty_cache"], allocated=300 * MiB, reserved=350 * MiB, scale="real",
                   device="cuda"), "card": card}
    path.write_text(json.dumps({"version": 3, "hardware": CARD, "results": [dead, fixed]}))
    return str(path)


def test_a_run_capped_to_a_smaller_card_is_that_cards_run_and_an_oom_peak_a_lower_bound(tmp_path):
    """Capped and uncapped runs of one host are two cards' runs: neither is passed over for the other. An as-reported
    run that died of out-of-memory held its figure when it died, so the fix saves at least what the row shows."""
    capped = capped_report(tmp_path / "capped.json")
    text = render(tmp_path, cpu_report(tmp_path / "cpu.json"), gpu_report(tmp_path / "gpu.json", scale="real"), capped)
    named = NAMED.replace("NVIDIA Test 80GB, ", "NVIDIA Test 80GB capped to RTX 3090 (23.69 GiB), ")
    assert "Given and passed over" not in text
    assert f"`{capped}` for {named}, real scale (2 cases on CUDA)" in text
    assert (f"| {named} | empty_cache | empty_cache | real | vram_allocated | 400.00 MiB when it died of OOM "
            "| 300.00 MiB | at least +25.0% | works | 500.00 MiB, 350.00 MiB (at least +30.0%) |") in text
    assert f"| {NAMED} | empty_cache | empty_cache | real | vram_allocated | 400.00 MiB | 300.00 MiB | +25.0% |" in text
    assert (f"- real, as reported on {named}: died of out-of-memory (out of memory as on RTX 3090 (23.69 GiB), in "
            "phase train_step_1 (step 1)), holding allocated 400.00 MiB (under), reserved 500.00 MiB (over) against "
            "the budget 450.00 MiB") in text


def test_an_as_reported_run_says_pytests_outcome_of_its_test_not_the_gates_alone(tmp_path):
    """The gate passed the case (over its budget, as expected) but pytest failed its test after measure(): the line said
    "the test passed", the gate's word read as pytest's. A report from before test_outcome says the gate's word."""
    def written(**fields) -> str:
        reproduced = {**row("as-reported", [], allocated=1100 * MiB, reserved=1200 * MiB, scale="real", device="cuda",
                            verdict="over-budget", message="over budget as expected: vram_allocated 1.07 GiB > 1000 MiB"),
                      "scenario": "s9", "passed": True, "budget": {"ram": None, "vram": 1000 * MiB}, **fields}
        path = tmp_path / "gpu-s9.json"
        lora = {**row("lora", ["lora"], allocated=600 * MiB, reserved=700 * MiB, scale="real", device="cuda"),
                "scenario": "s9"}
        path.write_text(json.dumps({"version": 3, "hardware": CARD, "results": [reproduced, lora]}))
        (line,) = [line for line in render(tmp_path, str(path)).splitlines() if line.startswith("- real, as reported")]
        return line

    assert written(test_outcome="failed", test_failure="AssertionError: the run named no step").endswith(
        "verdict over-budget, the gate passed it, but the test failed after measure(): AssertionError: the run named no "
        "step")
    assert written(test_outcome="passed").endswith("verdict over-budget, the test passed")
    assert written().endswith("verdict over-budget, the test passed")  # no test_outcome: the gate's word
    assert written(test_outcome="skipped").endswith("verdict over-budget, the gate passed it, the test skipped")
