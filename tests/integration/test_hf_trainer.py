"""A user's own Trainer test gets per-step phases through gpu_budget.meter_callback (a real Trainer, a tiny BERT)."""

import pytest
import tiny_trainer

pytest.importorskip("transformers")

TESTS = '''
import pytest
from gpu_budget import Scenario

ARGS = {"gradient_accumulation_steps": 2, "num_train_epochs": 2, "eval_steps": 2}  # 4 optimizer steps of 8 rows
BERT = Scenario(name="tiny_bert", run="tiny_trainer:run", params={
    "trainers": [{"phases": ["load", "data", "train_setup"]}], "rows": 8, "args": {**ARGS, "eval_strategy": "steps"}})
FRONT = ["load", "data", "train_setup"]


@pytest.mark.gpu_budget
def test_trainer_steps_are_phases(gpu_budget):
    row = gpu_budget.measure(BERT, label="eval-steps")
    assert row.info["optimizer_steps"] == 4 and row.info["ended"] == 6  # 4 steps and 2 evaluations
    assert list(row.phases) == FRONT + ["train_step_1", "train_step_2", "eval_step_2",
                                           "train_step_3", "train_step_4", "eval_step_4", "train_end"]
    assert [s.step for s in row.steps] == [1, 2, 3, 4]
    assert len(row.steps) == 4 and row.growth["ram_per_step"] is None  # its series, too short to judge growth

    row = gpu_budget.measure(BERT.with_params(args={**ARGS, "eval_strategy": "epoch"}, train_end=None), label="eval-epoch")
    assert list(row.phases) == FRONT + ["train_step_1", "train_step_2", "eval_epoch_1",
                                           "train_step_3", "train_step_4", "eval_epoch_2"]

    row = gpu_budget.measure(BERT.with_params(callbacks=[]), label="no-callback")
    assert row.info["optimizer_steps"] == 4 and list(row.phases) == FRONT  # the Trainer alone: no steps
    assert row.steps == () and row.growth["ram_per_step"] is None
'''


def test_a_users_trainer_gets_a_phase_per_optimizer_step_and_evaluation(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)  # the inner run records its baselines
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(tiny_trainer=tiny_trainer.source(), test_trainer=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    result.assert_outcomes(passed=1)



RESUMING_TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget
def test_resumed(gpu_budget):
    row = gpu_budget.measure(Scenario(name="resumed", run="tiny_trainer:run", params={"args": {"eval_strategy": "epoch"},
        "trainers": [{"phases": ["train_setup"], "args": {"num_train_epochs": 1, "save_strategy": "epoch"}},
                     {"phases": ["resume_setup"], "args": {"num_train_epochs": 3}, "resume": True}]}))  # 2 steps an epoch
    assert row.info["optimizer_steps"] == 6
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "eval_epoch_1", "train_end",
                                "resume_setup", "train_step_3", "train_step_4", "eval_epoch_2",
                                "train_step_5", "train_step_6", "eval_epoch_3", "train_end (2)"]
'''


def test_an_evaluation_after_an_epoch_is_named_by_the_trainers_epoch(pytester, monkeypatch):
    """A training resumed from its checkpoint goes on at the Trainer's epoch (epochs 2 and 3, not 1 and 2 again)."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(tiny_trainer=tiny_trainer.source(), test_resuming=RESUMING_TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)


FLOW_TESTS = '''
import pytest
from gpu_budget import Scenario

FLOW = Scenario(name="flow", run="tiny_trainer:run", params={"rows": 8, "watch_best_load": True})
EVAL = {"max_steps": 4, "eval_strategy": "steps", "eval_steps": 2, "save_strategy": "no"}


@pytest.mark.gpu_budget
def test_eval_on_start(gpu_budget):
    row = gpu_budget.measure(FLOW.with_params(args={**EVAL, "eval_on_start": True}))
    assert list(row.phases) == ["train_setup", "eval_step_0", "train_step_1", "train_step_2", "eval_step_2",
                                "train_step_3", "train_step_4", "eval_step_4", "train_end"]


@pytest.mark.gpu_budget
def test_load_best_model_at_end(gpu_budget):
    row = gpu_budget.measure(FLOW.with_params(args={**EVAL, "save_strategy": "steps", "save_steps": 2,
                                                    "load_best_model_at_end": True}))
    assert list(row.phases)[-3:] == ["train_step_4", "eval_step_4", "train_end"]
    assert row.info["best_model_loaded_in"] == ["train_end"]  # not in the last evaluation's phase
'''


def test_the_trainers_own_evaluations_and_loads_are_phases_of_their_own(pytester, monkeypatch):
    """An evaluation before the first step (eval_on_start) is one; loading the best checkpoint after the loop
    (load_best_model_at_end) is train_end's, not the last evaluation's."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(tiny_trainer=tiny_trainer.source(), test_flow=FLOW_TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=2)


SEVERAL_TESTS = '''
import pytest
from gpu_budget import Scenario

SEVERAL = Scenario(name="several", run="tiny_trainer:run", params={"args": {"max_steps": 2}})


@pytest.mark.gpu_budget
def test_passed_twice(gpu_budget):
    row = gpu_budget.measure(SEVERAL.with_params(callbacks=["meter", "meter"]))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end"]
    assert row.info["ended"] == 2  # after_each once a step, not once a callback


@pytest.mark.gpu_budget
def test_two_trainers(gpu_budget):
    row = gpu_budget.measure(SEVERAL.with_params(trainers=[{"phases": ["train_setup"]}, {}]))
    assert list(row.phases) == ["train_setup", "train_step_1", "train_step_2", "train_end",
                                "train_step_3", "train_step_4", "train_end (2)"]
    assert [s.step for s in row.steps] == [1, 2, 3, 4]


@pytest.mark.gpu_budget
def test_an_evaluation_a_users_callback_asks_for(gpu_budget):
    row = gpu_budget.measure(SEVERAL.with_params(callbacks=["meter", "ask"]))
    assert list(row.phases) == ["train_setup", "train_step_1", "eval_step_1", "train_step_2", "train_end"]
'''


def test_callbacks_on_one_meter_and_trainers_one_after_another(pytester, monkeypatch):
    """The meter's callback passed twice starts each phase once; a second Trainer's steps go on from the first's
    (train_step_1 again would repeat the series' step numbers); an evaluation a callback listed after the meter's
    asks for in on_step_end is a phase of its own, not the step's."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = torch transformers\n")
    pytester.makepyfile(tiny_trainer=tiny_trainer.source(), test_several=SEVERAL_TESTS)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=3)
