"""S1's runner: the wav2vec2 bird-sound classifier fine-tune whose *host RAM* hit Colab's 12.7 GB.

prepare() stands in for the hub checkpoint: a Wav2Vec2ForSequenceClassification
built from its config with random weights and a 50-label head (like
dima806/bird_sounds_classification), saved with save_pretrained, plus 20
synthetic 16 kHz WAV clips. run() follows the write-up's path: from_pretrained
with a mismatched head, a `datasets` .map pipeline, the real Trainer with the
reported TrainingArguments. Phases: load, data, train_setup, train_step_<k>
(one per optimizer step) and eval_epoch_<n>.

It honours the fixes its Scenarios list in `supports` (scenarios.py) through
ctx.has; the model-side ones are applied in model.py, shared with the estimator.

DataLoader workers (params dataloader_workers, persistent_workers,
dataloader_start): with in_memory the mapped dataset is held as plain Python
objects (`Dataset.to_list()`, a list of dicts of float lists, as a hand-written
torch Dataset holds it). A forked worker that reads an item writes the
refcounts of its floats, so the pages holding them are copied into that
worker; a spawned worker gets the whole list pickled. shared_memory keeps the
clips in one shared float32 tensor instead (workers read views, copy nothing);
lazy_data reads each clip from disk in whichever process asks for it.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import logging
import multiprocessing
import tempfile
import warnings

import numpy as np
import torch
import transformers

for _optional in ("datasets", "soundfile"):  # preloaded with this module where they import (the children's floor);
    with contextlib.suppress(Exception):     # elsewhere the functions' optional_import skips the case, saying why
        importlib.import_module(_optional)

# Only imports that make no CUDA call: this module is in the forkserver's preload, and a child forked from a
# process that initialised CUDA cannot use CUDA. peft imports bitsandbytes, which asks torch.cuda at import, and
# transformers' Trainer and TrainingArguments import peft: run() imports them, in the measured child. datasets
# and soundfile (the forkserver preloads datasets itself) come through optional_import: a host that lacks them,
# or cannot import them, skips the S1 cases with the reason.
from hf_compat import checkpointing_arg
from transformers import Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

from gpu_budget import meter_callback
from gpu_budget.requires import optional_import

from .model import QUANT_SKIP, adapt, clip_lengths, config, input_seconds, quantized_bits

INSTALL = "pip install -c constraints/cpu.txt datasets soundfile (the scenarios extra)"


# -- prepare ---------------------------------------------------------------------------------------

def prepare(ctx) -> None:
    """Save the stand-in checkpoint and feature extractor to assets/model, the clips to assets/clips."""
    sf = optional_import("soundfile", INSTALL)
    p = ctx.params
    transformers.logging.disable_progress_bar()
    torch.manual_seed(p.get("seed", 42))
    Wav2Vec2ForSequenceClassification(config(p, p["checkpoint_labels"])).save_pretrained(ctx.assets / "model",
                                                                                          safe_serialization=True)
    _feature_extractor(p).save_pretrained(ctx.assets / "model")

    clips = ctx.assets / "clips"
    clips.mkdir()
    sr, rows = p.get("file_rate") or p["sampling_rate"], []  # file_rate: clips recorded at another rate
    for i, seconds in enumerate(clip_lengths(p)):
        label = i % p["n_labels"]
        rng = np.random.default_rng(p.get("seed", 42) + i)
        t = np.arange(int(sr * seconds)) / sr
        chirp = 0.3 * np.sin(2 * np.pi * (500 + 250 * label) * t * (1 + 0.2 * np.sin(2 * np.pi * t)))
        audio = (chirp + 0.05 * rng.standard_normal(t.size)).astype(np.float32)
        sf.write(clips / f"clip_{i:02d}.wav", audio, sr, subtype="PCM_16")
        rows.append({"file": f"clip_{i:02d}.wav", "label": f"bird_{label}", "seconds": seconds})
    (clips / "labels.json").write_text(json.dumps(rows, indent=1))


def _feature_extractor(p: dict) -> Wav2Vec2FeatureExtractor:
    # wav2vec2-base's extractor: group-norm feature encoder, so no attention mask.
    return Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=p["sampling_rate"], padding_value=0.0,
                                    do_normalize=True, return_attention_mask=False)


# -- run -------------------------------------------------------------------------------------------

def run(ctx) -> dict:
    """The measured fine-tune; returns facts that explain the peaks."""
    from transformers import PrinterCallback, Trainer  # imports peft and bitsandbytes: here, in the child

    datasets = optional_import("datasets", INSTALL)  # an S1 case skips, with the reason, where it cannot import
    optional_import("soundfile", INSTALL)
    p, meter = ctx.params, ctx.meter
    transformers.logging.set_verbosity_error()  # a fresh child: no load reports or progress bars
    transformers.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*deprecated")  # peft reads the old name
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)  # "inputs will be cast to float16", every matmul
    quantization = _quantization_config(ctx)  # imports bitsandbytes before the first phase

    meter.start("load")
    rows = json.loads((ctx.assets / "clips" / "labels.json").read_text())
    label2id = {name: i for i, name in enumerate(sorted({r["label"] for r in rows}))}
    model, fe, facts = _load(ctx, label2id, quantization)
    _tidy(ctx)

    meter.start("data")
    train_ds, eval_ds, data_facts = _data(ctx, fe, rows, label2id)
    _tidy(ctx)
    if p.get("dataloader_start"):  # the Trainer's DataLoader takes the default context: fork on Linux, spawn on macOS
        multiprocessing.set_start_method(p["dataloader_start"], force=True)

    meter.start("train_setup")  # Trainer init, optimizer creation, the first step's batches
    with tempfile.TemporaryDirectory(prefix="s1-trainer-") as out:
        trainer = Trainer(model=model, args=_training_args(ctx, out), train_dataset=train_ds,
                          eval_dataset=eval_ds, processing_class=fe, callbacks=[meter_callback(ctx.meter, train_end=None, after_each=lambda: _tidy(ctx))],
                          compute_metrics=_accuracy if p.get("compute_metrics") else None)
        trainer.remove_callback(PrinterCallback)
        trainer.train()

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    opt_state = [t for s in trainer.optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    return {
        **facts,
        **data_facts,
        "fixes": list(ctx.fixes),
        "total_params": sum(q.numel() for q in model.parameters()),
        "trainable_params": sum(q.numel() for q in model.parameters() if q.requires_grad),
        "param_bytes": sum(q.numel() * q.element_size() for q in model.parameters()),
        "optimizer_state_bytes": sum(t.numel() * t.element_size() for t in opt_state),
        "optimizer_steps": trainer.state.global_step,
        # what transformers' is_activation_checkpointing reads: a layer with the flag on
        "gradient_checkpointing_active": any(getattr(m, "gradient_checkpointing", False) for m in base.modules()),
        "fp16_requested": bool(p["fp16"]),
        "mixed_precision_active": trainer.accelerator.native_amp,  # False on CPU: fp16 does nothing
        "eval_loss": [round(h["eval_loss"], 4) for h in trainer.state.log_history if "eval_loss" in h],
        "eval_accuracy": [h["eval_accuracy"] for h in trainer.state.log_history if "eval_accuracy" in h],
        "dataloader_workers": trainer.args.dataloader_num_workers,
        "dataloader_start": multiprocessing.get_start_method(),
        "transformers": transformers.__version__,
        **_GC_CALLS,
    }


def _accuracy(prediction) -> dict:
    """A notebook's compute_metrics: the Trainer then gathers every evaluation logit and label on the host."""
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def _quantization_config(ctx):
    """BitsAndBytesConfig for load_in_8bit / load_in_4bit, or None; a clear error without bitsandbytes."""
    bits = quantized_bits(ctx.has)
    if bits is None:
        return None
    try:
        import bitsandbytes  # noqa: F401
    except ImportError:
        raise RuntimeError("the load_in_8bit/load_in_4bit fixes need bitsandbytes: "
                           "pip install bitsandbytes==0.50.2 (it runs on CPU too)") from None
    if not ctx.has("lora"):
        raise ValueError("load_in_8bit/load_in_4bit need the lora fix too: "
                         "Trainer refuses to fine-tune a purely quantized model")
    from transformers import BitsAndBytesConfig

    return BitsAndBytesConfig(load_in_8bit=bits == 8, load_in_4bit=bits == 4, llm_int8_skip_modules=QUANT_SKIP)


