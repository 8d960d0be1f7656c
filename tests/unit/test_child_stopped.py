"""What a child stopped before its end (a timeout, a kill) is said to have been doing: the phase it was in, from the
events it streamed, and a command's stderr tail as it stood (isolate/forkserver.py)."""

from gpu_budget.isolate import events, unix_paths
from gpu_budget.isolate.forkserver import _phase_at_the_end, _stderr_tail
from gpu_budget.model.figures import PhaseRecord

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
