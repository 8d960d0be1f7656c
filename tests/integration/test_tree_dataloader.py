"""Done when: a runner whose torch DataLoader has N workers each touching X MiB at the same time reports a tree peak
of at least the main process's plus N x X (within the published error bound), fork and spawn, persistent or not;
through the whole plugin, in measured children, with real DataLoader workers. (Spikes that do not coexist are not
added: the tree figure is the peak of the sum over time, tests/unit/test_tree.py.)"""

import json
import shutil
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("torch")

MiB = 2**20
WORKERS, TOUCH_MIB = 2, 96
# The tree figure's published error with 1 or 2 workers (this test has 2): within 7.2 MiB of the planted total over
# every planted case (benchmarks/RESULTS.md, "1b. Spikes in worker processes"; with 4 workers one run fell 24.1 MiB
# short, its coinciding peaks summed in neighbouring windows: docs/process-tree.md).
BOUND = 13 * MiB

RUNNERS = '''
import os, signal, time
import torch
from torch.utils.data import DataLoader, Dataset


class Touching(Dataset):
    """Each item touches `mib` MiB in its worker, waits until every worker holds its own (a file per worker and
    epoch in `meet`), holds it 50 ms more and frees it before returning: spikes that coexist, so the peak of the
    tree's sum over time holds all of them."""

    def __init__(self, n, mib, meet):
        self.n, self.mib, self.meet = n, mib, meet

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        block = torch.ones(self.mib << 20, dtype=torch.uint8)
        first = int(block[0])
        epoch = 0
        while os.path.exists(os.path.join(self.meet, f"{epoch}-{i}")):  # each item is read once an epoch
            epoch += 1
        open(os.path.join(self.meet, f"{epoch}-{i}"), "w").close()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                os.path.exists(os.path.join(self.meet, f"{epoch}-{j}")) for j in range(self.n)):
            time.sleep(0.005)
        time.sleep(0.05)
        del block
        return torch.tensor([first + i])


def loader(ctx):
    p = ctx.params
    with ctx.meter.phase("load"):
        held = torch.ones(p["main_mib"] << 20, dtype=torch.uint8)  # the main process's own memory (a model, data)
    import tempfile
    meet = tempfile.mkdtemp(prefix="meet-", dir=".")  # the test's own folder (the child's cwd), not $TMPDIR
    ds = Touching(p["workers"], p["mib"], meet)  # one item per worker: each touches it once per epoch
    dl = DataLoader(ds, batch_size=1, num_workers=p["workers"], multiprocessing_context=p["start"],
                    persistent_workers=p["persistent"])
    seen = 0
    for step in (1, 2):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            seen += sum(int(b.sum()) for b in dl)
    return {"items": seen, "held": int(held[0])}


def _hold(conn, mib):
    block = bytes([1]) * (mib << 20)
    conn.send("holding")
    try:
        conn.recv()  # until the parent goes: EOF
    except EOFError:
        pass
    del block


def killed_with_workers(ctx):
    import multiprocessing as mp
    fork = mp.get_context("fork")
    ctx.meter.start("train_step_1", step=1)
    pipes = []
    for _ in range(ctx.params["workers"]):
        here, there = fork.Pipe()
        fork.Process(target=_hold, args=(there, ctx.params["mib"]), daemon=True).start()
        there.close()
        pipes.append(here)
    for here in pipes:
        assert here.recv() == "holding"
    time.sleep(0.5)  # the tree's thread streams the running figure
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
'''

TESTS = f'''
import pytest
from gpu_budget import Scenario

CASES = [(start, persistent) for start in ("fork", "spawn") for persistent in (False, True)]


@pytest.mark.parametrize("start,persistent", CASES)
@pytest.mark.gpu_budget(ram="8 GiB")
def test_workers(gpu_budget, start, persistent):
    S = Scenario(name="loader", run="runners:loader",
                 params={{"workers": {WORKERS}, "mib": {TOUCH_MIB}, "main_mib": 64, "start": start, "persistent": persistent}})
    row = gpu_budget.measure(S)
    assert row.info["items"] == 2 * sum(1 + i for i in range({WORKERS}))  # every item, both epochs


@pytest.mark.gpu_budget(ram="8 GiB")
def test_killed(gpu_budget):
    gpu_budget.measure(Scenario(name="k", run="runners:killed_with_workers", params={{"workers": 2, "mib": 64}}))
'''


def test_dataloader_workers_are_in_the_tree_peak(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    tmp = Path(tempfile.mkdtemp(prefix="gb-tree-", dir="/tmp"))  # the session's TMPDIR: short, and its own
    monkeypatch.setenv("TMPDIR", str(tmp))
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=RUNNERS, test_mem=TESTS)
    try:
        result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json",
                                               "--gpu-budget-timeout=300")
        left = sorted(p.name for p in tmp.iterdir() if not p.name.startswith("torchinductor_"))  # torch's cache
    finally:
        shutil.rmtree(tmp)
    assert left == []  # the workers' meeting files live in the test's folder: none in $TMPDIR, run after run
    result.assert_outcomes(passed=4, failed=1)  # the killed child is a failure, with the peaks it left
    result.stdout.fnmatch_lines(["test*RAM tree*RAM main*",
                                 "process tree (DataLoader workers, subprocesses)*",
                                 ("test_mem.py::test_workers[[]fork-False]: phase train_step_*: main process * + 2 descendant "
                                 "process(es), 2 exited in it * = *")])
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}

    touched = WORKERS * TOUCH_MIB * MiB
    for name, row in rows.items():
        if name == "test_killed":
            continue
        for step in row["steps"]:
            main, tree = step["ram"], step["ram_tree"]
            assert tree >= main + touched - BOUND, (name, step, row["phases"][f"train_step_{step['step']}"]["tree"])
        # the main process alone, what the gate saw before: the workers' touches are not in it
        assert row["step_peaks"]["ram"] < row["phases"]["load"]["ram_peak"] + TOUCH_MIB * MiB, name
        assert row["ram_tree_method"] == "vmhwm+peak-of-summed-descendants"
        assert row["ram_tree_bound"].startswith("exact per process") or "fork" not in name, row["ram_tree_bound"]
        assert row["peaks"]["ram_tree"] >= row["peaks"]["ram"] + touched - BOUND

    killed = rows["test_killed"]
    assert killed["verdict"] == "error" and killed["error"]["kind"] == "killed"
    # the phase never ended; the tree figure the child streamed before the kill holds both workers' 64 MiB
    assert killed["peaks"]["ram_tree"] >= killed["peaks"]["ram"] + 2 * 64 * MiB - BOUND, killed["peaks"]
