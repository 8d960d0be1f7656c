"""pipe_holders: real processes and pipes, read from /proc as a timed-out child's parent reads them."""

import os
import subprocess

from gpu_budget.isolate import pipe_holders


def test_only_a_process_writing_to_a_pipe_this_one_reads_is_named():
    """One sleep holds the write end of a pipe this process reads; one the read end of another pipe, whose write end
    this process holds; one no pipe at all. Only the first waits this process's read out."""
    read, write = os.pipe()
    other_read, other_write = os.pipe()
    started = [subprocess.Popen(["sleep", "30"], stdout=write),
               subprocess.Popen(["sleep", "31"], stdin=other_read),
               subprocess.Popen(["sleep", "32"])]
    os.close(write)
    os.close(other_read)
    try:
        named = pipe_holders.holders(os.getpid(), [p.pid for p in started])
        assert named == (f"pid {started[0].pid}: sleep 30",), named
        assert pipe_holders.holders(os.getpid(), [p.pid for p in started[1:]]) == ()
        assert f"held open for writing by pid {started[0].pid}: sleep 30 (" in pipe_holders.said(named)
        assert pipe_holders.said(()) == ""
    finally:
        for p in started:
            p.kill()
            p.wait()
        os.close(read)
        os.close(other_write)
