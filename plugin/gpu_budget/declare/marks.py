"""The `gpu_budget` marker, as a plain function of the marker's arguments.

`@pytest.mark.gpu_budget(ram="12.7 GiB", vram="15 GiB", tolerance=None, expect=None, device=None, cpu=None, cuda=None,
origin=None, steps=None, card=None)`

Expectations are per device: a case measured on a CPU host trains on the CPU
and is judged on host RAM, the same case on a CUDA host trains on the GPU,
where its host RAM means something else. `cpu={...}` and `cuda={...}` hold the
ram / vram / expect / tolerance that apply where the case's child runs on that
device, replacing the top-level ones key by key. `device="cpu"` runs the case
on the CPU on any host (its child does not see the GPU); `device="cuda"` needs a
GPU. `steps=` gives the real run's length, to which the gate projects the
peak's growth per step (judge/growth.py). `card=` runs a CUDA case as on that
card (model/card.py): every measured process's caching allocator is capped at
the card's memory less its CUDA context. The marker's help text is generated
from this signature and docstring.
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from gpu_budget.model.budget import SCALES, Budget, SizeGiven, Tolerance, sizes_given
from gpu_budget.model.card import Card, CardGiven, on_runner, pick_card
from gpu_budget.units import format_size, parse_size

# Default tolerance, from the run-to-run spread of the gated RAM peak over fresh sessions under the steady
# allocator (benchmarks/RESULTS.md, sections 4 and 5, which say by how much it clears the widest tiny spread): it
# must clear that spread several times over and still fail a +2 % regression at the ~500 MiB import floor.
DEFAULT_TOLERANCE = Tolerance(rel=0.005, abs=4 * 2**20)
# Real scale, the same rule on the real-scale spread over 3 fresh pytest sessions (benchmarks/RESULTS.md, section 4,
# "Real scale"): S1 truncated, S2 and S5 as reported spread 0.7-1.3 MiB (0.04 % at most) at 1.9-5.0 GiB; 6x that
# rounds up to the same 0.5 % + 4 MiB, so a real-scale change past it is past the measured noise.
DEFAULT_TOLERANCE_BY_SCALE = {"tiny": DEFAULT_TOLERANCE, "real": Tolerance(rel=0.005, abs=4 * 2**20)}
EXPECTABLE = ("over-budget",)
DEVICES = ("cpu", "cuda")
BARE = re.compile(r"\s*(\d+(\.\d*)?|\.\d+)\s*", re.ASCII)  # a size written with no unit

# What a marker's keywords hold as the user wrote them, checked when the mark is read (ram=/vram=: SizeGiven).
# gpu_budget's own signature keeps Any: the marker's help text (pytest --markers) is generated from it.
ToleranceGiven = Mapping[str, float | int | str] | None  # {"rel": 0.02, "abs": "16 MiB"}
NameGiven = str | Mapping[str, str | None] | None  # expect= / origin=: one, or {scale: ...}
StepsGiven = int | Mapping[str, int | None] | None  # steps=: one run length, or {scale: length}
BlockGiven = Mapping[str, SizeGiven | ToleranceGiven | NameGiven] | None  # cpu={...} / cuda={...}
Given = SizeGiven | ToleranceGiven | NameGiven | StepsGiven | BlockGiven | CardGiven | float  # any keyword's value


@dataclass(frozen=True)
class _PerDevice:
    """The keys a cpu= / cuda= block may set, as given at the top level or replaced by the block of the case's device."""

    ram: SizeGiven = None
    vram: SizeGiven = None
    expect: NameGiven = None
    tolerance: ToleranceGiven = None
    origin: NameGiven = None


PER_DEVICE = tuple(f.name for f in fields(_PerDevice))  # the keys a cpu= / cuda= block may set
# Where a budget's figure comes from decides what breaking it shows (FINDINGS.md says it per scenario and scale).
ORIGINS = {
    "write-up": "the write-up's own figure",
    "card": "the memory of the card the write-up ran on",
    "measured-gap": "set between the measured peaks of the as-reported run and a fix",
    "measured-main": "the main process's measured peak plus an allowance per DataLoader worker",
    "chosen": "set by hand: no figure from the write-up or a card, and no recorded derivation",
}


