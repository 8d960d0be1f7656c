"""The meter reads each phase's exact peak, even of a spike freed before the phase ends."""

import mmap

import pytest

from gpu_budget.measure.meter import Meter, can_reset_hwm
from gpu_budget.measure.summary import summarize, tree_bound
from gpu_budget.model.figures import PhaseRecord, TreeReading

MiB = 2**20

pytestmark = pytest.mark.skipif(not can_reset_hwm(), reason="needs /proc/self/clear_refs (Linux)")


@pytest.fixture
def meter():
    m = Meter(use_cuda=False)
    yield m
    m.close()  # its tree's thread resets the VmHWM of this process's descendants: never leave it running


@pytest.mark.parametrize("mib", [16, 64, 256])
def test_freed_spike_is_measured_exactly(mib, meter):
    with meter.phase("idle"):
        pass
    with meter.phase("spike"):
        # fresh pages of its own (not malloc's, which may hand back pages this worker's earlier tests left resident)
        spike = mmap.mmap(-1, mib * MiB)
        for page in range(0, mib * MiB, mmap.PAGESIZE):
            spike[page] = 1
        spike.close()
    idle, spiked = meter.phases
    # the spike is gone by the phase's end, yet the phase peak holds it (to within 2 MiB of interpreter noise)
    assert abs((spiked.ram_peak - idle.ram_peak) - mib * MiB) < 2 * MiB
    assert spiked.rss_anon is not None and spiked.rss_file is not None


def test_phases_tile_the_run(meter):
    meter.start("load")
    meter.start("train_step_1", step=1)  # ends "load"
    meter.stop()
    assert [p.name for p in meter.phases] == ["load", "train_step_1"]
    assert meter.stop() is None


def test_a_step_counted_by_numpy_is_a_whole_number_and_text_or_a_fraction_is_refused(meter):
    """np.arange's steps once reached the report as text ("1", "2": the child's event line wrote them as str)."""
    import numpy

    with meter.phase("train_step_1", step=numpy.int64(1)):
        pass
    (record,) = meter.phases
    assert record.step == 1 and type(record.step) is int
    for bad in ("2", 2.5, True):
        with pytest.raises(ValueError, match=f"step {bad!r}: expected a whole number"):
            meter.start("train_step_2", step=bad)


def test_a_step_below_zero_is_refused_by_the_meter_and_by_a_scripts_mark(meter):
    """gpu_budget.step(-1) and meter.start(step=-1) once recorded step -1, a step no training has, in the series."""
    from gpu_budget import script

    for bad in (-1, -3):
        with pytest.raises(ValueError, match=f"step {bad}: expected a whole number >= 0"):
            meter.start("train_step", step=bad)
        with pytest.raises(ValueError, match=f"step {bad}: expected a whole number >= 0"):
            script.step(bad)
    meter.start("train_step_0", step=0)  # a loop counting from 0
    meter.stop()
    assert [p.step for p in meter.phases] == [0]


def test_no_cuda_means_none_not_zero(meter):
    with meter.phase("load"):
        pass
    summary = meter.summary()
    assert summary.cuda is False
    assert summary.peaks.ram > 0
    assert summary.peaks.vram_allocated is None and summary.peaks.vram_reserved is None
    assert meter.phases[0].vram_allocated is None


def test_summary_series_and_step_peaks():
    phases = [PhaseRecord("load", None, 1.0, 500, None, None), PhaseRecord("train_step_1", 1, 1.0, 300, None, None),
              PhaseRecord("train_step_2", 2, 1.0, 310, None, None)]
    s = summarize(phases, cuda=False)
    assert s.peaks.ram == 500
    assert s.step_peaks.ram == 310
    assert [step.ram for step in s.steps] == [300, 310]


def test_the_tree_figure_says_how_far_it_can_be_off():
    def phase(exited, reported, unread=0, gap=0.01):
        tree = TreeReading(private=0, peak_sum=0, hwm_sum=0, processes=exited, exited=exited, reported=reported,
                           unread=unread, max_gap=gap)
        return PhaseRecord("p", None, 1.0, 1, None, None, tree=tree)

    assert tree_bound([PhaseRecord("p", None, 1.0, 1, None, None)]) is None  # no tree read (off Linux)
    exact = tree_bound([phase(2, 2), phase(0, 0)])
    assert exact.startswith("exact per process")
    assert "born and gone between two polls without reporting is not seen" in exact  # the claim is of those seen
    said = tree_bound([phase(3, 1, gap=0.04), phase(1, 0, unread=1, gap=0.2)])
    assert said.startswith("2 descendant(s) exited unreported, last read at most 0.200 s") and "1 gone before" in said


