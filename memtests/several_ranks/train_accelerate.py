"""The same fine-tune the way accelerate's users write it: an Accelerator, its FSDP plugin set by the launcher.

`accelerate launch --num_processes 2 --use_fsdp --fsdp_version 2 train_accelerate.py ...`;
on a host without CUDA the ranks form a gloo group only with ACCELERATE_USE_CPU=true
(without it each rank trains alone: the gate fails such a launch, naming it).
--plant_mib holds that much more on --plant_rank (a planted regression), as train.py does.
"""

import argparse

import torch

import gpu_budget


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=2)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--plant_rank", type=int, default=-1)
    parser.add_argument("--plant_mib", type=int, default=0)
    args = parser.parse_args()

    from accelerate import Accelerator
    from transformers import LlamaForCausalLM

    accelerator = Accelerator()
    torch.manual_seed(0)
    gpu_budget.phase("load")
    model = LlamaForCausalLM.from_pretrained(args.model_dir)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer = accelerator.prepare(model, optimizer)
    planted = bytearray(args.plant_mib << 20) if accelerator.process_index == args.plant_rank else b""
    for i in range(0, len(planted), 4096):
        planted[i] = 1  # touched: resident
    generator = torch.Generator().manual_seed(accelerator.process_index)
    ids = torch.randint(0, 4000, (args.batch_size, args.seq_len), generator=generator).to(accelerator.device)
    for _ in range(args.steps):
        gpu_budget.step()
        loss = model(input_ids=ids, labels=ids).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    accelerator.print(f"distributed type {accelerator.distributed_type}, {accelerator.num_processes} processes, model {type(model).__name__}")
    accelerator.end_training()


if __name__ == "__main__":
    main()
