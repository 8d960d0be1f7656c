"""Why FSDP2 can peak above DDP per rank on CPU (gloo): what is resident at each phase, rank by rank.

    .venv/bin/python benchmarks/fsdp_vs_ddp_cpu.py [--reps 3]

Runs `torchrun --standalone --nproc-per-node 2` of this file's rank body for
each wrapper: DDP; FSDP2 fully_shard at the root only; per layer (resharded
after forward); per layer with reshard_after_forward=False. The toy is the one
MEASURED.md reports (8 x Linear(2048), AdamW, batch 8, 3 steps), under the
gate's pins (one thread, glibc's thresholds fixed, AVX2 kernels). Per rank and
phase (wrap, then each step's forward, backward, optimizer step) it reads the
process's VmHWM (reset after each read: the phase's own peak) and the live
tensor bytes' peak of the phase (gpu_budget's TensorPeak: every storage an op
creates, until it dies); after the last step, the bytes held as parameters,
gradients and optimizer state. Writes benchmarks/results/fsdp_vs_ddp_cpu.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRAPS = ("ddp", "fsdp_root", "fsdp_layers", "fsdp_layers_keep")
MALLOC = ("steady", "system")
PINS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": "131072",
        "MALLOC_TRIM_THRESHOLD_": "131072", "ATEN_CPU_CAPABILITY": "avx2"}
MiB = 2**20


def rank_body(wrap: str, out: str) -> None:
    import torch
    import torch.distributed as dist
    from torch import nn

    from gpu_budget.measure.procfs import read_status, reset_hwm
    from gpu_budget.measure.tensors import TensorPeak

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    records = []
    tensors = TensorPeak()

    def mark(phase: str) -> None:
        records.append({"rank": rank, "phase": phase, "hwm": read_status("self")["VmHWM"], "tensor_peak": tensors.peak,
                        "tensor_live": tensors.live})
        reset_hwm("self")
        tensors.reset()

    with tensors:
        reset_hwm("self")
        model = nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(8)])
        if wrap == "ddp":
            model = nn.parallel.DistributedDataParallel(model)
        else:
            from torch.distributed.fsdp import fully_shard

            keep = wrap == "fsdp_layers_keep"
            if wrap != "fsdp_root":
                for layer in model:
                    fully_shard(layer, reshard_after_forward=not keep)
            fully_shard(model, reshard_after_forward=not keep)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        mark("wrap")
        x = torch.randn(8, 2048, generator=torch.Generator().manual_seed(rank))
        for step in range(1, 4):
            loss = model(x).sum()
            mark(f"forward_{step}")
            loss.backward()
            mark(f"backward_{step}")
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
            mark(f"step_{step}")

    def held_bytes(tensors) -> int:
        """Resident bytes of the storages behind these tensors, each storage once (FSDP's shards may be views of
        one flat buffer)."""
        storages = {}
        for t in tensors:
            t = t.to_local() if hasattr(t, "to_local") else t
            storage = t.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
        return sum(storages.values())

    params = list(model.parameters())
    held = {"params": held_bytes(params), "grads": held_bytes(p.grad for p in params if p.grad is not None),
            "optimizer": held_bytes(v for s in optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.dim())}
    records.append({"rank": rank, "phase": "held", **held})
    with open(f"{out}/rank{rank}.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    dist.barrier()
    dist.destroy_process_group()


def launch(wrap: str, malloc: str) -> list[dict]:
    pins = PINS if malloc == "steady" else {k: v for k, v in PINS.items() if not k.startswith("MALLOC_")}
    with tempfile.TemporaryDirectory() as out:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}, **pins, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "plugin"),
                                                                             os.environ.get("PYTHONPATH")]))}
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                        __file__, "--rank-body", wrap, out], check=True, env=env, capture_output=True)
        return [json.loads(line) for f in sorted(Path(out).glob("rank*.jsonl")) for line in f.read_text().splitlines()]


def summarize(runs: dict[str, list[list[dict]]]) -> dict:
    """Per wrapper: each figure's median over repetitions and both ranks, with its min and max (MiB)."""
    out = {}
    for wrap, reps in runs.items():
        rows = [r for rep in reps for r in rep]
        phases = [r for r in rows if r["phase"] != "held"]
        held = [r for r in rows if r["phase"] == "held"]

        def stat(values):
            return {"median": round(statistics.median(values) / MiB, 2), "min": round(min(values) / MiB, 2),
                    "max": round(max(values) / MiB, 2), "n": len(values)}

        peak_per_run = [max(r["hwm"] for r in rep if r["phase"] != "held" and r["rank"] == rank)
                        for rep in reps for rank in (0, 1)]
        tensor_per_run = [max(r["tensor_peak"] for r in rep if r["phase"] != "held" and r["rank"] == rank)
                          for rep in reps for rank in (0, 1)]
        out[wrap] = {
            "rank_peak_rss": stat(peak_per_run),
            "rank_peak_tensors": stat(tensor_per_run),
            "by_phase": {name: {"hwm": stat([r["hwm"] for r in phases if r["phase"] == name]),
                                "tensor_peak": stat([r["tensor_peak"] for r in phases if r["phase"] == name])}
                         for name in dict.fromkeys(r["phase"] for r in phases)},
            "held_after_step_3": {k: stat([h[k] for h in held]) for k in ("params", "grads", "optimizer")},
        }
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-body":
        rank_body(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    runs = {f"{wrap} {malloc}": [] for malloc in MALLOC for wrap in WRAPS}
    for _ in range(args.reps):  # interleaved: a drift of the machine falls on every variant alike
        for malloc in MALLOC:
            for wrap in WRAPS:
                runs[f"{wrap} {malloc}"].append(launch(wrap, malloc))
    import torch

    report = {"torch": torch.__version__, "reps": args.reps, "ranks": 2, "backend": "gloo", "pins": PINS,
              "malloc": {"steady": "the gate's pins (glibc's mmap and trim thresholds fixed at 128 KiB)",
                         "system": "glibc's defaults (its mmap threshold moves up as large blocks are freed)"},
              "model": "8 x Linear(2048, 2048), AdamW, batch 8, 3 steps", "summary": summarize(runs), "raw": runs}
    path = ROOT / "benchmarks/results/fsdp_vs_ddp_cpu.json"
    path.write_text(json.dumps(report, indent=1) + "\n")
    for wrap, s in report["summary"].items():
        print(f"{wrap:24} rank peak RSS {s['rank_peak_rss']['median']:8.1f} MiB [{s['rank_peak_rss']['min']}, "
              f"{s['rank_peak_rss']['max']}]  tensors {s['rank_peak_tensors']['median']:7.1f} MiB  held "
              + ", ".join(f"{k} {v['median']:.1f}" for k, v in s["held_after_step_3"].items()))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
