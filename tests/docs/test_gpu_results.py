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


def test_a_part_shows_pytests_outcome_beside_the_gates_verdict():
    """S2's real-scale row was passed by the gate in both runs, while pytest failed its test in both (the logs): the
    page says FAILED, from the log, beside the gate's verdicts, never "passed" on the gate's word."""
    from benchmarks import gpu_logs, gpu_parts

    row = next(r for k, r in gpu_parts.rows("gpu-real-1").items()
               if k == "memtests/test_s2_paraformer.py::test_as_reported::as-reported")
    failures = [gpu_logs.load(stem).failure(row["nodeid"]) for stem in ("gpu-real-1", "gpu-real-2")]
    assert row["passed"] is True and all(failures)
    line = next(x for x in document("docs/gpu-results.md").splitlines()
                if x.startswith("| test_s2_paraformer as-reported |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[-4:] == [f"FAILED {failures[0].short}", f"FAILED {failures[1].short}", "no-baseline", "pass"]


def test_every_failure_in_a_parts_log_is_shown_on_a_row():
    """A part's failed test has a row in its report, so its table shows the failure (none is lost to 'passed')."""
    from benchmarks import gpu_logs, gpu_parts

    for stem in gpu_parts.RUNS:
        log, measured = gpu_logs.load(stem), gpu_parts.rows(stem)
        for failure in log.failures:
            assert any(log.failure(k) is failure for k in measured), (stem, failure.test)
        assert sum(log.outcome(k) != "passed" for k in measured) <= log.counts.get("failed", 0)


def test_every_committed_session_log_adds_up():
    """Each committed session log parses: its failure sections add up to pytest's counts, each with its module."""
    from benchmarks import gpu_logs

    stems = [p.name.removesuffix(".log.gz") for p in (gpu_logs.ROOT / gpu_logs.LOGS).glob("*.log.gz")
             if not p.name.endswith(".validation.log.gz")]
    assert len(stems) > 20
    for stem in stems:
        log = gpu_logs.load(stem)
        assert len(log.failures) == log.counts.get("failed", 0) + log.counts.get("error", 0), stem
        assert all(f.module for f in log.failures) or stem == "gpu-tiny-2-xdist4", stem  # xdist names no module


def test_the_cuda_free_check_is_stated_as_its_logs_read():
    """The `real` part's CUDA-free check failed 5 of 5 without checking anything (the plugin was not importable in
    its subprocesses): the page says what the log says, and the later `jit` run's outcome beside it."""
    from benchmarks import gpu_logs

    page = document("docs/gpu-results.md")
    real, jit = gpu_logs.load("gpu-real.cuda-free"), gpu_logs.load("gpu-jit.cuda-free")
    assert real.counts == {"failed": 5} and jit.counts == {"passed": 5}
    assert f'reads "{real.summary}"' in page and f'its log reads "{jit.summary}"' in page
    table = page[page.index("| check (tests/integration/test_cuda_free.py) |"):].split("\n\n")[0].splitlines()[2:]
    assert len(table) == 5 and all(" | FAILED at " in row and row.endswith(" | passed |") for row in table)


def test_each_write_up_at_real_scale_says_where_its_runner_departs_from_the_write_ups_run():
    """S3's runner is not LLaMA-Factory and S4's is not SFTTrainer: beside their figures, the page says how they
    differ where memory is concerned, so an over or under budget is not read as the write-up's own run."""
    from doc_figures import section

    s3 = section("docs/gpu-results.md", "### S3:", "### S4:")
    assert "upcasts every trainable parameter to fp32" in s3 and "without gradient checkpointing" in s3
    assert "the reproduction is lost" not in s3
    s4 = section("docs/gpu-results.md", "### S4:", "### S1, S2 and S5")
    assert "not TRL's SFTTrainer" in s4 and "enables checkpointing through it" in s4
    assert "4 sequences of 2048 tokens" in s4
