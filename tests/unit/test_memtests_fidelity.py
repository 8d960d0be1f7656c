"""The case studies say what their runners do where that departs from the write-ups (SCENARIOS.md, seeds/).

A fix's doc and a memtest's docstring are where a reader meets a runner's
choice; each check here runs or reads the runner and holds the text to it.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "memtests"))


def test_s5_pruning_doc_names_every_layer_kind_the_runner_prunes():
    """The write-up prunes conv layers; the runner prunes the dense head too, which the fix's doc must say."""
    pytest.importorskip("torch")
    from s5_generic_oom.fixes import PRUNING
    from s5_generic_oom.model import ConvNet, prune_weights

    model = ConvNet(width=4, hidden=32, classes=3)
    pruned = prune_weights(model)["pruned_modules"]
    kinds = {type(model.get_submodule(name)).__name__ for name in pruned}
    assert kinds == {"Conv2d", "Linear"}
    assert all(kind in PRUNING.doc for kind in kinds), PRUNING.doc


def test_s4_sft_script_checkpoints_by_default_as_sft_config_and_the_gate_do():
    """The user's script, run as its user ran it, takes SFTConfig's default: gradient checkpointing on."""
    import ast

    from s4_wrap_order.tool import SFT_TRAINER

    tree = ast.parse((ROOT / "memtests" / "s4_wrap_order" / "sft_train.py").read_text())
    default = next(kw.value.value for call in ast.walk(tree) if isinstance(call, ast.Call) and call.args
                   and getattr(call.args[0], "value", None) == "--gradient_checkpointing"
                   for kw in call.keywords if kw.arg == "default")
    assert default == SFT_TRAINER.params["gradient_checkpointing"] == "on"


def test_s3_trains_in_float32_what_llamafactory_upcasts():
    """LLaMA-Factory upcasts every trainable parameter to float32 (init_adapter, unless pure_bf16): in a bfloat16
    model the copies modules_to_save makes of embed_tokens and lm_head train in float32, not in the model's dtype."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    from s3_qwen2_audio.model import add_lora, config, resize
    from s3_qwen2_audio.scenarios import AS_REPORTED, TINY
    from transformers import Qwen2AudioForConditionalGeneration

    p = {**AS_REPORTED.params, **TINY, "vocab": 512, "hidden": 32, "intermediate": 64, "audio_d_model": 16,
         "max_source_positions": 8}  # a few MiB: the dtypes, not the sizes, are the point
    has = set(AS_REPORTED.fixes).__contains__
    model = Qwen2AudioForConditionalGeneration._from_config(config(p), dtype=torch.bfloat16)
    _, new_ids = resize(model, p, has, mean_resizing=False)
    model, mode = add_lora(model, p, has, new_ids)
    assert mode == "modules_to_save"
    trainable = {name: q.dtype for name, q in model.named_parameters() if q.requires_grad}
    assert any("modules_to_save" in name for name in trainable), sorted(trainable)
    assert set(trainable.values()) == {torch.float32}, {n: d for n, d in trainable.items() if d != torch.float32}
    frozen = {q.dtype for q in model.parameters() if not q.requires_grad}
    assert frozen == {torch.bfloat16}  # the frozen model keeps its dtype


def test_s3_lora_takes_llamafactory_defaults_where_its_config_sets_none_or_says_why():
    """LLaMA-Factory's LoRA defaults (FinetuningArguments: lora_dropout 0.0, lora_alpha rank x 2) hold where the
    config a user writes (tool.train_config, the LLaMA-Factory run beside the runner) leaves them unset: the runner's
    adapters take its alpha, and where they depart from its dropout the runner's docstring says so."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    from s3_qwen2_audio import runner
    from s3_qwen2_audio.model import LORA_DROPOUT, add_lora, config, resize
    from s3_qwen2_audio.scenarios import BASE, TINY
    from s3_qwen2_audio.tool import LLAMAFACTORY, train_config
    from transformers import Qwen2AudioForConditionalGeneration

    assert not {"lora_dropout", "lora_alpha"} & set(train_config(LLAMAFACTORY.params_for("tiny")))
    p = {**BASE.params, **TINY, "vocab": 512, "hidden": 32, "intermediate": 64, "audio_d_model": 16,
         "max_source_positions": 8}
    model = Qwen2AudioForConditionalGeneration._from_config(config(p))
    _, new_ids = resize(model, p, lambda _: False, mean_resizing=False)
    model, _ = add_lora(model, p, lambda _: False, new_ids)
    layers = [m for m in model.modules() if hasattr(m, "lora_dropout")]
    assert layers
    assert {m.scaling["default"] for m in layers} == {2.0}  # alpha / r with alpha = 2 x rank
    dropout = {m.lora_dropout["default"].p if isinstance(m.lora_dropout["default"], torch.nn.Dropout) else 0.0
               for m in layers}
    assert dropout == {LORA_DROPOUT}
    if LORA_DROPOUT != 0.0:  # LLaMA-Factory's lora_dropout default
        doc = " ".join(runner.__doc__.split())
        assert f"Nor is its lora_dropout, 0.0: the runner's {LORA_DROPOUT}" in doc, doc


