"""Step and epoch numbers a Trainer's phases go on from, where something else marked before it (a real Trainer, a
tiny BERT): the runner's own marks, an earlier Trainer, a script's own gpu_budget.step() in a gated command."""

import pytest
import tiny_trainer

pytest.importorskip("transformers")

SCRIPT = '''
"""A script run as a command: steps it marks by hand, then a Trainer the gate's callback meters, with a callback of
its own that marks each step too (argv "mine"), its own "train_setup" phase just before train() ("setup"), and two
steps it marks by hand after it ("after")."""
import sys
import tempfile

import gpu_budget
import tiny_trainer

for _ in range(int(sys.argv[1])):
    gpu_budget.step()
gpu_budget.phase("build")
model, rows = tiny_trainer.bert(), tiny_trainer.rows(4)
with tempfile.TemporaryDirectory() as out:
    callbacks = [tiny_trainer.mine()] if "mine" in sys.argv[2:] else []
    trainer = tiny_trainer.trainer(out, model, rows, callbacks, {"max_steps": 2})
    if "setup" in sys.argv[2:]:
        gpu_budget.phase("train_setup")
    trainer.train()
if "after" in sys.argv[2:]:
    gpu_budget.step()
    gpu_budget.step()
'''

TESTS = '''
import sys

import pytest
from gpu_budget import Scenario

RUN = Scenario(name="counting", run="tiny_trainer:run", params={"args": {"num_train_epochs": 1}})  # 2 optimizer steps


@pytest.mark.gpu_budget
def test_after_steps_marked_by_hand(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(by_hand=1))
    assert list(row.phases) == ["train_step_1", "train_setup", "train_step_2", "train_step_3", "train_end"]
    assert [s.step for s in row.steps] == [1, 2, 3]


@pytest.mark.gpu_budget
def test_a_script_after_steps_marked_by_hand(gpu_budget):
    row = gpu_budget.measure(Scenario(name="script", command=[sys.executable, "script.py", "1"]))
    assert list(row.phases) == ["run", "train_step_1", "build", "train_setup", "train_step_2", "train_step_3", "train_end"]


@pytest.mark.gpu_budget
def test_a_scripts_own_step_in_its_callback(gpu_budget):
    row = gpu_budget.measure(Scenario(name="mine", command=[sys.executable, "script.py", "0", "mine"]))
    assert list(row.phases) == ["run", "build", "train_setup", "train_step_1", "train_step_2", "train_end"]


@pytest.mark.gpu_budget
def test_a_runners_own_step_in_its_callback(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(callbacks=["meter", "mine"]))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end"]


@pytest.mark.gpu_budget
def test_a_runners_own_step_each_micro_batch(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(callbacks=["meter", "micro"],
                                             args={"max_steps": 2, "gradient_accumulation_steps": 3}))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end"]
    assert [s.step for s in row.steps] == [1, 2]


@pytest.mark.gpu_budget
def test_steps_after_a_trainer(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(after=2), label="runner")
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end", "train_step_3",
                                "train_step_4"]
    row = gpu_budget.measure(Scenario(name="after", command=[sys.executable, "script.py", "0", "after"]), label="script")
    assert list(row.phases) == ["run", "build", "train_setup", "train_step_1", "train_step_2", "train_end",
                                "train_step_3", "train_step_4"]
    assert [s.step for s in row.steps] == [1, 2, 3, 4]


@pytest.mark.gpu_budget
def test_an_own_train_setup_just_before(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(train_begin="train_setup"), label="runner")
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end"]
    row = gpu_budget.measure(Scenario(name="setup", command=[sys.executable, "script.py", "0", "setup"]), label="script")
    assert list(row.phases) == ["run", "build", "train_setup", "train_step_1", "train_step_2", "train_end"]


@pytest.mark.gpu_budget
def test_a_second_trainers_epochs(gpu_budget):
    row = gpu_budget.measure(RUN.with_params(trainers=[{"phases": ["train_setup"]}, {}],
                                             args={"num_train_epochs": 1, "eval_strategy": "epoch"}))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "eval_epoch_1", "train_end",
                                "train_step_3", "train_step_4", "eval_epoch_2", "train_end (2)"]
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the inner run records its baselines
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(tiny_trainer=tiny_trainer.source(), script=SCRIPT, test_counting=TESTS)
    return pytester


def test_a_trainer_goes_on_from_the_steps_marked_before_it(project):
    """Steps a runner or a script marked itself are counted: the Trainer's first is not a second step 1; and a
    gpu_budget.step() of the user's own in a step a Trainer's callback began is that step, not another; a second
    Trainer's evaluations each epoch go on from the first's epochs."""
    project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-k",
                                 "not steps_after_a and not own_train_setup and not micro").assert_outcomes(passed=5)


def test_a_users_step_on_each_micro_batch_is_the_trainers_step(project):
    """A gpu_budget.step() of the user's own on each micro-batch (a TrainerCallback's on_substep_end, a Trainer's
    training_step) under gradient accumulation: the first in a step was that step, each later one a step of its
    own, which the Trainer's next step then began again: ['train_setup', 'train_step_1', 'train_step_2',
    'train_step_2 (2)', 'train_step_3', 'train_end'], 3 steps for 2 optimizer steps."""
    project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-k", "micro").assert_outcomes(passed=1)


def test_steps_marked_after_a_trainer_go_on_from_its_steps(project):
    """gpu_budget.step() after a metered Trainer (the gate's callback, or meter_callback) is its step 3, not a
    second step 1."""
    project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-k", "steps_after_a").assert_outcomes(passed=1)


def test_a_trainer_joins_the_runners_own_phase_of_the_name_it_begins(project):
    """A "train_setup" of the runner's own, begun just before train(), goes on where the Trainer's callback would
    begin one (the gate's in a command, meter_callback's train_begin): no "train_setup (2)"."""
    project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-k", "own_train_setup").assert_outcomes(passed=1)
