"""A descendant whose VmHWM was never read (gone before its first read) is counted as unread, and the tree's bound
says it was never read, not that it was "last read at most the poll gap before it went"."""

from gpu_budget.measure import tree
from gpu_budget.measure.summary import tree_bound
from gpu_budget.model.figures import PhaseRecord, TreeReading


def _gone(pid: int, **read) -> tree.Descendant:
    return tree.Descendant(pid, 1, 0, alive=False, **read)


def test_a_descendant_gone_before_its_vmhwm_was_read_is_unread_whatever_else_was_read():
    procs = [_gone(10, seen=True, shared=0, hwm=5, window=5),  # read, then gone unreported
             _gone(11, shared=4096),  # its shared pages read on finding it, gone before its VmHWM was
             _gone(12),  # gone before anything was read
             _gone(13, whole=True)]  # a whole process gone before its first read adds nothing either
    reading = tree._reading(procs, peak=0, windows=3, gap=0.01, rank_peak={})
    assert (reading.exited, reading.reported, reading.unread) == (4, 0, 3)


def test_the_bound_does_not_say_an_unread_descendant_was_last_read_before_it_went():
    reading = TreeReading(private=0, peak_sum=0, hwm_sum=0, processes=10, exited=10, reported=0, unread=2, max_gap=0.018)
    said = tree_bound([PhaseRecord("run", None, 1.0, 1, None, None, tree=reading)])
    assert said == ("8 descendant(s) exited unreported, last read at most 0.018 s before they went (what they did "
                    "after it is missing); 2 gone before any read (counted as nothing)")