@dataclass(frozen=True)
class BudgetMark:
    budget: Budget
    tolerance: Tolerance
    expect: str | None
    device: str = "cpu"  # the device these expectations are for: the case's child runs there
    pinned: bool = False  # device= named it (the child runs there whatever the host has)
    origin: str | None = None  # where the budget's figure comes from (ORIGINS); None where none applies or none declared
    steps: int | None = None  # the real run's length at this scale: the peak's growth is projected to it (judge/growth.py)
    card: Card | None = None  # a CUDA case runs as on this card: its allocators capped at the card's memory (card_cap.py)


def gpu_budget(ram: Any = None, vram: Any = None, *, tolerance: Mapping | None = None, expect: Any = None,
               device: str | None = None, cpu: Mapping | None = None, cuda: Mapping | None = None,
               origin: Any = None, imbalance: Any = None, steps: Any = None, card: Any = None, scale: str = "tiny",
               host: str = "cpu", where: str = "", runner: tuple[str | None, int | None] | None = None) -> BudgetMark:
    """memory budget: ram=/vram= a size with its unit ("12.7 GiB", "24GB", "4096 B"; a bare number is refused) or
    {"tiny": ..., "real": ...};
    tolerance={"rel": 0.02, "abs": "16 MiB"} (abs with its unit, as a budget; either key alone) overrides the
    baseline tolerance; expect="over-budget"
    (or {scale: "over-budget"}) marks a reproduction of a reported failure (passes only while the budget is
    broken, or the child dies of out-of-memory); cpu={...} / cuda={...} set ram, vram, expect, tolerance for
    cases measured on that device (a CUDA host trains on the GPU), replacing the top-level keys they name;
    device="cpu" runs the case on the CPU on any host, device="cuda" needs a GPU; origin= (or {scale: origin}) says
    where the budget's figure comes from: write-up, card, measured-gap, measured-main or chosen; imbalance=1.2
    bounds a launcher case's largest rank's RAM tree over its smallest's (docs/several-ranks.md); steps=10_000 (or
    {"tiny": ..., "real": ...}) is the real run's length: the growth per step measured after warm-up is projected to
    it, and a projected peak over the budget fails the case (docs/declaring.md); card="RTX 3090" (a name of the
    table of model/card.py, docs/cards.md: T4, L4, RTX 3090, A100 80GB, H200 and the others) or card="24 GiB"
    (or {scale: card}) runs a CUDA case as on that card: every measured process's allocator is capped at the card's memory less its
    CUDA context, an out-of-memory error under the cap fails the case, and vram= defaults to the card."""
    if device is not None and device not in DEVICES:
        raise ValueError(f"{where}: device={device!r} is not one of {DEVICES} (or None: the host's device)")
    on = device or host
    blocks = {"cpu": cpu, "cuda": cuda}
    for name, block in blocks.items():
        if block is None:
            continue
        if not isinstance(block, Mapping) or set(block) - set(PER_DEVICE):
            unknown = sorted(set(block) - set(PER_DEVICE)) if isinstance(block, Mapping) else block
            raise ValueError(f"{where}: {name}= must be a mapping of {', '.join(PER_DEVICE)}; got {unknown!r}")
    top = _PerDevice(ram, vram, expect, tolerance, origin)
    _check_everywhere({"": top, **{name: _PerDevice(**block) for name, block in blocks.items() if block}}, where, scale)
    given = replace(top, **(blocks[on] or {}))
    _refuse_unreachable_vram(device, given.vram, where)
    _refuse_vram_in_the_cpu_block(_PerDevice(**cpu).vram if cpu else None, where)
    _refuse_card_on_the_cpu(device, card, where)
    if device != "cpu":
        label = "cuda['vram']" if cuda and "vram" in cuda else "vram"
        _refuse_vram_over_card(replace(top, **(cuda or {})).vram, card, where, label)
    expected = _pick_expect(given.expect, scale, where)
    budget = Budget.for_scale(scale, given.ram, given.vram, where, imbalance)
    source = _pick_origin(given.origin, scale, where)
    target = pick_card(card, scale, where)
    if target is not None and on == "cuda" and runner is not None:  # this runner's GPU (name, total) may be the card
        target = on_runner(target, *runner)
    if target is not None and on == "cuda" and budget.vram is None:  # the card's memory is the budget it stands for
        budget, source = replace(budget, vram=target.capacity), source or "card"
    return BudgetMark(budget, _tolerance(given.tolerance, where, scale), expected, on, device is not None,
                      source if budget.ram is not None or budget.vram is not None else None, _pick_steps(steps, scale, where),
                      target)


