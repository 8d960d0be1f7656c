"""xdist workers that measured on one GPU are named, so a case's out-of-memory is not taken for its own alone
(session/shared_gpus.py)."""

from gpu_budget.isolate.placement import place
from gpu_budget.model.result import Result, Verdict
from gpu_budget.session.shared_gpus import shared_gpu_lines


def row(nodeid: str, worker: str, index: int, count: int, gpus: list[str], per_worker: int = 1) -> Result:
    placement = place(worker, index, count, gpus, [0, 1, 2, 3], per_worker)
    return Result(nodeid, "s", "tiny", Verdict.PASS, True, "within", worker=placement.to_json())


def test_more_workers_than_gpus_names_the_workers_that_shared_one():
    rows = [row(f"t.py::test_{i}", f"gw{i}", i, 3, ["0", "1"]) for i in range(3)]
    lines = shared_gpu_lines(rows)
    assert len(lines) == 1
    assert lines[0].startswith("xdist workers gw0, gw2 measured on the same GPU (CUDA_VISIBLE_DEVICES=0)")
    assert "give -n at most the number of GPUs" in lines[0]


def test_a_gpu_each_or_no_gpu_says_nothing():
    assert shared_gpu_lines([row(f"t.py::test_{i}", f"gw{i}", i, 2, ["0", "1"]) for i in range(2)]) == []
    assert shared_gpu_lines([row(f"t.py::test_{i}", f"gw{i}", i, 2, []) for i in range(2)]) == []
    serial = Result("t.py::test_a", "s", "tiny", Verdict.PASS, True, "within")
    assert shared_gpu_lines([serial, serial]) == []


def test_gpu_blocks_of_several_ranks_are_compared_whole():
    rows = [row(f"t.py::test_{i}", f"gw{i}", i, 3, ["0", "1", "2", "3"], per_worker=2) for i in range(3)]
    (line,) = shared_gpu_lines(rows)
    assert "gw0, gw2" in line and "CUDA_VISIBLE_DEVICES=0,1" in line


def test_a_case_that_sets_its_own_gpu_is_placed_where_its_processes_ran():
    """A Scenario env= or a test's environment naming GPU 0 on the worker placed on 1 ran on 0, beside gw0: the row
    once said 1, and no line was printed."""
    placed = place("gw1", 1, 2, ["0", "1"], [0, 1])
    assert placed.as_run({"CUDA_VISIBLE_DEVICES": "1"}) == placed  # the worker's own: unchanged
    own = placed.as_run({"CUDA_VISIBLE_DEVICES": "0"})
    assert (own.gpu, own.seen, own.on) == ("1", "0", "0")
    assert placed.as_run({"CUDA_VISIBLE_DEVICES": ""}).on is None  # hidden from every GPU: on none
    rows = [row("t.py::test_a", "gw0", 0, 2, ["0", "1"]),
            Result("t.py::test_b", "s", "tiny", Verdict.PASS, True, "within", worker=own.to_json())]
    (line,) = shared_gpu_lines(rows)
    assert line.startswith("xdist workers gw0, gw1 measured on the same GPU (CUDA_VISIBLE_DEVICES=0), since a case "
                           "set CUDA_VISIBLE_DEVICES itself, over its worker's GPU (t.py::test_b on gw1, placed on 1)")
    assert "leave CUDA_VISIBLE_DEVICES to the gate under -n" in line