def _load(ctx, label2id: dict, quantization):
    """from_pretrained with a new head (ignore_mismatched_sizes), then the model-side fixes."""
    path = ctx.assets / "model"
    kwargs = {"num_labels": len(label2id), "label2id": label2id,
              "id2label": {i: n for n, i in label2id.items()}, "ignore_mismatched_sizes": True}
    if ctx.has("low_cpu_mem_usage"):
        kwargs["low_cpu_mem_usage"] = True  # transformers 5 drops it silently; the measurement shows it
    if quantization is not None:
        kwargs.update(quantization_config=quantization, device_map={"": 0 if ctx.device == "cuda" else "cpu"})
    model, loading = Wav2Vec2ForSequenceClassification.from_pretrained(path, output_loading_info=True, **kwargs)
    kept = _new_head(model, len(label2id))
    fe = Wav2Vec2FeatureExtractor.from_pretrained(path)
    facts = {
        "checkpoint_bytes": sum(f.stat().st_size for f in path.glob("*.safetensors")),
        "mismatched_keys": sorted(str(k[0]) if isinstance(k, tuple) else str(k) for k in loading["mismatched_keys"]),
        "low_cpu_mem_usage_passed": kwargs.get("low_cpu_mem_usage") is True,  # what from_pretrained was given
        "quantized_linears": sum("bitsandbytes" in type(m).__module__ for m in model.modules()),
        "head_kept_by_from_pretrained": kept,  # the checkpoint's label count, where _new_head replaced it; else None
    }
    model, adapted = adapt(model, ctx.has, quantized=quantization is not None)
    return model, fe, {**facts, **adapted}