def _refuse_unreachable_vram(device: str | None, vram: SizeGiven, where: str) -> None:
    """A test pinned to the CPU whose VRAM budget applies there (top level, or in cpu=) would be skipped on every host:
    its child never sees a GPU, so no host can check that budget, and its RAM budget would go unchecked too."""
    sizes = vram.values() if isinstance(vram, Mapping) else [vram]
    if device == "cpu" and any(size is not None for size in sizes):
        raise ValueError(f"{where}: vram={vram!r} with device='cpu': the test's child never sees a GPU, so no host "
                         "can check that budget; drop vram= (or move it into cuda=) or drop the pin")


def _refuse_vram_in_the_cpu_block(vram: SizeGiven, where: str) -> None:
    """A cpu= block applies where the case's child runs on the CPU, on a host without CUDA: that child sees no GPU,
    so a VRAM budget there is checked on no host, a budget no run could fail."""
    sizes = vram.values() if isinstance(vram, Mapping) else [vram]
    if any(size is not None for size in sizes):
        raise ValueError(f"{where}: cpu={{'vram': {vram!r}}}: the cpu= block applies where the case runs on the CPU, "
                         "whose child never sees a GPU, so no host can check that budget; move it into cuda= (or give "
                         "vram= at the top level)")


def _refuse_card_on_the_cpu(device: str | None, card: CardGiven, where: str) -> None:
    """A test pinned to the CPU never runs as on a card, at any scale: its child never sees a GPU, so no host caps an
    allocator for it or checks the VRAM budget the card stands for; the card would pass unseen, as vram= would."""
    cards = card.values() if isinstance(card, Mapping) else [card]
    if device == "cpu" and any(each is not None for each in cards):
        raise ValueError(f"{where}: card={card!r} with device='cpu': the test's child never sees a GPU, so no host runs "
                         "it as on that card (no allocator to cap, no VRAM budget it stands for); drop card= (card=None "
                         "under a farther marker's card) or drop the pin")


def _refuse_vram_over_card(vram: SizeGiven, card: CardGiven, where: str, label: str = "vram") -> None:
    """A CUDA case capped as on its card never holds more than the card, so a VRAM budget above it would test nothing
    (an over-budget run dies of out-of-memory under the cap first); read at every scale, on any host. The budget is
    quoted as written where given (`label`: vram, or cuda['vram']) and as read: "26GB" is 24.21 GiB."""
    for scale in SCALES:
        target, budget = pick_card(card, scale, where), Budget.for_scale(scale, vram=vram, where=where).vram
        if target is not None and budget is not None and budget > target.capacity:
            written = vram.get(scale) if isinstance(vram, Mapping) else vram
            raise ValueError(f"{where}: {label} budget {written!r} ({format_size(budget)}) at scale {scale!r} is above "
                             f"the card it runs as on, {target.label}: the capped allocator never holds that much, so "
                             "the budget would test nothing; lower it to the card or below, or drop it (it defaults to "
                             "the card)")


def _check_everywhere(blocks: Mapping[str, _PerDevice], where: str, scale: str) -> None:
    """Read every size, tolerance, expectation and origin given (top level: ""; cpu=, cuda=), at every scale, not
    only those the case runs under, so a bare number or a typo fails on any host and at any scale instead of passing
    unseen where unused."""
    for name, given in blocks.items():
        for key, value in (("ram", given.ram), ("vram", given.vram)):
            _need_unit(f"{name}[{key!r}]" if name else key, value, where)
            sizes_given(value, f"{key} budget in {name}=" if name else f"{key} budget", where)
        _tolerance(given.tolerance, where, scale, f"{name}['tolerance']" if name else "tolerance")
        for each in SCALES:
            _pick_expect(given.expect, each, where, f"{name}= expect" if name else "expect")
        _pick_origin(given.origin, scale, where, f"{name}= origin" if name else "origin")  # reads every scale's


