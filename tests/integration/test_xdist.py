"""pytest-xdist: `-n 2` gives the verdicts, the report and the baseline files of a serial run.

The runner here plants its phase peaks (it replaces the child's /proc reader),
so two runs measure the very same bytes and their baseline files can be
compared byte for byte; everything else (children, judging, recording,
reporting, worker placement) is the real path.
"""

import json
import os

import pytest
from inner_session import leave_outer_run

from gpu_budget.isolate.placement import pin_gpus, place, visible_gpus, worker_index

PLANTED = '''
import os

import gpu_budget.measure.procfs


def planted(ctx):
    """Reports ctx.params["peaks"] (MiB, one per phase) as the phase peaks: the same numbers in every run. Each block
    sets its phase's figure, which every read gives until the next block sets its own (the stretch after a block
    reads its block's, so it adds no phase)."""
    peaks, now = ctx.params["peaks"], [0]
    procfs = gpu_budget.measure.procfs
    procfs.status = lambda pid: procfs.Status(hwm=now[0], rss=0, rss_anon=0, rss_file=0)
    with ctx.meter.phase("load"):
        now[0] = peaks[0] << 20
    for step in range(1, len(peaks)):
        with ctx.meter.phase(f"train_step_{step}", step=step):
            now[0] = peaks[step] << 20
    return {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "cpus": sorted(os.sched_getaffinity(0)), "omp_threads": os.environ.get("OMP_NUM_THREADS")}
'''

# every baseline write, with who made it: the controller must be the only writer
CONFTEST = '''
import os

import gpu_budget.judge.files

_store = gpu_budget.judge.files.write


def store(path, *args, **kwargs):
    with open(os.environ["STORE_LOG"], "a") as fh:
        fh.write(os.environ.get("PYTEST_XDIST_WORKER", "controller") + "\\n")
    return _store(path, *args, **kwargs)


gpu_budget.judge.files.write = store
'''

TESTS = '''
import os

import pytest
from gpu_budget import Scenario

BUMP = int(os.environ.get("BUMP", "0"))


def S(*peaks):
    return Scenario(name="planted", run="runners:planted", params={"peaks": list(peaks)})


@pytest.mark.gpu_budget(ram="1 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S(100, 200, 210, 220))


@pytest.mark.gpu_budget(ram="150 MiB")
def test_over_budget(gpu_budget):
    gpu_budget.measure(S(100, 200, 200, 200))


@pytest.mark.gpu_budget(ram="150 MiB", expect="over-budget")
def test_reproduces(gpu_budget):
    gpu_budget.measure(S(100, 300, 300, 300))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_grows(gpu_budget):
    gpu_budget.measure(S(100, 200 + BUMP, 200 + 2 * BUMP, 200 + 3 * BUMP))


@pytest.mark.gpu_budget(ram="1 GiB")
def test_labels(gpu_budget):
    gpu_budget.measure(S(50, 60, 70, 80), label="before")
    gpu_budget.measure(S(50, 55, 55, 55), label="after")


@pytest.mark.gpu_budget(vram="8 GiB", device="cuda")
def test_vram(gpu_budget):
    gpu_budget.measure(S(1, 2, 3, 4))


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.gpu_budget(ram="1 GiB")
def test_param(gpu_budget, n):
    gpu_budget.measure(S(10 * n, 20 * n, 20 * n, 20 * n))
'''


@pytest.fixture
def planted(pytester, monkeypatch):
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(runners=PLANTED, conftest=CONFTEST, test_mem=TESTS)
    # this suite may itself run under xdist: its worker's variables must not leak into the inner sessions
    leave_outer_run(monkeypatch)
    return pytester


def _run(pytester, name: str, *args: str, workers: int = 0, **env: str):
    """One session, with `env` set for it; its baselines folder, JSON report and store log are named `name`."""
    xdist = ("-n", str(workers)) if workers else ("-p", "no:xdist")
    with pytest.MonkeyPatch.context() as monkeypatch:
        for key, value in {"STORE_LOG": str(pytester.path / f"{name}.log"), **env}.items():
            monkeypatch.setenv(key, value)
        result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", *xdist, "--gpu-budget",
                                               f"--gpu-budget-baselines={name}", f"--gpu-budget-json={name}.json", *args)
    report = json.loads((pytester.path / f"{name}.json").read_text())
    log = (pytester.path / f"{name}.log").read_text().split() if (pytester.path / f"{name}.log").exists() else []
    return result, report, log


