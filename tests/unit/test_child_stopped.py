"""What a child stopped before its end (a timeout, a kill) is said to have been doing: the phase it was in, from the
events it streamed, and a command's stderr tail as it stood (isolate/forkserver.py)."""

from dataclasses import replace

from gpu_budget.isolate import events, unix_paths
from gpu_budget.isolate.forkserver import _phase_at_the_end, _stderr_tail, _stopped_in
from gpu_budget.model.figures import PhaseRecord, TreeReading

STARTED = events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method=None, subreaper=False)


def ended(name: str) -> events.PhaseEnded:
    return events.PhaseEnded(PhaseRecord(name=name, step=None, seconds=0.1, ram_peak=1 << 20))


def test_the_phase_begun_last_is_where_it_was():
    seen = [STARTED, events.PhaseBegun("load"), ended("load"), events.PhaseBegun("train_step_1")]
    assert _phase_at_the_end(seen) == "; it was in phase 'train_step_1'"


def test_a_phase_ended_with_none_after_it_is_said_so():
    assert _phase_at_the_end([STARTED, events.PhaseBegun("load"), ended("load")]) == (
        "; it had ended phase 'load' and begun no other")


def test_a_run_that_began_no_phase_and_a_child_that_never_started():
    assert _phase_at_the_end([STARTED]) == "; no phase had begun"
    assert _phase_at_the_end([]) == ""


def test_the_phase_a_stopped_child_was_in_is_its_failures_field():
    """The failure of a stopped child names its open phase as a field of its own (Failure.phase), the one its message
    says it was in; none where the last phase begun had ended, or none had begun."""
    assert _stopped_in([STARTED, events.PhaseBegun("load"), ended("load"), events.PhaseBegun("train_step_1")]) == \
        "train_step_1"
    assert _stopped_in([STARTED, events.PhaseBegun("load"), ended("load")]) is None
    assert _stopped_in([STARTED]) is None and _stopped_in([]) is None


def test_a_phase_begun_goes_through_the_event_file_as_written():
    event = events.PhaseBegun("after load")
    assert events.decode(events.encode(event)) == event


def test_the_stderr_tail_is_its_last_lines_and_none_where_nothing_was_written(tmp_path):
    assert _stderr_tail(None) is None
    assert _stderr_tail(str(tmp_path)) is None  # a function case: no tail file
    (tmp_path / unix_paths.STDERR_TAIL).write_bytes(b"".join(b"line %d\n" % i for i in range(30)) + b"\xff bad\n")
    tail = _stderr_tail(str(tmp_path))
    assert tail.splitlines()[0] == "line 11" and tail.splitlines()[-1] == "\ufffd bad"
    (tmp_path / unix_paths.STDERR_TAIL).write_bytes(b"\n  \n")
    assert _stderr_tail(str(tmp_path)) is None


def test_a_stopped_commands_open_phase_is_kept_with_what_was_streamed_of_it():
    """One process marks 4 steps of 30 MiB, then sleeps past its timeout. The row read `RAM tree 131.11 MiB, RAM main
    101.11 MiB` for that one process, and train_step_4 was missing from its phases: the main process's figure came
    from the last phase ended, the tree's from the stream, and the phase open at the stop was dropped."""
    from gpu_budget.isolate import forkserver, protocol

    MiB = 2**20
    started = events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                             command=True)
    seen = [started]
    for k in range(1, 4):
        seen += [events.PhaseBegun(f"train_step_{k}", k),
                 events.PhaseEnded(PhaseRecord(f"train_step_{k}", k, 0.1, (11 + 30 * k) * MiB,
                                               ram_tree_peak=(11 + 30 * k) * MiB))]
    seen += [events.PhaseBegun("train_step_4", 4), events.TreeFigure(120 * MiB, ram=120 * MiB),
             events.TreeFigure(131 * MiB, ram=131 * MiB)]
    seen = [events.decode(events.encode(e)) for e in seen]  # as the parent reads them back
    ending = protocol.ChildEnding(exitcode=None, timed_out=True, wall_seconds=5.0)
    summary = forkserver._summary_so_far(seen, None, ending)
    assert (summary.peaks.ram, summary.peaks.ram_tree) == (131 * MiB, 131 * MiB), summary.peaks
    assert [p.name for p in summary.phases][-1] == "train_step_4"
    assert (summary.phases[-1].step, summary.phases[-1].ram_peak, summary.phases[-1].ram_tree_peak) == (
        4, 131 * MiB, 131 * MiB)
    assert [s.step for s in summary.steps] == [1, 2, 3, 4]
    # its last phase is what was streamed of it, not read at its end: the bound says so ("exact per process" before)
    assert summary.ram_tree_bound.startswith("phase 'train_step_4', stopped before it ended, is a lower bound: the "
                                             "largest figure the child streamed of it (a rise under 1.00 MiB"), \
        summary.ram_tree_bound
    assert summary.ram_tree_bound.endswith("within 0.05 s of it, may be missing)")  # no tree read of the ended ones
    ended_read = [replace(e, record=replace(e.record, tree=TreeReading(private=e.record.ram_tree_peak)))
                  if isinstance(e, events.PhaseEnded) else e for e in seen]
    bound = forkserver._summary_so_far(ended_read, None, ending).ram_tree_bound
    assert bound.endswith("may be missing); the phases before it: exact per process (every descendant seen was read "
                          "alive at a phase end or reported at its exit; one born and gone between two polls without "
                          "reporting is not seen)"), bound


def test_a_phase_with_nothing_streamed_of_it_is_left_out_and_a_phase_ended_is_not_doubled():
    from gpu_budget.isolate import forkserver, protocol

    started = events.Started(pid=1, cuda=False, ram_method="vmhwm", ram_tree_method="peak over time", subreaper=True,
                             command=True)
    ending = protocol.ChildEnding(exitcode=None, timed_out=True, wall_seconds=5.0)
    for tail in ([events.PhaseBegun("save")], [events.TreeFigure(9 << 20, ram=9 << 20)]):
        seen = [started, events.PhaseBegun("load"), events.TreeFigure(5 << 20, ram=5 << 20), ended("load"), *tail]
        assert [p.name for p in forkserver._summary_so_far(seen, None, ending).phases] == ["load"]