def test_s4_runner_says_it_leaves_off_the_bf16_sft_config_turns_on(tmp_path):
    """SFTTrainer (the write-up's) autocasts to bfloat16 by default; the runner's Trainer does not, and says so."""
    import ast

    trl = pytest.importorskip("trl")
    from s4_wrap_order import runner

    assert trl.SFTConfig(output_dir=str(tmp_path), use_cpu=True, report_to="none").bf16 is True
    tree = ast.parse(Path(runner.__file__).read_text())
    args = next(call for call in ast.walk(tree) if isinstance(call, ast.Call)
                and getattr(call.func, "id", None) == "TrainingArguments")
    assert not {kw.arg for kw in args.keywords} & {"bf16", "fp16"}  # no mixed precision asked for
    assert "SFTConfig turns `bf16` on" in runner.__doc__, runner.__doc__


def test_s2_runner_says_it_trains_the_clips_funasr_leaves_out():
    """FunASR's index skips clips past max_source_length (10 ms frames); the runner's long clips pass it, so its
    docstring must say that the as-reported peak is set by clips FunASR would not train, naming them."""
    import re

    funasr = pytest.importorskip("funasr")
    from s2_paraformer import runner
    from s2_paraformer.data import clip_plan, frames
    from s2_paraformer.model import RATE
    from s2_paraformer.scenarios import S2

    source = (Path(funasr.__file__).parent / "datasets" / "audio_datasets" / "index_ds.py").read_text()
    limit = int(re.search(r'kwargs\.get\("max_source_length", (\d+)\)', source).group(1))
    doc = " ".join(runner.__doc__.split())
    assert "max_source_length" in doc and f"{limit / 100:.2f} s" in doc, doc
    for scale in S2.scales:
        skipped = sorted(s for s in clip_plan(S2.params_for(scale)) if frames(int(s * RATE)) > limit)
        assert skipped, scale  # the runner's as-reported trains clips FunASR would leave out
        assert " and ".join(f"{s:.2f}" for s in skipped) + f" s at {scale}" in doc, (scale, skipped)


def test_s2_runner_says_it_loads_without_the_workers_finetune_sh_starts():
    """finetune.sh (the tool module's overrides) loads with DataLoader workers; the runner loads in its own process,
    and its docstring must say so and why."""
    from s2_paraformer import runner
    from s2_paraformer.tool import OVERRIDES, TRAIN_DS

    workers = TRAIN_DS.params[OVERRIDES["dataset_conf.num_workers"].strip("{}")]
    assert workers > 0
    assert "DataLoader" not in Path(runner.__file__).read_text().split('"""', 2)[2]  # no loader in its code
    doc = " ".join(runner.__doc__.split())
    assert f"finetune.sh loads with {workers} DataLoader workers" in doc, doc


def test_s1_lora_head_says_what_it_trains_beyond_the_write_ups_task_type():
    """The write-up's LoRA (task_type sequence classification) trains only `classifier` besides the adapters; the
    runner's modules_to_save trains the projector too, which model.py must say, with its size."""
    pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from s1_wav2vec2 import model as s1_model
    from s1_wav2vec2.scenarios import REAL_MODEL, TINY_MODEL
    from transformers import Wav2Vec2Config, Wav2Vec2ForSequenceClassification

    assert not hasattr(peft.TaskType, "SEQUENCE_CLASSIFICATION")  # the write-up's name, as written
    base = Wav2Vec2ForSequenceClassification(Wav2Vec2Config(**TINY_MODEL, num_labels=5))
    write_up = peft.get_peft_model(base, peft.LoraConfig(task_type=peft.TaskType.SEQ_CLS, r=8, lora_alpha=16,
                                                         lora_dropout=0.1, target_modules=s1_model.LORA_TARGETS))
    heads = {n.split(".modules_to_save")[0].rsplit(".", 1)[-1] for n, q in write_up.named_parameters()
             if q.requires_grad and "lora_" not in n}
    assert heads == {"classifier"}
    beyond = set(s1_model.HEADS) - heads
    assert beyond == {"projector"}
    real = Wav2Vec2Config(**REAL_MODEL)
    projector = (real.hidden_size + 1) * real.classifier_proj_size  # weight and bias
    source = Path(s1_model.__file__).read_text()
    assert "TaskType.SEQUENCE_CLASSIFICATION" in source and f"{projector:,} parameters" in source
