"""gpu_budget.phase() and gpu_budget.step() in a function case's runner: they start the meter's phases, as
ctx.meter.start does, instead of doing nothing (they reach the gate through its socket in a command only)."""

import sys

from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver
from gpu_budget.isolate.remote import Remote

RUNNER = '''
import os
import gpu_budget

def run(ctx):
    gpu_budget.phase("load")
    held = [b"\\x01" * 2**20]
    for _ in range(3):
        gpu_budget.step()
        held.append(b"\\x01" * 2**20)
    if os.fork() == 0:  # a process forked from the runner (a DataLoader worker) marks nothing
        gpu_budget.phase("from a worker")
        os._exit(0)
    os.wait()
    gpu_budget.phase("eval")
    ctx.meter.start("train_step_7", step=7)  # a step the runner marks on its meter itself
    gpu_budget.step()
'''


def test_a_function_runner_marks_its_phases_and_steps_with_gpu_budget_phase_and_step(tmp_path):
    (tmp_path / "marking.py").write_text(RUNNER)
    remote = Remote(sys.executable, [str(tmp_path), *forkserver.child_paths()])
    try:
        job = Scenario(name="marking", run="marking:run").to_json("tiny")
        measured = remote.measure(job, tmp_path / "assets", 120, threads=1, preload=())
    finally:
        remote.close()
    assert measured.ok, measured
    assert list(measured.phases) == ["load", "train_step_1", "train_step_2", "train_step_3", "eval", "train_step_7",
                                     "train_step_8"]  # step() goes on from a step marked on the meter itself
    assert [measured.phases[f"train_step_{k}"].step for k in (1, 2, 3, 7, 8)] == [1, 2, 3, 7, 8]
