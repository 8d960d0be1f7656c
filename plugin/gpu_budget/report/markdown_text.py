"""Text nobody chose (a node id, a label, a message) shown as written in GitHub markdown."""

from __future__ import annotations

import re

_ACTIVE = re.compile(r"[\\`*<>&|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")  # '_' inside a word is never emphasis


def inline(text: str) -> str:
    """`text` with each character escaped that would start code, emphasis, strikethrough, HTML (GitHub's sanitiser
    eats `<script>` whole) or, in a table, the next cell ('|'): a reader sees the characters, not their effect."""
    return _ACTIVE.sub(lambda found: "\\" + found.group(), text)
