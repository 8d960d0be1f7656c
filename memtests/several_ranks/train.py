"""A user's 2-rank fine-tune of a small causal LM, as launched: `torchrun --nproc-per-node 2 train.py ...`.

Plain PyTorch: gloo on CPU (NCCL on CUDA), the model loaded from a saved
checkpoint, wrapped by --wrap: `ddp` (DistributedDataParallel: every rank holds
the whole model, its gradients and its optimizer state), `fsdp` (FSDP2's
fully_shard per decoder layer and at the root: each rank holds 1/N of the
parameters, gradients and optimizer state, and gathers a layer's full
parameters while it runs), `fsdp_keep` (fully_shard with
reshard_after_forward=False: the gathered parameters stay from forward to
backward), or `fsdp_no_shard` (fully_shard on a 2 x 1 replicate x shard mesh:
FSDP2's machinery with nothing sharded, every rank holding everything, as
FSDP1's NO_SHARD). gpu_budget.step() marks each optimizer step (a no-op outside the
gate). --plant_mib holds that much more on --plant_rank (a planted regression).
--backend gloo on CUDA lets the ranks share GPUs (NCCL refuses two ranks on one
device): rank r trains on GPU LOCAL_RANK modulo the GPUs it sees.
"""

import argparse
import os

import torch
import torch.distributed as dist

import gpu_budget


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--wrap", choices=("ddp", "fsdp", "fsdp_keep", "fsdp_no_shard"), default="ddp")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=2)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--plant_rank", type=int, default=-1)
    parser.add_argument("--plant_mib", type=int, default=0)
    parser.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto",
                        help="the process group's backend (auto: NCCL on CUDA, gloo on the CPU)")
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group(("nccl" if cuda else "gloo") if args.backend == "auto" else args.backend)
    rank = dist.get_rank()
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count()) if cuda else \
        torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    torch.manual_seed(0)

    from transformers import LlamaForCausalLM

    gpu_budget.phase("load")
    model = LlamaForCausalLM.from_pretrained(args.model_dir).to(device)
    model = wrap(model, args.wrap, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    planted = bytearray(args.plant_mib << 20) if rank == args.plant_rank else b""
    for i in range(0, len(planted), 4096):
        planted[i] = 1  # touched: resident
    vocab = model.config.vocab_size if hasattr(model, "config") else model.module.config.vocab_size
    ids = torch.randint(0, vocab, (args.batch_size, args.seq_len), generator=torch.Generator().manual_seed(rank))
    ids = ids.to(device)
    for _ in range(args.steps):
        gpu_budget.step()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    dist.barrier()
    dist.destroy_process_group()


def wrap(model, how: str, device):
    if how == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    from torch.distributed.fsdp import fully_shard

    keep = how == "fsdp_keep"
    mesh = None
    if how == "fsdp_no_shard":  # replicated across the ranks, a shard group of one: nothing is split
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh(device.type, (dist.get_world_size(), 1), mesh_dim_names=("replicate", "shard"))
    for layer in model.model.layers:
        fully_shard(layer, reshard_after_forward=not keep, mesh=mesh)
    fully_shard(model, reshard_after_forward=not keep, mesh=mesh)
    return model


if __name__ == "__main__":
    main()
