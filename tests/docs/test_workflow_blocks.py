"""Every ```yaml block of README.md and docs/ that is GitHub Actions steps passes actionlint, as the workflows do.

A user pastes such a block into a workflow; one naming an action whose runtime GitHub removed (node20's
actions/cache@v4), an unknown key or a broken expression fails their first run, far from this page.
tests/integration/test_workflows.py lints .github/workflows/; this lints what the pages show.
"""

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

from dev_tools import tool
from doc_figures import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
YAML_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", flags=re.MULTILINE | re.DOTALL)
STEP = re.compile(r"^\s*- (uses|run|name):", flags=re.MULTILINE)


def workflow_blocks(page: Path) -> list[tuple[int, str]]:
    """Each yaml block of a page that is a workflow (`jobs:`) or a job's steps, with the line its text begins on."""
    text = page.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1)) for m in YAML_BLOCK.finditer(text)
            if "jobs:" in m.group(1) or STEP.search(m.group(1))]


def as_workflow(block: str) -> str:
    """A block of steps set in a job of its own; a whole workflow as it is."""
    if re.search(r"^jobs:", block, flags=re.MULTILINE):
        return block
    steps = textwrap.indent(textwrap.dedent(block), " " * 6)
    return f"on: pull_request\njobs:\n  block:\n    runs-on: ubuntu-latest\n    steps:\n{steps}"


def lint(blocks: dict[str, str], where: Path) -> str:
    """actionlint's findings (with shellcheck on the run: scripts) on each block, under the name it is given."""
    folder = where / ".github" / "workflows"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / ".github" / "actionlint.yaml", where / ".github")
    names = []
    for i, (name, block) in enumerate(blocks.items()):
        path = folder / f"block{i}.yml"
        path.write_text(as_workflow(block))
        names.append((str(path.relative_to(where)), name))
    ran = subprocess.run([tool("actionlint"), "-no-color", "-oneline", "-shellcheck", tool("shellcheck"),
                          *(path for path, _ in names)], cwd=where, check=False, capture_output=True, text=True,
                         timeout=120)
    found = ran.stdout + ran.stderr
    for path, name in names:
        found = found.replace(path, name)
    assert ran.returncode in (0, 1), found
    return found


def test_every_workflow_block_in_the_docs_passes_actionlint(tmp_path):
    blocks = {f"{page.relative_to(ROOT)}:{line}": block for page in PAGES for line, block in workflow_blocks(page)}
    assert "docs/estimator.md" in " ".join(blocks), blocks  # the explorations' cache, at least
    found = lint(blocks, tmp_path)
    assert not found, found


def test_the_check_sees_a_removed_runtime_and_a_shellcheck_finding(tmp_path):
    planted = "      - uses: actions/cache@v4\n        with:\n          path: x\n          key: k\n      - run: cd $HOME/$X\n"
    found = lint({"planted.md:1": planted}, tmp_path)
    assert "planted.md:1" in found and 'update the version of action "actions/cache@v4"' in found, found
    assert "shellcheck reported issue" in found, found
