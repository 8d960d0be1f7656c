"""The inner sessions test this checkout: they import its gpu_budget, whatever else is installed or on PYTHONPATH,
and keep the PYTHONPATH they were given behind it (tests/conftest.py, inner_pythonpath)."""

import json
import os
import shutil
from pathlib import Path

CHECKOUT_PLUGIN = Path(__file__).resolve().parents[2] / "plugin"

WHERE = '''
import importlib.util
import json

import gpu_budget


def where():
    """Which gpu_budget this process imported, and whether it sees the module only the given PYTHONPATH holds."""
    return {"gpu_budget": gpu_budget.__file__, "given": importlib.util.find_spec("only_on_the_given_path") is not None}


def run(ctx):
    with open(ctx.params["out"], "w") as fh:
        json.dump(where(), fh)
'''

TESTS = '''
import json
import where


@pytest.mark.gpu_budget(vram="8 GiB")
def test_where(gpu_budget):
    with open("session.json", "w") as fh:
        json.dump(where.where(), fh)
    gpu_budget.measure(Scenario(name="where", run="where:run", params={"out": "child.json"}))
'''


def test_fake_cuda_sessions_import_this_checkout_and_keep_the_given_pythonpath(request, tmp_path, monkeypatch):
    """Run with a PYTHONPATH that points elsewhere first: another copy of gpu_budget (a second checkout, or a wheel a
    GPU host carries there) and a module only that path holds. The inner session and its measured child import this
    checkout's gpu_budget and still find the given path's module (the fixture once replaced PYTHONPATH: they imported
    the installed gpu_budget and lost the given path)."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(CHECKOUT_PLUGIN / "gpu_budget", elsewhere / "gpu_budget",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (elsewhere / "only_on_the_given_path.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(elsewhere), os.environ.get("PYTHONPATH", "")]))
    pytester = request.getfixturevalue("fake_cuda")(TESTS)  # set up after the PYTHONPATH above, as a run given it
    pytester.makepyfile(where=WHERE)
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)
    for name in ("session.json", "child.json"):  # the inner pytest process, and the measured child of its forkserver
        seen = json.loads((pytester.path / name).read_text())
        assert Path(seen["gpu_budget"]).resolve().is_relative_to(CHECKOUT_PLUGIN), (name, seen)
        assert seen["given"], (name, seen)
