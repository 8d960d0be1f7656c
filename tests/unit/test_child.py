"""isolate/child.py and isolate/forkserver.py: the pieces of a measured child that need no child to test."""

import signal

import pytest

from gpu_budget.isolate import child, events, forkserver, protocol


def test_assets_fill_every_part_of_a_command_line():
    line = {"argv": ["python", "t.py", "--model", "{assets}/model"], "cwd": "{assets}", "env": {"DATA": "{assets}/d"}}
    assert protocol.fill_assets(line, "/a") == {"argv": ["python", "t.py", "--model", "/a/model"], "cwd": "/a",
                                              "env": {"DATA": "/a/d"}}
    assert protocol.fill_assets({"cwd": None}, "/a") == {"cwd": None}


@pytest.mark.parametrize("exc,kind", [
    (MemoryError(), "oom"),
    (RuntimeError("CUDA error: out of memory"), "oom"),
    # torch's host allocator, on the CPU: the host's out-of-memory as torch raises it (2.x, and before)
    (RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
                  "to allocate 1125899906842624 bytes. Error code 12 (Cannot allocate memory)"), "oom"),
    (RuntimeError("[enforce fail at CPUAllocator.cpp:64] . DefaultCPUAllocator: not enough memory: you tried to "
                  "allocate 68719476736 bytes. Buy new RAM!"), "oom"),
    (RuntimeError("the scenario broke"), "exception"),
])
def test_a_crash_is_named_by_its_kind(exc, kind):
    assert child._error_kind(exc) == kind


def test_the_tree_stream_sends_rises_only_and_at_most_twenty_a_second():
    from gpu_budget.measure.tree import Running

    sent = []
    stream = child._TreeStream(sent.append)
    for total in (100 * 2**20, 100 * 2**20 + 10, 300 * 2**20):  # a first line; no rise worth one; a rise within 50 ms
        stream(Running(total, {}, None, phase=0))
    assert [e.ram_tree for e in sent] == [100 * 2**20]


def test_the_steady_allocator_is_set_where_glibc_allows():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc: mallopt's thresholds are glibc's")
    assert child.steady_malloc() is True


@pytest.mark.parametrize("ending,text", [
    ({"timed_out": True, "wall_seconds": 12.3, "exitcode": -9}, "timed out after 12 s and was killed, with every process"),
    ({"timed_out": False, "wall_seconds": 1, "exitcode": -signal.SIGKILL}, "killed by SIGKILL (the kernel's OOM killer"),
    ({"timed_out": False, "wall_seconds": 1, "exitcode": 3}, "exited with code 3 without a result"),
])
def test_how_a_child_ended_is_said_plainly(ending, text):
    assert forkserver._describe_ending(protocol.ChildEnding(**ending)).startswith(text)


def test_an_unknown_allocator_mode_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="malloc mode 'jemalloc': expected one of steady, system"):
        forkserver.measure({"name": "x"}, tmp_path, 10, 1, malloc="jemalloc")


class _StrFails(Exception):
    def __str__(self):
        raise ValueError("no str")


def _failure_of(exc: BaseException):
    """The Failed event child.main emits for `exc`, raised by a runner."""
    sent = []
    try:
        raise exc
    except BaseException as raised:  # noqa: BLE001  as child.main catches it
        child._report_failure(raised, child._Run(), sent.append)
    (failed,) = sent
    return failed


@pytest.mark.parametrize("exc,message", [
    (MemoryError(), "MemoryError"),
    (KeyboardInterrupt(), "KeyboardInterrupt"),
    (SystemExit(3), "the run called sys.exit(3) instead of returning"),
    (SystemExit(0), "the run called sys.exit(0) instead of returning"),
    (_StrFails(), "_StrFails (its str() raised ValueError: no str)"),
    (RuntimeError("the scenario broke"), "the scenario broke"),
])
def test_a_failure_message_names_what_happened_where_the_exception_says_nothing(exc, message):
    failed = _failure_of(exc)
    assert failed.message == message
    assert failed.cause == ("oom" if isinstance(exc, MemoryError) else "exception")


def test_the_tree_stream_sends_each_phases_figures_from_its_start_with_the_main_processs():
    """A figure below what an earlier phase sent is still the open phase's first: a timeout keeps it (forkserver)."""
    from gpu_budget.measure.tree import Running

    sent = []
    stream = child._TreeStream(sent.append)
    stream.begun("load", None)
    stream(Running(300 * 2**20, {}, 200 * 2**20, phase=1))
    stream.begun("train_step_1", 1)
    stream(Running(400 * 2**20, {}, 300 * 2**20, phase=1))  # read before the new phase began: not its figure
    stream(Running(100 * 2**20, {}, 90 * 2**20, phase=2))
    assert [(type(e).__name__, getattr(e, "ram_tree", None), getattr(e, "ram", None)) for e in sent] == [
        ("PhaseBegun", None, None), ("TreeFigure", 300 * 2**20, 200 * 2**20),
        ("PhaseBegun", None, None), ("TreeFigure", 100 * 2**20, 90 * 2**20)]
    assert sent[2].step == 1


def test_the_tree_stream_carries_the_gpu_pollers_running_sums_and_sends_on_their_rise(tmp_path, monkeypatch):
    """A command stopped mid-phase kept no GPU figure of that phase: the NVML poller gave its sums only at a phase's
    end. The stream now sends them, the node's and each rank's, on a GPU rise alone too, each phase's from nothing."""
    import importlib.util
    import os
    from dataclasses import replace
    from pathlib import Path

    from gpu_budget.measure.gpu_tree import GpuTree
    from gpu_budget.measure.tree import Running

    spec = importlib.util.spec_from_file_location("fake_pynvml", Path(__file__).parents[1] / "fake_pynvml.py")
    fake_nvml = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake_nvml)
    monkeypatch.setenv("FAKE_NVML_DIR", str(tmp_path))
    monkeypatch.setattr(child._TreeStream, "MIN_SECONDS", 0.0)
    MiB = 2**20
    gpu = GpuTree(fake_nvml, lambda: {os.getpid(): 1})  # this process, as rank 1's; polled here, not on its thread
    sent = []
    stream = child._TreeStream(sent.append)
    stream.gpu = gpu
    stream.begun("train_step_1", 1)
    ram = Running(100 * MiB, {1: (50 * MiB, 100 * MiB)}, None, phase=1)
    stream(ram)  # no poll matched a process yet: no GPU figure
    (tmp_path / str(os.getpid())).write_text(str(500 * MiB))
    gpu.poll()
    stream(ram)  # the host RAM figures stand still: the GPU's rise alone is sent
    gpu.phase_end()
    stream.begun("train_step_2", 2)
    stream(replace(ram, phase=2))
    figures = [(e.vram_tree, e.rank_vram) for e in sent if isinstance(e, events.TreeFigure)]
    assert figures == [(None, None), (500 * MiB, {"1": 500 * MiB}), (None, None)], figures