def _verdicts(report: dict) -> list[tuple[str, str, bool]]:
    return [(r["nodeid"], r["verdict"], r["passed"]) for r in report["results"]]


def _files(pytester, name: str) -> dict[str, bytes]:
    root = pytester.path / name
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.json"))}


def _pop_floors(files: dict[str, bytes]) -> list[int]:
    """Take the measured import floor out of each entry's fingerprint (in place); return them in entry order."""
    floors = []
    for name, blob in files.items():
        data = json.loads(blob)
        for by_id in data["entries"].values():
            for test_id in sorted(by_id):
                floors.append(by_id[test_id]["fingerprint"].pop("floor"))
        files[name] = json.dumps(data, sort_keys=True).encode()
    return floors


def test_two_workers_give_the_serial_verdicts_and_identical_baseline_files(planted):
    serial, serial_report, serial_log = _run(planted, "serial")
    parallel, parallel_report, parallel_log = _run(planted, "parallel", workers=2)
    outcomes = {"passed": 7, "failed": 1, "skipped": 1}
    serial.assert_outcomes(**outcomes)
    parallel.assert_outcomes(**outcomes)
    assert _verdicts(parallel_report) == _verdicts(serial_report)  # same rows, same order: one table
    assert ("test_mem.py::test_over_budget", "over-budget", False) in _verdicts(serial_report)
    assert ("test_mem.py::test_reproduces", "over-budget", True) in _verdicts(serial_report)
    assert parallel.stdout.str().count("= gpu-budget =") == 1
    assert {r["worker"]["worker"] for r in parallel_report["results"]} == {"gw0", "gw1"}

    serial_files, parallel_files = _files(planted, "serial"), _files(planted, "parallel")
    assert list(serial_files) == ["cpu-" + os.uname().machine + "/test_mem.json"]
    # the same files, but for the import floor each forkserver measured (a worker's differs by some KiB)
    serial_floors, parallel_floors = _pop_floors(serial_files), _pop_floors(parallel_files)
    assert parallel_files == serial_files
    assert max(abs(a - b) for a, b in zip(serial_floors, parallel_floors)) < 2**20
    entries = json.loads(next(iter(serial_files.values())))["entries"]["tiny"]
    assert entries["test_mem.py::test_fits"]["peaks"]["ram"] == 220 << 20
    assert set(parallel_log) == {"controller"}  # workers shipped their entries; only the controller wrote
    # a locked write per report carrying entries, as it arrives, as the serial session writes each test's: a controller
    # SIGKILLed later keeps them (test_xdist_controller_killed.py); never more often than the serial session writes
    assert 1 < len(parallel_log) <= len(serial_log)

    # a planted regression, judged by both against their own (identical) baselines
    serial, serial_report, _ = _run(planted, "serial", BUMP="100")
    parallel, parallel_report, _ = _run(planted, "parallel", workers=2, BUMP="100")
    serial.assert_outcomes(passed=6, failed=2, skipped=1)
    parallel.assert_outcomes(passed=6, failed=2, skipped=1)
    assert _verdicts(parallel_report) == _verdicts(serial_report)
    assert ("test_mem.py::test_grows", "regression", False) in _verdicts(parallel_report)

    # --gpu-budget-update: the same new baseline, and entries of deleted tests pruned the same way
    for name in ("serial", "parallel"):
        path = planted.path / name / f"cpu-{os.uname().machine}" / "test_mem.json"
        data = json.loads(path.read_text())
        data["entries"]["tiny"]["test_mem.py::test_gone"] = data["entries"]["tiny"]["test_mem.py::test_fits"]
        path.write_text(json.dumps(data))
    _run(planted, "serial", "--gpu-budget-update", BUMP="100")
    _, _, log = _run(planted, "parallel", "--gpu-budget-update", workers=2, BUMP="100")
    assert set(log) == {"controller"}
    serial_files, parallel_files = _files(planted, "serial"), _files(planted, "parallel")
    _pop_floors(serial_files), _pop_floors(parallel_files)
    assert parallel_files == serial_files
    updated = json.loads(next(iter(parallel_files.values())))["entries"]["tiny"]
    assert "test_mem.py::test_gone" not in updated and updated["test_mem.py::test_grows"]["peaks"]["ram"] == 500 << 20


