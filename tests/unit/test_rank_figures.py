"""Per-rank figures and faults of a launcher case: ranks.py's summary, launcher.py's faults, the per-rank judge."""

from dataclasses import replace

import pytest

from gpu_budget.isolate.elastic_record import FirstFailure, first_failure
from gpu_budget.isolate.launcher import RankEvents
from gpu_budget.isolate.wire import Message
from gpu_budget.judge.compare import judge, world_setup
from gpu_budget.measure.ranks import by_rank, imbalance, worst
from gpu_budget.measure.summary import summarize
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Node, Peaks, PhaseRecord, RankFigures, RankGpu, RankTree, Step, TreeReading
from gpu_budget.model.result import Measurement
from gpu_budget.model.setup import Setup

MiB, GiB = 2**20, 2**30
TOL = Tolerance(rel=0.005, abs=4 * MiB)


def phase(name, ranks, step=None, launcher=200 * MiB):
    """A phase record as the meter writes it for a launcher case: the node's figures, and each rank's in its tree."""
    node = launcher + sum(r for r in ranks.values())
    tree = TreeReading(private=node - launcher, peak_sum=0, hwm_sum=0, processes=len(ranks), exited=0, reported=0,
                       unread=0, max_gap=None, ranks={k: RankTree(ram=v, ram_tree=v, processes=1) for k, v in ranks.items()})
    return PhaseRecord(name, step, 1.0, launcher, None, None, ram_tree_peak=node, tree=tree)


def test_each_rank_keeps_its_own_peak_and_phases_and_the_case_reads_the_worst():
    phases = [phase("load", {0: 100 * MiB, 1: 90 * MiB}), phase("train_step_1", {0: 120 * MiB, 1: 150 * MiB}, step=1)]
    ranks = by_rank(phases)
    assert [r.rank for r in ranks] == [0, 1]
    assert ranks[0].peaks == Peaks(ram=120 * MiB, ram_tree=120 * MiB)
    assert (ranks[1].phases["load"].ram_peak, ranks[1].phases["load"].ram_tree_peak) == (90 * MiB, 90 * MiB)
    assert ranks[1].steps == (Step(1, ram=150 * MiB, ram_tree=150 * MiB),)
    assert ranks[1].phases["train_step_1"].step == 1
    assert worst(ranks).rank == 1 and imbalance(ranks) == 150 / 120
    summary = summarize(phases, cuda=False)
    assert summary.peaks.ram_tree == summary.peaks.ram == 150 * MiB  # rank 1's, not the node's
    assert summary.node.peaks == Peaks(ram=200 * MiB, ram_tree=470 * MiB)
    assert [p.ram_tree_peak for p in summary.node.phases] == [390 * MiB, 470 * MiB]


def test_a_launcher_row_means_its_worst_rank_in_its_phases_and_steps_too():
    """The row's peaks, phases, steps and growth are one rank's (the worst); the node's stay under "node"."""
    phases = [phase("load", {0: 100 * MiB, 1: 90 * MiB}),
              *(phase(f"train_step_{k}", {0: 120 * MiB, 1: 140 * MiB + k * MiB}, step=k) for k in range(1, 10))]
    summary = summarize(phases, cuda=False)
    assert [p.name for p in summary.phases] == ["load", *(f"train_step_{k}" for k in range(1, 10))]
    assert summary.phases[0].ram_tree_peak == 90 * MiB  # rank 1's load, not the node's 390 MiB
    assert [s.ram_tree for s in summary.steps] == [140 * MiB + k * MiB for k in range(1, 10)]
    assert summary.step_peaks.ram_tree == summary.peaks.ram_tree == 149 * MiB
    assert summary.growth["ram_tree_per_step"] == pytest.approx(MiB)
    assert [s.ram_tree for s in summary.node.steps] == [460 * MiB + k * MiB for k in range(1, 10)]


def test_a_failed_launchs_row_is_its_worst_rank_and_the_tree_it_streamed_is_the_nodes():
    """A rank killed mid-phase: the figures so far come from the phases and the whole tree's running figure, which is
    the node's (launcher and every rank). The row read it as its RAM tree: 815 MiB beside ranks of 311 MiB."""
    from gpu_budget.isolate import events, forkserver, protocol

    phases = [phase("load", {0: 100 * MiB, 1: 90 * MiB}), phase("train_step_1", {0: 120 * MiB, 1: 150 * MiB}, step=1)]
    seen = [events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                           command=True), *(events.PhaseEnded(p) for p in phases), events.TreeFigure(500 * MiB)]
    ending = protocol.ChildEnding(exitcode=0, timed_out=False, wall_seconds=1.0)
    for error in (None, events.Failed("rank", None, "rank 1 ended first", None, summary=summarize(phases, False))):
        summary = forkserver._summary_so_far(seen, error, ending)
        assert summary.peaks.ram_tree == summary.peaks.ram == 150 * MiB, summary.peaks  # rank 1's, not the node's
        assert summary.node.peaks.ram_tree == 500 * MiB, summary.node.peaks  # the node's running figure, above its phases'


def test_a_timed_out_launchs_ranks_keep_what_the_tree_streamed_of_them_in_the_open_phase():
    """Three DDP ranks hung in `load` past the timeout, each holding about 356 MiB by /proc; the row read "host RAM
    peak seen so far 231.17 MiB", the ranks' figures of the `run` phase alone (torch imported), the only one ended."""
    from gpu_budget.isolate import events, forkserver, protocol

    phases = [phase("run", {0: 100 * MiB, 1: 90 * MiB})]
    seen = [events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                           command=True), *(events.PhaseEnded(p) for p in phases), events.PhaseBegun("load"),
            events.TreeFigure(700 * MiB, ranks={"0": [300 * MiB, 310 * MiB], "1": [250 * MiB, 260 * MiB]}),
            events.TreeFigure(800 * MiB, ranks={"1": [340 * MiB, 350 * MiB], "2": [200 * MiB, 200 * MiB]})]
    seen = [events.decode(events.encode(e)) for e in seen]  # as the parent reads them back
    ending = protocol.ChildEnding(exitcode=None, timed_out=True, wall_seconds=20.0)
    summary = forkserver._summary_so_far(seen, None, ending)
    by = {r.rank: (r.peaks.ram, r.peaks.ram_tree) for r in summary.ranks}
    assert by == {0: (300 * MiB, 310 * MiB), 1: (340 * MiB, 350 * MiB), 2: (200 * MiB, 200 * MiB)}, by
    assert (summary.peaks.ram, summary.peaks.ram_tree) == (340 * MiB, 350 * MiB), summary.peaks  # rank 1, the worst
    assert summary.node.peaks.ram_tree == 800 * MiB, summary.node.peaks


