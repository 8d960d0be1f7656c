"""S2 as its user ran it: FunASR's own training entry point (funasr/bin/train_ds.py, what finetune.sh launches).

FunASR's finetune.sh (examples/industrial_data_pretraining/paraformer) turns a
wav.scp and a text.txt into jsonl with FunASR's scp2jsonl, then launches
`funasr/bin/train_ds.py` with torchrun and these overrides: the model dir,
train/valid jsonl, AudioDataset over IndexDSJsonl, the "BatchSampler" batch
sampler with batch_type "token", batch_size 6000 (padded 10 ms frames per
batch) and sort_size 1024 (FunASR's dynamic, length-sorted buffer batches),
4 DataLoader workers, lr 0.0002. The command here is that entry point with
those overrides, one process (finetune.sh's torchrun over one GPU runs the
same in a child of the launcher), at tiny scale: one epoch, no checkpoint
before its end.

`prepare` builds what a user's downloaded model dir holds, offline, from the
S2 runner's own prepare (the same random-init weights and clips, at the same
params): model.pt, a config.yaml in the layout of FunASR's Paraformer
template (the runner's model config, FunASR's frontend, tokenizer, optimiser
and dataset sections), tokens.json (a CharTokenizer list whose ids are the
runner's token ids), then wav.scp and text.txt, and train.jsonl / val.jsonl
made from them by FunASR's own scp2jsonl function.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from gpu_budget import Scenario

from .model import funasr, model_config
from .runner import prepare as prepare_runner
from .scenarios import S2

HERE = Path(__file__).resolve().parent
VAL_CLIPS = 4  # the first clips of the plan (short ones) also make the validation set: validation stays brief
MODEL_KEYS = ("vocab", "encoder_blocks", "decoder_blocks", "ffn", "heads", "hidden")
# the model_config keys that are the model's own settings (config.yaml's model_conf)
MODEL_CONF = ("ctc_weight", "lsm_weight", "length_normalized_loss", "predictor_weight", "predictor_bias",
              "sampling_ratio")


OUT_OF_VOCABULARY = "\u9fa5"  # a CJK character past those token_list takes: FunASR's CharTokenizer reads it as <unk>


def token_list(vocab: int) -> list[str]:
    """A Paraformer vocabulary's layout: <blank>, <s>, </s>, then characters, <unk> last; `vocab` entries."""
    assert 0x4E00 + vocab - 4 <= ord(OUT_OF_VOCABULARY), vocab
    return ["<blank>", "<s>", "</s>", *(chr(0x4E00 + i) for i in range(vocab - 4)), "<unk>"]


def transcript(ids: list[int], tokens: list[str]) -> str:
    """The text whose CharTokenizer ids are `ids`: their characters, space-separated as finetune.sh's text.txt; the
    last id, <unk>, as a character outside the vocabulary (the tokenizer splits text into characters)."""
    return " ".join(OUT_OF_VOCABULARY if t == len(tokens) - 1 else tokens[t] for t in ids)


def config_yaml(p: dict) -> dict:
    """config.yaml of the model dir: FunASR's Paraformer template's sections, the sizes the runner's."""
    conf = model_config(p)
    model_conf = {k: conf.pop(k) for k in MODEL_CONF}
    conf.pop("input_size"), conf.pop("vocab_size")  # FunASR sets them from the frontend and the token list
    return {
        "model": "Paraformer", "model_conf": model_conf, **conf,
        "frontend": "WavFrontend",
        "frontend_conf": {"fs": 16000, "window": "hamming", "n_mels": 80, "frame_length": 25, "frame_shift": 10,
                          "lfr_m": 7, "lfr_n": 6},
        "train_conf": {"accum_grad": 1, "grad_clip": 5, "max_epoch": 150, "keep_nbest_models": 10,
                       "avg_nbest_model": 10, "log_interval": 50},
        "optim": "adam", "optim_conf": {"lr": 0.0005},
        "scheduler": "warmuplr", "scheduler_conf": {"warmup_steps": 30000},
        "dataset": "AudioDataset",
        "dataset_conf": {"index_ds": "IndexDSJsonl", "batch_sampler": "BatchSampler", "batch_type": "example",
                         "batch_size": 1, "max_token_length": 2048, "buffer_size": 500, "shuffle": True,
                         "num_workers": 0},
        "tokenizer": "CharTokenizer", "tokenizer_conf": {"unk_symbol": "<unk>", "split_with_space": True},
        "ctc_conf": {"dropout_rate": 0.0, "ctc_type": "builtin", "reduce": True, "ignore_nan_grad": True},
        "normalize": None,
    }


