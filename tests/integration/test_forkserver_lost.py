"""A forkserver that dies mid-session (the kernel's OOM killer may pick it: it holds torch and transformers) fails
the case it was running with words that say so, and the next case runs from a new forkserver set up as the first:
the same kernel-dispatch pin and the same folders on its path, so its figures mean what the baselines' do."""

import json
import time

import pytest
from inner_session import leave_outer_run, rows

from gpu_budget.isolate import dispatch
from gpu_budget.measure import procfs

RUNNERS = '''
import json, os, time


def waits(ctx):
    """Says who runs it, then waits to be ended (its forkserver is killed meanwhile)."""
    with open("running.pid", "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)


def says(ctx):
    """What a child of the forkserver sees: the dispatch pin, and whether this folder's modules import."""
    with open("seen.json", "w") as fh:
        json.dump({"pin": os.environ.get("ATEN_CPU_CAPABILITY"), "module": __name__}, fh)
    return {}
'''

TESTS = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_first(gpu_budget):
    gpu_budget.measure(Scenario(name="first", run="runners:waits"))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_second(gpu_budget):
    gpu_budget.measure(Scenario(name="second", run="runners:says"))
'''

KILLER = '''
import os, pathlib, signal, threading, time


def pytest_configure(config):
    """In the session: once the first case runs, SIGKILL its forkserver (the child's parent), as the OOM killer would."""
    def kill():
        path = pathlib.Path("running.pid")
        while not path.exists() or not path.read_text():
            time.sleep(0.05)
        child = path.read_text()
        with open(f"/proc/{child}/stat") as fh:
            os.kill(int(fh.read().rsplit(")", 1)[1].split()[1]), signal.SIGKILL)
    threading.Thread(target=kill, daemon=True).start()
'''


def test_a_killed_forkserver_fails_its_case_and_the_next_case_gets_one_set_up_as_the_first(pytester, monkeypatch):
    if not dispatch.pin_env("avx2"):
        pytest.skip("no dispatch pin on this machine (not x86-64, or ATEN_CPU_CAPABILITY already set)")
    leave_outer_run(monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS, conftest=KILLER)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "--gpu-budget-json=r.json", timeout=300)
    found = rows(pytester)
    first, second = found["test_first"], found["test_second"]
    assert first["verdict"] == "error" and "forkserver" in first["error"]["message"], first["error"]
    assert "exited with code 255" not in first["error"]["message"]  # not the child's code: multiprocessing's stand-in
    child = int((pytester.path / "running.pid").read_text())
    deadline = time.monotonic() + 10
    while procfs.read_stat(child) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert procfs.read_stat(child) is None, "the child of the lost forkserver outlived its case"
    assert second["passed"] and second["error"] is None, (second, result.stdout.str()[-2000:])
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert seen == {"pin": "avx2", "module": "runners"}, seen  # pinned, and this folder on its path, as the first