def test_a_timed_out_launchs_ranks_keep_the_gpu_peaks_they_reported_at_their_marks():
    """Rank 1 hung in train_step_2 past the timeout. Each rank's GPU peaks, reported at its marks, lived in the killed
    measuring child only: the row had no GPU figure ("host RAM peak seen so far ..." alone) and read rank 0, by its
    host RAM, as the worst. A phase's figures come with the mark that closes it; none of the phase a rank hung in."""
    from gpu_budget.isolate import events, forkserver, protocol

    phases = [phase("load", {0: 200 * MiB, 1: 100 * MiB}), phase("train_step_1", {0: 200 * MiB, 1: 100 * MiB}, step=1)]
    seen = [events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                           command=True), *(events.PhaseEnded(p) for p in phases),
            events.RankProgress(0, "load"), events.RankProgress(1, "load"),
            events.RankProgress(0, "train_step_1", {"vram_allocated": 1 << 30}),
            events.RankProgress(1, "train_step_1", {"vram_allocated": 2 << 30}),
            events.RankProgress(1, "train_step_2", {"vram_allocated": 3 << 30, "vram_reserved": 4 << 30})]
    seen = [events.decode(events.encode(e)) for e in seen]  # as the parent reads them back
    ending = protocol.ChildEnding(exitcode=None, timed_out=True, wall_seconds=20.0)
    summary = forkserver._summary_so_far(seen, None, ending)
    by = {r.rank: r.peaks.vram_allocated for r in summary.ranks}
    assert by == {0: 1 << 30, 1: 3 << 30}, by
    rank1 = next(r for r in summary.ranks if r.rank == 1)
    assert (rank1.phases["load"].vram_allocated, rank1.phases["train_step_1"].vram_allocated) == (2 << 30, 3 << 30)
    assert summary.cuda and summary.peaks.vram_allocated == 3 << 30 and summary.peaks.vram_reserved == 4 << 30
    assert summary.peaks.ram_tree == 100 * MiB  # the row is rank 1's, the worst on a GPU


def test_on_a_gpu_the_worst_rank_is_the_one_with_the_largest_allocated_peak():
    """Rank 0 holds more host RAM, rank 1 more GPU memory: on a GPU the row is rank 1's, GPU figures included."""
    phases = [phase("train_step_1", {0: 200 * MiB, 1: 100 * MiB}, step=1)]
    reported = {0: RankGpu().took("train_step_1", {"vram_allocated": 1 << 30}),
                1: RankGpu().took("train_step_1", {"vram_allocated": 3 << 30})}
    summary = summarize(phases, cuda=False, rank_cuda=reported)
    assert summary.cuda and summary.peaks.vram_allocated == 3 << 30 and summary.peaks.ram_tree == 100 * MiB
    assert summary.phases[0].vram_allocated == 3 << 30 and summary.steps[0].vram_allocated == 3 << 30


def test_a_case_without_ranks_is_summarised_as_before():
    summary = summarize([PhaseRecord("run", None, 1.0, 10 * MiB, None, None, ram_tree_peak=30 * MiB)], cuda=False)
    assert summary.ranks == () and summary.node is None and summary.peaks.ram_tree == 30 * MiB


def test_a_tie_names_the_lowest_rank_and_one_rank_has_no_imbalance():
    ranks = by_rank([phase("run", {0: 100 * MiB, 1: 100 * MiB})])
    assert worst(ranks).rank == 0
    assert imbalance(ranks[:1]) is None


def events(*messages):
    ranks = RankEvents()
    for message in messages:
        ranks.take(Message.from_json(message))
    return ranks


def test_the_first_exception_comes_first_and_a_rank_stopped_after_it_is_named_as_such():
    ranks = events({"rank": 1, "failed": "ValueError: planted"}, {"rank": 0, "failed": "RuntimeError: peer gone"})
    assert ranks.fault({0, 1}, 1) == "rank 1 raised ValueError: planted; rank 0 raised RuntimeError: peer gone"
    ranks = events({"rank": 1, "failed": "ValueError: planted"})
    assert ranks.fault({0, 1}, 1) == ("rank 1 raised ValueError: planted; rank 0 ended without reaching its exit: "
                                      "stopped by the launcher after that")


def test_a_rank_gone_without_its_exit_is_named_killed_first_by_when_it_ended():
    ranks = events({"rank": 0, "exit": 1, "own": True})
    assert ranks.fault({0, 1}, 1).startswith("rank 1 ended first without reaching its exit: killed by a signal")
    message = events().fault({0, 1, 2}, 1, ends={2: 5.0, 0: 6.0, 1: 7.0})
    assert message.startswith("rank 2 ended first") and message.endswith(
        "ranks 0, 1 ended without reaching their exit: stopped by the launcher after that"), message


def test_ranks_found_gone_in_one_poll_are_told_apart_by_the_signal_that_ended_each():
    """The launcher SIGTERMs rank 0 within a poll of rank 1's SIGKILL: the one not ended by SIGTERM came first."""
    message = events().fault({0, 1}, 1, ends={0: 5.0, 1: 5.0}, signals={0: 15, 1: 9})
    assert message.startswith("rank 1 ended first without reaching its exit: killed by SIGKILL"), message
    assert message.endswith("rank 0 ended without reaching its exit: stopped by the launcher after that"), message
    assert events().fault({0, 1}, 1, ends={0: 4.0, 1: 5.0}, signals={0: 15, 1: 9}).startswith("rank 0 ended first")


def test_ranks_nothing_tells_apart_are_named_together_and_none_first():
    """Both reaped between two polls, no signal read and no launcher record: the lower rank is not guessed first."""
    message = events().fault({0, 1}, 1, ends={0: 5.0, 1: 5.0})
    assert message.startswith("ranks 0, 1 ended without reaching their exit, found gone together"), message
    assert "ended first" not in message and "tells which came first" in message, message
    later = events().fault({0, 1, 2}, 1, ends={0: 5.0, 1: 5.0, 2: 6.0})
    assert later.startswith("ranks 0, 1 ended without reaching their exit, found gone together") and later.endswith(
        "rank 2 ended without reaching its exit: stopped by the launcher after that"), later


def test_the_launchers_record_names_the_first_failure_where_the_tree_cannot():
    """The failure CI met: torchrun reaped the SIGKILLed rank 1 and the SIGTERMed rank 0 between two polls."""
    first = first_failure(TORCHRUN_FAILURE)
    assert first == FirstFailure(rank=1, exitcode=-9)
    message = events().fault({0, 1}, 1, ends={0: 5.0, 1: 5.0}, first=first)
    assert message == ("rank 1 ended first without reaching its exit: killed by SIGKILL, what the kernel's OOM killer "
                       "sends (the launcher's record); rank 0 ended without reaching its exit: stopped by the "
                       "launcher after that"), message
    # the record outranks the tree's order
    assert events().fault({0, 1}, 1, ends={0: 4.0, 1: 5.0}, first=first).startswith("rank 1 ended first")


