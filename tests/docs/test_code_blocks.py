"""Every ```python block of README.md and docs/ can be pasted: it parses, and each name it uses is defined.

Each block stands alone: a user copies one example, not the page, so a name it uses that it does not define
(`sys` never imported, `S3` never said where from) is a NameError at collection. Values elided as `{...}` are
sets of Ellipsis that fail far from the page.
"""

import builtins
import symtable

import pytest
from doc_figures import ROOT, python_blocks

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def used_and_defined(source, where):
    """The global names the code reads (any scope) and those its module level binds."""
    table = symtable.symtable(source, where, "exec")
    used, defined = set(), set()
    for sym in table.get_symbols():
        if sym.is_imported() or sym.is_assigned() or sym.is_namespace():
            defined.add(sym.get_name())
        elif sym.is_referenced():
            used.add(sym.get_name())
    stack = list(table.get_children())
    while stack:
        scope = stack.pop()
        stack += scope.get_children()
        used |= {s.get_name() for s in scope.get_symbols() if s.is_global() and s.is_referenced()}
    return used, defined


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_each_python_block_defines_what_it_uses(page):
    known = {*dir(builtins), "__file__"}  # a module's own
    problems = []
    for line, source in python_blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        used, defined = used_and_defined(source, where)
        problems += [f"{where}: {name} is never defined" for name in sorted(used - known - defined)]
        problems += [f"{where}: an elided value {{...}} runs as a set"] if "{...}" in source else []
    assert not problems, "blocks a user cannot paste: " + "; ".join(problems)


def test_the_check_sees_a_missing_import_and_a_name_from_an_earlier_function():
    used, defined = used_and_defined("import os\ndef f():\n    return sys.argv, os.sep, g()\n", "planted")
    assert used - defined - set(dir(builtins)) == {"sys", "g"} and "f" in defined
