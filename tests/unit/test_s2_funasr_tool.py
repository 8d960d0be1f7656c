"""S2's FunASR tool case (memtests/s2_paraformer/tool.py): what its prepare writes is what FunASR's own loaders read.

Read back with FunASR's classes, as train_ds.py reads them: the model dir
through AutoModel (config.yaml, tokens.json and the runner's weights), the jsonl
through AudioDataset over IndexDSJsonl (a clip's features and token ids) and
finetune.sh's dynamic batch sampler. Small params, so it runs in seconds.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("funasr", reason="S2 needs FunASR: pip install -e '.[s2]'")
pytest.importorskip("hydra", reason="FunASR's training entry point needs hydra-core")

MEMTESTS = Path(__file__).resolve().parents[2] / "memtests"
SMALL = {"vocab": 40, "seed": 0, "tokens_per_second": 4, "short_seconds": [1, 3], "long_seconds": [19, 23],
         "hidden": 16, "heads": 2, "ffn": 32, "encoder_blocks": 1, "decoder_blocks": 1, "clips": 6, "long_clips": 3}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    import sys

    sys.path.insert(0, str(MEMTESTS))
    try:
        from s2_paraformer import tool
    finally:
        sys.path.remove(str(MEMTESTS))
    assets = tmp_path_factory.mktemp("s2-funasr")
    tool.prepare(SimpleNamespace(params=dict(SMALL), assets=assets, scale="tiny", fixes=(), device="cpu"))
    return tool, assets


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_model_dir_builds_the_runners_paraformer_with_its_weights(prepared):
    import torch
    from funasr import AutoModel

    _, assets = prepared
    built = AutoModel(model=str(assets), device="cpu", disable_update=True)
    saved = torch.load(assets / "model.pt", map_location="cpu", weights_only=True)
    state = built.model.state_dict()
    assert type(built.model).__name__ == "Paraformer" and set(state) == set(saved)
    assert all(torch.equal(state[k], saved[k]) for k in saved)  # init_param: the runner's random-init weights
    assert built.kwargs["tokenizer_conf"]["token_list"] == str(assets / "tokens.json")
    assert built.kwargs["vocab_size"] == SMALL["vocab"] and built.kwargs["input_size"] == 560  # 80 mel x LFR 7


def test_the_jsonl_holds_the_runners_clips_and_token_ids(prepared):
    from funasr.datasets.audio_datasets.datasets import AudioDataset
    from funasr.frontends.wav_frontend import WavFrontend
    from funasr.tokenizer.char_tokenizer import CharTokenizer

    tool, assets = prepared
    config = tool.config_yaml(SMALL)
    clips = json.loads((assets / "data.json").read_text())["clips"]
    # scp2jsonl writes its lines in the order its threads finish: read back by key
    train, val = (sorted(_lines(assets / f"{name}.jsonl"), key=lambda r: r["key"]) for name in ("train", "val"))
    assert [r["key"] for r in train] == [Path(c["wav"]).stem for c in clips]
    assert [r["key"] for r in val] == [Path(c["wav"]).stem for c in clips[: tool.VAL_CLIPS]]
    assert [r["source_len"] for r in train] == [int(c["seconds"] * 100) for c in clips]  # 10 ms frames
    assert [r["target_len"] for r in train] == [len(c["tokens"]) for c in clips]

    tokenizer = CharTokenizer(**{**config["tokenizer_conf"], "token_list": str(assets / "tokens.json")})
    data = AudioDataset(str(assets / "train.jsonl"), frontend=WavFrontend(**config["frontend_conf"]),
                        tokenizer=tokenizer, **{**config["dataset_conf"], "max_token_length": 10**6, "max_source_length": 10**6})
    assert len(data) == len(clips)
    by_key = {Path(c["wav"]).stem: c for c in clips}
    for i in (0, len(clips) - 1):
        item, clip = data[i], by_key[Path(data.index_ds[i]["source"]).stem]
        assert item["text"].tolist() == clip["tokens"]  # the runner's token ids, through FunASR's tokenizer
        assert item["speech"].shape[1] == 560 and int(item["speech_lengths"]) == item["speech"].shape[0]


def test_finetune_sh_batches_drop_the_longest_clips_and_fill_a_frame_budget(prepared):
    """FunASR's own filter and dynamic sampler, as finetune.sh sets them: a clip whose frames and tokens pass
    max_token_length (2048) is left out; each batch's longest clip x its clips stays within batch_size frames."""
    from funasr.datasets.audio_datasets.datasets import AudioDataset
    from funasr.datasets.audio_datasets.samplers import CustomDistributedBatchSampler_fn

    tool, assets = prepared
    conf = {**tool.config_yaml(SMALL)["dataset_conf"], "batch_sampler": "BatchSampler", "batch_type": "token",
            "batch_size": 600, "sort_size": 1024, "num_workers": 0}
    data = AudioDataset(str(assets / "train.jsonl"), **conf)
    rows = _lines(assets / "train.jsonl")
    kept = [r for r in rows if r["source_len"] + r["target_len"] <= 2048]
    assert 0 < len(kept) < len(rows) and len(data) == len(kept)  # the long clips over ~19.7 s are dropped
    sampler = CustomDistributedBatchSampler_fn(data, **conf)["batch_sampler"]
    made = list(sampler)
    lengths = [[data.get_source_len(i) for i in batch] for batch in made]
    assert sorted(i for batch in made for i in batch) == list(range(len(kept)))
    assert all(max(b) * len(b) <= conf["batch_size"] for b in lengths if len(b) > 1)
    assert [max(b) for b in lengths] == sorted(max(b) for b in lengths)  # one sorted buffer: batches grow longer