def test_a_rank_the_launcher_saw_fail_first_leads_the_exceptions_it_caused():
    """Rank 1 killed while rank 0 waited for it in a collective: rank 0's exception is the echo, not the cause."""
    echo = events({"rank": 0, "failed": "RuntimeError: Connection reset by peer"})
    message = echo.fault({0, 1}, 1, first=FirstFailure(rank=1, exitcode=-9))
    assert message == ("rank 1 ended first without reaching its exit: killed by SIGKILL, what the kernel's OOM killer "
                       "sends (the launcher's record); rank 0 raised RuntimeError: Connection reset by peer"), message
    # where the launcher saw the rank that raised fail first, its exception stays the root cause
    raised = events({"rank": 0, "failed": "ValueError: planted"}).fault({0, 1}, 1, first=FirstFailure(0, 1))
    assert raised == ("rank 0 raised ValueError: planted; rank 1 ended without reaching its exit: stopped by the "
                      "launcher after that"), raised


def test_a_rank_that_exited_with_a_failing_code_first_is_named_from_the_launchers_record():
    """Rank 1 called sys.exit(3): it sent its exit report and raised nothing the hook reports, and rank 0 raised in
    the collective it was waiting in; torchrun's record names rank 1, exit code 3."""
    echo = events({"rank": 1, "exit": 1, "own": True}, {"rank": 0, "failed": "RuntimeError: Connection closed by peer"})
    message = echo.fault({0, 1}, 1, first=FirstFailure(rank=1, exitcode=3))
    assert message == ("rank 1 exited first: exit code 3 (the launcher's record); rank 0 raised RuntimeError: "
                       "Connection closed by peer"), message
    assert echo.fault({0, 1}, 1) == "rank 0 raised RuntimeError: Connection closed by peer"  # no record: no guess


def test_a_launchers_record_is_read_whole_or_not_at_all():
    assert first_failure("") is None
    assert first_failure("Traceback (most recent call last):\n  ValueError: x") is None
    assert first_failure("Root Cause (first observed failure):\n[0]:\n  rank : 3 (local_rank: 1)\n") is None  # no code
    restarted = TORCHRUN_FAILURE.replace("rank      : 1 (local_rank: 1)", "rank      : 0 (local_rank: 0)") + \
        TORCHRUN_FAILURE.replace("exitcode  : -9", "exitcode  : 7")
    assert first_failure(restarted) == FirstFailure(rank=1, exitcode=7)  # the last attempt's
    # a block cut by the report's separator does not read the next block's fields
    cut = "Root Cause (first observed failure):\n  rank : 2\n=====================\n  exitcode : -9\n"
    assert first_failure(cut) is None


TORCHRUN_FAILURE = """ranks.py FAILED
-------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-28_12:19:43
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : -15 (pid: 26058)  (SIGTERM)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 26058
-------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-28_12:19:43
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 26059)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 26059
=======================================================
"""


def test_a_zombies_exit_signal_is_read_until_it_is_reaped():
    import os
    import signal as signals
    import time

    from gpu_budget.measure.procfs import exit_signal

    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signals.SIGKILL)
    try:
        deadline = time.monotonic() + 5
        while exit_signal(pid) is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert exit_signal(pid) == signals.SIGKILL
    finally:
        os.waitpid(pid, 0)
    assert exit_signal(pid) is None and exit_signal(os.getpid()) is None  # reaped; running


def test_a_worker_exit_does_not_stand_for_its_ranks_own_process():
    ranks = events({"rank": 1, "exit": 1, "own": False}, {"rank": 0, "exit": 1, "own": True})
    assert ranks.exited == {0}
    assert ranks.fault({0, 1}, 1).startswith("rank 1 ended first")


def test_a_ranks_python_subprocess_exit_does_not_stand_for_its_own_process():
    """Rank 1 (own process pid 11) ran a Python helper (pid 21: RANK inherited, no multiprocessing, so its report
    says own) that exited, then was killed: the helper's report is not rank 1's own exit."""
    ranks = events({"rank": 1, "pid": 11, "phase": "load"}, {"rank": 1, "pid": 21, "exit": 1, "own": True},
                   {"rank": 0, "pid": 10, "exit": 1, "own": True})
    own = {0: [10], 1: [11]}
    assert ranks.fault({0, 1}, 1, own=own).startswith("rank 1 ended first without reaching its exit"), \
        ranks.fault({0, 1}, 1, own=own)
    message = ranks.fault({0, 1}, 1, own=own, first=FirstFailure(1, -9))
    assert message.startswith("rank 1 ended first without reaching its exit: killed by SIGKILL"), message
    # torchrun --no-python wrap.sh: rank 0's own process is a shell (pid 30) that never talks to the gate, its Python
    # (pid 31) reported the exit; rank 1's was killed: rank 0 exited, rank 1 is the one that ended without its exit
    wrapped = events({"rank": 0, "pid": 31, "phase": "load"}, {"rank": 0, "pid": 31, "exit": 1, "own": True},
                     {"rank": 1, "pid": 41, "phase": "load"})
    message = wrapped.fault({0, 1}, 1, ends={0: 1.0, 1: 2.0}, own={0: [30], 1: [40]})
    assert message.startswith("rank 1 ended first without reaching its exit"), message


@pytest.mark.parametrize("groups, fails", [
    ([], False),  # ranks that never imported torch.distributed: not held to a group
    ([{"rank": 0, "group": 0}, {"rank": 1, "group": 0}], True),  # imported it, never joined: each alone
    ([{"rank": 0, "group": 1}, {"rank": 1, "group": 1}], True),  # a group of one each
    ([{"rank": 0, "group": 0}, {"rank": 0, "group": 2}, {"rank": 1, "group": 2}], False),
])
def test_ranks_that_never_form_one_group_fail_a_launch_that_exits_0(groups, fails):
    message = events(*groups).fault({0, 1}, 0)
    assert (message is not None) == fails, message
    if fails:
        assert "never formed one process group" in message and "ACCELERATE_USE_CPU=true" in message