def _unitless(value: SizeGiven) -> bool:
    """A number with no unit: an int or float (a numpy one too), or a string of digits alone ("4")."""
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real) and not isinstance(value, numbers.Rational)):
        return math.isfinite(value) and value >= 0  # a Fraction is written 5/2: no digits a hint could repeat
    return isinstance(value, str) and BARE.fullmatch(value) is not None


def _need_unit(label: str, value: SizeGiven, where: str) -> None:
    """A budget states its unit: parse_size reads a bare number as bytes (ram=4 is 4 bytes), which a budget never
    means, so it is refused with the figure it most likely meant."""
    for scale, size in value.items() if isinstance(value, Mapping) else [(None, value)]:
        refuse_bare(f"{label} budget", size, where, scale)


def refuse_bare(what: str, size: SizeGiven, where: str, scale: str | None = None, unit: str = "GiB") -> None:
    """Refuse a size with no unit (a budget's, a tolerance's abs), suggesting `unit`, or bytes where it is that large."""
    if not _unitless(size):
        return
    number = str(size).strip()
    if "e" in number.lower():  # 1e16: a size is written without an exponent, so the hint gives the digits
        number = f"{float(number):.0f}" if float(number).is_integer() else f"{float(number):f}".rstrip("0")
    at = f" at scale {scale!r}" if scale is not None else ""
    hint = (f'"{number} B" ({format_size(float(number))}) if bytes are meant' if float(number) >= 2**10
            else f'"{number} {unit}"')
    raise ValueError(f"{where}{': ' if where else ''}{what} {size!r}{at} is a bare number: give it a unit, e.g. {hint}")


def _pick_expect(value: NameGiven, scale: str, where: str, label: str = "expect") -> str | None:
    """expect= is one value, or {scale: value}; either way checked against EXPECTABLE (`label`: where it was given)."""
    if isinstance(value, Mapping):
        unknown = set(value) - set(SCALES)
        if unknown:
            raise ValueError(f"{where}: {label} names unknown scale(s) {sorted(unknown)} (known: {SCALES})")
        value = value.get(scale)
    if value is not None and value not in EXPECTABLE:
        raise ValueError(f"{where}: {label}={value!r} is not one of {EXPECTABLE}")
    return value


def _pick_origin(value: NameGiven, scale: str, where: str, label: str = "origin") -> str | None:
    """origin= is one key of ORIGINS, or {scale: key}; every scale's key is checked, so a typo fails on any scale."""
    per_scale = value if isinstance(value, Mapping) else {scale: value}
    unknown = set(per_scale) - set(SCALES)
    if unknown:
        raise ValueError(f"{where}: {label} names unknown scale(s) {sorted(unknown)} (known: {SCALES})")
    for bad in (v for v in per_scale.values() if v is not None and (not isinstance(v, str) or v not in ORIGINS)):
        raise ValueError(f"{where}: {label}={bad!r} is not one of {tuple(ORIGINS)}")
    return per_scale.get(scale)


def _pick_steps(value: StepsGiven, scale: str, where: str) -> int | None:
    """steps= is one run length, or {scale: length}; every scale's value is checked, so a typo fails on any scale. A
    numpy integer is the whole number it holds (no int subclass, it was refused as none)."""
    per_scale = value if isinstance(value, Mapping) else {scale: value}
    unknown = set(per_scale) - set(SCALES)
    if unknown:
        raise ValueError(f"{where}: steps names unknown scale(s) {sorted(unknown)} (known: {SCALES})")
    for bad in (v for v in per_scale.values()
                if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1)):
        raise ValueError(f"{where}: steps={bad!r} is not a positive whole number of optimizer steps (the real run's "
                         "length, e.g. steps=10_000 or steps={'tiny': 10_000, 'real': 50_000})")
    chosen = per_scale.get(scale)
    return None if chosen is None else int(chosen)


