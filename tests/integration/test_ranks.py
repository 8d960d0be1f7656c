"""A command under a launcher: torchrun's ranks gated one by one (tree.py's rank groups, ranks.py, launcher.py).

Each test runs a real pytest session (pytester, in a subprocess) whose case is
`torchrun --standalone --nproc-per-node 2 ranks.py A B`: rank r holds argv[1 + r]
MiB, so each rank's figure is known, and rank 1 fails on demand (MODE). The
ranks import no torch (the launcher does), so a launch takes a few seconds on
an idle host and several times that on a loaded one: a test that needs the
ranks to have reported before a timeout derives it from a clean launch measured
just before, never from a fixed guess.
"""

import json
import math
import textwrap
import uuid

import pytest
from inner_session import rows, survivors

MiB = 2**20

RANKS = '''
import os, sys, time
from gpu_budget import phase, step

rank, mode = int(os.environ["RANK"]), os.environ.get("MODE", "")
# Both ranks alive before rank 0's first mark: a rank started late (a loaded host) has no figure in the phases before
# it, which the tests here do not ask about.
attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
open(f"alive.{attempt}.{rank}", "w").close()
deadline = time.monotonic() + 30
while not os.path.exists(f"alive.{attempt}.{1 - rank}") and time.monotonic() < deadline:
    time.sleep(0.01)
if mode == "alone":
    import torch.distributed  # noqa: F401  torch, but no process group: each rank alone
phase("load")
held = b"\\x01" * (int(sys.argv[1 + rank]) << 20)
if rank == 1 and mode == "raise":
    raise ValueError("planted on rank 1")
if rank == 1 and mode == "oom":
    raise MemoryError("planted on rank 1")
if rank == 1 and mode == "kill":
    os.kill(os.getpid(), 9)
if rank == 1 and mode == "late":  # killed after rank 0 has finished and exited
    time.sleep(1.5)
    os.kill(os.getpid(), 9)
if rank == 1 and mode == "helper":  # a Python helper it ran (RANK inherited) exits first: not rank 1's own exit
    import subprocess
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    os.kill(os.getpid(), 9)
if rank == 1 and mode == "hang":
    time.sleep(300)
if rank == 1 and mode == "restart" and os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0":
    os.kill(os.getpid(), 9)  # killed in the first attempt only: torchrun --max-restarts 1 restarts the ranks
if mode == "collective":  # rank 1 killed (as by the OOM killer) while rank 0 waits for it in a gloo barrier
    import torch.distributed as dist
    dist.init_process_group("gloo")
    if rank == 1:
        os.kill(os.getpid(), 9)
    dist.barrier()  # rank 0 raises here: its peer is gone
if mode == "exit":  # rank 1 leaves with a failing code (no exception) while rank 0 waits for it in a gloo barrier
    import torch.distributed as dist
    dist.init_process_group("gloo")
    if rank == 1:
        sys.exit(3)
    dist.barrier()
for _ in range(2):
    step()
    time.sleep(0.1)
if mode == "rise":  # rank 1 rises past rank 0 in the last step, then both sleep past the timeout
    if rank == 1:
        held += b"\\x01" * (150 << 20)
    time.sleep(300)
'''


