"""Section 9, building the real-scale S3 (7B) and S4 (8B) checkpoints: what it costs on a CPU, from partial builds.

The GPU validation has about 20 minutes of GPU time, so the checkpoints are
built on the GPU host, and the prepare functions build on the child's device
(`with torch.device(ctx.device)`). How long the CPU way would take: a full
7B/8B bf16 build holds ~15-16 GB, too much for this shared 24 GiB machine, so
each checkpoint is built with its real dimensions but fewer layers (the same
count of text and audio layers for S3), init and save timed apart, and the full
build is extrapolated by parameter count (init and save both run per parameter:
random initialisation, then writing bf16 bytes). The rows say which figures are
extrapolated. On a CUDA host the same builds also run on the GPU (measured
there, never here).

    python -m benchmarks.checkpoint_build [--layers 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import missing, ran, write


def _build(which: str, layers: int, device: str, folder: Path) -> dict:
    import torch

    if which == "s3":
        from s3_qwen2_audio.model import config
        from s3_qwen2_audio.scenarios import REAL
        from transformers import Qwen2AudioForConditionalGeneration

        params = {**REAL, "layers": layers, "audio_layers": layers}
        make = lambda: Qwen2AudioForConditionalGeneration._from_config(config(params), dtype=torch.bfloat16)
    else:
        from s4_wrap_order.model import llama_config
        from s4_wrap_order.scenarios import REAL
        from transformers import LlamaForCausalLM

        params = {**REAL, "layers": layers}
        make = lambda: LlamaForCausalLM._from_config(llama_config(params), dtype=torch.bfloat16)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    with torch.device(device):
        model = make()
    if device == "cuda":
        torch.cuda.synchronize()
    init = time.perf_counter() - t0
    n = sum(p.numel() for p in model.parameters())
    t0 = time.perf_counter()
    model.save_pretrained(folder)
    save = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    del model
    shutil.rmtree(folder)
    return {"scenario": which, "layers": layers, "device": device, "params": n, "init_s": init, "save_s": save,
            "bytes": size}


def full_params(which: str) -> tuple[int, int]:
    """(parameters, layers) of the real-scale model, counted on the meta device (nothing allocated)."""
    import torch

    if which == "s3":
        from s3_qwen2_audio.model import config
        from s3_qwen2_audio.scenarios import REAL
        from transformers import Qwen2AudioForConditionalGeneration

        with torch.device("meta"):
            model = Qwen2AudioForConditionalGeneration._from_config(config(REAL), dtype=torch.bfloat16)
    else:
        from s4_wrap_order.model import llama_config
        from s4_wrap_order.scenarios import REAL
        from transformers import LlamaForCausalLM

        with torch.device("meta"):
            model = LlamaForCausalLM._from_config(llama_config(REAL), dtype=torch.bfloat16)
    return sum(p.numel() for p in model.parameters()), REAL["layers"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2, help="layers of the partial build")
    args = parser.parse_args()

    import torch

    threads = os.cpu_count() or 1  # a prepare child gets every core in a serial run
    torch.set_num_threads(threads)
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    builds, full = [], {}
    for which in ("s3", "s4"):
        full[which] = dict(zip(("params", "layers"), full_params(which)))
        for device in devices:
            with tempfile.TemporaryDirectory(prefix=f"gpu-budget-build-{which}-") as tmp:
                builds.append({**_build(which, args.layers, device, Path(tmp) / "model"),
                               "load_average": [round(x, 2) for x in os.getloadavg()]})
            print(f"checkpoint build {which} {device} {args.layers} layers: init {builds[-1]['init_s']:.1f} s, "
                  f"save {builds[-1]['save_s']:.1f} s", flush=True)
    write("checkpoint_build", {"threads": threads, "builds": builds, "full": full})


# -- RESULTS.md section 9, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

def checkpoint_extrapolation(cb: dict) -> list[dict]:
    """Per scenario and device: the partial build and the full build extrapolated from it by parameter count."""
    out = []
    for b in cb["builds"]:
        full = cb["full"][b["scenario"]]
        scale = full["params"] / b["params"]
        out.append({**b, "full_layers": full["layers"], "full_params": full["params"], "full_init_s": b["init_s"] * scale,
                    "full_save_s": b["save_s"] * scale, "full_bytes": b["bytes"] * scale})
    return out


def section(cb: dict | None) -> list[str]:
    """Section 9 from checkpoint_build.json: partial checkpoint builds, extrapolated to the full model."""
    out = ["## 9. Building the real-scale S3 and S4 checkpoints", ""]
    if cb is None:
        return out + missing("checkpoint_build", "checkpoint_build")
    out += [ran(cb), "",
            ("The 7B (S3) and 8B (S4) checkpoints are built from their configs with random weights in bf16 "
             "(`benchmarks/checkpoint_build.py`). A full build holds ~15-16 GB, too much for this shared machine, so "
             f"each was built with its real dimensions and fewer layers ({cb['threads']} torch threads), and the full "
             "build is **extrapolated** by parameter count (init: random initialisation; save: safetensors to local "
             "disk). That is why the prepare functions build on the child's device: on a GPU host the model is created "
             "and initialised on the GPU."), "",
            ("| checkpoint | device | built: layers, parameters | init s | save s | load average | full model | "
             "init s, extrapolated | save s, extrapolated | size, extrapolated |"),
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in checkpoint_extrapolation(cb):
        out.append(f"| {r['scenario'].upper()} | {r['device']} | {r['layers']}, {r['params'] / 1e9:.2f} B | {r['init_s']:.1f} | "
                   f"{r['save_s']:.1f} | {r['load_average'][0]} | {r['full_layers']} layers, {r['full_params'] / 1e9:.2f} B | "
                   f"{r['full_init_s']:.0f} | {r['full_save_s']:.0f} | {r['full_bytes'] / 2**30:.1f} GiB |")
    return out + [""]


if __name__ == "__main__":
    main()