def expectation_problem(mark: BudgetMark, scale: str) -> str | None:
    """Why this mark's expectation cannot be judged: a reproduction of an over-budget failure needs a budget."""
    if mark.expect == "over-budget" and mark.budget.ram is None and mark.budget.vram is None:
        return (f"expect='over-budget' on {mark.device} at scale {scale!r}, but no ram or vram budget applies there: "
                f"a reproduction needs a budget to break (declare one in {mark.device}={{...}}, or set its expect "
                f"for this scale to None)")
    card, vram = mark.card if mark.device == "cuda" else None, mark.budget.vram
    if mark.expect == "over-budget" and card is not None and vram is not None and vram > card.capacity and mark.budget.ram is None:
        return (f"expect='over-budget' rests on the VRAM budget {format_size(vram)}, above card={card.given!r} "
                f"({card.label}), whose cap every host applies: the allocated peak cannot pass the cap, so the "
                "reproduction would test nothing (an out-of-memory death under it shows only that the card is smaller "
                "than the budget); lower vram= to the card's memory, or name a card that holds the budget")
    return None


def merge(markers: Iterable[tuple[tuple[Given, ...], Mapping[str, Given]]], where: str = "") -> dict[str, Given]:
    """One set of gpu_budget arguments from several markers, outermost first (module, class, function,
    parametrize): a closer marker overrides the keys it names and keeps the rest, so a param's
    tolerance refines a function's budget instead of being silently dropped; a cpu= / cuda= block, which holds
    such keys, refines the farther block of its device the same way, and a {scale: value} mapping refines the
    farther value scale by scale (a test's ram={"real": ...} keeps its module's tiny budget)."""
    merged: dict[str, Given] = {}
    for args, kwargs in markers:
        if len(args) > 2:
            raise ValueError(f"{where}: gpu_budget takes at most two positional arguments (ram, vram), got {args!r}")
        for unknown in (key for key in kwargs if key not in KEYWORDS):
            close = difflib.get_close_matches(unknown, KEYWORDS, n=1)
            guess = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{where}: gpu_budget marker has an unknown keyword {unknown!r}{guess}; its keywords are "
                             f"{', '.join(KEYWORDS)}")
        for (key, value), which in zip(zip(("ram", "vram"), args), ("first", "second")):
            if key in kwargs:  # a call would refuse it (multiple values); merging kept the keyword's unseen
                raise ValueError(f"{where}: gpu_budget marker gives {key} twice: {value!r} as its {which} argument and "
                                 f"{key}={kwargs[key]!r}; give it once")
        for key, value in {**dict(zip(("ram", "vram"), args)), **kwargs}.items():  # a size by position is its keyword
            farther = merged.get(key)
            if key in DEVICES and isinstance(farther, Mapping) and isinstance(value, Mapping):
                # a block holds marker keys: a test's cpu={"tolerance": ...} keeps its budget
                value = {**farther, **{k: _by_scale(k, farther.get(k), v) for k, v in value.items()}}
            merged[key] = _by_scale(key, farther, value)
    return merged


def refuse_params_at_odds(params: list[tuple[tuple[Given, ...], Mapping[str, Given]]], where: str = "") -> None:
    """The gpu_budget marks a test's params give (stacked parametrize, or one param's marks=[...]) name one case
    together, none closer to it than another: merged in pytest's order the farther decorator's won unsaid. A key they
    set apart merges; one they set differently has no winner, so it is refused, naming the values."""
    if len(params) < 2:
        return
    forward, backward = merge(params, where), merge(params[::-1], where)
    for key in (key for key in forward if forward[key] != backward[key]):
        given = [kwargs.get(key, dict(zip(("ram", "vram"), args)).get(key)) for args, kwargs in params]
        values = " and ".join(repr(value) for value in given if value is not None)
        raise ValueError(f"{where}: the gpu_budget marks of two parametrize params set {key} differently ({values}): "
                         "the params name this case together and neither is closer to it, so neither wins; set "
                         f"{key} in one parametrize's params only, or parametrize the arguments together in one")


PER_SCALE = ("ram", "vram", "expect", "origin", "steps", "card")  # the keys that take {scale: value}


