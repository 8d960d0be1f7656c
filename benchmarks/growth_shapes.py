"""The growth catalogue's scripts: training-like loops whose host RAM follows a shape a user could meet.

Written into the catalogue's temporary project by benchmarks/growth_catalogue.py
and run there unchanged as command cases. `shapes.py NAME STEPS` keeps and
holds bytes (every page touched) per optimizer step as NAME says; it marks its
steps with gpu_budget.step(), as a user's plain loop would. `loader.py STEPS`
is a real torch DataLoader whose worker process keeps what it loads (the tree
figure's leak). `torch_loop.py STEPS` is a plain torch training loop keeping a
16 MiB tensor every other step, part of which its process takes a step later. `bert.py --keep_mib X` is a Hugging Face Trainer script whose
evaluation before training sets the run's peak, with X MiB kept per training
step by a callback.
"""

SHAPES_PY = r'''
"""A plain training loop whose memory follows one named shape (MiB kept for good, and held for one step only)."""
import multiprocessing
import sys
import time

from gpu_budget import phase, step

MiB = 2**20


def touched(mib):
    return b"\x01" * int(mib * MiB)


def cache_at(at, mib=30):
    return lambda k: (mib if k == at else 0, 0)


def leak(mib, start=1, stop=None):
    return lambda k: (mib if k >= start and (stop is None or k <= stop) else 0, 0)


SHAPES = {  # step k -> (MiB kept from now on, MiB held during this step only)
    "flat": lambda k: (0, 0),
    "cache at step 2": cache_at(2),
    "cache at step 5": cache_at(5),
    "two caches, steps 4 and 8": lambda k: (30 if k in (4, 8) else 0, 0),
    "lazy optimizer state": lambda k: ({1: 20, 2: 40}.get(k, 0), 0),
    "sawtooth": lambda k: (0, 40 if k % 2 == 0 else 0),
    "evaluation every 4 steps": lambda k: (0, 60 if k % 4 == 0 else 0),
    "warm-up cache over steps 1-3": lambda k: (10 if k <= 3 else 0, 0),
    "cache filled by step 6": leak(5, stop=6),
    "bounded cache, 10 of its steps": leak(5, stop=10),
    "bounded cache over 20 steps": leak(5, stop=10),
    "leak from step 1": leak(1.5),
    "late leak, last 4 steps": leak(3, start=7),
    "leak every other step": lambda k: (3 if k % 2 == 0 else 0, 0),
    "leak every 3rd step": lambda k: (4.5 if k % 3 == 0 else 0, 0),
    "leak every 3rd step, 24 steps": lambda k: (4.5 if k % 3 == 0 else 0, 0),
    "inputs growing every step": lambda k: (0, 4 * k),
    # a leak under a step that peaks higher once or now and then: the running peak alone read these as steady
    "leak behind a scratch tensor at step 3": lambda k: (1.5, 10 if k == 3 else 0),
    "leak under an evaluation every 4 steps": lambda k: (1.5, 60 if k % 4 == 0 else 0),
    "leak under a sawtooth": lambda k: (1.5, 40 if k % 2 == 0 else 0),
    # a spike held over two steps: read as one step's, the second step alone, it hid the leak as well
    "leak behind a scratch tensor over steps 3-4": lambda k: (1.5, 10 if k in (3, 4) else 0),
    "two-step evaluation every 4 steps": lambda k: (0, 60 if k % 4 in (0, 1) and k > 1 else 0),
    # epochs of 6 steps (a small data set): what an epoch's end keeps, or holds while it evaluates
    "leak every epoch of 6 steps, 36 steps": lambda k: (6 if k % 6 == 0 else 0, 0),
    "evaluation every epoch of 6 steps, 36 steps": lambda k: (0, 60 if k % 6 == 0 else 0),
    # long runs (section 5g): leaks slower per step than a 10-step run's noise, a cache that stops halfway
    "slow leak, 0.25 MiB/step": leak(0.25),
    "slow leak, 0.1 MiB/step": leak(0.1),
    "slow leak in the last quarter, 0.5 MiB/step": lambda k: (0.5 if 4 * k > 3 * steps else 0, 0),
    "bounded cache over the first half": lambda k: (0.5 if 2 * k <= steps else 0, 0),
}

name, steps = sys.argv[1], int(sys.argv[2])
phase("load")
held = touched(200)  # a model's worth, so the steps sit on a floor as a training run's do
kept = []
if name == "leak in a subprocess":  # a helper process of the script's own that keeps 1.5 MiB per step it is asked
    parent, child = multiprocessing.Pipe()

    def helper(conn):
        mine = []
        while conn.recv():
            mine.append(touched(1.5))
            conn.send(True)

    worker = multiprocessing.Process(target=helper, args=(child,), daemon=True)
    worker.start()
for k in range(1, steps + 1):
    step()
    if name == "leak in a subprocess":
        parent.send(True)
        parent.recv()
        keep, hold = 0, 0
    else:
        keep, hold = SHAPES[name](k)
    kept.append(touched(keep))
    transient = touched(hold)
    time.sleep(0.03)
    del transient
phase("save")
if name == "leak in a subprocess":
    parent.send(False)
    worker.join()
'''

