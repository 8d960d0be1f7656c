"""When a gated session ends early: what of its measured case is left running, and for how long.

`python -m benchmarks.session_endings` (JSON `benchmarks/results/session_endings.json`). Each ending is a fresh
`pytest --gpu-budget` process over one case that would run for two minutes: a command (a script that starts a process
of its own) or, for the helper ending, a function case in an environment of its own (made from a local wheel, no
index). Once the case runs, the session is ended the way the ending says, and every process of the case (the measured
child, what it started, the forkserver, an xdist worker or an environment's helper) and the session process are
watched every 20 ms until all are gone or LINGER_S has passed; whatever is left then is SIGKILLed and counted.

  ctrl-c          SIGINT to the session's process group, as Ctrl-C in a terminal
  sigterm         SIGTERM to the session process alone: a CI runner's cancel, `timeout`'s default
  sigkill         SIGKILL to the session process: the kernel's OOM killer, a runner's hard stop
  daemon-sigkill  sigkill, the case's script having started a daemon in a session of its own (double fork, setsid)
  xdist-sigterm   `-n 1`: SIGTERM to the controller
  xdist-sigint    `-n 1`: SIGINT to the controller alone: `kill -INT PID`, a runner's cancel that signals one process
  xdist-sigkill   `-n 1`, started with SIGINT ignored as a CI script's `pytest ... &` is: SIGKILL to the controller
  helper-sigkill  the case in its own environment (a helper process runs its forkserver): SIGKILL to the session

`--before DIR`: the same endings, interleaved rep by rep, with another checkout's plugin folder (DIR: its `plugin/`)
first on PYTHONPATH, so a change is measured side by side with what it changed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, missing, ran, session_environ, write
from benchmarks.local_wheel import write_wheel
from gpu_budget.isolate import lifecycle
from gpu_budget.measure import procfs

LINGER_S = 30.0  # how long a process of the case is given to go before it is counted as left running
POLL_S = 0.02
ENDINGS = ("ctrl-c", "sigterm", "sigkill", "daemon-sigkill", "xdist-sigterm", "xdist-sigint", "xdist-sigkill",
           "helper-sigkill")
TITLE = "## 3b. When a session ends early: what of its case is left running"

SCRIPT = '''
import os, subprocess, sys, time

helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
pids = [os.getpid(), helper.pid]
if os.environ.get("DAEMON"):
    read, write = os.pipe()
    if os.fork() == 0:  # a daemon: double fork, a session of its own
        os.setsid()
        if os.fork() == 0:
            os.write(write, str(os.getpid()).encode())
            time.sleep(120)
        os._exit(0)
    pids.append(int(os.read(read, 32)))
with open(os.environ["PIDS"] + ".tmp", "w") as fh:
    fh.write(" ".join(map(str, pids)))
os.rename(os.environ["PIDS"] + ".tmp", os.environ["PIDS"])
time.sleep(120)
'''

RUNNER = '''
import os, subprocess, sys, time


def sleeps(ctx):
    import gbtiny  # the environment's release
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    with open(os.environ["PIDS"] + ".tmp", "w") as fh:
        fh.write(f"{os.getpid()} {helper.pid}")
    os.rename(os.environ["PIDS"] + ".tmp", os.environ["PIDS"])
    time.sleep(120)
'''

TESTS = '''
import sys
import pytest
from gpu_budget import Environment, Scenario


@pytest.mark.gpu_budget(ram="4 GiB")
def test_command(gpu_budget):
    gpu_budget.measure(Scenario(name="command", command=[sys.executable, "script.py"]))


@pytest.mark.gpu_budget(ram="4 GiB")
def test_helper(gpu_budget):
    gpu_budget.measure(Scenario(name="helper", run="runner:sleeps",
                                environment=Environment(requirements=["gbtiny==1.0"])))
'''


def project(folder: Path) -> None:
    """The session's project, and the local wheel the helper ending's environment is made from."""
    (folder / "script.py").write_text(SCRIPT)
    (folder / "runner.py").write_text(RUNNER)
    (folder / "test_endings.py").write_text(TESTS)
    (folder / "pytest.ini").write_text("[pytest]\ngpu_budget_preload =\n")
    write_wheel(folder / "house", "1.0")


def _ppid(pid: int) -> int | None:
    stat = procfs.read_stat(pid)
    return None if stat is None else stat.ppid


def end_once(folder: Path, ending: str, plugin: str | None, index: int) -> dict:
    """One session ended as `ending` says: the case's processes, the seconds until the last was gone, those left."""
    pids_file = folder / f"pids-{index}"
    xdist = ending.startswith("xdist")
    test = "test_endings.py::test_helper" if ending == "helper-sigkill" else "test_endings.py::test_command"
    cmd = [sys.executable, "-m", "pytest", "--gpu-budget", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           "--gpu-budget-envs", str(folder / "envs"), "--gpu-budget-baselines", str(folder / f"baselines-{index}"),
           *(["-n", "1"] if xdist else ["-p", "no:xdist"]), test]
    env = session_environ([p for p in (plugin, str(folder)) if p], PIDS=str(pids_file),
                          GPU_BUDGET_WHEELHOUSE=str(folder / "house"), **({"DAEMON": "1"} if "daemon" in ending else {}))
    sigint = signal.SIG_IGN if ending == "xdist-sigkill" else signal.SIG_DFL
    session = subprocess.Popen(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True,  # its own group: ctrl-c reaches it alone
                               preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))  # noqa: PLW1509  no threads
    try:
        deadline = time.monotonic() + 120
        while not pids_file.exists() and time.monotonic() < deadline and session.poll() is None:
            time.sleep(POLL_S)
        if not pids_file.exists():
            raise RuntimeError(f"{ending}: the case never started (session exit {session.poll()})")
        case = [int(p) for p in pids_file.read_text().split()]
        child = case[0] if ending == "helper-sigkill" else _ppid(case[0])  # a command's measuring child is its parent
        server = _ppid(child)
        watched = [*case, child, server]
        above = _ppid(server)
        if above is not None and above != session.pid:  # an xdist worker, or the environment's helper
            watched.append(above)
        t0 = time.monotonic()
        if ending == "ctrl-c":
            os.killpg(session.pid, signal.SIGINT)
        else:
            session.send_signal({"sigterm": signal.SIGTERM, "sigint": signal.SIGINT}.get(ending.rsplit("-", 1)[-1],
                                                                                        signal.SIGKILL))
        gone_s = ended_s = None
        while time.monotonic() - t0 < LINGER_S and (gone_s is None or ended_s is None):
            now = time.monotonic() - t0
            if gone_s is None and not any(procfs.read_stat(p) for p in watched):
                gone_s = now
            if ended_s is None and session.poll() is not None:
                ended_s = now
            time.sleep(POLL_S)
        left = [p for p in watched if procfs.read_stat(p)]
    finally:
        if session.poll() is None:
            session.kill()
        session.wait()
    for pid in left:  # nothing of the benchmark outlives it either
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return {"ending": ending, "processes": len(set(watched)), "left": len(set(left)),
            "gone_s": None if left or gone_s is None else round(gone_s, 3),
            "ended_s": None if ended_s is None else round(ended_s, 3)}


