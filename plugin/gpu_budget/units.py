"""Memory sizes as people write them ("12.7 GiB", "24GB", "512 MiB", 1048576).

GB, MB, KB, TB are powers of 10 (1 GB = 10**9 bytes); GiB, MiB, KiB, TiB are
powers of 2 (1 GiB = 2**30 bytes). A budget copied from a vendor sheet ("24 GB
card") and one copied from `nvidia-smi` (MiB) therefore both mean what they say.
"""

from __future__ import annotations

import re

KiB, MiB, GiB = 2**10, 2**20, 2**30  # the one definition of each (a figure divided by MiB is in MiB)

UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}

_SIZE = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?|\.\d+)\s*(?P<unit>[A-Za-z]*)\s*$", re.ASCII)


EXPECTED = "(expected e.g. '12.7 GiB', '24GB' or bytes)"  # an unreadable size's hint (a bare number is bytes here)


class SizeError(ValueError):
    """A size string that cannot be read; the message names the string."""


def parse_size(value: str | int) -> int:
    """Return the number of bytes `value` denotes, or raise SizeError naming it."""
    if isinstance(value, bool):
        raise SizeError(f"not a memory size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise SizeError(f"negative memory size: {value!r}")
        return value
    if not isinstance(value, str):
        raise SizeError(f"not a memory size: {value!r} {EXPECTED}")
    match = _SIZE.match(value)
    if match is None:
        raise SizeError(f"not a memory size: {value!r} {EXPECTED}")
    digits, written = match.groups()
    unit = written.lower() or "b"
    if unit not in UNITS:
        raise SizeError(
            f"unknown unit {written!r} in memory size {value!r} "
            "(known: B, KB, MB, GB, TB = powers of 10; KiB, MiB, GiB, TiB = powers of 2)"
        )
    if unit == "b" and digits.partition(".")[2].strip("0"):
        raise SizeError(f"not a whole number of bytes: {value!r} (write the bytes whole, or use a unit: '1.5 KiB')")
    nbytes = float(digits) * UNITS[unit]
    if nbytes == float("inf"):  # more digits than a float holds: round() would raise a bare OverflowError
        raise SizeError(f"memory size too large: {value!r}")
    return round(nbytes)


def format_size(nbytes: float | None) -> str:
    """Render bytes with binary units, e.g. 2254857830 -> '2.10 GiB'; None -> '-'."""
    if nbytes is None:
        return "-"
    sign = "-" if nbytes < 0 else ""
    n = abs(float(nbytes))
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor:
            return f"{sign}{n / factor:.2f} {unit}"
    return f"{sign}{int(n)} B"


def format_change(fraction: float, spec: str = "+.1%") -> str:
    """A relative change with its sign, e.g. '+2.0%', '-1.0%'; one that rounds to zero is '0.0%', signless: a
    '-0.0%' read as a fall (and a '+0.0%' as a rise) where nothing moved at the digits shown."""
    text = format(fraction, spec)
    return text.lstrip("+-") if not text.strip("+-0.%") else text


PER_STEP_KIB = 0.1 * MiB  # a growth per step below this is said in KiB: to a hundredth of a MiB it would round away


def format_per_step(nbytes: float, low: float | None = None) -> str:
    """A growth per step, e.g. 1.09 MiB/step, or 24.00 KiB/step below PER_STEP_KIB (GPU allocated's clean allowance
    is 20 KiB/step: in MiB to two places, 16 and 24 KiB/step, one steady and one growing, both read "0.02"); with
    `low`, the interval from it: "4.00 .. 44.00 KiB/step", the low end's unit named where it is not the high end's."""
    def said(n: float) -> tuple[str, str]:
        return (f"{n / KiB:.2f}", "KiB") if 0 < abs(n) < PER_STEP_KIB else (f"{n / MiB:.2f}", "MiB")

    value, unit = said(nbytes)
    if low is None:
        return f"{value} {unit}/step"
    start, start_unit = said(low)
    same = start_unit == unit or not low  # zero is zero in any unit
    return f"{start}{'' if same else ' ' + start_unit} .. {value} {unit}/step"


def format_mib(nbytes: float | None) -> str:
    """Render bytes in MiB to 0.1 MiB, e.g. 316669952 -> '302.0 MiB'; None -> '-'.

    For figures read beside a budget (an exploration's boundary is often a few
    MiB from it), where format_size's larger units would round the difference away.
    """
    return "-" if nbytes is None else f"{nbytes / 2**20:,.1f} MiB"
