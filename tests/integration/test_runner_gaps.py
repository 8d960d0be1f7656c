"""Work a runner does between two `with ctx.meter.phase()` blocks, or after the last, is measured: it was in no phase,
and a spike there passed any budget."""

import json
import sys

from inner_session import ONE_CASE

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver
from gpu_budget.isolate.remote import Remote


def test_a_spike_after_the_last_block_is_gated(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners='''
import os


def run(ctx):
    with ctx.meter.phase("load"):
        pass
    spike = b"\\x01" * (int(os.environ["SPIKE_MIB"]) << 20)
    del spike
    with ctx.meter.phase("train_step_1", step=1):
        pass
    spike = b"\\x01" * (int(os.environ["SPIKE_MIB"]) << 20)  # an evaluation outside any block
''', test_mem=ONE_CASE)
    monkeypatch.setenv("SPIKE_MIB", "400")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert row["verdict"] == "over-budget", row["verdict"]
    assert list(row["phases"]) == ["load", "after load", "train_step_1", "after train_step_1"], list(row["phases"])
    assert row["peaks"]["ram_tree"] >= 400 * 2**20
    monkeypatch.setenv("SPIKE_MIB", "10")
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert list(row["phases"]) == ["load", "after load", "train_step_1", "after train_step_1"], list(row["phases"])


LEAD_IN = '''
def run(ctx):
    spike = b"\\x01" * (ctx.params["mib"] << 20)  # a model built before the first mark
    del spike
    with ctx.meter.phase("load"):
        held = b"\\x01" * (8 << 20)
    return {"held": len(held)}
'''


def test_work_before_the_first_mark_is_measured_where_it_passed_the_phase_after_it(tmp_path):
    """A runner's work before its first phase was in no phase: a 200 MiB spike there left the row's peak at the
    load phase's. It is the phase "run" (as a command's time before its first mark is), kept where it passed the
    phase after it by more than noise, as the run after a block is."""
    (tmp_path / "lead.py").write_text(LEAD_IN)
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    try:
        spiked, plain = (remote.measure(Scenario(name="lead", run="lead:run", params={"mib": mib}).to_json("tiny"),
                                        tmp_path / "assets", 120, threads=1, preload=()) for mib in (200, 0))
    finally:
        remote.close()
    assert spiked.ok and plain.ok, (spiked, plain)
    assert list(spiked.phases) == ["run", "load"], list(spiked.phases)
    assert spiked.peaks.ram_tree - plain.peaks.ram_tree > 190 * 2**20, (spiked.peaks, plain.peaks)
    assert list(plain.phases) == ["load"], list(plain.phases)  # nothing before the first mark: no phase of it


def test_a_runner_that_fails_before_its_first_mark_keeps_that_run_as_its_phase(tmp_path):
    """Its lead-in was never ended: the row held a phase 'run' only as far as the child streamed it, a lower bound."""
    (tmp_path / "early.py").write_text('def run(ctx):\n    held = b"\\x01" * (100 << 20)\n    raise RuntimeError("no data")\n')
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    try:
        failed = remote.measure(Scenario(name="early", run="early:run").to_json("tiny"), tmp_path / "assets", 120,
                                threads=1, preload=())
    finally:
        remote.close()
    assert failed.error is not None and failed.error.kind == "exception", failed.error
    assert list(failed.phases) == ["run"] and failed.phases["run"].ram_peak >= 100 * 2**20, failed.phases
    assert "lower bound" not in (failed.ram_tree_bound or ""), failed.ram_tree_bound


BLOCKS = '''
import gpu_budget
with gpu_budget.phase("load"):
    held = b"\\x01" * (8 << 20)
with gpu_budget.phase("train_step_1", step=1):
    pass
spike = b"\\x01" * (64 << 20)  # an evaluation outside any block
'''


def test_a_commands_blocks_are_kept_as_a_function_cases_are(tmp_path):
    """A script's block ended in a phase 'after <block>' kept whatever it held, where a function case's
    ctx.meter.phase keeps it only where it adds: the same runner written as a command got an 'after load' of no
    figure of its own, a phase the function case's baseline never holds."""
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    try:
        measured = remote.measure(Scenario(name="blocks", command=[sys.executable, "-c", BLOCKS]).to_json("tiny"),
                                  tmp_path / "assets", 120, threads=1, preload=())
    finally:
        remote.close()
    assert measured.ok, measured.error
    assert list(measured.phases)[-3:] == ["load", "train_step_1", "after train_step_1"], list(measured.phases)
