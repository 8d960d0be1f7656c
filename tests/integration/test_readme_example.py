"""README's "Gate your own fine-tune" example, copied as written, on this host (a CPU one in CI).

The test module is taken verbatim from README.md's first Python block; train.py
is a real Hugging Face Trainer script (a tiny BERT built from its config) that
takes --max_steps as the example passes it. On a host without CUDA the example
must gate host RAM, record its baseline and say that its VRAM budget was not
checked; a second run under CI is judged against the recorded baseline.
"""

import importlib.util
import json
import re
from pathlib import Path

import pytest
from inner_session import leave_outer_run

README = Path(__file__).resolve().parents[2] / "README.md"

TRAIN = '''
import argparse

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--max_steps", type=int, default=8)
steps = parser.parse_args().max_steps


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return {"input_ids": torch.full((32,), i % 50), "labels": torch.tensor(i % 2)}


config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, vocab_size=100)
args = TrainingArguments(output_dir="out", max_steps=steps, per_device_train_batch_size=4, report_to=[],
                         save_strategy="no", logging_strategy="no", use_cpu=True)
Trainer(model=BertForSequenceClassification(config), args=args, train_dataset=Data()).train()
'''


def readme_example() -> str:
    """The first Python block under README's "Gate your own fine-tune"."""
    text = README.read_text()
    section = text[text.index("## Gate your own fine-tune"):]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)


# find_spec, not importorskip: an import inside a pytester test is undone at its teardown (pytester restores
# sys.modules), and numpy, imported again by the next such test in the worker, refuses to load twice
@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs transformers")
def test_the_readme_example_as_written_gates_host_ram_on_a_cpu_host(pytester, monkeypatch):
    leave_outer_run(monkeypatch)
    example = readme_example()
    assert 'vram="20 GiB"' in example and "steps=10_000" in example  # the example this test is about
    pytester.path.joinpath("tests").mkdir()
    pytester.path.joinpath("tests", "test_train.py").write_text(example)
    pytester.path.joinpath("train.py").write_text(TRAIN)

    first = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "tests", "--gpu-budget-json=r.json")
    first.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert row["verdict"] == "no-baseline" and row["peaks"]["ram_tree"] > 0
    assert row["message"].startswith("VRAM budget 20.00 GiB not checked: this host has no CUDA GPU"), row["message"]
    assert row["growth_projection"]["projections"][0]["metric"] == "ram_tree"  # steps=10_000 judged the growth
    stored = list(pytester.path.glob("baselines/*/test_train.json"))
    assert len(stored) == 1, list(pytester.path.rglob("*.json"))
    first.stdout.fnmatch_lines(["*RAM 4.00 GiB, VRAM 20.00 GiB unchecked*", "*baselines: recorded 1 new entry in*"])

    monkeypatch.setenv("CI", "true")  # a missing baseline would fail here
    again = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "tests", "--gpu-budget-json=r.json")
    again.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert row["verdict"] == "pass" and row["baseline"] is not None, row["message"]