def test_each_worker_gets_one_gpu_and_its_own_cores_and_children_inherit_them(planted):
    result, report, _ = _run(planted, "placed", "-k", "param or fits or labels", workers=2,
                             CUDA_VISIBLE_DEVICES="3,5")
    result.assert_outcomes(passed=5)  # xdist counts no deselected
    rows = report["results"]
    assert {r["worker"]["worker"] for r in rows} == {"gw0", "gw1"}
    cores = sorted(os.sched_getaffinity(0))
    for row in rows:
        worker, seen = row["worker"], row["info"]
        expected = place(worker["worker"], worker_index(worker["worker"]), 2, ["3", "5"], cores)
        assert worker["gpu"] == {"gw0": "3", "gw1": "5"}[worker["worker"]]
        assert seen["cuda_visible_devices"] == worker["gpu"]  # the measured child sees the worker's one GPU
        assert seen["cpus"] == worker["cpus"] == list(expected.cpus)  # and runs on the worker's cores only
        assert seen["omp_threads"] == "1"  # the session's one thread, as in a serial run, whatever the share
    shares = {r["worker"]["worker"]: set(r["worker"]["cpus"]) for r in rows}
    if len(cores) < 2:
        pytest.skip("one core: two workers share it (placement.place), so disjoint shares cannot be shown here")
    assert not shares["gw0"] & shares["gw1"]  # two workers never measure on the same core
    assert "measured on the same GPU" not in result.stdout.str()  # a GPU each


def test_workers_that_shared_a_gpu_are_named(planted):
    """Two workers on one GPU (round robin past the last): the summary says which, since a case may have run out of
    the card's memory for its neighbour's (session/shared_gpus.py)."""
    result, report, _ = _run(planted, "shared", "-k", "param", workers=2, CUDA_VISIBLE_DEVICES="3")
    result.assert_outcomes(passed=3)
    assert {r["worker"]["gpu"] for r in report["results"]} == {"3"}
    result.stdout.fnmatch_lines(["*xdist workers gw0, gw1 measured on the same GPU (CUDA_VISIBLE_DEVICES=3)*"])


def test_without_xdist_no_worker_is_placed_and_the_run_measures_on_one_gpu(planted):
    """A serial run has no worker share of the cores; on several GPUs it measures on the first (placement.py),
    as one worker would: a child that saw them all would train under DataParallel."""
    result, report, log = _run(planted, "serial", "-k", "fits", CUDA_VISIBLE_DEVICES="3,5")
    result.assert_outcomes(passed=1, deselected=8)
    (row,) = report["results"]
    assert "worker" not in row and row["info"]["cuda_visible_devices"] == "3"
    assert log == ["controller"]
    result.stdout.fnmatch_lines(["*measured on one, CUDA_VISIBLE_DEVICES=3*"])


@pytest.mark.parametrize(("index", "count", "gpus", "cpus", "gpu", "share"), [
    (0, 2, ["0", "1"], [0, 1, 2, 3], "0", (0, 1)),
    (1, 2, ["0", "1"], [0, 1, 2, 3], "1", (2, 3)),
    (2, 3, ["0", "1"], [0, 1, 2, 3, 4, 5, 6], "0", (4, 5)),  # round robin past the last GPU; core 6 idle
    (3, 4, [], [0, 1], None, (1,)),  # more workers than cores: one core each, shared
    (0, 1, ["GPU-8f3a"], [5, 7], "GPU-8f3a", (5, 7)),
])
def test_place(index, count, gpus, cpus, gpu, share):
    placement = place(f"gw{index}", index, count, gpus, cpus)
    assert (placement.gpu, placement.cpus) == (gpu, share)


