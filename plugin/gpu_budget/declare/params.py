"""A scenario's knobs as the values they are: plain JSON, since they cross into a measured child and a baseline as JSON."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

from gpu_budget.declare.refused import refusal
from gpu_budget.model.budget import SCALES
from gpu_budget.model.json_value import Json, check_strict

__tracebackhide__ = refusal  # a refused declaration in a test fails at the test's line (refused.py)

Params: TypeAlias = "dict[str, Json]"  # knob name -> value (batch size, clip seconds, a model name, ...)
# the params of planted regressions (prove the gate can fail), read by a runner's measured child (isolate/child.py):
# retained, touched bytes for the whole run, as a bytes object (host RAM sees it) or as a tensor made under the
# tracker (host RAM and tensor bytes see it)
PLANT_BYTES, PLANT_TENSOR_BYTES = "plant_bytes", "plant_tensor_bytes"
NEEDS_CUDA = "needs_cuda"  # True skips the scale (or, in params=, every scale) on a host without CUDA; never a knob


def knobs(given: Mapping[str, Json], where: str, label: str = "params") -> Params:
    """`given` as a dict, each knob checked as its baseline entry will write it (sorted JSON): a set, a numpy number
    or keys json cannot sort would otherwise pass the child and crash the session at the baseline write."""
    if not isinstance(given, Mapping):
        said = f"{where}: {label}={given!r}: expected a mapping of knob name to value, e.g. {{'batch_size': 1}}"
        raise ValueError(said)  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
    out = dict(given)
    for key, value in out.items():
        if not isinstance(key, str):
            raise ValueError(f"{where}: {label} names a knob {key!r}: a knob's name is a string")  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
        if key != key.strip():  # " needs_cuda" was a knob of its own: the case ran, unskipped, where CUDA was wanted
            raise ValueError(f"{where}: {label} names a knob {key!r}: spaces at its ends make it another knob than "
                             f"{key.strip()!r}, which a placeholder or the runner reads")
        if key == NEEDS_CUDA and not isinstance(value, bool):  # "false" would read as true and skip the case
            raise ValueError(f"{where}: {label}[{key!r}]={value!r}: expected True or False")
        try:
            check_strict(value)  # NaN, inf: json would write what no reader reads; a key 1 would come back "1"
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {label}[{key!r}]={value!r} is no JSON value ({exc}): a knob crosses into the "
                             "measured child and its baseline entry as JSON; give a string, finite number, bool, None, "
                             "or a list or dict of them") from None
    return out


def scale_knobs(given: Mapping[str, Mapping[str, Json]], where: str) -> dict[str, Params]:
    """A Scenario's scales= as {scale: its knobs}, each scale's checked as params= is. A scale the gate never runs
    (--gpu-budget-scale is tiny or real) is refused: a typo ("reel") would skip the case at that scale for good."""
    if not isinstance(given, Mapping):
        said = (f"{where}: scales={given!r}: expected a mapping of scale to the params laid over params= there, e.g. "
                "{'tiny': {'hidden': 64}, 'real': {'hidden': 768}}")
        raise ValueError(said)  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
    unknown = sorted((str(scale) for scale in given if scale not in SCALES), key=str)
    if unknown:
        raise ValueError(f"{where}: scales names unknown scale(s) {unknown} (known: {', '.join(SCALES)}, the "
                         "values of --gpu-budget-scale)")
    return {scale: knobs(over, where, f"scales[{scale!r}]") for scale, over in given.items()}


def knob_names(given: str | Iterable[str] | None, where: str, label: str = "prepared_from") -> tuple[str, ...]:
    """Names of knobs as given: a bare name is one (prepared_from=("hidden") is a string, not its letters, which
    would hand prepare none of the knobs it named), None is none (the default: every knob), and each name is a string."""
    if given is not None and (not isinstance(given, Iterable) or isinstance(given, bytes | Mapping)):
        raise ValueError(f"{where}: {label}={given!r}: expected names of knobs ({label}=('hidden', 'layers'))")
    names = () if given is None else (given,) if isinstance(given, str) else tuple(given)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"{where}: {label} names {name!r}: a knob's name is a string")  # noqa: TRY004  a declaration's bad value: ValueError, as for every Scenario field
    return names
