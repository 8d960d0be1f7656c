"""A session ends its forkserver and resource tracker itself (forkserver.stop), so a parent that waits for it finds
nothing of it left; and the wait is bounded, since the tracker lives while any process holds its pipe."""

import subprocess
import sys
import textwrap

import psutil

SCRIPT = textwrap.dedent("""
    import os, sys, time
    import psutil
    from gpu_budget.isolate import forkserver

    context = forkserver.forkserver(preload=())
    worker = context.Process(target=time.sleep, args=(0,))  # a child of the forkserver: both are up
    worker.start(); worker.join()
    up = {p.pid for p in psutil.Process().children()}
    holder = os.fork() if sys.argv[1] == "held" else 0  # a process of the session holding both pipes open
    if holder == 0 and sys.argv[1] == "held":
        time.sleep(60)
        os._exit(0)
    t0 = time.monotonic()
    forkserver.stop(seconds=1.0)
    took = time.monotonic() - t0
    left = [p for p in psutil.Process().children() if p.pid != holder]
    kinds = ",".join(sorted("forkserver" if "forkserver" in " ".join(p.cmdline()) else "tracker" for p in left))
    print(len(up), len(left), round(took, 2), holder, kinds or "-", flush=True)
    if holder:
        os.kill(holder, 9)
        os.waitpid(holder, 0)
""")


def run(mode):
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60, check=True)
    up, left, took, holder, kinds = done.stdout.split()
    return int(up), int(left), float(took), int(holder), kinds


def test_stop_ends_the_forkserver_and_the_tracker_and_waits_for_them():
    up, left, took, _, _ = run("free")
    assert up == 2 and left == 0, (up, left)  # the forkserver and the resource tracker, both gone
    assert took < 1.0


def test_a_process_holding_the_trackers_pipe_bounds_the_wait_not_the_session():
    """The holder keeps both pipes open: each is waited for its second, no more; the forkserver, which would then live
    as long as the holder, is killed, and the tracker, which ends with the holder, is left to it."""
    up, left, took, holder, kinds = run("held")
    assert (up, left, kinds) == (2, 1, "tracker"), (up, left, kinds)
    assert 2.0 <= took < 4.0, took
    assert not psutil.pid_exists(holder) or psutil.Process(holder).status() == psutil.STATUS_ZOMBIE
