"""An installer run under its watcher (isolate/tool_process.py) reads to the caller as the tool itself: its output,
its exit status, its death by a signal, and a tool that cannot be started."""

import signal
import sys

import pytest

from gpu_budget.isolate.tool_process import run_tool


def test_the_tools_output_and_exit_status_come_back_as_its_own():
    done = run_tool([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                    None, 60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert done.args[0] == sys.executable


def test_a_tool_killed_by_a_signal_reads_as_killed():
    done = run_tool([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"], None, 60)
    assert done.returncode == -signal.SIGKILL


def test_a_tool_that_cannot_be_started_raises_as_popen_would():
    with pytest.raises(FileNotFoundError) as raised:
        run_tool(["/nonexistent/uv", "pip", "install"], None, 60)
    assert str(raised.value) == "[Errno 2] No such file or directory: '/nonexistent/uv'"


def test_the_tool_runs_with_the_environment_and_folder_given(tmp_path):
    done = run_tool([sys.executable, "-c", "import os; print(os.environ['GIVEN'], os.getcwd())"], str(tmp_path), 60,
                    env={"GIVEN": "yes", "PATH": "/usr/bin:/bin"})
    assert done.stdout.split() == ["yes", str(tmp_path)]
