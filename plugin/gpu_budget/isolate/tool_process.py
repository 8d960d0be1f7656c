"""An installer run so that cutting it off ends what it started too.

uv and pip build a source distribution in processes of their own (the
build backend); killing the tool alone, as subprocess.run does on its
timeout or a Ctrl-C sent to pytest alone, leaves such a build running on (a
source build of minutes, beside the cases measured next). On a timeout or
any interruption the tool's descendants are killed while it still lives
(found through it: lifecycle.kill_descendants), then the tool. It stays in
pytest's process group, so a Ctrl-C at the terminal or a kill of the group
reaches it as before.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence

from gpu_budget.isolate.lifecycle import kill_descendants


def run_tool(argv: Sequence[str], cwd: str | None, timeout: float,
             env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The tool's exit status and output; subprocess.TimeoutExpired (it and its builds killed) past `timeout` s."""
    with subprocess.Popen(list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL, env=None if env is None else dict(env)) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:  # its timeout, a KeyboardInterrupt: the tool and its builds go together
            _kill_tree(proc)
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        kill_descendants(proc.pid)
        proc.kill()
    try:
        proc.communicate(timeout=5)  # reaped, its pipes drained
    except subprocess.TimeoutExpired:  # a process that escaped holds them: not waited for
        pass