@pytest.fixture
def launch(pytester, monkeypatch):
    """Write a test module running ranks.py under torchrun with rank sizes `sizes` (MiB) and run it."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(ranks=RANKS)

    def run(body: str, *args: str):
        pytester.makepyfile(test_mem=textwrap.dedent('''
            import sys
            import pytest
            from gpu_budget import Scenario

            def torchrun(*args, env=None, ranks=2):
                return Scenario(name="ddp", command=[sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                     "--nproc-per-node", "2", "ranks.py", *args], env=env or {},
                                ranks=ranks)
        ''') + textwrap.dedent(body))
        return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", *args)

    return run


def test_each_rank_gets_its_own_figure_and_the_case_is_judged_on_the_worst(launch, pytester):
    result = launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_ddp(gpu_budget):
            gpu_budget.measure(torchrun("40", "120"))
    ''')
    result.assert_outcomes(passed=1)
    row = rows(pytester)["test_ddp"]
    ranks = {r["rank"]: r for r in row["ranks"]}
    assert sorted(ranks) == [0, 1], row["ranks"]
    # rank 1 holds 80 MiB more than rank 0: each figure is its own rank's, not the node's
    gap = ranks[1]["peaks"]["ram_tree"] - ranks[0]["peaks"]["ram_tree"]
    assert 76 * MiB <= gap <= 84 * MiB, ranks
    assert row["peaks"]["ram_tree"] == ranks[1]["peaks"]["ram_tree"], (row["peaks"], ranks)
    # the node holds the launcher and both ranks: more than the two ranks together
    node = row["node"]["peaks"]
    assert node["ram_tree"] >= ranks[0]["peaks"]["ram_tree"] + ranks[1]["peaks"]["ram_tree"], row["node"]
    # phases are rank 0's marks: load and two steps, with each rank's figure in each
    assert list(ranks[1]["phases"]) == ["run", "load", "train_step_1", "train_step_2"], ranks[1]["phases"]
    # the row's phases and steps are the worst rank's, as its peaks are; the node's are under "node"
    assert {name: p["ram_tree_peak"] for name, p in row["phases"].items()} == \
        {name: p["ram_tree_peak"] for name, p in ranks[1]["phases"].items()}, row["phases"]
    assert [s["ram_tree"] for s in row["steps"]] == [s["ram_tree"] for s in ranks[1]["steps"]]
    assert [p["name"] for p in row["node"]["phases"]] == list(ranks[1]["phases"])
    assert all(p["ram_tree_peak"] > ranks[1]["phases"][p["name"]]["ram_tree_peak"] for p in row["node"]["phases"])
    assert row["info"]["phase_marks"] == 3 and row["info"]["ignored_marks"] == 3, row["info"]
    assert row["info"]["world"] == 2 and row["info"]["backend"] == [], row["info"]  # no process group here
    out = result.stdout.str()
    assert "test_mem.py::test_ddp: 2 ranks; worst rank 1: RAM tree" in out and "(rank 1 / rank 0)" in out, out


def test_a_budget_applies_to_each_rank_and_a_regression_names_its_rank(launch, pytester):
    """Rank 0 grows by 64 MiB and stays below rank 1: the worst rank alone would not show it."""
    body = '''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_ddp(gpu_budget):
            gpu_budget.measure(torchrun("SIZE0", "120"))

        @pytest.mark.gpu_budget(ram=LIMIT)
        def test_budget(gpu_budget):
            gpu_budget.measure(torchrun("40", "120"))
    '''
    launch(body.replace("SIZE0", "40").replace("LIMIT", '"2 GiB"'), "--gpu-budget-update").assert_outcomes(passed=2)
    stored = json.loads(next((pytester.path / "baselines").rglob("*.json")).read_text())
    entry = stored["entries"]["tiny"]["test_mem.py::test_ddp"]
    assert sorted(entry["ranks"]) == ["0", "1"], entry
    limit = (entry["ranks"]["0"]["ram_tree"] + entry["ranks"]["1"]["ram_tree"]) // 2  # between the two ranks
    result = launch(body.replace("SIZE0", "104").replace("LIMIT", f'"{limit} B"'))
    result.assert_outcomes(failed=2)
    by = rows(pytester)
    assert by["test_ddp"]["verdict"] == "regression", by["test_ddp"]["message"]
    assert by["test_ddp"]["message"].startswith("command differs from the baseline's: "), by["test_ddp"]["message"]
    assert "'40' -> '104'; rank 0: ram_tree " in by["test_ddp"]["message"], by["test_ddp"]["message"]
    assert "rank 1" not in by["test_ddp"]["message"], by["test_ddp"]["message"]
    assert by["test_budget"]["verdict"] == "over-budget", by["test_budget"]["message"]
    assert by["test_budget"]["message"].startswith("rank 1: host RAM peak "), by["test_budget"]["message"]
    assert "rank 0" not in by["test_budget"]["message"], by["test_budget"]["message"]


def test_a_launch_of_more_ranks_than_its_baseline_is_named_and_an_update_records_every_rank(launch, pytester):
    """Ranks left undeclared: the baseline of a 2-rank launch against a 3-rank one. Rank 2 holds 80 MiB more than
    any rank of the baseline; it was left uncompared and never recorded, the row passing as within its baseline."""
    body = '''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_world(gpu_budget):
            gpu_budget.measure(Scenario(name="ddp", command=[sys.executable, "-m", "torch.distributed.run",
                                                             "--standalone", "--nproc-per-node", "N", "ranks.py",
                                                             "40", "40", "120"]))
    '''
    launch(body.replace("N", "2"), "--gpu-budget-update").assert_outcomes(passed=1)
    result = launch(body.replace("N", "3"))
    result.assert_outcomes(passed=1)
    row = rows(pytester)["test_world"]
    message = row["message"]
    assert "setup differs from the baseline's: ranks 2 -> 3" in message and "host RAM not compared" in message, message
    # the row's setup is the one the verdict judged by: the printed setup line and the JSON say so too
    assert row["fingerprint_changed"] == ["ranks 2 -> 3 (the launch's: no Scenario(ranks=))"], row["fingerprint_changed"]
    assert row["setup"]["policy"] == "foreign", row["setup"]
    result.stdout.fnmatch_lines(["*setup differs from the baseline's*ranks 2 -> 3*"])
    launch(body.replace("N", "3"), "--gpu-budget-update").assert_outcomes(passed=1)
    stored = json.loads(next((pytester.path / "baselines").rglob("*.json")).read_text())
    assert sorted(stored["entries"]["tiny"]["test_mem.py::test_world"]["ranks"]) == ["0", "1", "2"]


def test_a_rank_that_raises_or_is_killed_or_missing_fails_the_case_naming_it(launch, pytester):
    result = launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        @pytest.mark.parametrize("mode", ["raise", "kill", "alone", "helper"])
        def test_fault(gpu_budget, mode):
            gpu_budget.measure(torchrun("40", "40", env={"MODE": mode}))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_three(gpu_budget):
            gpu_budget.measure(torchrun("40", "40", ranks=3))
    ''')
    result.assert_outcomes(failed=5)
    by = rows(pytester)
    raised, killed, alone, helper = (by[f"test_fault[{mode}]"]["error"]["message"]
                                     for mode in ("raise", "kill", "alone", "helper"))
    three = by["test_three"]["error"]["message"]
    assert "the scenario declares 3 ranks (Scenario(ranks=3)), but 2 process(es) ran with a launcher's RANK" in three
    assert "exited with 1: rank 1 raised ValueError: planted on rank 1" in raised, raised
    assert "exited with 1: rank 1 ended first without reaching its exit: killed by SIGKILL" in killed, killed
    # its Python helper's exit report (RANK inherited) is not rank 1's own: it did not exit, it was killed
    assert "exited with 1: rank 1 ended first without reaching its exit: killed by SIGKILL" in helper, helper
    assert "2 ranks ran torch but never formed one process group" in alone and "ACCELERATE_USE_CPU=true" in alone, alone
    assert {by[f"test_fault[{m}]"]["error"]["kind"] for m in ("raise", "kill", "alone", "helper")} == {"rank"}


def test_a_rank_run_through_a_shell_counts_the_exit_its_python_reported(launch, pytester):
    """torchrun --no-python bash wrap.sh: each rank's own process is a shell, its Python the one that reports the
    exit. Rank 0 finished, then rank 1 was killed: rank 0 was named as stopped by the launcher."""
    pytester.path.joinpath("wrap.sh").write_text('"$PYTHON" ranks.py 40 40\n')
    launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_wrapped(gpu_budget):
            gpu_budget.measure(Scenario(name="w", command=[sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                           "--nproc-per-node", "2", "--no-python", "bash", "wrap.sh"],
                                        env={"PYTHON": sys.executable, "MODE": "late"}, ranks=2))
    ''').assert_outcomes(failed=1)
    message = rows(pytester)["test_wrapped"]["error"]["message"]
    assert "exited with 1: rank 1 ended first without reaching its exit: " in message, message
    assert "rank 0" not in message.split("the last lines of its stderr")[0], message


def test_a_rank_out_of_memory_fails_the_case_as_oom_though_torchrun_raises_its_own_error(launch, pytester):
    """torchrun's own process raises ChildFailedError once a rank fails; that exception, the command's own, was read
    as the case's, not out of memory, so a rank's MemoryError failed the case as "rank" ("rank 1 raised MemoryError")
    though the docs promise "oom", naming the rank and its phase. (The stand-in launcher of test_command_gpu.py exits
    without raising.)"""
    launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_oom(gpu_budget):
            gpu_budget.measure(torchrun("40", "40", env={"MODE": "oom"}))
    ''').assert_outcomes(failed=1)
    error = rows(pytester)["test_oom"]["error"]
    assert error["kind"] == "oom", error
    assert "ran out of memory on rank 1, in phase load: MemoryError: planted on rank 1" in error["message"], error


def test_a_rank_killed_while_the_others_wait_in_a_collective_is_the_root_cause(launch, pytester):
    """Rank 0 raises in its barrier once rank 1 is gone: that exception is the echo, and torchrun's record says rank
    1 failed first; the message leads with rank 1, and no process of the launch survives it."""
    marker = f"gpu-budget-rank-{uuid.uuid4().hex[:8]}"
    launch(f'''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_oom(gpu_budget):
            gpu_budget.measure(torchrun("40", "40", "{marker}", env={{"MODE": "collective"}}))
    ''').assert_outcomes(failed=1)
    row = rows(pytester)["test_oom"]
    error = row["error"]
    assert error["kind"] == "rank", error
    # the failed row is its worst rank's too; the whole tree the child streamed is the node's
    assert row["peaks"]["ram_tree"] == max(r["peaks"]["ram_tree"] for r in row["ranks"]), (row["peaks"], row["ranks"])
    assert row["node"]["peaks"]["ram_tree"] > sum(r["peaks"]["ram_tree"] for r in row["ranks"]), row["node"]
    assert "exited with 1: rank 1 ended first without reaching its exit: killed by SIGKILL, what the kernel's OOM " \
           "killer sends (the launcher's record)" in error["message"], error["message"]
    assert survivors(marker) == [], survivors(marker)


def test_a_rank_that_exits_with_a_failing_code_while_the_others_wait_is_named_first(launch, pytester):
    """sys.exit(3) on rank 1 reaches its exit report and raises nothing the hook reports; rank 0's exception in its
    barrier is the echo. torchrun's record names rank 1."""
    launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_exit(gpu_budget):
            gpu_budget.measure(torchrun("40", "40", env={"MODE": "exit"}))
    ''').assert_outcomes(failed=1)
    message = rows(pytester)["test_exit"]["error"]["message"]
    assert "exited with 1: rank 1 exited first: exit code 3 (the launcher's record)" in message, message


def test_a_launch_that_exits_0_after_restarting_a_killed_rank_fails_naming_it(launch, pytester):
    """torchrun --max-restarts 1: rank 1 is killed (as by the OOM killer) in the first attempt, the second attempt
    succeeds and the launch exits 0. The case passed and recorded a baseline whose figures spanned both attempts."""
    marker = f"gpu-budget-rank-{uuid.uuid4().hex[:8]}"
    launch(f'''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_restart(gpu_budget):
            gpu_budget.measure(Scenario(name="ddp", command=[sys.executable, "-m", "torch.distributed.run",
                                                             "--standalone", "--max-restarts", "1",
                                                             "--nproc-per-node", "2", "ranks.py", "40", "40",
                                                             "{marker}"], env={{"MODE": "restart"}}, ranks=2))
    ''').assert_outcomes(failed=1)
    row = rows(pytester)["test_restart"]
    assert row["error"]["kind"] == "rank", row["error"]
    message = row["error"]["message"]
    assert "exited with" not in message, message  # the launch itself succeeded
    assert ": the launcher restarted rank 0, 1 after a failed attempt (an elastic restart, torchrun --max-restarts) " \
           "and then exited 0: rank 1 ended first without reaching its exit: killed by " in message, message
    assert "--max-restarts 0" in message, message
    assert not list((pytester.path / "baselines").rglob("*.json")), "a failed case records no baseline"
    assert survivors(marker) == [], survivors(marker)


def test_a_command_that_runs_one_launch_after_another_is_no_restart(launch, pytester):
    """A script that trains, then evaluates, each under its own torchrun: each rank has two processes, both of their
    launch's first attempt (TORCHELASTIC_RESTART_COUNT=0). The case failed as an elastic restart."""
    launch('''
        RUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "ranks.py"]

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_two(gpu_budget):
            gpu_budget.measure(Scenario(name="two", command=["bash", "-c", " ".join([*RUN, "40", "120", "&&", *RUN,
                                                                                     "40", "40"])], ranks=2))
    ''').assert_outcomes(passed=1)
    row = rows(pytester)["test_two"]
    ranks = {r["rank"]: r for r in row["ranks"]}
    assert sorted(ranks) == [0, 1], row["ranks"]
    assert ranks[1]["peaks"]["ram_tree"] - ranks[0]["peaks"]["ram_tree"] >= 76 * MiB, ranks  # the first launch's


def test_a_rank_that_hangs_is_stopped_at_the_timeout_and_nothing_survives(launch, pytester):
    """The timeout must leave the ranks time to report: torchrun imports torch before it starts them, which takes a
    few times longer on a loaded host, and a fixed timeout once fired there before any rank had reported. The
    timeout is derived from the same launch measured first without the hang, on the host as loaded as it is now."""
    marker = f"gpu-budget-rank-{uuid.uuid4().hex[:8]}"

    def case(mode: str) -> str:
        return f'''
            @pytest.mark.gpu_budget(ram="2 GiB")
            def test_hang(gpu_budget):
                gpu_budget.measure(torchrun("40", "40", "{marker}", env={{"MODE": "{mode}"}}))
        '''

    launch(case("clean")).assert_outcomes(passed=1)
    timeout = max(6, math.ceil(STARTUP_MARGIN * rows(pytester)["test_hang"]["wall_seconds"]))
    result = launch(case("hang"), f"--gpu-budget-timeout={timeout}")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_hang"]
    assert row["error"]["kind"] == "timeout", row["error"]
    assert timeout <= row["wall_seconds"] < timeout + 30, (timeout, row["wall_seconds"])  # stopped at the timeout
    # rank 0 ran its steps and exited; rank 1 hung after its load mark: it is named
    assert row["error"]["message"].endswith("; the ranks: rank 0 exited, rank 1 in load; rank 1 alone was still "
                                            "running (the others had exited: the launcher waits for every rank)"), \
        row["error"]["message"]
    assert survivors(marker) == [], survivors(marker)


STARTUP_MARGIN = 3  # the hanging launch's timeout: this many times the clean launch's wall time, measured just before


def test_a_timed_out_launchs_row_is_one_rank_in_its_peaks_phases_and_steps(launch, pytester):
    """Rank 0 held more through the phases ended; rank 1 rose past it in the step open at the timeout. The row's
    peaks moved to rank 1 while its phases and steps stayed rank 0's: a peak in none of the phases it listed."""
    def case(mode: str) -> str:
        return f'''
            @pytest.mark.gpu_budget(ram="2 GiB")
            def test_rise(gpu_budget):
                gpu_budget.measure(torchrun("60", "20", env={{"MODE": "{mode}"}}))
        '''

    launch(case("clean")).assert_outcomes(passed=1)
    timeout = max(6, math.ceil(STARTUP_MARGIN * rows(pytester)["test_rise"]["wall_seconds"]))
    launch(case("rise"), f"--gpu-budget-timeout={timeout}").assert_outcomes(failed=1)
    row = rows(pytester)["test_rise"]
    assert row["error"]["kind"] == "timeout", row["error"]
    assert row["peaks"]["ram_tree"] >= 170 * MiB, row["peaks"]  # rank 1's, its 150 MiB more included
    assert row["phases"]["load"]["ram_tree_peak"] < row["peaks"]["ram_tree"] - 100 * MiB, row["phases"]  # rank 1's
    assert max(p["ram_tree_peak"] for p in row["phases"].values()) == row["peaks"]["ram_tree"], row["phases"]
    assert [s["step"] for s in row["steps"]] == [1, 2], row["steps"]
    assert max(s["ram_tree"] for s in row["steps"]) == row["peaks"]["ram_tree"], row["steps"]


def test_a_single_process_command_has_no_ranks(launch, pytester):
    pytester.makepyfile(one="held = b'\\x01' * (30 << 20)\n")
    launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_one(gpu_budget):
            gpu_budget.measure(Scenario(name="one", command=[sys.executable, "one.py"]))
    ''').assert_outcomes(passed=1)
    row = rows(pytester)["test_one"]
    assert "ranks" not in row and "node" not in row, sorted(row)



