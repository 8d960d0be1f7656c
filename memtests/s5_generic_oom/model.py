"""The S5 net as the runner trains it and the estimator builds it, and the layers its weight fixes act on."""

from __future__ import annotations

import torch
from torch import nn


class ConvNet(nn.Module):
    """VGG-shaped: three conv stages (activation-heavy) and a dense head (weight-heavy)."""

    def __init__(self, width: int, hidden: int, classes: int, pool: int = 7) -> None:
        super().__init__()
        layers, cin = [], 3
        for cout in (width, 2 * width, 4 * width):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
                       nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2)]
            cin = cout
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(pool))
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(cin * pool * pool, hidden), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(hidden, hidden), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def prune_weights(model: nn.Module) -> dict:
    """The write-up's pruning, extended to Linear: reports the bytes it adds."""
    from torch.nn.utils import prune

    before = tensor_bytes(model)
    pruned = []
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)) and module.weight.dtype.is_floating_point:  # not int8
            prune.l1_unstructured(module, name="weight", amount=0.2)
            pruned.append(name)
    return {"pruned_modules": pruned, "pruning_added_bytes": tensor_bytes(model) - before}


def hidden_linears(head: nn.Sequential) -> list[int]:
    """Indices of the head's Linear layers but the output one: what 8-bit quantization swaps (int8 recipes skip the head)."""
    return [i for i, m in enumerate(head) if isinstance(m, nn.Linear)][:-1]


def freeze_hidden(model: ConvNet) -> dict:
    """Quantization's freezing without its 8-bit storage: the same weights frozen, kept fp32 (biases train, as there)."""
    targets = hidden_linears(model.classifier)
    for i in targets:
        model.classifier[i].weight.requires_grad_(False)
    return {"frozen_fp32_modules": [f"classifier.{i}" for i in targets]}


def tensor_bytes(model: nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
