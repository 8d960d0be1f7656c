"""The card a case is run as on (`card=`): a name and the total memory CUDA reports for it.

A user's GPU runner is rarely the card the fine-tune ships to. The gate caps
the caching allocator of every measured process at the card's capacity less
the CUDA context that process measured (measure/card_cap.py), so the
allocator's limit and its free-and-retry are those of the target card.

The table holds the total memory torch reports for each common card
(`torch.cuda.get_device_properties(0).total_memory`, as its out-of-memory
message prints it: "GPU 0 has a total capacity of 23.69 GiB"), which is less
than the vendor's nominal figure: docs/cards.md gives each figure's source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpu_budget.model.budget import SCALES, not_zero
from gpu_budget.units import GiB, MiB, format_size, parse_size


@dataclass(frozen=True)
class Card:
    """A target card: `capacity` bytes of device memory (CUDA's total_memory), `name` the table's (or the size read),
    `written` the card= value as the user wrote it (messages quote it; two spellings of one card are one card)."""

    name: str
    capacity: int
    own: bool = False  # `capacity` is this runner's GPU's total, the card named, as its driver reports it (on_runner)
    written: str = field(default="", compare=False)

    @property
    def given(self) -> str:
        """The card= value as written ("rtx3090", "2657 MiB"); the name where none was kept."""
        return self.written or self.name

    @property
    def key(self) -> str:
        """"RTX 3090 (23.69 GiB)", "T4 (this runner's, <its total>; the table's 14.75)", or "a 24.00 GiB card" for a
        size, however written: what a fingerprint compares."""
        shown = format_size(self.capacity)
        if self.own:
            return f"{self.name} (this runner's, {shown}; the table's {CARDS[self.name]:.2f})"
        return f"{self.name} ({shown})" if self.name != shown else f"a {shown} card"

    @property
    def label(self) -> str:
        """The key, a size card quoted as written: "a 4 GiB card", and beside what it reads as where that is another
        figure: "a 2657 MiB card (2.59 GiB)"."""
        shown = format_size(self.capacity)
        if self.name != shown or not self.written:
            return self.key
        written = re.fullmatch(r"\s*(\d*\.?\d*)\s*([A-Za-z]+)\s*", self.written)
        number, unit = written.groups() if written else ("", "")
        if unit == shown.split()[1] and f"{float(number or 'nan'):.2f}" == shown.split()[0]:
            return f"a {number} {unit} card"
        return f"a {' '.join(self.written.split())} card ({shown})"

    @staticmethod
    def key_of(label: str) -> str:
        """The key a row's card label (`label`) was made from: a size card's spellings ("a 4 GiB card", "a 4096 MiB
        card (4.00 GiB)") share one, so two rows tell a changed card from a changed spelling; a name's label is its
        key."""
        size = re.fullmatch(r"a (.+?) card(?: \((.+)\))?", label)
        try:
            return f"a {format_size(parse_size(size.group(2) or size.group(1)))} card" if size else label
        except ValueError:
            return label

    def to_env(self) -> str:
        """As a command's processes read it (script.CARD_VAR): "<bytes>:<name>:<own>:<as written>", <own> "own" for a
        runner's own card, else empty."""
        return f"{self.capacity}:{self.name}:{'own' if self.own else ''}:{self.given}"

    @classmethod
    def from_env(cls, value: str) -> Card:
        capacity, _, rest = value.partition(":")
        name, own, written = (rest.split(":", 2) + ["", ""])[:3]
        return cls(name, int(capacity), own == "own", written)


# CUDA's total_memory of each card, as torch prints it in an out-of-memory message (docs/cards.md: the sources; the
# A10G's is what an A10, the same memory, printed, so an A10 runner names its own card too; the H200's is what this
# project's H200 reported). A name sold with two memories (the P100, V100 and A100, and the RTX 3060 and 3080, whose
# torch name is one for both) carries the memory, and written without it is refused naming the table's choices.
CARDS: Mapping[str, float] = {
    "RTX 3080 10GB": 9.78,
    "RTX 3060 12GB": 11.75,
    "T4": 14.75,
    "RTX A4000": 15.61,
    "V100 16GB": 15.78,
    "P100 16GB": 15.90,
    "L4": 22.05,
    "A10": 22.06,
    "A10G": 22.06,
    "RTX 3090": 23.69,
    "RTX 4090": 23.65,
    "V100 32GB": 31.74,
    "A100 40GB": 39.39,
    "L40S": 44.42,
    "RTX 6000 Ada": 44.43,
    "RTX A6000": 47.54,
    "A100 80GB": 79.15,
    "H100 80GB": 79.11,
    "H100 NVL": 93.00,
    "H200": 139.80,
}


# the memory each card is sold with (GB): what a name may carry after the card's own ("T4 16GB" is the T4)
SOLD: Mapping[str, int] = {"RTX 3080 10GB": 10, "RTX 3060 12GB": 12, "T4": 16, "RTX A4000": 16, "V100 16GB": 16,
                           "P100 16GB": 16, "L4": 24, "A10": 24, "A10G": 24, "RTX 3090": 24, "RTX 4090": 24, "V100 32GB": 32,
                           "A100 40GB": 40, "L40S": 48, "RTX 6000 Ada": 48, "RTX A6000": 48, "A100 80GB": 80,
                           "H100 80GB": 80, "H100 NVL": 94, "H200": 141}

# words of a name as torch and nvidia-smi print it ("NVIDIA GeForce RTX 4090", "Tesla T4", "NVIDIA A100-SXM4-80GB",
# "NVIDIA H100 80GB HBM3", "NVIDIA RTX 6000 Ada Generation"): the maker, the product line, the form factor and the
# generation's word, none of which changes the card's memory
_FORM_FACTORS = {"pcie", "sxm", "sxm2", "sxm4", "sxm5"}
_PRINTED_WORDS = {"nvidia", "geforce", "tesla", "hbm2", "hbm2e", "hbm3", "generation", *_FORM_FACTORS}


# torch prints a GPU's total memory to a hundredth of a GiB, and the table holds what it prints: the GPU a figure was
# read from may hold up to half a hundredth less than the figure as bytes, and is still that card
PRINT_SLACK = GiB // 200


def more_than(size: int, total: int) -> bool:
    """Whether `size` (a card's capacity, a VRAM budget) is more than a GPU of `total` bytes holds, past the half
    hundredth of a GiB its printed figure is rounded by: card="H100 80GB" on an H100 80GB is that GPU."""
    return size > total + PRINT_SLACK


# What an estimate made without a GPU takes off a card for the CUDA context, which the cap takes off as measured:
# S3's process held 610 MiB at load on the H200 (benchmarks/results/gpu-s3-1.report.json, NVML less reserved); on
# that H200 the contexts ran from 520 MiB at S4's load (gpu-s4-1) to 856 MiB in S3's later phases
CONTEXT_ALLOWANCE = 610 * MiB


def _words(name: str) -> list[str]:
    return re.split(r"[\s_\-]+", name.lower())


def _key(name: str) -> str:
    return "".join(w for w in _words(name) if w not in _PRINTED_WORDS)


_BY_KEY = {_key(name): name for name in CARDS}


def _found(key: str) -> str | None:
    """The table's card of this key, or of it less a closing memory the card is sold with ("t416gb": T4)."""
    if key in _BY_KEY:
        return _BY_KEY[key]
    return next((card for known, card in _BY_KEY.items() if key == f"{known}{SOLD[card]}gb"), None)


def _by_form(name: str) -> str | None:
    """The table's one card of this name and a memory, where the name is printed with its form factor and no memory
    ("NVIDIA H100 PCIe", as nvidia-smi prints it: the H100 80GB, the one H100 sold so). Written short, with no form
    factor, a name stays unknown: "H100" may mean the H100 NVL too."""
    if not set(_words(name)) & _FORM_FACTORS:
        return None
    key = _key(name)
    cards = [card for card in CARDS if _key(card) == f"{key}{SOLD[card]}gb"]
    return cards[0] if len(cards) == 1 else None


def _meant(name: str) -> list[str]:
    """The table's cards whose name holds what was written ("4090": RTX 4090; "A100": both A100s), or holds it less
    a closing memory the card is sold with ("4090 24GB", as "T4 16GB" is read), where it is three characters or
    more: the cards a short name may mean."""
    key = _key(name)

    def holds(known: str, card: str) -> bool:
        short = key.removesuffix(f"{SOLD[card]}gb")
        return key in known or (short != key and len(short) >= 3 and short in known)

    return [found for known, found in _BY_KEY.items() if holds(known, found)] if len(key) >= 3 else []


# cards a short name may mean that the table does not hold ("RTX 6000": the RTX 6000 Ada, or the Turing card of 24 GB
# that torch prints as "Quadro RTX 6000"): a short name is refused naming them beside the table's
_NOT_HELD: Mapping[str, str] = {"rtx6000": "the Quadro RTX 6000, 24 GB, which the table does not hold"}


def _or_size(name: str) -> str:
    """The alternative to the table's cards a refused short name is offered: a size, and any card of that name the
    table does not hold."""
    other = _NOT_HELD.get(_key(name))
    return f"(or {other}: give its total as a size, in GiB or MiB)" if other else "(or a size with its unit, \"24 GiB\")"


def by_name(name: str) -> Card | None:
    """The table's card of this name, written any way ("rtx3090", "A100-80GB") or as torch and nvidia-smi print it
    ("NVIDIA GeForce RTX 3090", "Tesla T4", "NVIDIA A100-SXM4-80GB"); None where none is."""
    found = _found(_key(name)) or _by_form(name)
    return Card(found, round(CARDS[found] * GiB)) if found is not None else None


def on_runner(card: Card, gpu_name: str | None, gpu_memory: int | None) -> Card:
    """`card` at this runner's own total where the runner's GPU is that card (its name as torch prints it, read by
    by_name) and its driver reports another figure than the table's: the table's is one driver's (docs/cards.md: the
    figures seen move with the driver), and a runner that is the card named is judged against its own memory, not
    skipped as a smaller card."""
    same = by_name(gpu_name) == card if gpu_name else False
    if not same or not gpu_memory or format_size(gpu_memory) == format_size(card.capacity):
        return card
    return Card(card.name, gpu_memory, own=True, written=card.written)


CardGiven = str | Mapping[str, str | None] | None  # card=: a name or a size, or {scale: ...}


def pick_card(value: CardGiven, scale: str, where: str = "") -> Card | None:
    """Read a marker's card= for `scale`: a name of the table or a size with its unit; every scale's value is
    checked, so a typo fails on any scale."""
    per_scale = value if isinstance(value, Mapping) else {scale: value}
    unknown = set(per_scale) - set(SCALES)
    if unknown:
        raise ValueError(f"{where}: card names unknown scale(s) {sorted(unknown)} (known: {SCALES})")
    cards = {s: _scale_card(v, s, where, isinstance(value, Mapping)) for s, v in per_scale.items() if v is not None}
    return cards.get(scale)


def _scale_card(value: object, scale: str, where: str, per_scale: bool) -> Card:
    """One scale's card; a bad one of a {scale: card} mapping says at which scale it was given."""
    try:
        return _card(value, where)
    except ValueError as exc:
        if not per_scale:
            raise
        raise ValueError(f"{exc} (given for scale {scale!r})") from None


def _card(value: object, where: str) -> Card:
    if not isinstance(value, str):
        names = ", ".join(CARDS)
        problem = f"{where}: card={value!r}: expected a card's name ({names}) or its memory as a size with its unit"
        raise ValueError(f'{problem} ("24 GiB")')  # noqa: TRY004  a marker's bad value: ValueError, as for every keyword
    named = by_name(value)
    if named is not None:
        return Card(named.name, named.capacity, written=value)
    _refuse_negative(value, where)
    try:
        size = parse_size(value)
    except ValueError:
        size = None
    bare = size is not None and not re.search(r"[A-Za-z]", value)
    meant = " or ".join(f'"{name}"' for name in _meant(value)) if size is None or bare else ""
    if meant:
        raise ValueError(f"{where}: card={value!r} is {'a bare number' if bare else 'not a card of the table'}: did "
                         f"you mean {meant}? {_or_size(value)}")
    if size is None:
        raise ValueError(f"{where}: card={value!r} is neither a known card ({', '.join(CARDS)}) nor a size with its "
                         "unit (\"24 GiB\")")
    if bare:
        raise ValueError(f"{where}: card={value!r} is a bare number: give it a unit, e.g. \"{value} GiB\"")
    not_zero(size, f"{where}: card={value!r}", "a card holds some memory: capped at none, no case could run on it")
    _refuse_decimal(value, size, where)
    return Card(format_size(size), size, written=value)


def _refuse_negative(value: str, where: str) -> None:
    """A size but for its minus sign ("-24 GiB") is said to be one, not "neither a known card nor a size"."""
    sign, _, rest = value.strip().partition("-")
    if sign:
        return
    try:
        parse_size(rest)
    except ValueError:
        return
    raise ValueError(f"{where}: card={value!r} is a negative size: a card holds some memory (its total as a size with "
                     "its unit, \"24 GiB\")")


def _refuse_decimal(value: str, size: int, where: str) -> None:
    """A card in powers of ten is no figure CUDA gives: torch prints a card's total_memory in MiB written "MB", and
    in GiB, nvidia-smi in MiB, and a vendor's "24 GB" is what the card is sold with; read as powers of ten, each
    would silently make a smaller card than the one meant."""
    unit = re.search(r"([KMGT])B\s*$", value, re.IGNORECASE)
    if unit is None:
        return
    number, prefix = float(value[:unit.start()]), unit.group(1).upper()
    sold = [name for name, gb in SOLD.items() if prefix == "G" and gb == number]
    example = round(CARDS["RTX 3090"] * 1024)  # the RTX 3090's total as torch's device properties print it, in MiB
    why = (f"{value.strip()} is what {', '.join(sold)} {'is' if len(sold) == 1 else 'are'} sold with, not the memory "
           f"CUDA reports of {'it' if len(sold) == 1 else 'them'}" if sold else
           f"no tool prints a card's memory so: torch's \"total_memory={example}MB\" and nvidia-smi's figures are MiB")
    raise ValueError(f"{where}: card={value!r} reads as {size:,} bytes ({format_size(size)}), "
                     f"but {why}; name the card, or give its total as torch prints it, in GiB "
                     f"or MiB (\"{CARDS['RTX 3090']:.2f} GiB\", \"{example} MiB\")")
