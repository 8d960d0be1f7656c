"""Every ```python example of README.md and docs/ that the gate would import imports, and its markers are read.

test_code_blocks.py checks that a block can be pasted (each name defined); this one runs it as pytest would import it:
its Scenarios and Fixes are built (a renamed keyword, a refused param or fix, a case study's Scenario renamed), its
gpu_budget markers are read as the session reads them at each scale on either device (a bare-number budget, a
`card=` in GB, a VRAM budget above its card), and its calls of the fixture are held to the fixture's signature
(`measure(S, lable=...)`). A block that builds nothing the gate imports (a training script run as a command, whose
module level is its training) is left to the gate. One fresh Python runs them all (block_check.py): the blocks
register fixes and import torch, which the test session must not share.
"""

import ast
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from doc_figures import ROOT, python_blocks

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BUILDERS = {"Scenario", "Fix", "Environment"}


def imported_by_the_gate(source: str) -> bool:
    """A test module, a runner module, or one that builds a Scenario, a Fix or an Environment."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (node.name.startswith("test_") or node.name in ("run", "prepare")):
            return True
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in BUILDERS:
            return True
    return False


def problems_of(blocks: list[dict]) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "plugin"), str(ROOT / "memtests")])}
    done = subprocess.run([sys.executable, str(ROOT / "tests/docs/block_check.py")], input=json.dumps(blocks),
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_each_example_the_gate_would_import_imports_and_its_markers_are_read():
    if importlib.util.find_spec("torch") is None:  # fixes.md's runner imports it at its top, as a runner may
        pytest.skip("torch is not installed: the examples' runners import it")
    blocks = [{"where": f"{page.relative_to(ROOT)}:{line}", "source": source}
              for page in PAGES for line, source in python_blocks(page) if imported_by_the_gate(source)]
    assert len(blocks) >= 10, [b["where"] for b in blocks]  # the examples of README, declaring, fixes, scenario-api, ...
    problems = problems_of(blocks)
    assert not problems, "examples the gate would refuse:\n" + "\n".join(problems)


def test_the_check_sees_a_renamed_keyword_a_refused_marker_and_a_misspelt_fixture_argument():
    planted = '''
import sys
import pytest
from gpu_budget import Scenario

OK = Scenario(name="ok", command=[sys.executable, "train.py"])

@pytest.mark.gpu_budget(ram=4)
def test_bare(gpu_budget):
    gpu_budget.measure(OK, lable="x")
'''
    renamed = 'from gpu_budget import Scenario\nS = Scenario(name="s", comand=["x"])\n'
    found = problems_of([{"where": "planted:1", "source": planted}, {"where": "planted:2", "source": renamed}])
    # each names the line on its page: the block at line 1 calls measure() on its 10th, the one at 2 builds on its 2nd
    assert len(found) == 3, found
    assert found[0].startswith("its marker is refused: ValueError: planted:1::test_bare: ram budget 4 is a bare number")
    assert found[1] == "planted:10: gpu_budget.measure(): got an unexpected keyword argument 'lable'"
    assert found[2].startswith("planted:3: importing the block raised TypeError: ") and "'comand'" in found[2]
    assert not imported_by_the_gate("import gpu_budget\ngpu_budget.step()\n")  # a script the gate runs as a command
