"""The room `estimate --card NAME` holds each estimate against: the card less a CUDA context, as card= caps it.

The cap (measure/card_cap.py) limits the caching allocator at the card's
capacity less the CUDA context its process holds. Without a GPU that context
is not known: the user's --cuda-context where given, else the allowance an
estimate takes off a card (model/card.py). A card older than compute
capability 9 also takes less cuBLAS workspace than CUDA mode's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_budget.declare.params import Json
from gpu_budget.model.card import CARDS, CONTEXT_ALLOWANCE, Card, pick_card
from gpu_budget.units import format_size

# torch's default cuBLAS workspace per matmul thread (CublasHandlePool.cpp, parseChosenWorkspaceSize): 32 MiB on
# compute capability 9 and later, ":4096:2:16:8" before it. The table's cards of 9 and later are its Hopper ones.
FROM_9 = frozenset({"H100 80GB", "H100 NVL", "H200"})
WORKSPACE_BEFORE_9 = 4096 * 1024 * 2 + 16 * 1024 * 8


def card_workspace(card: Card) -> int | None:
    """The cuBLAS workspace torch takes per thread on this card where the table knows it is older than compute
    capability 9; None for the Hopper cards and for a card given as a size (CUDA mode's default)."""
    return WORKSPACE_BEFORE_9 if card.name in CARDS and card.name not in FROM_9 else None


class CardError(ValueError):
    """--card names no card of the table nor a size, or one its CUDA context leaves no memory; the message names it."""


@dataclass(frozen=True)
class CardRoom:
    """A card's capacity less a CUDA context (bytes): the limit the card= cap would set. measured: the context is
    the user's --cuda-context, not the allowance."""

    card: Card
    context: int
    measured: bool

    @property
    def limit(self) -> int:
        return self.card.capacity - self.context

    def context_words(self) -> str:
        if self.measured:
            return f"{format_size(self.context)} for the CUDA context (--cuda-context)"
        return (f"{format_size(self.context)} for the CUDA context, the allowance for one not measured "
                "(docs/estimator.md; --cuda-context gives yours)")

    def to_json(self) -> dict[str, Json]:
        return {"name": self.card.name, "capacity": self.card.capacity, "written": self.card.given, "context": self.context,
                "context_measured": self.measured, "limit": self.limit}

    @classmethod
    def from_json(cls, data: Mapping[str, Json]) -> CardRoom:
        return cls(Card(data["name"], data["capacity"], written=data.get("written", "")), data["context"], data["context_measured"])


def card_room(name: str, scale: str, context: int | None) -> CardRoom:
    """The room `--card name` leaves; CardError naming the value where it names no card or no room is left."""
    try:
        card = pick_card(name, scale, "--card")
    except ValueError as exc:  # card='s own message
        raise CardError(str(exc)) from None
    assert card is not None  # a str is read for this scale, or refused
    room = CardRoom(card, CONTEXT_ALLOWANCE if context is None else context, context is not None)
    if room.limit <= 0:
        raise CardError(f"--card {name!r}: {card.label} less {room.context_words()} leaves no memory")
    return room
