"""Fine-tune a wav2vec2 audio classifier on a folder of labelled clips: S1 as its author ran it, a plain script.

    python train.py --model_dir ASSETS/model --clips_dir ASSETS/clips --max_steps 4

The write-up's code (seed 000) as a standalone Hugging Face Trainer script:
the clips and their labels (labels.json: file, label) go through a `datasets`
pipeline (a batched .map of the feature extractor), the checkpoint is loaded
with from_pretrained and a new head (ignore_mismatched_sizes, as reported),
then TrainingArguments with the reported settings, Trainer(...).train() with
an evaluation each epoch. The defaults are the write-up's; `--max_seconds`
truncates the clips (the write-up's first fix), `--max_steps` stops early.
`--keep_hidden_mib` plants a leak for the gate's growth benchmark
(benchmarks/growth_catalogue.py): each training step keeps that many MiB of its
hidden states; off (0) by default, so the run the memtests gate is unchanged.

It knows nothing of any memory gate and imports nothing but transformers,
datasets, soundfile and torch. S1's runner (runner.py, the measured function
the memtests call) trains the same model on the same data the same way; this
script is that run as a user would have it, so the gate can measure it as a
command (memtests/test_s1_script.py compares the two).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import datasets
import soundfile as sf
import transformers
from transformers import (
    PrinterCallback,
    Trainer,
    TrainingArguments,
    Wav2Vec2FeatureExtractor,
    Wav2Vec2ForSequenceClassification,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_dir", required=True, help="a saved Wav2Vec2ForSequenceClassification and its feature extractor")
    p.add_argument("--clips_dir", required=True, help="WAV clips and labels.json ([{file, label}, ...])")
    p.add_argument("--output_dir", default=None, help="the Trainer's output folder (default: a temporary one)")
    p.add_argument("--n_eval", type=int, default=4, help="clips held out for evaluation")
    p.add_argument("--batch_size", type=int, default=1)
    p.add_argument("--gradient_accumulation_steps", type=int, default=4)
    p.add_argument("--num_train_epochs", type=float, default=3)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--weight_decay", type=float, default=0.01)
    p.add_argument("--fp16", type=_bool, default=True, help="true/false (the write-up: true)")
    p.add_argument("--max_steps", type=int, default=-1, help="stop after this many optimizer steps (-1: all epochs)")
    p.add_argument("--max_seconds", type=float, default=None, help="truncate each clip to this many seconds")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--use_cpu", action="store_true", help="train on the CPU even where a GPU is present")
    p.add_argument("--keep_hidden_mib", type=float, default=0.0,
                   help="a planted leak: keep this many MiB of each training step's hidden states (0: none)")
    return p.parse_args(argv)


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes"):
        return True
    if text.lower() in ("0", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def load_data(clips_dir: Path, fe: Wav2Vec2FeatureExtractor, label2id: dict, rows: list[dict], args):
    """The clips as a datasets pipeline: split, then a batched .map of the feature extractor (materialised)."""
    sr = fe.sampling_rate
    cap = {"max_length": int(sr * args.max_seconds), "truncation": True} if args.max_seconds else {}

    def preprocess(batch: dict) -> dict:
        audio = [sf.read(clips_dir / f, dtype="float32")[0] for f in batch["file"]]
        return {"input_values": fe(audio, sampling_rate=sr, **cap)["input_values"], "label": batch["label"]}

    ds = datasets.Dataset.from_dict({"file": [r["file"] for r in rows], "label": [label2id[r["label"]] for r in rows]})
    split = ds.train_test_split(test_size=args.n_eval, seed=args.seed, shuffle=True)
    train = split["train"].map(preprocess, batched=True, remove_columns=["file"])
    val = split["test"].map(preprocess, batched=True, remove_columns=["file"])
    return train, val


def keep_hidden_states(model: Wav2Vec2ForSequenceClassification, mib: float) -> list:
    """A planted leak: each training forward keeps `mib` MiB (float32, on the model's device) of its hidden states.

    The hidden states are repeated to the planted size, so every step keeps the
    same bytes whatever the clip's length; evaluation forwards keep nothing.
    """
    kept: list = []
    count = int(mib * 2**20) // 4

    def hook(module, inputs, output) -> None:
        if module.training:
            flat = output.last_hidden_state.detach().flatten()
            kept.append(flat.repeat(-(-count // flat.numel()))[:count].clone())

    model.wav2vec2.register_forward_hook(hook)
    return kept


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    datasets.disable_progress_bars()
    model_dir, clips_dir = Path(args.model_dir), Path(args.clips_dir)

    rows = json.loads((clips_dir / "labels.json").read_text())
    label2id = {name: i for i, name in enumerate(sorted({r["label"] for r in rows}))}
    model = Wav2Vec2ForSequenceClassification.from_pretrained(
        model_dir, num_labels=len(label2id), label2id=label2id, id2label={i: n for n, i in label2id.items()},
        ignore_mismatched_sizes=True)  # a new head, as reported
    fe = Wav2Vec2FeatureExtractor.from_pretrained(model_dir)
    kept = keep_hidden_states(model, args.keep_hidden_mib) if args.keep_hidden_mib > 0 else []

    train_ds, val_ds = load_data(clips_dir, fe, label2id, rows, args)

    with tempfile.TemporaryDirectory(prefix="s1-train-") as tmp:
        training_args = TrainingArguments(
            output_dir=args.output_dir or tmp,
            eval_strategy="epoch",
            learning_rate=args.learning_rate,
            per_device_train_batch_size=args.batch_size,
            per_device_eval_batch_size=args.batch_size,
            gradient_accumulation_steps=args.gradient_accumulation_steps,
            num_train_epochs=args.num_train_epochs,
            weight_decay=args.weight_decay,
            fp16=args.fp16,
            max_steps=args.max_steps,
            seed=args.seed,
            save_strategy="no",
            logging_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=args.use_cpu,
        )
        trainer = Trainer(model=model, args=training_args, train_dataset=train_ds, eval_dataset=val_ds,
                          processing_class=fe)
        trainer.remove_callback(PrinterCallback)  # no per-log prints (logging is off anyway)
        trainer.train()

    evals = [round(h["eval_loss"], 4) for h in trainer.state.log_history if "eval_loss" in h]
    print(json.dumps({"optimizer_steps": trainer.state.global_step, "eval_loss": evals,
                      "n_train": len(train_ds), "n_eval": len(val_ds),
                      **({"kept_hidden_bytes": sum(t.numel() * t.element_size() for t in kept)} if kept else {})}))


if __name__ == "__main__":
    main()
