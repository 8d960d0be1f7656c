"""S3 as its user ran it: LLaMA-Factory's CLI, `llamafactory-cli train config.yaml`, in an environment of its own.

LLaMA-Factory pins its libraries below the project's lock, so the case declares
the release it runs (`Environment`), laid over the running environment. 0.9.3
is the newest that runs here: 0.9.4 and 0.9.5 import torchaudio, whose newest
release on the registry is a CUDA build (it loads libc10_cuda.so, which the
CPU torch lacks). 0.9.3 reads audio with librosa and trains with transformers
4.52; it pins numpy below 2, which the lock's pyarrow refuses at import, so the
environment takes a pyarrow before 26 as such a user's would.

`prepare` (run by the environment's interpreter, so the checkpoint is that
transformers' own) saves the runner's tiny Qwen2-Audio checkpoint, with what a
hub checkpoint holds beside it and the runner does not need: a processor (a
Whisper feature extractor whose 2-second window gives the tiny audio tower its
200 frames, and a word-level tokenizer over the real vocabulary with
Qwen2-Audio's special tokens at their real ids, so the new tokens land where
they would), a small audio dataset in LLaMA-Factory's sharegpt format, and the
training config: LoRA on the language model's attention and the new tokens
added with `add_special_tokens`, as LLaMA-Factory users add them. Adding tokens
turns `resize_vocab` on after the arguments are checked, and then the whole
embedding and output matrices train beside LoRA (the write-up's failure); set
in the config it is refused with 4-bit ("Cannot resize embedding layers of a
quantized model"), so it is left out, as a user who quantizes leaves it.
4-bit (`quantization_bit: 4`) where the checkpoint is prepared on CUDA: on a
CPU host transformers 4.52 refuses bitsandbytes without Intel's extension, so
the CPU run trains the full-precision model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpu_budget import Environment, Scenario

from .model import AUDIO_TOKEN, config
from .scenarios import TINY

REQUIREMENTS = ["llamafactory==0.9.3", "pyarrow<26"]
SPECIAL = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<|AUDIO|>": AUDIO_TOKEN,
           "<|audio_bos|>": 151647, "<|audio_eos|>": 151648}  # Qwen2-Audio's ids
RATE = 16000
WINDOW_S = 2  # the feature extractor's window: 200 frames, the tiny tower's max_source_positions x 2
MODEL_KEYS = ("vocab", "hidden", "intermediate", "layers", "heads", "kv_heads", "audio_d_model", "audio_heads",
              "audio_layers", "max_source_positions")


def new_tokens(n: int) -> list[str]:
    return [f"<|new_{i}|>" for i in range(n)]


def tokenizer():
    """A word-level tokenizer over Qwen2-Audio's id space: ordinary ids are placeholders, special ones are real."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {f"t{i}": i for i in range(min(SPECIAL.values()))}
    words = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="t0")
    fast.add_special_tokens({"additional_special_tokens": sorted(SPECIAL, key=SPECIAL.get)})  # in id order
    fast.eos_token, fast.pad_token = "<|im_end|>", "<|endoftext|>"
    got = {t: fast.convert_tokens_to_ids(t) for t in SPECIAL}
    if got != SPECIAL:
        raise RuntimeError(f"special tokens at {got}, not Qwen2-Audio's {SPECIAL}")
    return fast


def clips(data: Path, n: int, seconds: float) -> list[str]:
    """n mono 16 kHz clips of `seconds` (a tone under noise), written as wav under data/audio; their paths from
    data (LLaMA-Factory reads a relative path from its dataset folder)."""
    import numpy as np
    import soundfile

    folder = data / "audio"
    folder.mkdir(parents=True, exist_ok=True)
    rng, t = np.random.default_rng(0), np.arange(int(seconds * RATE)) / RATE
    paths = []
    for i in range(n):
        wave = 0.3 * np.sin(2 * np.pi * (220 + 40 * i) * t) + 0.05 * rng.standard_normal(t.size)
        path = folder / f"clip{i}.wav"
        soundfile.write(path, wave.astype("float32"), RATE)
        paths.append(str(path.relative_to(data)))
    return paths


