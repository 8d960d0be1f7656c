"""S2's long run (memtests/s2_paraformer/long_run.py, climb.py; memtests/test_s2_funasr_long_run.py): what a host
without CUDA can check of a case that trains on CUDA only.

- The jsonl names each clip where train_ds.py reads it: the gate prepares into
  NAME.tmp-XXXX and renames it to NAME, so paths written during prepare must
  name NAME (tool.py's prepare wrote the temporary folder's until this test).
- climb.py's reading of a per-step series: its windows, its cycles, its verdict.
- The CUDA probe's own code, from its measurements to its note, run against a
  stand-in of the gate's fixture whose measurements are built by the gate's own
  summary (per-step series, growth) from phase records.
"""

import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("funasr", reason="S2 needs FunASR: pip install -e '.[s2]'")
pytest.importorskip("hydra", reason="FunASR's training entry point needs hydra-core")

MEMTESTS = Path(__file__).resolve().parents[2] / "memtests"
MiB = 2**20
SMALL = {"vocab": 40, "seed": 0, "tokens_per_second": 4, "short_seconds": [2.45, 4.28], "long_seconds": [15.5, 19.5],
         "hidden": 16, "heads": 2, "ffn": 32, "encoder_blocks": 1, "decoder_blocks": 1, "clips": 6, "long_clips": 2}


@pytest.fixture(scope="module")
def s2():
    sys.path.insert(0, str(MEMTESTS))
    try:
        from s2_paraformer import climb, long_run, tool

        spec = importlib.util.spec_from_file_location("s2_long_run_memtest", MEMTESTS / "test_s2_funasr_long_run.py")
        memtest = importlib.util.module_from_spec(spec)  # by path: this module has its name
        spec.loader.exec_module(memtest)
    finally:
        sys.path.remove(str(MEMTESTS))
    return SimpleNamespace(climb=climb, long_run=long_run, tool=tool, memtest=memtest)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("which", ["tool", "long_run"])
def test_the_jsonl_names_the_folder_the_gate_renames_the_prepared_one_to(s2, tmp_path, which):
    from funasr.datasets.audio_datasets.datasets import AudioDataset
    from funasr.frontends.wav_frontend import WavFrontend

    tmp, final = tmp_path / "assets-tiny-0123.tmp-x1y2", tmp_path / "assets-tiny-0123"
    tmp.mkdir()
    assert s2.tool.lasting(tmp) == final and s2.tool.lasting(final) == final
    getattr(s2, which).prepare(SimpleNamespace(params=dict(SMALL), assets=tmp, scale="tiny", fixes=(), device="cpu"))
    tmp.rename(final)  # what forkserver.prepare_assets does once prepare returns
    rows = _lines(final / "train.jsonl") + _lines(final / "val.jsonl")
    assert len(rows) == SMALL["clips"] + s2.tool.VAL_CLIPS
    assert all(Path(r["source"]).parent == final and Path(r["source"]).is_file() for r in rows)
    config = s2.tool.config_yaml(SMALL)
    data = AudioDataset(str(final / "train.jsonl"), frontend=WavFrontend(**config["frontend_conf"]),
                        **config["dataset_conf"])
    assert data[0]["speech"].shape[1] == 560  # a DataLoader worker of train_ds.py reads the clip from there