def test_a_launch_that_exits_0_after_restarting_its_ranks_names_the_failed_attempt():
    """torchrun --max-restarts: rank 1's first process (pid 11) killed, rank 0's (10) raised in its collective; the
    second attempt's processes (12, 13) exited: the exit code 0 hides the failure, the restart does not."""
    ranks = events({"rank": 0, "pid": 10, "failed": "RuntimeError: Connection reset by peer"},
                   {"rank": 0, "pid": 10, "exit": 1, "own": True},
                   {"rank": 0, "pid": 12, "exit": 1, "own": True}, {"rank": 1, "pid": 13, "exit": 1, "own": True})
    message = ranks.fault({0, 1}, 0, own={0: [10, 12], 1: [11, 13]})
    assert message.startswith("the launcher restarted rank 0, 1 after a failed attempt (an elastic restart, torchrun "
                              "--max-restarts) and then exited 0: rank 0 raised RuntimeError: Connection reset by "
                              "peer; rank 1 ended without reaching its exit: stopped by the launcher"), message
    # the signal read in time says rank 1 was killed, not stopped by the launcher: it leads, the exception its echo
    assert ranks.fault({0, 1}, 0, own={0: [10, 12], 1: [11, 13]}, signals={1: 9}).split(": ", 1)[1].startswith(
        "rank 1 ended first without reaching its exit: killed by SIGKILL, what the kernel's OOM killer sends; rank 0 "
        "raised RuntimeError")
    assert message.splitlines()[1].endswith("gate the launch with --max-restarts 0, so a failed attempt fails it")
    killed = events({"rank": 0, "pid": 12, "exit": 1, "own": True}, {"rank": 1, "pid": 13, "exit": 1, "own": True})
    assert "rank 1 ended first without reaching its exit: killed by SIGKILL" in killed.fault(
        {0, 1}, 0, own={0: [10, 12], 1: [11, 13]}, ends={0: 2.0, 1: 1.0}, signals={1: 9})
    assert killed.fault({0, 1}, 0, own={0: [12], 1: [13]}) is None  # one process per rank: no restart


def test_a_rank_s_second_process_of_a_new_launch_is_no_restart():
    """A command that runs one torchrun after another: each rank's second process is its new launch's first attempt
    (TORCHELASTIC_RESTART_COUNT 0), not a restart; one of count 1 is."""
    ranks = events(*({"rank": r, "pid": pid, "exit": 1, "own": True} for r, pid in ((0, 10), (1, 11), (0, 12), (1, 13))))
    own = {0: [10, 12], 1: [11, 13]}
    assert ranks.fault({0, 1}, 0, own=own, attempts={10: 0, 11: 0, 12: 0, 13: 0}) is None
    again = ranks.fault({0, 1}, 0, own=own, attempts={10: 0, 11: 0, 12: 1, 13: 0})
    assert again is not None and again.startswith("the launcher restarted rank 0 after a failed attempt"), again
    assert ranks.fault({0, 1}, 0, own=own).startswith("the launcher restarted rank 0, 1")  # attempts not read


def test_a_single_rank_and_a_clean_launch_give_no_fault():
    assert events({"rank": 0, "group": 0}).fault({0}, 0) is None
    assert events({"rank": 0, "exit": 1, "own": True}, {"rank": 1, "exit": 1, "own": True}).fault({0, 1}, 0) is None


def ranked(rank0, rank1):
    ranks = tuple(RankFigures.from_json(r) for r in ({"rank": 0, "peaks": {"ram": rank0, "ram_tree": rank0}},
                                                    {"rank": 1, "peaks": {"ram": rank1, "ram_tree": rank1}}))
    top = max(rank0, rank1)
    return Measurement("ok", Peaks(ram=top, ram_tree=top, vram_allocated=None), ranks=ranks,
                       node=Node.from_json({"ram": 200 * MiB, "ram_tree": 200 * MiB + rank0 + rank1}))


