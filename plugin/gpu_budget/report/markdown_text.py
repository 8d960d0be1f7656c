"""Text nobody chose (a node id, a label, a message) shown as written in GitHub markdown."""

from __future__ import annotations

import re

_ACTIVE = re.compile(r"[\\`*<>&|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # '_' inside a word is never emphasis


def inline(text: str) -> str:
    """`text` with each character escaped that would start code, emphasis, strikethrough, HTML (GitHub's sanitiser
    eats `<script>` whole) or, in a table, the next cell ('|'): a reader sees the characters, not their effect."""
    return _ACTIVE.sub(lambda found: "\\" + found.group(), text)


def code(text: str) -> str:
    """`text` as one code span, whatever backticks it holds: fenced by one more backtick than its longest run."""
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(text: str) -> str:
    """An author's sentence (a note) on one line, its markdown kept but no HTML: a newline would end its list item
    (a '# ...' after it a heading) and GitHub's sanitiser would eat or apply a tag."""
    return re.sub(r"([<&])", r"\\\1", " ".join(text.splitlines()))