@pytest.mark.parametrize(("index", "count", "gpus", "per_worker", "gpu"), [
    (0, 2, ["0", "1", "2", "3"], 2, "0,1"),
    (1, 2, ["0", "1", "2", "3"], 2, "2,3"),  # disjoint from worker 0's
    (2, 3, ["0", "1", "2", "3"], 2, "0,1"),  # more workers than blocks: round robin, as for one GPU each
    (1, 2, ["0", "1", "2"], 2, "0,1"),  # the third GPU makes no block: idle
    (0, 2, ["0"], 2, "0"),  # fewer GPUs than a block: all of them, and a 2-rank CUDA case skips (case.py)
    (0, 1, [], 2, None),
])
def test_place_gives_each_worker_a_block_of_gpus_for_its_ranks(index, count, gpus, per_worker, gpu):
    assert place(f"gw{index}", index, count, gpus, [0, 1, 2, 3], per_worker).gpu == gpu


@pytest.mark.parametrize(("visible", "count", "pinned", "after"), [
    ("3,5,7", 1, "3", "3"),
    ("3,5,7", 2, "3,5", "3,5"),
    ("3,5", 2, None, "3,5"),  # no more than it needs: left as it is
    ("3", 1, None, "3"),
])
def test_a_serial_run_pins_the_gpus_one_worker_would_hold(visible, count, pinned, after):
    environ = {"CUDA_VISIBLE_DEVICES": visible}
    assert pin_gpus(environ, count) == pinned and environ["CUDA_VISIBLE_DEVICES"] == after


@pytest.mark.parametrize(("value", "gpus"), [
    ("0,1,2", ["0", "1", "2"]),
    ("2, 3", ["2", "3"]),
    ("", []),
    ("-1", []),
    ("1,-1,2", ["1"]),  # CUDA ignores everything from the first invalid item on
    ("GPU-8f3a,MIG-1b2c", ["GPU-8f3a", "MIG-1b2c"]),
])
def test_visible_gpus_from_cuda_visible_devices(value, gpus):
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": value}) == gpus


@pytest.mark.parametrize(("args", "scheduler"), [((), "WorkStealingScheduling"),
                                                 (("--dist", "load"), "LoadScheduling"),
                                                 (("-d",), "LoadScheduling"),  # xdist's shortcut for --dist=load
                                                 (("--dist=loadfile",), "LoadFileScheduling")])
def test_the_gate_schedules_by_work_stealing_unless_dist_is_given(planted, args, scheduler):
    """`load` queues cases ahead on a worker that cannot give them back: long cases piled up on one of two."""
    result, report, _ = _run(planted, "sched", "-v", *args, "-k", "param or fits", workers=2)
    result.assert_outcomes(passed=4)
    assert f"scheduling tests via {scheduler}" in result.stdout.str()
    assert len(report["results"]) == 4


def test_without_the_gate_xdist_keeps_its_default(pytester, monkeypatch):
    pytester.makepyfile(test_plain="def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-n", "2", "-v")
    result.assert_outcomes(passed=2)
    assert "scheduling tests via LoadScheduling" in result.stdout.str()


OWN_GPU = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="1 GiB")
def test_own_gpu(gpu_budget, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # the test's own choice, over its worker's GPU
    gpu_budget.measure(Scenario(name="planted", run="runners:planted", params={"peaks": [10, 20]}))
'''


def test_a_case_that_sets_its_own_gpu_is_named_where_it_shared_one(planted):
    """A case that sets CUDA_VISIBLE_DEVICES itself runs there, over its worker's GPU: on gw1 (placed on 5) it ran on
    3, gw0's GPU. Its row once said 5, and the summary said nothing of the two workers on one GPU."""
    planted.makepyfile(test_own=OWN_GPU)
    result, report, _ = _run(planted, "own", "test_own.py", "--dist", "each", workers=2, CUDA_VISIBLE_DEVICES="3,5")
    result.assert_outcomes(passed=2)  # --dist each: the test on each worker
    rows = {r["worker"]["worker"]: r for r in report["results"]}
    assert {w: (r["worker"]["gpu"], r["worker"]["seen"], r["info"]["cuda_visible_devices"])
            for w, r in rows.items()} == {"gw0": ("3", None, "3"), "gw1": ("5", "3", "3")}
    line = ("*xdist workers gw0, gw1 measured on the same GPU (CUDA_VISIBLE_DEVICES=3), since a case set "
            "CUDA_VISIBLE_DEVICES itself, over its worker's GPU (test_own.py::test_own_gpu on gw1, placed on 5)*")
    result.stdout.fnmatch_lines([line])
