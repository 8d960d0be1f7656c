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