def _new_head(model, num_labels: int) -> int | None:
    """The new head ignore_mismatched_sizes promises, where from_pretrained kept the checkpoint's instead.

    transformers 5.17 (the CUDA image's) does so under a quantization_config, on any device: the classifier
    says out_features=num_labels but holds the checkpoint's weight, so the loss reshapes the logits into
    more rows than there are labels and fails (seen on an H100 and an H200; reproduced on a CPU with 5.17;
    5.23, the CPU baselines' version, re-initialises it). The head is replaced by a fresh one of num_labels
    outputs, as a user's own workaround would be: the tiny head's few hundred parameters, nothing a peak can
    show. Returns the kept head's label count (a fact of the row), or None.
    """
    head = model.classifier
    rows = head.weight.shape[0]
    if rows == num_labels:
        return None
    model.classifier = torch.nn.Linear(head.in_features, num_labels, device=head.weight.device, dtype=head.weight.dtype)
    return rows


def _data(ctx, fe, rows: list[dict], label2id: dict):
    """A datasets pipeline: a batched .map that materialises features, or (lazy_data) an on-the-fly transform."""
    sf = optional_import("soundfile", INSTALL)
    Dataset = optional_import("datasets", INSTALL).Dataset
    p = ctx.params
    clips = ctx.assets / "clips"
    sr = fe.sampling_rate
    cap = {"max_length": int(sr * p["max_seconds"]), "truncation": True} if ctx.has("truncate") else {}
    longest = [0]  # the most samples one train or eval input holds

    def features(paths: list[str]) -> dict:
        # soundfile, not datasets.Audio: Audio decoding needs torchcodec + ffmpeg
        audio = [_at_rate(sf.read(clips / f, dtype="float32"), sr, p.get("resample", False)) for f in paths]
        longest[0] = max(longest[0], *(len(a) for a in audio))
        out = fe(audio, sampling_rate=sr, **cap)  # the extractor's own rate, whatever the file's, as a user passes it
        fed = max(len(x) for x in out["input_values"])  # what the model is fed: truncate's proof, read, not declared
        ctx.meter.info["input_samples_fed_max"] = max(ctx.meter.info.get("input_samples_fed_max", 0), fed)
        return out

    def preprocess(batch: dict) -> dict:
        return {"input_values": features(batch["file"])["input_values"], "label": batch["label"]}

    ds = Dataset.from_dict({"file": [r["file"] for r in rows], "label": [label2id[r["label"]] for r in rows]})
    split = ds.train_test_split(test_size=p["n_eval"], seed=p.get("seed", 42), shuffle=True)
    train, val = split["train"], split["test"]
    if ctx.has("lazy_data"):
        train, val = train.with_transform(preprocess), val.with_transform(preprocess)
        materialised = 0
    else:
        train = train.map(preprocess, batched=True, remove_columns=["file"])
        val = val.map(preprocess, batched=True, remove_columns=["file"])
        materialised = train.data.nbytes + val.data.nbytes
    cache_files = 0 if ctx.has("lazy_data") else len(train.cache_files)
    held = {}
    if p.get("in_memory") and not ctx.has("lazy_data"):
        train, val = _held_in_memory(ctx, train), _held_in_memory(ctx, val)
        held = {"dataset_held_as": type(train).__name__, "dataset_held_bytes": train.nbytes + val.nbytes}
    return train, val, {
        **held,
        "n_train": len(train), "n_eval": len(val),
        "clip_seconds": sorted(set(clip_lengths(p))),
        "train_input_seconds_max": input_seconds(p, ctx.has),
        "dataset_materialised_bytes": materialised,
        "dataset_cache_files": cache_files,
        "file_rate": p.get("file_rate") or sr,
        "resampled": bool(p.get("resample")) and (p.get("file_rate") or sr) != sr,
        "input_samples_max": longest[0],  # 0 under lazy_data: its transform reads in the steps
    }