def test_the_command_is_finetune_sh_s_entry_point_with_its_overrides(prepared):
    tool, _ = prepared
    line = tool.in_folder(tool.TRAIN_DS, Path("/tmp")).command_line("tiny", "/a")
    argv = line["argv"]
    assert argv[1:3] == ["-m", "funasr.bin.train_ds"] and line["cwd"] == "/tmp"
    for override in ("++model=/a", "++train_data_set_list=/a/train.jsonl", "++dataset_conf.batch_type=token",
                     "++dataset_conf.batch_size=6000", "++dataset_conf.sort_size=1024",
                     "++dataset_conf.batch_sampler=BatchSampler", "++dataset_conf.num_workers=4", "++device=cuda"):
        assert override in argv, argv
    assert line["env"]["PYTHONPATH"] == str(tool.MARKS) and (tool.MARKS / "sitecustomize.py").is_file()


def test_the_marks_wrap_funasr_s_trainer_and_record_each_training_batch(prepared, tmp_path, monkeypatch):
    """The sitecustomize on the command's PYTHONPATH, applied to (a subclass of) FunASR's own Trainer and run on the
    CPU outside the gate (where gpu_budget's marks return at once): a training step's batch shape is written, a
    validation step's is not, and the trainer's own forward_step still runs."""
    import importlib.util

    import torch
    from funasr import AutoModel
    from funasr.datasets.audio_datasets.datasets import AudioDataset
    from funasr.train_utils.trainer_ds import Trainer

    tool, assets = prepared
    monkeypatch.delenv("GPU_BUDGET_SOCKET", raising=False)
    spec = importlib.util.spec_from_file_location("funasr_marks", tool.MARKS / "sitecustomize.py")
    marks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(marks)
    assert marks.MODULE == Trainer.__module__

    class Marked(Trainer):
        pass

    marks.wrap(Marked)
    assert Marked.forward_step.__wrapped__ is Trainer.forward_step
    built = AutoModel(model=str(assets), device="cpu", disable_update=True)
    config = tool.config_yaml(SMALL)
    data = AudioDataset(str(assets / "train.jsonl"), frontend=built.kwargs["frontend"],
                        tokenizer=built.kwargs["tokenizer"], **config["dataset_conf"])
    batch = data.collator([data[0], data[1]])
    monkeypatch.chdir(tmp_path)
    trainer = Marked(device="cpu", output_dir=str(tmp_path / "exp"))
    model = built.model.train()
    out = {}
    trainer.forward_step(model, batch, loss_dict=out)
    assert torch.isfinite(out["loss"])
    with torch.no_grad():
        trainer.forward_step(model.eval(), batch, loss_dict={})
    steps = _lines(tmp_path / marks.STEPS_FILE)
    assert len(steps) == 1 and steps[0]["clips"] == 2
    assert steps[0]["frames"] == batch["speech"].shape[1] and steps[0]["tokens"] == batch["text"].shape[1]
