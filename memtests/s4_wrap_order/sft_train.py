"""A user's TRL fine-tune: an 8-bit Llama with LoRA, held in their own ModelWrap, trained by SFTTrainer.

    python sft_train.py --model_dir DIR --order wrap_first|peft_first [--steps 3 --batch_size 1 --seq_len 256]

S4 as its user ran it, knowing nothing of the gate. `wrap_first` is the
write-up's: ModelWrap(model), then get_peft_model on the wrapper (PEFT raises
on a wrapper given a task_type, so there is none). `peft_first` is its fix:
prepare_model_for_kbit_training and get_peft_model on the model, then the
wrapper. SFTConfig asks for gradient checkpointing by default, and so does
--gradient_checkpointing (on): the wrapper hands on what SFTTrainer asks of the
model it holds, so the Trainer enables checkpointing through it, and the gate
runs it so. `off` is what a wrapper that hides the model's methods leaves.
"""

import argparse
import tempfile

import torch
from datasets import Dataset
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig
from trl import SFTConfig, SFTTrainer


class ModelWrap(nn.Module):
    """The user's wrapper: holds the model and forwards. SFTTrainer reads attributes of the model it is given
    (config, generation_config, get_output_embeddings, add_model_tags, ...) and raises at the first one missing, so
    a wrapper that trains under TRL hands on what it lacks to the model it holds."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, **kwargs):
        return self.model(**kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)  # parameters, buffers, submodules (self.model itself)
        except AttributeError:
            return getattr(super().__getattr__("model"), name)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--order", choices=("wrap_first", "peft_first"), default="wrap_first")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=1)
    parser.add_argument("--seq_len", type=int, default=256)
    parser.add_argument("--gradient_checkpointing", choices=("on", "off"), default="on")  # SFTConfig's
    args = parser.parse_args()

    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, quantization_config=BitsAndBytesConfig(load_in_8bit=True),
                                                 dtype=torch.bfloat16, device_map="cuda" if cuda else "cpu")
    lora = {"r": 8, "lora_alpha": 16, "lora_dropout": 0.05, "target_modules": ["q_proj", "v_proj"]}
    if args.order == "wrap_first":
        model = get_peft_model(ModelWrap(model), LoraConfig(**lora))
    else:
        model = prepare_model_for_kbit_training(model)
        model = ModelWrap(get_peft_model(model, LoraConfig(**lora, task_type="CAUSAL_LM")))

    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    vocab = len(tokenizer)
    ids = torch.randint(0, vocab, (args.seq_len,), generator=torch.Generator().manual_seed(0)).tolist()
    data = Dataset.from_dict({"input_ids": [ids] * (args.steps * args.batch_size)})  # already tokenized
    with tempfile.TemporaryDirectory(prefix="sft-") as out:
        config = SFTConfig(output_dir=out, max_steps=args.steps, per_device_train_batch_size=args.batch_size,
                           learning_rate=1e-4, gradient_checkpointing=args.gradient_checkpointing == "on",
                           max_length=args.seq_len, use_cpu=not cuda, report_to="none", save_strategy="no",
                           logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
        SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer).train()


if __name__ == "__main__":
    main()