def _by_scale(key: str, farther: Given, closer: Given) -> Given:
    """A closer {scale: value} over the farther value of `key`, scale by scale: the scales it leaves out keep the
    farther's (one value there stands for every scale); {scale: None} drops that scale's, and a closer single value
    replaces every scale's."""
    if key not in PER_SCALE or not isinstance(closer, Mapping) or farther is None:
        return closer
    return {**(farther if isinstance(farther, Mapping) else dict.fromkeys(SCALES, farther)), **closer}


# The keywords a marker may give: gpu_budget's parameters less those the session passes (scale, host, where, runner:
# this runner's GPU, its name and total as the probe child read them, which a card= of that GPU's name runs at).
KEYWORDS = tuple(name for name in inspect.signature(gpu_budget).parameters
                 if name not in ("scale", "host", "where", "runner"))


def default_tolerance(scale: str) -> Tolerance:
    """The default tolerance at `scale`: its own where its spread was measured, else the tiny one."""
    return DEFAULT_TOLERANCE_BY_SCALE.get(scale, DEFAULT_TOLERANCE)


TOLERANCE_FORMS = ("e.g. {'rel': 0.02, 'abs': '16 MiB'}: rel a fraction from 0 up to (not including) 10, abs a size with its unit, "
                   "either alone, the other the scale's default")


@dataclass(frozen=True)
class _ToleranceGiven:
    """A marker's tolerance={...} as written, checked, then read; a key it leaves out is _UNSET (the scale's default)."""

    rel: object
    abs: object


_UNSET = object()  # a tolerance key not given


def _tolerance(value: ToleranceGiven, where: str, scale: str = "tiny", label: str = "tolerance") -> Tolerance:
    """A marker's tolerance= over the scale's default; `label` names where it was given (tolerance, cuda['tolerance'])."""
    default = default_tolerance(scale)
    if value is None:
        return default
    if not isinstance(value, Mapping) or set(value) - {"rel", "abs"}:
        raise ValueError(f"{where}: {label} must be a mapping of rel, abs ({TOLERANCE_FORMS}); got {_not_tolerance(value)}")
    given = _ToleranceGiven(**{"rel": _UNSET, "abs": _UNSET, **value})
    return Tolerance(default.rel if given.rel is _UNSET else _rel(given.rel, where, label),
                     default.abs if given.abs is _UNSET else _abs(given.abs, where, label))


def _not_tolerance(value: Given) -> str:
    """What a tolerance= that is no mapping of rel and abs holds instead, and what a lone number likely meant."""
    if isinstance(value, Mapping):
        return f"unknown key(s) {sorted(set(value) - {'rel', 'abs'}, key=repr)!r}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value!r} (a number alone is no tolerance: {{'rel': {value!r}}} for a fraction)"
    return repr(value)


def _rel(value: Given, where: str, label: str) -> float:
    """A tolerance's rel: a fraction. A whole number of 1 or more ({"rel": 5}) is a percentage written as one, read as
    500 %, under which a run six times its baseline passed: refused; a multiple is written as a float (5.0)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 10:
        raise ValueError(f"{where}: {label} rel {value!r} is not a fraction from 0 up to (not including) 10 ({TOLERANCE_FORMS})")
    if isinstance(value, int) and value >= 1:
        raise ValueError(f"{where}: {label} rel {value!r} is {value * 100} %, not {value} %: rel is a fraction, "
                         f"{{'rel': {value / 100}}} for {value} % (write {float(value)!r} where {value * 100} % is meant)")
    return float(value)


def _abs(value: Given, where: str, label: str) -> int:
    """A tolerance's abs follows the budgets' rule: a size with its unit ({"abs": 16} is not 16 bytes)."""
    refuse_bare(f"{label} abs", value, where, unit="MiB")
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ValueError(f"{where}: bad {label} abs: {exc}") from None


PROBE = "gpu_budget_probe"  # the marker of a test that only probes (peak(), no verdict)
PROBE_HELP = (f"{PROBE}: an unjudged probe of a finding (gpu_budget.peak() only, no verdict, its assertions "
              "the finding): skipped unless --gpu-budget-probes, so the gate runs the cases that get a verdict.")


def marker_help() -> str:
    params = ", ".join(str(p) for p in inspect.signature(gpu_budget).parameters.values() if p.name in KEYWORDS)
    return f"gpu_budget({params}): " + " ".join(gpu_budget.__doc__.split())