def run(reps: int, before: str | None, endings: tuple[str, ...] = ENDINGS) -> list[dict]:
    sides = [("this", str(ROOT / "plugin"))] + ([("before", before)] if before else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="session-endings-") as tmp:
        folder = Path(tmp)
        project(folder)
        index = 0
        for rep in range(reps):
            for ending in endings:
                for side, plugin in sides:
                    index += 1
                    row = {"rep": rep, "side": side, **end_once(folder, ending, plugin, index)}
                    rows.append(row)
                    print(f"rep {rep} {side} {ending}: {row['left']} of {row['processes']} left, gone in "
                          f"{row['gone_s']} s, the session ended in {row['ended_s']} s", flush=True)
        shutil.rmtree(folder / "envs", ignore_errors=True)
    return rows


def _median_max(seconds: list[float | None]) -> str:
    """"median (max)" of the runs that got there within LINGER_S (a row from before `ended_s` was kept has none)."""
    got = [s for s in seconds if s is not None]
    return f"{statistics.median(got):.2f} ({max(got):.2f})" if got else "-"


def section(data: dict | None) -> list[str]:
    """Section 3b from session_endings.json."""
    out = [TITLE, ""]
    if data is None:
        return out + missing("session_endings", "session_endings")
    rows = data["rows"]
    sides = [s for s in ("this", "before") if any(r["side"] == s for r in rows)]
    out += [ran(data), "", (f"`benchmarks/session_endings.py`. A fresh session per row, ended once its case (which "
                            f"would run 120 s) was running; every process of the case watched every {POLL_S * 1000:.0f} "
                            f"ms for {LINGER_S:.0f} s. `this`: the plugin at the commit above"
                            + (f"; `before`: the plugin at commit `{data['before']['commit'][:10]}`, side by side, rep "
                               "by rep" if data.get("before") else "")
                            + "."), "",
            ("| ending | side | runs | processes of the case | runs that left some running | left, per run (max) | "
            "all gone after: median s (max) | the session ended after: median s (max) |"),
            "|---|---|---|---|---|---|---|---|"]
    for ending in ENDINGS:
        for side in sides:
            mine = [r for r in rows if r["ending"] == ending and r["side"] == side]
            if not mine:
                continue
            timing = [_median_max([r.get(key) for r in mine]) for key in ("gone_s", "ended_s")]
            out.append(f"| {ending} | {side} | {len(mine)} | {max(r['processes'] for r in mine)} | "
                       f"{sum(1 for r in mine if r['left'])} | {max(r['left'] for r in mine)} | {' | '.join(timing)} |")
    return [*out, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--before", help="another checkout's plugin folder, measured side by side")
    parser.add_argument("--endings", nargs="+", choices=ENDINGS, default=ENDINGS,
                        help="only these endings (a look at one; the committed JSON has them all)")
    parser.add_argument("--out", type=Path, help="the JSON (default benchmarks/results/session_endings.json)")
    args = parser.parse_args()
    lifecycle.claim()  # a session of this side ends with this process if it is killed meanwhile
    t0 = time.monotonic()
    rows = run(args.reps, args.before, tuple(args.endings))
    before = None if args.before is None else {"plugin": args.before, "commit": subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=args.before, capture_output=True, text=True, check=True).stdout.strip()}
    write("session_endings", {"linger_s": LINGER_S, "before": before, "rows": rows,
                              "total_s": round(time.monotonic() - t0, 1)}, args.out)


if __name__ == "__main__":
    main()