def prepare(ctx) -> None:
    """The runner's weights and clips, then the model dir's config and tokens and the data lists FunASR reads."""
    funasr()  # FunASR missing: the case skips with how to install it
    prepare_runner(ctx)  # model.pt (the Paraformer's state dict), clip_NNN.wav, data.json
    model_dir_and_lists(ctx.assets, ctx.params, json.loads((ctx.assets / "data.json").read_text())["clips"])


def lasting(assets: Path) -> Path:
    """The folder `assets` becomes: the gate prepares into a sibling NAME.tmp-XXXX and renames it to NAME once
    prepare returns (forkserver.prepare_assets), so a path written into a file must name NAME."""
    name, tmp, _ = assets.name.partition(".tmp-")
    return assets.with_name(name) if tmp else assets


def model_dir_and_lists(assets: Path, p: dict, clips: list[dict]) -> None:
    """config.yaml and tokens.json, then per split a wav.scp and a text.txt and the jsonl FunASR's scp2jsonl makes
    of them; the jsonl's wav paths name the folder `assets` is renamed to (lasting), where train_ds.py reads them."""
    import yaml
    from funasr.datasets.audio_datasets.scp2jsonl import gen_jsonl_from_wav_text_list

    (assets / "config.yaml").write_text(yaml.safe_dump(config_yaml(p), sort_keys=False))
    tokens = token_list(p["vocab"])
    (assets / "tokens.json").write_text(json.dumps(tokens, ensure_ascii=False))
    for name, chosen in (("train", clips), ("val", clips[:VAL_CLIPS])):
        scp, text, jsonl = assets / f"{name}_wav.scp", assets / f"{name}_text.txt", assets / f"{name}.jsonl"
        scp.write_text("".join(f"{Path(c['wav']).stem} {assets / c['wav']}\n" for c in chosen))
        text.write_text("".join(f"{Path(c['wav']).stem} {transcript(c['tokens'], tokens)}\n"
                                for c in chosen))
        gen_jsonl_from_wav_text_list([str(scp), str(text)], data_type_list=("source", "target"),
                                     jsonl_file_out=str(jsonl))  # reads each clip's length: the paths here
        rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
        jsonl.write_text("".join(json.dumps({**r, "source": str(lasting(assets) / Path(r["source"]).name)},
                                            ensure_ascii=False) + "\n" for r in rows))


# finetune.sh's overrides (its paths and epochs at tiny scale); train_ds.py takes hydra's ++key=value
OVERRIDES = {
    "model": "{assets}", "train_data_set_list": "{assets}/train.jsonl", "valid_data_set_list": "{assets}/val.jsonl",
    "dataset": "AudioDataset", "dataset_conf.index_ds": "IndexDSJsonl", "dataset_conf.data_split_num": "1",
    "dataset_conf.batch_sampler": "BatchSampler", "dataset_conf.batch_size": "{batch_frames}",
    "dataset_conf.sort_size": "{sort_size}", "dataset_conf.batch_type": "token",
    "dataset_conf.num_workers": "{num_workers}", "train_conf.max_epoch": "{max_epoch}",
    "train_conf.log_interval": "1", "train_conf.resume": "true", "train_conf.validate_interval": "2000",
    "train_conf.save_checkpoint_interval": "2000", "train_conf.keep_nbest_models": "20",
    "train_conf.avg_nbest_model": "10", "train_conf.use_deepspeed": "false", "optim_conf.lr": "0.0002",
    "output_dir": "{output_dir}", "device": "{device}",
}