def test_a_session_run_under_a_rank_of_its_own_tells_the_launchs_ranks_apart(launch, pytester, monkeypatch):
    """pytest itself ran with RANK=0 in its environment (a job's pod that exports one): the launcher inherits it.
    It was taken for rank 0, its ranks for its workers: "the scenario declares 2 ranks (Scenario(ranks=2)), but 1
    process(es) ran with a launcher's RANK (0)"; and a single process with RANK=0 was read as a launch of 1 rank."""
    monkeypatch.setenv("RANK", "0")
    pytester.makepyfile(one="held = b'\\x01' * (30 << 20)\n")
    launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_ddp(gpu_budget):
            gpu_budget.measure(torchrun("40", "120"))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_one(gpu_budget):
            gpu_budget.measure(Scenario(name="one", command=[sys.executable, "one.py"]))
    ''').assert_outcomes(passed=2)
    by = rows(pytester)
    ranks = {r["rank"]: r["peaks"]["ram_tree"] for r in by["test_ddp"]["ranks"]}
    assert sorted(ranks) == [0, 1] and 76 * MiB <= ranks[1] - ranks[0] <= 84 * MiB, ranks
    assert "ranks" not in by["test_one"] and "node" not in by["test_one"], sorted(by["test_one"])

def test_a_session_rank_inherited_through_a_shell_wrapper_is_no_rank(launch, pytester, monkeypatch):
    """pytest ran with RANK=0 (a job's pod exports one) and the case runs torchrun from a shell script that does not
    exec it: torchrun inherited RANK=0 unchanged through the shell and was taken for rank 0, its ranks for its
    workers: "the scenario declares 2 ranks (Scenario(ranks=2)), but 1 process(es) ran with a launcher's RANK (0)"."""
    monkeypatch.setenv("RANK", "0")
    pytester.path.joinpath("wrap.sh").write_text(
        '"$PYTHON" -m torch.distributed.run --standalone --nproc-per-node 2 ranks.py "$@"\n')
    launch('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_wrapped(gpu_budget):
            gpu_budget.measure(Scenario(name="w", command=["bash", "wrap.sh", "40", "120"],
                                        env={"PYTHON": sys.executable}, ranks=2))
    ''').assert_outcomes(passed=1)
    ranks = {r["rank"]: r["peaks"]["ram_tree"] for r in rows(pytester)["test_wrapped"]["ranks"]}
    assert sorted(ranks) == [0, 1] and 76 * MiB <= ranks[1] - ranks[0] <= 84 * MiB, ranks


