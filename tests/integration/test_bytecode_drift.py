"""A run whose children compile the libraries from source, against a baseline whose children loaded their bytecode:
the fingerprint's `bytecode` field, read by a real probe child of the forkserver, and the row that names it.

The library is the stand-in torch of the fake_cuda project (tests/fake_torch.py), preloaded by the forkserver
from the project folder, so what is on disk is this test's doing, not the environment's.
"""

import json
import shutil

SCENARIO = '''
@pytest.mark.gpu_budget(vram="8 GiB")
def test_gpu(gpu_budget):
    gpu_budget.measure(S(1))
'''


def _run(pytester):
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    report = json.loads((pytester.path / "r.json").read_text())
    (row,) = report["results"]
    return result, report["hardware"], row


def test_children_that_compile_from_source_are_named_against_a_baseline_that_loaded_bytecode(fake_cuda, monkeypatch):
    pytester = fake_cuda(SCENARIO)
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # the forkserver's import writes torch's .pyc
    result, hardware, row = _run(pytester)
    result.assert_outcomes(passed=1)
    assert hardware["bytecode"] == "cached", hardware["bytecode_seen"]
    assert hardware["bytecode_seen"].endswith("bytecode writes on"), hardware["bytecode_seen"]
    (stored,) = (pytester.path / "baselines").rglob("test_mem.json")
    (entry,) = json.loads(stored.read_text())["entries"]["tiny"].values()
    assert entry["fingerprint"]["bytecode"] == "cached", entry["fingerprint"]
    assert "compiled from source in the measured children" not in result.stdout.str()

    # a host that sets PYTHONDONTWRITEBYTECODE=1 over an install without bytecode: every child compiles torch's source
    shutil.rmtree(pytester.path / "__pycache__")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    result, hardware, row = _run(pytester)
    result.assert_outcomes(passed=1)  # VRAM, an exact metric, is still compared, and holds
    assert hardware["bytecode"] == "source" and "bytecode writes off" in hardware["bytecode_seen"], hardware
    assert not list((pytester.path / "__pycache__").glob("torch.*.pyc"))
    (changed,) = row["fingerprint_changed"]
    assert changed.startswith("bytecode cached -> source (the libraries' modules loaded from their .pyc in the "
                              "baseline's run, compiled from source in this one: 0 of 1 modules"), changed
    assert row["setup"]["policy"] == "foreign" and "ram_tree" not in row["change"], row
    assert "setup differs from the baseline's: bytecode cached -> source" in row["message"], row["message"]
    assert "run without PYTHONDONTWRITEBYTECODE" in row["message"], row["message"]
    # said in the section's head too, as a first run with no baseline to differ from would say it
    said = ("bytecode: the libraries' modules compiled from source in the measured children (0 of 1 modules*): their "
            "host RAM peaks hold the compiler's memory*uv's --compile-bytecode*")
    result.stdout.fnmatch_lines([said])