MARKS = HERE / "funasr_marks"  # a sitecustomize that marks FunASR's trainer steps for the gate (its docstring)

# One process, as finetune.sh's torchrun over one GPU runs it; its working folder is the caller's (in_folder):
# train_ds.py writes its checkpoints to output_dir and hydra its outputs/ there, and the marks their batch shapes.
TRAIN_DS = Scenario(
    name="s2_funasr_train_ds",
    command=[sys.executable, "-m", "funasr.bin.train_ds", *(f"++{k}={v}" for k, v in OVERRIDES.items())],
    env={"PYTHONPATH": str(MARKS)},
    prepare="s2_paraformer.tool:prepare",
    params={**{k: S2.params[k] for k in ("vocab", "seed", "tokens_per_second", "short_seconds", "long_seconds",
                                         "batch_frames")},
            "sort_size": 1024, "num_workers": 4, "max_epoch": 1, "output_dir": "exp",
            "device": "cuda"},  # FunASR's default device, which finetune.sh leaves as it is
    scales={"tiny": dict(S2.scales["tiny"])},
    prepared_from=S2.prepared_from,
)


def in_folder(scenario: Scenario, folder: Path) -> Scenario:
    """`scenario` run in `folder` (a test's tmp_path): a fresh output_dir each run, so resume=true resumes nothing."""
    return replace(scenario, cwd=str(folder))


def funasr_sampler(ctx):
    """FunASR's own dataset and batch sampler over the prepared train.jsonl as finetune.sh configures them, in a
    child: (dataset conf, dataset, the jsonl's rows, the sources its index keeps, the batch sampler)."""
    import yaml
    from funasr.datasets.audio_datasets.datasets import AudioDataset
    from funasr.datasets.audio_datasets.samplers import CustomDistributedBatchSampler_fn

    p = ctx.params
    conf = {**yaml.safe_load((ctx.assets / "config.yaml").read_text())["dataset_conf"], "batch_sampler": "BatchSampler",
            "batch_type": "token", "batch_size": p["batch_frames"], "sort_size": p["sort_size"], "num_workers": 0}
    data = AudioDataset(str(ctx.assets / "train.jsonl"), **conf)
    rows = [json.loads(line) for line in (ctx.assets / "train.jsonl").read_text().splitlines()]
    kept = {item["source"] for item in data.index_ds.contents}
    return conf, data, rows, kept, CustomDistributedBatchSampler_fn(data, **conf)["batch_sampler"]


def funasr_batches(ctx) -> dict:
    """The batches FunASR's own dataset and sampler make of the prepared clips as finetune.sh configures them, no
    training, beside the batches the runner packs of the same clips (data.py): which clips each keeps, and the order."""
    from .data import clip_plan, frames, make_batches
    from .model import RATE

    p = ctx.params
    ctx.meter.start("plan")
    conf, data, rows, kept, sampler = funasr_sampler(ctx)
    made = list(sampler)
    seconds = clip_plan(p)
    runner = make_batches([frames(int(s * RATE)) for s in seconds], p, lambda fix: False)
    ctx.meter.stop()
    return {
        "clips": len(rows), "kept": len(kept), "max_token_length": conf["max_token_length"],
        "dropped_s": sorted(r["source_len"] / 100 for r in rows if r["source"] not in kept),
        "funasr": [{"clips": len(b), "longest_s": max(data.get_source_len(i) for i in b) / 100} for b in made],
        "runner": [{"clips": len(b), "longest_s": max(seconds[i] for i in b)} for b in runner],
    }


# FunASR's batch plan of the same clips, in a child (FunASR is never imported in the pytest process)
BATCHES = Scenario(name="s2_funasr_batches", run="s2_paraformer.tool:funasr_batches", prepare=TRAIN_DS.prepare,
                   params=TRAIN_DS.params, scales=TRAIN_DS.scales, prepared_from=TRAIN_DS.prepared_from)
