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