def dataset(folder: Path, p: dict) -> None:
    """LLaMA-Factory's sharegpt format: an <audio> turn per sample, the answers using the new tokens."""
    added = new_tokens(p["added_tokens"])
    rows = [{"messages": [{"role": "user", "content": "<audio>What is this sound?"},
                          {"role": "assistant", "content": " ".join(added[i % len(added):] + ["a tone"])}],
             "audios": [path]}
            for i, path in enumerate(clips(folder, p["samples"], p["clip_s"]))]
    (folder / "s3_audio.json").write_text(json.dumps(rows, indent=1))
    info = {"s3_audio": {"file_name": "s3_audio.json", "formatting": "sharegpt",
                         "columns": {"messages": "messages", "audios": "audios"},
                         "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                                  "assistant_tag": "assistant"}}}
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=1))


def train_config(p: dict) -> dict:
    """The training config a LLaMA-Factory user writes for this run (examples/train_lora's keys). The folders are
    given on the command line (LLaMA-Factory's key=value overrides): the prepared folder moves once made."""
    return {
        "stage": "sft", "do_train": True, "finetuning_type": "lora",
        "lora_rank": p["lora_r"], "lora_target": "q_proj,k_proj,v_proj,o_proj",
        "add_special_tokens": ",".join(new_tokens(p["added_tokens"])),
        **({"quantization_bit": 4} if p.get("cuda") else {}),
        "dataset": "s3_audio", "template": "qwen2_audio",
        "cutoff_len": p["text_len"] * 4, "max_samples": p["samples"], "overwrite_cache": True,
        "preprocessing_num_workers": None, "overwrite_output_dir": True,
        "logging_steps": 1, "save_strategy": "no", "report_to": "none", "plot_loss": False,
        "per_device_train_batch_size": p["batch_size"], "gradient_accumulation_steps": 1,
        "learning_rate": 1.0e-4, "max_steps": p["steps"], "lr_scheduler_type": "constant",
        "dataloader_num_workers": 0, "seed": 0,
    }


def prepare(ctx) -> None:
    import torch
    import yaml
    from transformers import Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor, WhisperFeatureExtractor

    p, assets = ctx.params, Path(ctx.assets)
    torch.manual_seed(0)
    Qwen2AudioForConditionalGeneration(config(p)).save_pretrained(assets / "model")
    features = WhisperFeatureExtractor(feature_size=128, sampling_rate=RATE, chunk_length=WINDOW_S)
    Qwen2AudioProcessor(feature_extractor=features, tokenizer=tokenizer()).save_pretrained(assets / "model")
    dataset(assets / "data", p)
    cuda = str(ctx.device).startswith("cuda")
    (assets / "config.yaml").write_text(yaml.safe_dump(train_config({**p, "cuda": cuda}), sort_keys=False))


# `llamafactory-cli` is this entry point; the gate's hook in its process marks the Trainer's steps
LLAMAFACTORY = Scenario(
    name="s3_llamafactory",
    command=[sys.executable, "-c", "import sys; from llamafactory.cli import main; sys.exit(main())", "train",
             "{assets}/config.yaml", "model_name_or_path={assets}/model", "dataset_dir={assets}/data",
             "output_dir={assets}/out"],
    environment=Environment(requirements=REQUIREMENTS),
    prepare="s3_qwen2_audio.tool:prepare",
    params={"added_tokens": 20, "batch_size": 1, "lora_r": 8, "samples": 8, "clip_s": 1.5},
    scales={"tiny": {k: TINY[k] for k in (*MODEL_KEYS, "text_len", "steps")}},
    prepared_from=(*MODEL_KEYS, "added_tokens", "samples", "clip_s", "lora_r", "batch_size", "text_len", "steps"),
)