LOADER_PY = r'''
"""A plain loop over a real torch DataLoader whose one worker keeps 1.5 MiB of each item it loads (a leak in the
worker: the main process stays flat, the process tree grows)."""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from gpu_budget import phase, step

KEPT = []  # the worker's copy of this module's list: it grows in the worker only


class Leaky(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        KEPT.append(b"\x01" * (3 * 2**19))  # 1.5 MiB, every page touched
        return torch.ones(256)


phase("load")
model = torch.nn.Linear(256, 256)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
loader = DataLoader(Leaky(), batch_size=1, num_workers=1, prefetch_factor=1)
steps = int(sys.argv[1])
for k, batch in enumerate(loader, 1):
    step()
    optimizer.zero_grad()
    model(batch).sum().backward()
    optimizer.step()
    if k == steps:
        break
phase("save")
'''

TORCH_LOOP_PY = r'''
"""A plain torch training loop (a small MLP, AdamW) keeping a 16 MiB tensor every other step, as a loop that keeps
each other step's outputs would: 8 MiB/step. Its jump lands partly in the next step's peak."""
import sys

import torch

from gpu_budget import phase, step

phase("load")
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512))
optimizer = torch.optim.AdamW(model.parameters())
kept = []
for k in range(1, int(sys.argv[1]) + 1):
    step()
    model(torch.randn(64, 512)).pow(2).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
    if k % 2 == 0:
        kept.append(torch.ones(4 * 2**20))  # 16 MiB of float32, every page touched
phase("save")
'''

BERT_PY = r'''
"""A plain Hugging Face Trainer script (BERT from a config, random weights, synthetic data, CPU) that evaluates once
before it trains, at a larger batch, to log its starting metrics: that evaluation sets the run's peak. --keep_mib keeps
that many MiB per training step in a callback, as a callback that keeps each step's outputs would."""
import argparse

import torch
from torch.utils.data import Dataset
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainerCallback, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--keep_mib", type=float, default=0.0)
parser.add_argument("--max_steps", type=int, default=10)
args = parser.parse_args()
torch.manual_seed(0)
config = BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                    max_position_embeddings=512, vocab_size=1000)


class Synthetic(Dataset):
    def __init__(self, n, seq):
        g = torch.Generator().manual_seed(0)
        self.ids, self.labels = torch.randint(0, 1000, (n, seq), generator=g), torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": torch.ones_like(self.ids[i]), "labels": self.labels[i]}


class KeepOutputs(TrainerCallback):
    kept = []

    def on_step_end(self, training_args, state, control, **kwargs):
        if args.keep_mib:
            self.kept.append(torch.ones(int(args.keep_mib * 2**18)))  # float32: keep_mib MiB, every page touched


training = TrainingArguments(output_dir="out", per_device_train_batch_size=4, per_device_eval_batch_size=64,
                             max_steps=args.max_steps, eval_strategy="no", report_to=[],
                             save_strategy="no", logging_strategy="no", use_cpu=True, dataloader_num_workers=0, seed=0,
                             disable_tqdm=True)
trainer = Trainer(model=BertForSequenceClassification(config), args=training,
                  train_dataset=Synthetic(4 * args.max_steps, 128), eval_dataset=Synthetic(64, 512),
                  callbacks=[KeepOutputs()])
trainer.evaluate()  # the starting metrics
trainer.train()
'''