def _spike(mib):
    """Touch `mib` MiB of fresh pages of this process's own, then give them back."""
    spike = mmap.mmap(-1, mib * MiB)
    for page in range(0, mib * MiB, mmap.PAGESIZE):
        spike[page] = 1
    spike.close()


def test_work_between_two_blocks_or_after_the_last_is_measured(meter):
    """A spike between two `with meter.phase()` blocks, or after the last, was in no phase: the row's peak never held
    it, and a budget it broke passed."""
    with meter.phase("load"):
        pass
    _spike(128)
    with meter.phase("train_step_1", step=1):
        pass
    _spike(64)
    meter.stop()  # the measured child's own, as the runner returns
    names = [p.name for p in meter.phases]
    assert names == ["load", "after load", "train_step_1", "after train_step_1"], names
    load, between, step, after = meter.phases
    assert abs((between.ram_peak - load.ram_peak) - 128 * MiB) < 2 * MiB
    assert abs((after.ram_peak - step.ram_peak) - 64 * MiB) < 2 * MiB
    assert between.step is None and after.step is None


def test_a_block_ends_where_work_goes_on_in_the_block_around_it(meter):
    with meter.phase("outer"):
        with meter.phase("inner"):
            pass
        _spike(96)
    _outer, inner, rest = meter.phases
    assert rest.name == "after inner" and abs((rest.ram_peak - inner.ram_peak) - 96 * MiB) < 2 * MiB


def test_an_exception_in_a_block_leaves_its_phase_open_as_a_scripts_block_does(meter):
    """A block that raised ended its phase and began none: work after a caught exception (a failed evaluation the
    runner goes on from) was in no phase, and its spike in no figure of the row; an uncaught one left no phase open
    for an out-of-memory error under a card's cap to name ("before any phase")."""
    with meter.phase("load"):
        pass
    try:
        with meter.phase("eval"):
            raise ValueError("bad batch")
    except ValueError:
        pass
    assert meter.open_phase == ("eval", None)
    _spike(96)
    with pytest.raises(MemoryError), meter.phase("train_step_3", step=3):
        raise MemoryError
    assert meter.open_phase == ("train_step_3", 3)  # what the measured child names the error with, then stops
    meter.stop()
    load, evaluation, _step = meter.phases
    assert [p.name for p in meter.phases] == ["load", "eval", "train_step_3"]
    assert abs((evaluation.ram_peak - load.ram_peak) - 96 * MiB) < 2 * MiB


def test_a_lead_in_is_kept_where_it_passed_the_phase_after_it_and_is_the_whole_run_without_phases():
    for spiked, names in ((True, ["run", "load"]), (False, ["load"])):
        meter = Meter(use_cuda=False)
        meter.lead_in()
        if spiked:
            _spike(64)
        with meter.phase("load"):
            pass
        meter.stop()
        meter.close()
        assert [p.name for p in meter.phases] == names
    bare = Meter(use_cuda=False)
    bare.lead_in()
    _spike(32)
    bare.stop()
    bare.whole_run()
    bare.close()
    assert [p.name for p in bare.phases] == ["run"] and bare.phases[0].ram_peak >= 32 * MiB


def test_blocks_back_to_back_add_no_phase_between_them(meter):
    for step in (1, 2, 3):
        with meter.phase(f"train_step_{step}", step=step):
            pass
    meter.stop()
    assert [p.name for p in meter.phases] == ["train_step_1", "train_step_2", "train_step_3"]


def test_the_split_of_rss_is_the_phases_end_not_its_peak(meter, tmp_path):
    """docs/measuring.md: RssAnon / RssFile are what the phase left resident; a file mapped and read in the phase is
    in its peak, and not in its rss_file once unmapped."""
    path = tmp_path / "weights.bin"
    path.write_bytes(b"\x01" * (64 * MiB))
    with meter.phase("idle"):
        pass
    with meter.phase("mapped"), open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        assert sum(mapped[page] for page in range(0, 64 * MiB, mmap.PAGESIZE)) == 64 * MiB // mmap.PAGESIZE
        mapped.close()
    idle, read = meter.phases
    assert read.ram_peak - idle.ram_peak > 60 * MiB
    assert read.rss_file - idle.rss_file < 4 * MiB


@pytest.mark.parametrize("bad", [5, None, b"load", ""], ids=repr)
def test_a_phase_name_that_is_no_text_is_refused_by_the_meter_as_by_a_scripts_mark(meter, bad):
    """ctx.meter.phase(5) recorded a phase named 5 (None: None) in the report's phase table, where a script's
    gpu_budget.phase(5) was refused; both now say the same."""
    from gpu_budget import script

    with pytest.raises(ValueError, match=f"^phase name {bad!r}: expected a non-empty string$"):
        meter.start(bad)
    with pytest.raises(ValueError, match=f"^phase name {bad!r}: expected a non-empty string$"):
        script.phase(bad)
    assert meter.phases == []
