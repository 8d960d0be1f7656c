"""launcher.py's advice fits the way a case was launched, and a rank's accelerate state reaches the row.

What accelerate 1.15 does with each form, measured on this CPU host (the
integration test, test_command_edges.py, launches the config-file forms for
real): `--cpu` beside `--multi_gpu` or `--use_fsdp` is refused; `--cpu` with a
config file starts one process with no RANK; `--num_processes 2` with neither
`--multi_gpu` nor a config file starts one process.
"""

import subprocess
import sys

import pytest

from gpu_budget.isolate.launcher import RankEvents, accelerate_options, cpu_advice, missing_flag
from gpu_budget.isolate.wire import Message

PY = sys.executable
LAUNCH = [PY, "-m", "accelerate.commands.launch"]


@pytest.fixture(autouse=True)
def no_default_config(tmp_path, monkeypatch):
    """No accelerate default config file of this machine's: the flags alone decide."""
    monkeypatch.setenv("HF_HOME", str(tmp_path))


@pytest.mark.parametrize("argv,options", [
    ([*LAUNCH, "--multi_gpu", "--num_processes=2", "train.py", "--cpu"], {"multi_gpu", "num_processes"}),
    ([PY, "-m", "accelerate.commands.accelerate_cli", "launch", "--multi-gpu", "t.py"], {"multi_gpu"}),
    (["/venv/bin/accelerate", "launch", "--config_file", "c.yaml", "t.py"], {"config_file"}),
    (["accelerate-launch", "--use-fsdp", "t.py"], {"use_fsdp"}),
    ([PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py"], None),
    (["accelerate", "config"], None),
])
def test_an_accelerate_launch_is_told_by_its_command_line_and_read_up_to_its_script(argv, options):
    assert accelerate_options(argv) == options


@pytest.mark.parametrize("argv,why", [
    ([*LAUNCH, "--config_file", "fsdp.yaml", "t.py"], "with a config file, accelerate launch --cpu starts one process, with "
                                                     + "no RANK"),
    ([*LAUNCH, "--multi_gpu", "--num_processes", "2", "t.py"], "accelerate launch refuses --cpu beside --multi_gpu"),
    ([*LAUNCH, "--use_fsdp", "--num_processes", "2", "t.py"], "accelerate launch refuses --cpu beside --use_fsdp"),
])
def test_the_cpu_advice_is_the_environment_and_says_why_not_cpu_for_each_launch(argv, why):
    assert cpu_advice(argv) == ('set ACCELERATE_USE_CPU=true in the Scenario\'s env (env={"ACCELERATE_USE_CPU": '
                                f'"true"}}) for its ranks to train as one (MULTI_CPU, gloo); not --cpu: {why}')


def test_torchrun_gets_the_environment_and_no_word_of_cpu():
    advice = cpu_advice([PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "t.py"])
    assert "ACCELERATE_USE_CPU=true" in advice and "--cpu" not in advice, advice


def test_the_missing_flag_is_named_only_where_the_launch_lacks_it(tmp_path):
    assert "add --multi_gpu (or --config_file with num_processes: 4)" in missing_flag([*LAUNCH, "--num_processes", "4",
                                                                                       "t.py"], 4)
    assert missing_flag([*LAUNCH, "--multi_gpu", "--num_processes", "2", "t.py"], 2) is None
    assert missing_flag([*LAUNCH, "--config_file", "c.yaml", "t.py"], 2) is None
    assert missing_flag([PY, "-m", "torch.distributed.run", "t.py"], 2) is None
    (tmp_path / "accelerate").mkdir()
    (tmp_path / "accelerate" / "default_config.yaml").write_text("num_processes: 2\n")  # it decides, not the flags
    assert missing_flag([*LAUNCH, "--num_processes", "2", "t.py"], 2) is None


def test_a_declared_count_the_launch_missed_names_the_flag_for_accelerate_and_asks_otherwise():
    message = RankEvents().fault(set(), 0, declared=2, argv=[*LAUNCH, "--num_processes", "2", "t.py"])
    assert message.endswith("whatever --num_processes says: add --multi_gpu (or --config_file with num_processes: 2)")
    assert RankEvents().fault({0}, 0, declared=2).endswith("is the launcher's process count the same?")


def test_a_launch_that_failed_for_want_of_the_flag_names_it_too():
    """accelerate launch --num_processes 2 without --multi_gpu: one process with no RANK, and a script that reads
    RANK (or calls init_process_group) fails in it. The row said only "exited with 1" and the script's KeyError."""
    message = RankEvents().fault(set(), 1, declared=2, argv=[*LAUNCH, "--num_processes", "2", "t.py"])
    assert message is not None and message.startswith("the scenario declares 2 ranks (Scenario(ranks=2)), but no "
                                                       "process(es) ran with a launcher's RANK"), message
    assert message.endswith("whatever --num_processes says: add --multi_gpu (or --config_file with num_processes: 2)")
    # torchrun that failed before it started its ranks (a bad option): its own stderr says why, no guess is added
    assert RankEvents().fault(set(), 1, declared=2, argv=[PY, "-m", "torch.distributed.run", "t.py"]) is None


def events(*messages):
    ranks = RankEvents()
    for message in messages:
        ranks.take(Message.from_json(message))
    return ranks


def test_each_ranks_distributed_type_reaches_the_row_and_fsdp_asked_but_not_run_is_noted():
    # a rank's environment: read once the process has exec'd (it says so), as a rank reports only then
    with subprocess.Popen([PY, "-c", "print('up', flush=True); import time; time.sleep(30)"], stdout=subprocess.PIPE,
                          env={"ACCELERATE_USE_FSDP": "true"}) as asked:
        assert asked.stdout.readline() == b"up\n"
        try:
            ranks = events(*({"rank": r, "pid": asked.pid, "accelerate": "DistributedType.MULTI_CPU", "processes": 2}
                             for r in (0, 1)))
        finally:
            asked.kill()
    facts = ranks.distributed(["the hook's note"])
    assert facts["distributed_type"] == {"0": "MULTI_CPU", "1": "MULTI_CPU"} and facts["fsdp_requested"] is True
    note = ("the accelerate config asks for FSDP (ACCELERATE_USE_FSDP=true), but the ranks ran MULTI_CPU (DDP): "
            "accelerate applies no FSDP plugin on a CPU host")
    assert facts["notes"] == ["the hook's note", note]
    plain = events({"rank": 0, "pid": -1, "accelerate": "DistributedType.MULTI_GPU", "processes": 2}).distributed([])
    assert plain == {"distributed_type": {"0": "MULTI_GPU"}}  # FSDP not asked: nothing to note
    assert events({"rank": 0, "group": 2}).distributed([]) == {}  # no accelerate state: nothing said