def test_each_rank_is_judged_against_its_own_baseline_and_named():
    stored = Entry.from_json({"peaks": {"ram": 400 * MiB, "ram_tree": 400 * MiB},
                              "ranks": {"0": {"ram": 300 * MiB, "ram_tree": 300 * MiB}, "1": {"ram": 400 * MiB, "ram_tree": 400 * MiB}}})
    j = judge(ranked(364 * MiB, 400 * MiB), Budget(), stored, TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert j.message.startswith("rank 0: ram_tree 364.00 MiB > baseline 300.00 MiB") and "rank 1" not in j.message
    assert j.change["ram_tree"] == pytest.approx(64 / 300)
    same = judge(ranked(300 * MiB, 400 * MiB), Budget(), stored, TOL, ci=True, update=False)
    assert (same.verdict, same.passed) == ("pass", True), same.message


def test_a_launch_too_short_for_steps_does_not_blame_the_other_ranks_ignored_marks_on_a_wrapper():
    """Under torchrun the ranks other than 0 mark steps too, answered and ignored; a launch too short for steps=
    added "22 phase mark(s) arrived from a descendant of the command and were ignored: ... run the script as the
    command itself ([sys.executable, "train.py"]), not through a shell or wrapper", advice that undoes the launch."""
    launch = replace(ranked(300 * MiB, 300 * MiB), info={"ignored_marks": 6, "phase_marks": 3})
    j = judge(launch, Budget(ram=2 * 1024 * MiB), None, TOL, ci=False, update=False, steps=1000)
    assert j.verdict == "error" and "steps=1,000 declared" in j.message, j.message
    assert "ignored" not in j.message and "wrapper" not in j.message, j.message


def test_a_launch_whose_rank_0_marked_no_step_is_told_so_and_a_rank_s_unread_steps_go_through_json():
    launch = ranked(300 * MiB, 300 * MiB)
    launch = replace(launch, ranks=(launch.ranks[0], RankFigures.from_json({**launch.ranks[1].to_json(), "unread_steps": 12})))
    assert launch.ranks[1].to_json()["unread_steps"] == 12 and "unread_steps" not in launch.ranks[0].to_json()
    j = judge(launch, Budget(ram=2 * 1024 * MiB), None, TOL, ci=False, update=False, steps=1000)
    assert j.verdict == "error" and "rank 0 marked no step, and only rank 0's are read (rank 1 marked 12, not read)" \
        in j.message and "gpu_budget.step() in a plain loop" not in j.message, j.message
    j = judge(ranked(300 * MiB, 300 * MiB), Budget(ram=2 * 1024 * MiB), None, TOL, ci=False, update=False, steps=1000)
    assert "gpu_budget.step() in a plain loop" in j.message, j.message  # no rank marked any: how to mark them


def test_a_budget_applies_to_each_rank():
    j = judge(ranked(300 * MiB, 400 * MiB), Budget(ram=350 * MiB), None, TOL, ci=False, update=False)
    assert (j.verdict, j.passed) == ("over-budget", False)
    assert j.message == "rank 1: host RAM peak 400.00 MiB (process tree; main process 400.00 MiB) > budget 350.00 MiB"


def test_a_baseline_of_other_ranks_compares_the_common_ones_and_says_so():
    """Another world is a foreign setup: host RAM is not compared, so only the GPU figures of the ranks in both are.
    A CPU launch has none: before, its row said "only the ranks in both are compared, on their GPU figures" of a run
    that compared nothing (a 2-rank baseline against a torchrun of 3 on a CPU host read so)."""
    stored = Entry.from_json({"peaks": {"ram": 400 * MiB}, "ranks": {"0": {"ram": 300 * MiB, "ram_tree": 300 * MiB}}})
    j = judge(ranked(300 * MiB, 400 * MiB), Budget(), stored, TOL, ci=True, update=False)
    assert j.passed and "ranks measured 0, 1; the baseline holds 0: no rank is compared (host RAM is not compared " \
        "across these setups, and the ranks in both have no GPU figure)" in j.message, j.message
    gpu = ranked(300 * MiB, 400 * MiB)
    gpu = replace(gpu, ranks=tuple(replace(r, peaks=replace(r.peaks, vram_allocated=GiB)) for r in gpu.ranks))
    on_gpu = Entry.from_json({"peaks": {"ram": 400 * MiB},
                              "ranks": {"0": {"ram": 300 * MiB, "ram_tree": 300 * MiB, "vram_allocated": GiB}}})
    j = judge(gpu, Budget(), on_gpu, TOL, ci=True, update=False)
    assert j.passed and "the baseline holds 0: only the ranks in both are compared, on their GPU figures" in j.message


def launch_of(phases):
    """A launch's Measurement from its phase records, the row its worst rank's (measure/summary.py)."""
    ranks = tuple(by_rank(phases))
    top = worst(ranks)
    return Measurement("ok", top.peaks, phases={n: p for n, p in top.phases.items()}, steps=top.steps, ranks=ranks,
                       node=Node(Peaks(), tuple(phases)))


def test_a_rank_that_did_not_reach_its_baseline_s_phases_is_an_error_naming_it():
    """A torchrun probe whose rank 1 exited 0 after its first step (sys.exit(0), no error; rank 0 ran all three), against
    a baseline where rank 1 took 40 MiB more in step 2: the row, now rank 0's (every phase reached), read "improved"
    and passed: "rank 1: ram_tree 31.29 MiB ... < baseline 71.29 MiB ...; update the baseline". A single process short
    of its baseline's phases is an error (judge/reached.py); a rank is judged against its own baseline, so is one."""
    from gpu_budget.judge.baselines import entry_from

    full = [phase("load", {0: 80 * MiB, 1: 30 * MiB}), phase("train_step_1", {0: 80 * MiB, 1: 30 * MiB}, step=1),
            phase("train_step_2", {0: 80 * MiB, 1: 70 * MiB}, step=2),
            phase("train_step_3", {0: 80 * MiB, 1: 70 * MiB}, step=3)]
    stored = entry_from(launch_of(full), {"name": "ddp", "fixes": [], "params": {}}, TOL, {}, "2026-12-01")
    early = [phase("load", {0: 80 * MiB, 1: 30 * MiB}), phase("train_step_1", {0: 80 * MiB, 1: 30 * MiB}, step=1),
             phase("train_step_2", {0: 80 * MiB}, step=2), phase("train_step_3", {0: 80 * MiB}, step=3)]
    j = judge(launch_of(early), Budget(), stored, TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("error", False), j.message
    assert j.message.startswith("rank 1 did not reach 2 of the 4 phases its baseline measured (train_step_2..3; it "
                                "measured load, train_step_1): its peaks cover less of the run"), j.message
    assert judge(launch_of(full), Budget(), stored, TOL, ci=True, update=False).passed
    last = [*full[:3], phase("train_step_3", {0: 80 * MiB}, step=3)]  # gone as rank 0 marked its last: a race
    assert judge(launch_of(last), Budget(), stored, TOL, ci=True, update=False).verdict != "error"
    again = judge(launch_of(early), Budget(), stored, TOL, ci=False, update=True)  # shortened on purpose: re-recorded
    assert again.passed and again.write_baseline and "rank 1 did not reach 2 of the 4" in again.message


def test_a_rank_gone_as_rank_0_marks_its_last_phase_is_no_error_the_worst_rank_too_and_from_the_file():
    """A probe whose rank 1 (40 MiB, the worst: the row's phases are its) exited as rank 0 marked its last phase: the
    row lacked it and read "the run did not reach 1 of the 6 phases its baseline measured (save; ...)", though a rank
    is spared its baseline's last phase alone (a race with its exit). Nor was any rank spared against the baseline
    file, whose phases are sorted (save before train_step_1): "rank 1 did not reach 1 of the 6 phases ... (save"."""
    import json

    from gpu_budget.judge.baselines import entry_from

    full = [phase("load", {0: 30 * MiB, 1: 80 * MiB}), phase("train_step_1", {0: 30 * MiB, 1: 80 * MiB}, step=1),
            phase("save", {0: 30 * MiB, 1: 80 * MiB})]
    recorded = entry_from(launch_of(full), {"name": "ddp", "fixes": [], "params": {}}, TOL, {}, "2026-12-01")
    filed = Entry.from_json(json.loads(json.dumps(recorded.to_json(), sort_keys=True)))  # as the file holds it
    last = [*full[:2], phase("save", {0: 30 * MiB})]
    early = [full[0], phase("train_step_1", {0: 30 * MiB}, step=1), phase("save", {0: 30 * MiB})]
    for stored in (recorded, filed):
        j = judge(launch_of(last), Budget(), stored, TOL, ci=True, update=False)
        assert j.verdict != "error", j.message
        short = judge(launch_of(early), Budget(), stored, TOL, ci=True, update=False)  # more than its last: an error
        assert short.verdict == "error" and "rank 1 did not reach 2 of the 3 phases" in short.message, short.message


def test_an_entry_keeps_its_ranks_through_json_and_one_without_ranks_writes_none():
    entry = Entry.from_json({"peaks": {"ram": 1}, "ranks": {"0": {"ram": 1, "ram_tree": 2}}})
    assert Entry.from_json(entry.to_json()) == entry
    assert "ranks" not in Entry(peaks=Peaks(ram=1)).to_json()


def test_ranks_accelerate_trains_as_single_processes_fail_though_a_group_formed():
    """accelerate 1.15 on a host without CUDA: a gloo group of 2 forms, yet each rank's state says one process."""
    alone = events({"rank": 0, "group": 2}, {"rank": 1, "group": 2},
                   {"rank": 0, "accelerate": "DistributedType.NO", "processes": 1},
                   {"rank": 1, "accelerate": "DistributedType.NO", "processes": 1})
    message = alone.fault({0, 1}, 0)
    assert message.startswith("2 ranks ran, but accelerate trained rank 0, 1 as a single process "
                              "(DistributedType.NO, 1 process): each trained alone"), message
    together = events({"rank": 0, "group": 2}, {"rank": 0, "accelerate": "DistributedType.MULTI_CPU", "processes": 2})
    assert together.fault({0, 1}, 0) is None


def test_a_declared_rank_count_the_launch_did_not_start_fails():
    assert events().fault({0, 1}, 0, declared=2) is None
    message = events().fault({0}, 0, declared=2)
    assert message.startswith("the scenario declares 2 ranks (Scenario(ranks=2)), but 1 process(es) ran"), message


def test_a_launch_of_another_world_than_its_baseline_is_a_foreign_setup_and_re_recorded():
    """Ranks undeclared (the fingerprint holds none): the baseline holds ranks 0 and 1, the launch ran 0, 1 and 2.
    Rank 2 has no baseline and each rank's share changed: host RAM is not compared, and an update records the new
    world instead of keeping the old entry."""
    stored = Entry.from_json({"peaks": {"ram": 300 * MiB, "ram_tree": 300 * MiB},
                              "ranks": {"0": {"ram": 300 * MiB, "ram_tree": 300 * MiB},
                                        "1": {"ram": 300 * MiB, "ram_tree": 300 * MiB}}})
    three = ranked(300 * MiB, 300 * MiB)
    three = replace(three, ranks=(*three.ranks, RankFigures.from_json({"rank": 2, "peaks": {"ram": 500 * MiB,
                                                                                            "ram_tree": 500 * MiB}})))
    j = judge(three, Budget(), stored, TOL, ci=True, update=False)
    assert "setup differs from the baseline's: ranks 2 -> 3" in j.message, j.message
    assert "host RAM not compared" in j.message, j.message
    assert judge(three, Budget(), stored, TOL, ci=False, update=True).write_baseline


def test_a_run_without_a_launcher_against_a_baseline_of_ranks_is_a_foreign_setup_and_the_reverse_too():
    """Ranks undeclared: a baseline recorded under torchrun (2 ranks) and the same script run as one process, without
    a launcher (or the reverse). The single process's peak was compared with the worst rank's and the row read
    "pass within budget and baseline", saying nothing of the launch that was no longer there."""
    stored = Entry.from_json({"peaks": {"ram": 300 * MiB, "ram_tree": 300 * MiB},
                              "ranks": {"0": {"ram": 300 * MiB, "ram_tree": 300 * MiB},
                                        "1": {"ram": 300 * MiB, "ram_tree": 300 * MiB}}})
    alone = Measurement("ok", Peaks(ram=300 * MiB, ram_tree=300 * MiB, vram_allocated=None))
    j = judge(alone, Budget(), stored, TOL, ci=True, update=False)
    assert "setup differs from the baseline's: ranks 2 -> none (one process, no launcher's RANK; no " \
           "Scenario(ranks=))" in j.message, j.message
    assert "host RAM not compared" in j.message, j.message
    assert judge(alone, Budget(), stored, TOL, ci=False, update=True).write_baseline
    single = Entry.from_json({"peaks": {"ram": 300 * MiB, "ram_tree": 300 * MiB}})
    j = judge(ranked(300 * MiB, 300 * MiB), Budget(), single, TOL, ci=True, update=False)
    assert "setup differs from the baseline's: ranks none (one process, no launcher's RANK) -> 2 (the launch's: no " \
           "Scenario(ranks=))" in j.message, j.message
    assert "host RAM not compared" in j.message, j.message
    failed = Measurement("error", Peaks(ram=1 * MiB))  # a launch that died before any rank started: no world to name
    assert world_setup(Setup(), failed, stored) == Setup()


def test_an_imbalance_budget_bounds_the_largest_rank_over_the_smallest():
    j = judge(ranked(300 * MiB, 400 * MiB), Budget(imbalance=1.2), None, TOL, ci=False, update=False)
    assert (j.verdict, j.passed) == ("over-budget", False)
    assert j.message == "rank imbalance of RAM tree 1.333x (rank 1 400.00 MiB / rank 0 300.00 MiB) > budget 1.200x"
    assert judge(ranked(300 * MiB, 330 * MiB), Budget(imbalance=1.2), None, TOL, ci=False, update=False).passed


def test_the_imbalance_names_the_ranks_whose_ram_tree_it_divides_though_another_holds_more_gpu():
    """On a GPU the worst rank is the one with the most GPU memory; the imbalance is of host RAM trees, so it names
    the largest and the smallest of those: rank 0 (the one loading the checkpoint) over rank 1, and says which
    figure it divides. Before, "rank imbalance 1.333x" beside a GPU row named no figure, read as GPU memory's."""
    from types import SimpleNamespace

    from gpu_budget.report.terminal import ranks_text

    gpu = ranked(400 * MiB, 300 * MiB)
    ranks = tuple(replace(r, peaks=replace(r.peaks, vram_allocated=(1 + 2 * r.rank) << 30)) for r in gpu.ranks)
    gpu = replace(gpu, ranks=ranks)
    j = judge(gpu, Budget(imbalance=1.2), None, TOL, ci=False, update=False)
    assert j.message == "rank imbalance of RAM tree 1.333x (rank 0 400.00 MiB / rank 1 300.00 MiB) > budget 1.200x", \
        j.message
    text = ranks_text(SimpleNamespace(measurement=gpu))
    assert "worst rank 1:" in text and "imbalance of RAM tree 1.33x (rank 0 / rank 1)" in text, text
    one = replace(gpu, ranks=gpu.ranks[:1])
    assert ranks_text(SimpleNamespace(measurement=one)).startswith("1 rank; worst rank 0:")  # torchrun of one process


def test_ranks_that_peak_alike_name_two_ranks_in_their_imbalance():
    """Two ranks whose trees peaked to the byte (a tiny launch, a rank that exited early holding what the other did):
    the largest and the smallest were each the lowest rank of the tie, and the ranks line read "imbalance of RAM tree
    1.00x (rank 0 / rank 0)", one rank over itself."""
    from types import SimpleNamespace

    from gpu_budget.report.terminal import ranks_text

    text = ranks_text(SimpleNamespace(measurement=ranked(300 * MiB, 300 * MiB)))
    assert "imbalance of RAM tree 1.00x (rank 0 / rank 1)" in text, text


@pytest.mark.parametrize("value", [0.9, "1.2", True, float("inf"), float("nan")])
def test_a_bad_imbalance_budget_is_named(value):
    from gpu_budget.declare.marks import gpu_budget as read_mark

    with pytest.raises(ValueError, match=f"m.py::t: imbalance={value!r}: expected a ratio >= 1"):
        read_mark(ram="1 GiB", imbalance=value, where="m.py::t")


def test_a_timeout_names_the_rank_furthest_behind():
    """Under DDP a hung rank holds the others in a collective: all run at the timeout, the one behind is named."""
    from gpu_budget.isolate import events as ev
    from gpu_budget.isolate.forkserver import _ranks_at_the_end

    seen = [ev.RankProgress(0, "load"), ev.RankProgress(1, "load"), ev.RankProgress(0, "train_step_1")]
    assert _ranks_at_the_end(seen) == ("; the ranks: rank 0 in train_step_1, rank 1 in load; rank 1 was the furthest "
                                       "behind (the others wait for it in a collective)")
    assert _ranks_at_the_end([ev.RankProgress(0, "load"), ev.RankProgress(0, None)]) == "; the ranks: rank 0 exited"
    assert _ranks_at_the_end([]) == ""


def test_a_rank_hung_after_the_others_exited_is_named_as_the_one_still_running():
    """torchrun of 2 ranks, rank 1 asleep after its load mark while rank 0 ran its steps and exited: the row read
    "rank 0 exited, rank 1 in load; rank 1 was the furthest behind (the others wait for it in a collective)", though
    rank 0 waited for nothing: it had exited, and only the launcher waited for rank 1."""
    from gpu_budget.isolate import events as ev
    from gpu_budget.isolate.forkserver import _ranks_at_the_end

    seen = [ev.RankProgress(0, "load"), ev.RankProgress(1, "load"), ev.RankProgress(0, "train_step_1"),
            ev.RankProgress(0, "train_step_2"), ev.RankProgress(0, None)]
    assert _ranks_at_the_end(seen) == ("; the ranks: rank 0 exited, rank 1 in load; rank 1 alone was still running "
                                       "(the others had exited: the launcher waits for every rank)")
    three = [*seen, ev.RankProgress(2, "load"), ev.RankProgress(2, "train_step_1")]  # two running: one is behind
    assert _ranks_at_the_end(three).endswith("; rank 1 was the furthest behind (the others still running wait for it in a "
                                             "collective)"), _ranks_at_the_end(three)


def test_a_timeout_names_no_rank_behind_where_every_running_rank_marked_as_many_phases():
    """A DDP rank hung in its first step (time.sleep) while ranks 0 and 2 waited for it in the backward's all-reduce:
    all three had marked `load` alone, and the message read "rank 0 was the furthest behind", the lowest of the tie,
    which the marks do not tell."""
    from gpu_budget.isolate import events as ev
    from gpu_budget.isolate.forkserver import _ranks_at_the_end

    seen = [ev.RankProgress(0, "load"), ev.RankProgress(1, "load"), ev.RankProgress(2, "load")]
    assert _ranks_at_the_end(seen) == ("; the ranks: rank 0 in load, rank 1 in load, rank 2 in load; each marked as "
                                       "many phases, so the marks do not tell which rank the others wait for")
    one = [ev.RankProgress(0, "load"), ev.RankProgress(1, "load"), ev.RankProgress(1, None)]
    assert _ranks_at_the_end(one) == ("; the ranks: rank 0 in load, rank 1 exited; rank 0 alone was still running "
                                      "(the others had exited: the launcher waits for every rank)")
    two = [*seen, ev.RankProgress(2, "train_step_1")]
    assert _ranks_at_the_end(two).endswith("; rank 0, 1 were the furthest behind (the others wait for them in a "
                                           "collective)"), _ranks_at_the_end(two)


TIED = """ranks.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-29_03:18:10
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 3 (pid: 12563)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_03:18:10
  host      : localhost
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 12562)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_failures_the_launchers_record_cannot_order_are_ordered_by_the_tree():
    """torch elastic reaped rank 1's sys.exit(3) and rank 0's echo in one of its polls: both at 03:18:10, and it
    named rank 0, the lower rank, as the root cause; the row said "rank 0 raised RuntimeError" first. The tree, which
    found rank 1 gone first, orders the tie."""
    first = first_failure(TIED)
    assert first == FirstFailure(rank=0, exitcode=1, tied={1: 3})
    assert first.ordered_by({1: 10.0, 0: 10.2}) == FirstFailure(rank=1, exitcode=3)
    assert first.ordered_by({0: 10.0, 1: 10.2}) == FirstFailure(rank=0, exitcode=1)
    assert first.ordered_by({1: 10.0}) == first  # the tree did not see both: the record's word stands
    echo = events({"rank": 1, "exit": 1, "own": True}, {"rank": 0, "failed": "RuntimeError: Connection closed by peer"})
    message = echo.fault({0, 1}, 1, ends={1: 10.0, 0: 10.2}, first=first)
    assert message.startswith("rank 1 exited first: exit code 3 (the launcher's record)"), message
    later = TIED.replace("time      : 2026-11-29_03:18:10\n  host      : localhost\n  rank      : 1",
                         "time      : 2026-11-29_03:18:11\n  host      : localhost\n  rank      : 1")
    assert first_failure(later) == FirstFailure(rank=0, exitcode=1)  # a later second: the record orders them


def test_a_timed_out_launchs_row_is_one_rank_in_its_peaks_phases_and_steps():
    """Rank 0 was the worst over the phases ended; in the open step, stopped at the timeout, rank 1 rose past it. The
    row's peaks moved to rank 1 while its phases and steps stayed rank 0's: a peak in none of the phases it listed."""
    from gpu_budget.isolate import events, forkserver, protocol

    phases = [phase("load", {0: 100 * MiB, 1: 90 * MiB}), phase("train_step_1", {0: 120 * MiB, 1: 110 * MiB}, step=1)]
    seen = [events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                           command=True), *(events.PhaseEnded(p) for p in phases), events.PhaseBegun("train_step_2", 2),
            events.TreeFigure(600 * MiB, ranks={"0": [125 * MiB, 125 * MiB], "1": [300 * MiB, 300 * MiB]},
                              ram=200 * MiB)]
    seen = [events.decode(events.encode(e)) for e in seen]  # as the parent reads them back
    ending = protocol.ChildEnding(exitcode=None, timed_out=True, wall_seconds=20.0)
    summary = forkserver._summary_so_far(seen, None, ending)
    assert (summary.peaks.ram, summary.peaks.ram_tree) == (300 * MiB, 300 * MiB), summary.peaks  # rank 1's
    assert [(p.name, p.ram_tree_peak) for p in summary.phases] == [
        ("load", 90 * MiB), ("train_step_1", 110 * MiB), ("train_step_2", 300 * MiB)], summary.phases  # rank 1's too
    assert [(s.step, s.ram_tree) for s in summary.steps] == [(1, 110 * MiB), (2, 300 * MiB)]
    assert summary.step_peaks.ram_tree == 300 * MiB
    assert [p.name for p in summary.node.phases][-1] == "train_step_2" and summary.node.peaks.ram_tree == 600 * MiB


def test_a_timed_out_launchs_open_phase_keeps_the_nvml_figures_streamed_of_it():
    """Rank 1 hung in train_step_2 holding 3 GiB on its GPU. Its allocator reports a phase's peaks only at the mark
    that ends it, and the NVML poller gave its sums only at a phase's end: the open phase had no GPU figure, node's
    or rank's. The stream carries the poller's running sums; the open phase keeps the largest, lower bounds."""
    from gpu_budget.isolate import events, forkserver, protocol

    phases = [replace(phase("train_step_1", {0: 200 * MiB, 1: 100 * MiB}, step=1), vram_tree=2 << 30)]
    seen = [events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                           command=True), *(events.PhaseEnded(p) for p in phases),
            events.PhaseBegun("train_step_2", 2),
            events.TreeFigure(500 * MiB, ranks={"0": [200 * MiB, 200 * MiB], "1": [100 * MiB, 100 * MiB]},
                              vram_tree=4 << 30, rank_vram={"0": 1 << 30, "1": 3 << 30}),
            events.TreeFigure(510 * MiB, ranks={"0": [200 * MiB, 200 * MiB], "1": [110 * MiB, 110 * MiB]},
                              vram_tree=3 << 30, rank_vram={"1": 3 << 30})]
    seen = [events.decode(events.encode(e)) for e in seen]  # as the parent reads them back
    ending = protocol.ChildEnding(exitcode=None, timed_out=True, wall_seconds=20.0)
    summary = forkserver._summary_so_far(seen, None, ending)
    stopped = summary.node.phases[-1]
    assert (stopped.name, stopped.seconds, stopped.vram_tree) == ("train_step_2", None, 4 << 30), stopped
    assert summary.node.peaks.vram_tree == 4 << 30, summary.node.peaks
    by = {r.rank: (r.phases["train_step_2"].vram_tree, r.peaks.vram_tree) for r in summary.ranks}
    assert by == {0: (1 << 30, 1 << 30), 1: (3 << 30, 3 << 30)}, by


def test_processes_that_form_a_group_without_a_launchers_rank_fail_naming_the_way_to_tell_them_apart():
    """torch.multiprocessing.spawn: two processes join a gloo group of 2, neither with a RANK in its environment, so
    the tree tells no rank apart: the row would be the node's, gated as one rank's, and rank 0's marks go unheard."""
    spawned = events({"pid": 11, "group": 2, "backend": "gloo"}, {"pid": 12, "group": 2, "backend": "gloo"})
    message = spawned.fault(set(), 0)
    assert message is not None and message.startswith(
        "2 process(es) joined a process group of 2, but none ran with a launcher's RANK in its environment "
        "(torch.multiprocessing.spawn starts them so): "), message
    assert message.splitlines()[1].startswith('set os.environ["RANK"] = str(rank) in each process before it calls '
                                              "torch.distributed.init_process_group"), message
    declared = spawned.fault(set(), 0, declared=2)
    assert declared.startswith("the scenario declares 2 ranks (Scenario(ranks=2)), but no process(es) ran"), declared
    assert declared.splitlines()[1].startswith("2 process(es) joined a process group of 2, but none ran with a "
                                               "launcher's RANK"), declared
    assert 'set os.environ["RANK"] = str(rank) in each process' in declared.splitlines()[1], declared
    # a group of one (a single process's init_process_group), or processes a launcher told apart: no fault
    assert events({"pid": 11, "group": 1}).fault(set(), 0) is None
    assert events({"pid": 11, "group": 2}, {"rank": 0, "group": 2}, {"rank": 1, "group": 2}).fault({0, 1}, 0) is None


def test_a_ranks_gap_is_kept_only_where_it_added_as_a_function_cases_is():
    """`with phase("load")` then `with phase("train_step_1")` on a GPU: each rank reports its GPU figures of the run
    after the load block ('after load', a gap) at its next mark. A function case's meter keeps a gap only where it
    reached past the phase before it by more than gaps.GAP_NOISE; each rank kept its 'after load' whatever it held,
    so a launcher's baseline held rank phases a function case's never does. One that added is kept, in the finished
    launch's summary and in a stopped one's (the child's events)."""
    from gpu_budget.isolate import events, forkserver, protocol

    def marks(pid, rank, eval_gib):
        return [Message(pid=pid, rank=rank, phase="load", cuda={"vram_allocated": 1 << 20}),
                Message(pid=pid, rank=rank, phase="after load", gap=True, cuda={"vram_allocated": 1 << 30}),
                Message(pid=pid, rank=rank, phase="train_step_1", step=1, cuda={"vram_allocated": 1 << 30}),
                Message(pid=pid, rank=rank, phase="after train_step_1", gap=True, cuda={"vram_allocated": 2 << 30}),
                Message(pid=pid, rank=rank, exit=0, own=True, cuda={"vram_allocated": eval_gib << 30})]

    ranks = RankEvents()
    for message in [*marks(11, 0, 3), *marks(12, 1, 2)]:  # rank 0's evaluation after its last block adds a GiB
        ranks.take(message)
    node = [phase("run", {0: 10 * MiB, 1: 10 * MiB}), phase("load", {0: 100 * MiB, 1: 100 * MiB}),
            phase("train_step_1", {0: 100 * MiB, 1: 100 * MiB}, step=1)]  # the node kept neither gap
    summary = summarize(node, cuda=False, rank_cuda=ranks.cuda)
    kept = {r.rank: list(r.phases) for r in summary.ranks}
    assert kept == {0: ["run", "load", "train_step_1", "after train_step_1"], 1: ["run", "load", "train_step_1"]}, kept
    assert [r.peaks.vram_allocated for r in summary.ranks] == [3 << 30, 2 << 30]  # a gap dropped moves no peak
    seen = [events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                           command=True), *(events.PhaseEnded(p) for p in node),
            *(events.RankProgress(m.rank, m.phase, dict(m.cuda), m.gap) for m in marks(11, 0, 3))]
    seen = [events.decode(events.encode(e)) for e in seen]
    stopped = forkserver._summary_so_far(seen, None, protocol.ChildEnding(exitcode=None, timed_out=True,
                                                                          wall_seconds=20.0))
    assert list(stopped.ranks[0].phases) == ["run", "load", "train_step_1", "after train_step_1"], stopped.ranks[0]