LAUNCH = '''
import os, subprocess, sys

# a launcher as torchrun is one for the gate: each rank a process with RANK in its environment
procs = [subprocess.Popen([sys.executable, "rank.py", gib], env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r),
                                                                  "WORLD_SIZE": "2"})
         for r, gib in enumerate(sys.argv[1:])]
sys.exit(max(p.wait() for p in procs))
'''
RANK = '''
import sys
import torch  # the stand-in of tests/fake_torch.py: it plants an allocator peak, no GPU is touched
from gpu_budget import step

step()
torch.cuda.plant(int(float(sys.argv[1]) * 2**30))
step()
'''


UNMARKED = '''
import os
from gpu_budget import step

for _ in range(12):
    if os.environ["RANK"] != "0":  # rank 0 marks no step; rank 1 marks each
        step()
'''


def test_steps_rank_0_left_unmarked_are_said_so_not_told_to_mark_steps_the_other_ranks_marked(pytester, monkeypatch):
    """Only rank 0's process marks the steps; where it marked none and rank 1 marked 12 under steps=, the error read
    "the run measured 0 optimizer step(s) ...; mark each step: gpu_budget.step() in a plain loop, ...", advice the
    script had followed on every rank but 0. A launcher without torch (LAUNCH): seconds."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(launch=LAUNCH, rank=UNMARKED, test_mem='''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.gpu_budget(ram="2 GiB", steps=1000)
        def test_two(gpu_budget):
            gpu_budget.measure(Scenario(name="two", command=[sys.executable, "launch.py", "0", "0"], ranks=2))
    ''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1)
    message = rows(pytester)["test_two"]["message"]
    assert "the run measured 0 optimizer step(s)" in message and "gpu_budget.step() in a plain loop" not in message, \
        message
    assert "rank 0 marked no step, and only rank 0's are read (rank 1 marked 12, not read)" in message, message
    assert rows(pytester)["test_two"]["ranks"][1]["unread_steps"] == 12


FAKE_NVML = '''
"""A stand-in for pynvml: the process asking is its device's one compute process, holding its allocator's reserved
bytes and a context of CONTEXT bytes. No GPU figure: what the stand-in torch planted."""
import os, sys, types

CONTEXT = 300 << 20


def nvmlInit():
    pass


def nvmlDeviceGetHandleByUUID(uuid):
    return uuid


def nvmlDeviceGetComputeRunningProcesses(handle):
    reserved = sys.modules["torch"].cuda.max_memory_reserved()
    return [types.SimpleNamespace(pid=os.getpid(), usedGpuMemory=reserved + CONTEXT)]
'''


@pytest.fixture
def two_gpu_ranks(fake_cuda, monkeypatch):
    """A stand-in host with two GPUs and one 2-rank case, rank 0 planting 1 GiB and rank 1 3 GiB, under a 2 GiB budget."""
    pytester = fake_cuda('''
        import sys

        @pytest.mark.gpu_budget(vram="2 GiB")
        def test_two(gpu_budget):
            gpu_budget.measure(Scenario(name="two", command=[sys.executable, "launch.py", "1", "3"], ranks=2))
    ''')
    pytester.makepyfile(launch=LAUNCH, rank=RANK, pynvml=FAKE_NVML)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    return pytester


def test_each_ranks_gpu_peaks_are_its_own_and_a_vram_budget_applies_to_each(two_gpu_ranks):
    """The CUDA path of a launcher case on the stand-in device: each rank's allocator peaks reach its figure per phase,
    the row holds the largest, and a VRAM budget names the rank that breaks it. No GPU figure: planted bytes."""
    pytester = two_gpu_ranks
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json",
                                           "--gpu-budget-gpus-per-worker=2")
    result.assert_outcomes(failed=1)
    row = rows(pytester)["test_two"]
    ranks = {r["rank"]: r for r in row["ranks"]}
    assert ranks[0]["peaks"]["vram_allocated"] == 2**30 and ranks[1]["peaks"]["vram_allocated"] == 3 * 2**30, ranks
    assert ranks[1]["phases"]["train_step_1"]["vram_allocated"] == 3 * 2**30, ranks[1]["phases"]
    assert row["peaks"]["vram_allocated"] == 3 * 2**30 and row["verdict"] == "over-budget", row["message"]
    assert row["message"] == "rank 1: GPU allocated peak 3.00 GiB > budget 2.00 GiB", row["message"]
    # NVML's figure of each rank's own process, read in the rank: its reserved bytes (allocated + 1 GiB in the
    # stand-in) and the context; the row's is the largest rank's
    context = 300 << 20
    assert ranks[1]["peaks"]["vram_device"] == 4 * 2**30 + context, ranks[1]["peaks"]
    assert ranks[1]["phases"]["train_step_1"]["vram_device"] == 4 * 2**30 + context, ranks[1]["phases"]
    assert ranks[0]["peaks"]["vram_device"] == 2 * 2**30 + context, ranks[0]["peaks"]
    assert row["peaks"]["vram_device"] == 4 * 2**30 + context


def test_a_ranked_case_on_fewer_gpus_than_ranks_is_skipped_with_the_reason(two_gpu_ranks):
    result = two_gpu_ranks.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-rs")  # one GPU per worker: the default
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*launches 2 ranks, one GPU each; this worker measures on 1*"])


def test_torchruns_log_folder_goes_with_its_case(launch, pytester, monkeypatch):
    """torchrun makes a torchelastic_XXXXXXXX log folder (a folder per rank, their error files) under $TMPDIR and never
    removes it: every launch a session measured left one. It now lives in the case's own folder, removed as the case
    ends, however it ends (a killed rank included)."""
    import shutil
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp(prefix="gb-logs-", dir="/tmp"))  # the session's TMPDIR: short, and its own
    monkeypatch.setenv("TMPDIR", str(tmp))
    try:
        result = launch('''
            @pytest.mark.gpu_budget(ram="2 GiB")
            def test_clean(gpu_budget):
                gpu_budget.measure(torchrun("8", "8"))

            @pytest.mark.gpu_budget(ram="2 GiB")
            def test_killed(gpu_budget):
                gpu_budget.measure(torchrun("8", "8", env={"MODE": "kill"}))
        ''')
        left = sorted(p.name for p in tmp.iterdir() if not p.name.startswith("torchinductor_"))  # torch's cache
    finally:
        shutil.rmtree(tmp)
    result.assert_outcomes(passed=1, failed=1)
    assert left == [], left


def test_against_a_ref_a_rank_that_is_not_the_worst_regressing_fails_naming_its_rank(launch, pytester, monkeypatch):
    """--gpu-budget-against=main: rank 0 grows by 64 MiB under rank 1's 120 MiB since main. The row is the worst
    rank's, unchanged, so judged on it the pair passed; each rank is judged against its own base run."""
    from git_project import PYTESTER_FILES, commit, git, git_environment

    git_environment(monkeypatch)
    body = '''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_ddp(gpu_budget):
            gpu_budget.measure(torchrun("SIZE0", "120"))
    '''
    launch(body.replace("SIZE0", "40")).assert_outcomes(passed=1)  # writes the module (and records its baseline)
    (pytester.path / ".gitignore").write_text("*.json\n" + PYTESTER_FILES)
    git(pytester.path, "init", "-q", "-b", "main")
    commit(pytester.path, "base")
    result = launch(body.replace("SIZE0", "104"), "--gpu-budget-against=main", "--gpu-budget-json=pair.json")
    assert result.ret == 1, result.stdout.str()
    case = next(c for c in json.loads((pytester.path / "pair.json").read_text())["cases"]
                if c["nodeid"] == "test_mem.py::test_ddp")
    assert case["status"] == "regression", case["message"]
    assert case["message"].startswith("rank 0 ram_tree head "), case["message"]
    assert "rank 1 ram_tree" not in case["message"], case["message"]
    assert [(f["rank"], f["metric"]) for f in case["figures"]][:2] == [(0, "ram_tree"), (1, "ram_tree")], case
    result.stdout.re_match_lines([r"test_mem\.py::test_ddp\s+rank 0 ram_tree\s+[\d.]+ MiB\s+[\d.]+ MiB\s+\+.*regression"])