def _at_rate(read: tuple, rate: int, resample: bool):
    """A clip as the extractor gets it: at its file's rate, or resampled to `rate` (librosa, soxr_hq), as the
    HF audio course does; without `resample` a clip recorded at 48 kHz reaches the extractor as 3x the samples."""
    audio, file_rate = read
    if not resample or file_rate == rate:
        return audio
    return optional_import("librosa", "pip install librosa").resample(audio, orig_sr=file_rate, target_sr=rate)


class PythonClips(torch.utils.data.Dataset):
    """The mapped clips as plain Python objects (Dataset.to_list()): a list of dicts of float lists."""

    def __init__(self, ds) -> None:
        self.rows = ds.to_list()
        # a float object (24 B) and its list slot (8 B) per sample
        self.nbytes = sum(32 * len(r["input_values"]) for r in self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> dict:
        return self.rows[i]


class SharedClips(torch.utils.data.Dataset):
    """The mapped clips in one float32 tensor in shared memory: workers read views of it, forked or spawned."""

    def __init__(self, ds) -> None:
        clips = [np.asarray(x, dtype=np.float32) for x in ds["input_values"]]
        self.flat = torch.from_numpy(np.concatenate(clips)).share_memory_()
        self.bounds = np.cumsum([0] + [len(c) for c in clips]).tolist()
        self.labels = list(ds["label"])
        self.nbytes = self.flat.numel() * 4

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict:
        return {"input_values": self.flat[self.bounds[i]:self.bounds[i + 1]].numpy(), "label": self.labels[i]}


def _held_in_memory(ctx, ds):
    return SharedClips(ds) if ctx.has("shared_memory") else PythonClips(ds)


def _training_args(ctx, out: str):
    """The write-up's TrainingArguments; report_to/saving/tqdm off so only training is measured."""
    from transformers import TrainingArguments

    p = ctx.params
    return TrainingArguments(
        output_dir=out,
        eval_strategy="epoch",
        learning_rate=p["learning_rate"],
        per_device_train_batch_size=p["batch_size"],
        per_device_eval_batch_size=p["batch_size"],
        gradient_accumulation_steps=p["gradient_accumulation_steps"],
        num_train_epochs=p["num_train_epochs"],
        weight_decay=p["weight_decay"],
        fp16=p["fp16"],  # as reported; accelerate applies it only on a GPU
        max_steps=p.get("max_steps") or -1,
        **{checkpointing_arg(TrainingArguments): ctx.has("gradient_checkpointing")},
        remove_unused_columns=not ctx.has("lazy_data"),  # the transform needs the "file" column
        seed=p.get("seed", 42),
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=ctx.device == "cpu",
        dataloader_num_workers=p.get("dataloader_workers", 0),
        dataloader_pin_memory=p.get("pin_memory", True),  # Trainer's default; a CUDA host-RAM probe turns it off
        dataloader_persistent_workers=bool(p.get("dataloader_workers")) and p.get("persistent_workers", False),
    )


_GC_CALLS = {"gc_collect_calls": 0, "gc_collected_objects": 0}  # what _tidy did in this child: the fix's proof it ran


def _tidy(ctx) -> None:
    """The write-up's fix 3: gc.collect() + empty_cache() between phases."""
    if ctx.has("gc_collect"):
        _GC_CALLS["gc_collect_calls"] += 1
        _GC_CALLS["gc_collected_objects"] += gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

