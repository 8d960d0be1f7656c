"""A text table as a terminal shows it: tabulate's, a wide character (CJK, an emoji) counted as the two columns it takes.

tabulate pads by len() unless the wcwidth package is importable, so without it
a node id or label holding one ran its row past the others' columns. Where
wcwidth is missing, tabulate is handed, for the call, the standard library's
reading of a character's width (unicodedata's East Asian width) in its place.
"""

from __future__ import annotations

import contextlib
import unicodedata
from collections.abc import Iterator, Sequence
from types import ModuleType

ZERO_WIDTH = ("Mn", "Me", "Cf")  # combining marks, enclosing marks, format characters (a joiner, a variation selector)


def display_width(text: str) -> int:
    """The columns `text` takes on a terminal: two for a wide or full-width character, none for a zero-width one."""
    return sum(0 if unicodedata.category(c) in ZERO_WIDTH else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


class _Widths:
    """What tabulate reads of the wcwidth module."""

    wcswidth = staticmethod(display_width)


def tabulated(rows: Sequence[Sequence[object]], headers: Sequence[str], **options: object) -> str:
    """tabulate(rows, headers, **options), its columns aligned as the terminal shows them."""
    import tabulate

    with _wide_characters(tabulate):
        return tabulate.tabulate(rows, headers=headers, **options)


@contextlib.contextmanager
def _wide_characters(module: ModuleType) -> Iterator[None]:
    if getattr(module, "wcwidth", False) is not None:  # wcwidth installed (or a tabulate that reads no such name)
        yield
        return
    mode = module.WIDE_CHARS_MODE
    module.wcwidth, module.WIDE_CHARS_MODE = _Widths, True
    try:
        yield
    finally:
        module.wcwidth, module.WIDE_CHARS_MODE = None, mode