def test_the_reading_compares_a_runs_last_length_cycle_with_its_first(s2):
    longest = [3, 4, 18, 19, 3, 4, 18, 19, 3, 4, 18, 19]  # three sorted buffers: short batches, then long
    allocated = [10 * MiB if s < 15 else 40 * MiB for s in longest]
    flat = s2.climb.read(allocated, [a + 8 * MiB for a in allocated], longest)
    assert [(c.first, c.last) for c in flat.cycles] == [(1, 4), (5, 8), (9, 12)]
    assert flat.early == (3, 4) and flat.late == (11, 12)  # a tenth of 12 steps, rounded up: 2, after 2 warm-up
    assert flat.reserved_late == 48 * MiB and not flat.climbs and flat.kept == 0
    assert "does not climb" in flat.describe()
    kept = [r + (k // 4) * 3 * MiB for k, r in enumerate(a + 8 * MiB for a in allocated)]  # 3 MiB more each cycle
    climbing = s2.climb.read(allocated, kept, longest)
    assert climbing.climbs and climbing.kept == 6 * MiB and "6.0 MiB kept" in climbing.describe()
    grown = s2.climb.read([a + 6 * MiB * (k // 4) for k, a in enumerate(allocated)], kept, longest)
    assert not grown.climbs  # allocated rose as much: the batches needed it
    with pytest.raises(ValueError, match="one length"):
        s2.climb.read(allocated, allocated[:-1], longest)


class StandIn:
    """The gate's fixture as the CUDA probe uses it: peak() of the plan (FunASR's own, measured on this host by the
    CPU probe: here a plan of that shape) and of the two runs (measurements the gate's summary makes of phase
    records, after the marks' steps file is written where the run's cwd is), and note()."""

    device = "cuda"

    def __init__(self, plan: list[dict], extra: dict[str, int]):
        self.plan, self.extra, self.notes = plan, extra, []

    def peak(self, scenario):
        from gpu_budget.measure.summary import summarize
        from gpu_budget.model.figures import Peaks, PhaseRecord
        from gpu_budget.model.result import Measurement

        if scenario.run is not None:  # the plan
            return Measurement("ok", Peaks(),
                               info={"epochs": [self.plan[:len(self.plan) // 2], self.plan[len(self.plan) // 2:]],
                                     "kept": 3072, "long_clips": 259})
        folder, extra = Path(scenario.cwd), self.extra[scenario.env.get("PYTORCH_CUDA_ALLOC_CONF", "default")]
        (folder / "funasr_steps.jsonl").write_text("".join(
            json.dumps({"step": k, "clips": b["clips"], "frames": round(b["longest_s"] * 100 / 6), "tokens": 80}) + "\n"
            for k, b in enumerate(self.plan, start=1)))
        phases = [PhaseRecord("train_setup", None, 2.0, vram_allocated=MiB, vram_reserved=2 * MiB)] + [
            PhaseRecord(f"train_step_{k}", k, 0.1, vram_allocated=round(b["longest_s"] * MiB),
                        vram_reserved=round(b["longest_s"] * MiB) + 4 * MiB + extra * k)
            for k, b in enumerate(self.plan, start=1)]
        s = summarize(phases, cuda=True)
        return Measurement("ok", s.peaks, {p.name: p for p in phases}, s.step_peaks, s.steps, s.growth,
                           info={"exit_code": 0, "ignored_marks": 0}, cuda=True, wall_seconds=60.0)

    def note(self, scenario, text, **data):
        self.notes.append((scenario.name, text, data))


def test_the_cuda_probe_reads_each_run_and_notes_it(s2, tmp_path):
    plan = [{"clips": c, "longest_s": s, "long": int(s > 15)}
            for s, c in [(2.5, 24), (3.0, 20), (4.0, 15), (16.0, 3), (19.0, 3)] * 4]
    fixture = StandIn(plan, {"default": 128 * 1024, "expandable_segments:True": 0})  # reserved kept a step
    s2.memtest.test_reserved_over_a_long_run(fixture, tmp_path)
    [(name, text, data)] = fixture.notes
    assert name == "s2_funasr_long_run" and "20 steps, 2 epochs of 3072 clips, 259 over 15 s" in text
    assert data["default"]["climbs"] and not data["expandable_segments"]["climbs"]
    assert data["default"]["kept_beyond_allocated"] == 15 * 128 * 1024  # the last cycle's top step against the first's
    assert all(isinstance(g, float) for run in ("default", "expandable_segments")
               for g in data[run]["growth_per_step"].values())  # the gate's own reading, for each
    assert "default: reserved over the last tenth (steps 19-20)" in text and " | expandable_segments: " in text


def test_the_long_run_is_finetune_sh_s_command_for_two_epochs_once_with_expandable_segments(s2):
    lr, tool = s2.long_run, s2.tool
    default, expandable = (s.command_line("tiny", "/a") for s in (lr.LONG_RUN, lr.EXPANDABLE))
    train_ds = tool.TRAIN_DS.command_line("tiny", "/a")
    assert default["argv"] == expandable["argv"]
    assert set(default["argv"]) ^ set(train_ds["argv"]) == {"++train_conf.max_epoch=2", "++train_conf.max_epoch=1"}
    assert "PYTORCH_CUDA_ALLOC_CONF" not in default["env"]  # the command's environment, not the pytest process's
    assert expandable["env"] == {**default["env"], "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    assert lr.LONG_RUN.needs_cuda("tiny") and lr.EXPANDABLE.needs_cuda("tiny") and not lr.PLAN.needs_cuda("tiny")
    assert {s.asset_key("tiny") for s in (lr.LONG_RUN, lr.EXPANDABLE, lr.PLAN)} == {lr.LONG_RUN.asset_key("tiny")}
