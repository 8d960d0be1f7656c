"""An installer run so that cutting it off ends what it started too.

uv and pip build a source distribution in processes of their own (the
build backend); killing the tool alone, as subprocess.run does on its
timeout or a Ctrl-C sent to pytest alone, leaves such a build running on (a
source build of minutes, beside the cases measured next). On a timeout or
any interruption the tool's descendants are killed while it still lives
(found through it: lifecycle.kill_descendants), then the tool. It stays in
pytest's process group, so a Ctrl-C at the terminal or a kill of the group
reaches it as before.

A process SIGKILLed (the OOM killer, a CI job's hard stop, pytest-timeout's
thread method ending pytest) runs none of that, and the tool is no Python
process that could watch it: so the tool runs under a small watcher of its
own (`watch`), which ends the tool and its builds once the process that
started it is gone (lifecycle.end_with), as the gate's Python helpers do.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from gpu_budget.isolate.lifecycle import end_with, kill_descendants, owner_of

_PLUGIN_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding gpu_budget: the watcher imports it there
# isolated (-I) and without site (-S): the tool's environment (its PYTHONPATH, an index's settings) is not the watcher's
_WATCHER = [sys.executable, "-I", "-S", "-c",
            ("import sys; sys.path.insert(0, sys.argv[1]); from gpu_budget.isolate.tool_process import watch; "
             "watch(sys.argv[2], sys.argv[3:])"), _PLUGIN_ROOT]


def run_tool(argv: Sequence[str], cwd: str | None, timeout: float,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The tool's exit status and output; subprocess.TimeoutExpired (it and its builds killed) past `timeout` s."""
    watched = [*_WATCHER, owner_of(os.getpid()), *argv]
    with subprocess.Popen(watched, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, env=None if env is None else dict(env)) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:  # its timeout, a KeyboardInterrupt: the tool and its builds go together
            _kill_tree(proc)
            raise
    failed = _not_started(proc, err, argv[0])
    if failed is not None:
        raise failed
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def watch(owner: str, argv: Sequence[str]) -> None:
    """In the watcher: run the tool (its streams, folder and environment the watcher's own) and end as it ended, by
    its exit status or its signal; once `owner` is gone first, end it and its builds (lifecycle.end_with). A Ctrl-C or
    SIGTERM sent to the whole group is the tool's to act on: the watcher waits for it, so the tool stays its child
    and run_tool can still find its builds through it."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: None)  # a handler, not SIG_IGN: the tool starts with the default again
    end_with(owner)
    try:
        tool = subprocess.Popen(list(argv))
    except OSError as exc:  # said back to run_tool, which raises it as Popen would have there
        sys.stderr.write(f"{_NOT_STARTED}{exc.errno}\t{exc.strerror}\n")
        sys.exit(_NOT_STARTED_CODE)
    with tool:
        code = tool.wait()
    if code < 0:  # killed by a signal: the caller reads it as such (returncode < 0)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL's own cannot be set, and needs no reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


_NOT_STARTED, _NOT_STARTED_CODE = "gpu-budget: the tool could not be started: ", 127


def _not_started(proc: subprocess.Popen[str], err: str, tool: str) -> OSError | None:
    """The OSError the watcher met starting the tool (a tool not installed), where it said one; else None."""
    if proc.returncode != _NOT_STARTED_CODE or not err.startswith(_NOT_STARTED):
        return None
    number, _, strerror = err[len(_NOT_STARTED):].strip().partition("\t")
    return OSError(int(number), strerror, tool)


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        kill_descendants(proc.pid)
        proc.kill()
    try:
        proc.communicate(timeout=5)  # reaped, its pipes drained
    except subprocess.TimeoutExpired:  # a process that escaped holds them: not waited for
        pass
