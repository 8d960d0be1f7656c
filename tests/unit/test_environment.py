"""A case's own environment, made for real from the registry: tabulate (one pure-Python module) at another version
than the running one, laid over the running environment (isolate/environment.py)."""

import gc
import json
import re
import subprocess
import sys
import threading
import time
from importlib import metadata
from pathlib import Path

import pytest
from at_once import at_once
from local_wheels import write_wheel

from gpu_budget.declare.environment import Environment
from gpu_budget.isolate import environment
from gpu_budget.isolate.environment import EnvironmentFailed, make

RUNNING_TABULATE = metadata.version("tabulate")
# a release other than the running one: 0.9.0, or 0.10.0 where 0.9.0 runs (the floor pyproject.toml declares)
OTHER = "0.10.0" if RUNNING_TABULATE == "0.9.0" else "0.9.0"
OLD = f"tabulate=={OTHER}"
SEEN = ("import json, tabulate, psutil, gpu_budget; print(json.dumps({'tabulate': tabulate.__version__, "
        "'from': tabulate.__file__, 'psutil': psutil.__file__}))")


def seen_by(python: str) -> dict:
    return json.loads(subprocess.run([python, "-c", SEEN], capture_output=True, text=True, check=True).stdout)


def test_an_environment_holds_only_what_differs_and_reads_the_rest_from_the_running_one(tmp_path, tool):
    made = make([OLD], tmp_path, tool)
    assert (made.overlay, made.named, made.tool, made.cached) == ({"tabulate": OTHER}, {"tabulate": OTHER},
                                                                   tool.name, False)
    seen = seen_by(made.python)
    assert seen["tabulate"] == OTHER and seen["from"].startswith(str(tmp_path))  # the overlay wins
    assert seen["psutil"].startswith(sys.prefix)  # everything else is the running environment's
    listed = sorted(p.name for p in Path(seen["from"]).parents[1].iterdir() if p.suffix == ".dist-info")
    assert listed == [f"tabulate-{OTHER}.dist-info"]  # only what differs was installed (torch was never fetched)


def test_a_made_environment_is_found_again_under_the_same_key(tmp_path):
    first = make([OLD], tmp_path)
    again = make([OLD], tmp_path)
    assert (again.key, again.python, again.cached, first.cached) == (first.key, first.python, True, False)
    assert again.seconds < first.seconds
    assert len(list((tmp_path / "resolved").glob("*.json"))) == 1  # the second resolved nothing: its inputs were kept


def test_workers_asking_at_once_make_it_once(tmp_path):
    made = []
    at_once(lambda: made.append(make([OLD], tmp_path)), 3)
    assert sorted(m.cached for m in made) == [False, True, True]
    assert len({m.python for m in made}) == 1
    # the one that made the venv waited on no other's venv; it may have waited on another's resolution, which
    # another thread can win before this one takes the venv's lock (a wait, counted as such)
    maker = next(m for m in made if not m.cached)
    assert maker.waited is None or maker.waited < maker.seconds
    # one that asked while it was being made says how long it waited (not a slow "found made")
    assert all((m.waited or 0) <= m.seconds for m in made) and any(m.waited for m in made if m.cached), made


def test_a_worker_that_waited_while_another_resolved_says_so(tmp_path, monkeypatch):
    """Resolving is part of making: one that waits on another's resolution (seconds, for a real release) and then
    finds the venv made counts that wait as waiting, not as a slow "found made"."""
    resolve = environment.resolve
    started = threading.Event()

    def slow_resolve(*args, **kwargs):
        started.set()
        time.sleep(1.0)
        return resolve(*args, **kwargs)

    monkeypatch.setattr(environment, "resolve", slow_resolve)
    made = []
    maker = threading.Thread(target=lambda: made.append(make([OLD], tmp_path)))
    maker.start()
    started.wait(30)
    finder = make([OLD], tmp_path)  # asks while the maker resolves
    maker.join()
    assert sorted((made[0].cached, finder.cached)) == [False, True]  # made once (by either, once resolved)
    assert finder.waited is not None and 0.5 <= finder.waited <= finder.seconds, finder


def test_a_venv_cut_off_while_made_is_made_again(tmp_path):
    made = make([OLD], tmp_path)
    (Path(made.python).parents[1] / environment.COMPLETE).unlink()
    again = make([OLD], tmp_path)
    assert again.cached is False and seen_by(again.python)["tabulate"] == OTHER
    assert (made.remade, again.remade) == (False, True)  # said: the report names the half-made one it replaced
    assert make([OLD], tmp_path).remade is False


def test_requirements_the_running_environment_satisfies_run_in_it(tmp_path):
    made = make([f"tabulate=={RUNNING_TABULATE}", "psutil"], tmp_path)
    assert (made.overlay, made.key, made.python) == ({}, "", sys.executable)
    assert made.named == {"tabulate": RUNNING_TABULATE, "psutil": metadata.version("psutil")}
    assert not list(tmp_path.glob("env-*"))


def test_a_requirement_that_cannot_resolve_is_an_error_naming_it(tmp_path, tool):
    with pytest.raises(EnvironmentFailed) as failed:
        make(["tabulate==0.0.999", "psutil"], tmp_path, tool)
    assert failed.value.kind == "resolve"
    assert str(failed.value).startswith("cannot resolve tabulate==0.0.999: ")  # the one at fault, not psutil
    assert not list(tmp_path.glob("env-*"))  # nothing made to fall back on


def test_another_torch_is_refused_without_downloading_it(tmp_path):
    with pytest.raises(EnvironmentFailed) as failed:
        make(["torch==2.12.0"], tmp_path)
    assert failed.value.kind == "torch"
    assert "need torch 2.12.0, not the running torch 2.13.0" in str(failed.value)
    assert not list(tmp_path.glob("env-*"))


def test_a_declared_environment_reads_its_file_and_names_a_bad_line(tmp_path):
    (tmp_path / "req.txt").write_text("# pins\ntabulate==0.9.0  # old\n\n")
    env = Environment(requirements=["psutil"], files=[str(tmp_path / "req.txt")])
    assert env.lines == ("psutil", "tabulate==0.9.0") and env.names == ("psutil", "tabulate")
    assert env.with_requirement("Tabulate==0.8.10").lines == ("psutil", "Tabulate==0.8.10")
    with pytest.raises(ValueError, match=r"requirement 'tabulate=0.9' is not a valid requirement"):
        Environment(requirements=["tabulate=0.9"])
    (tmp_path / "bad.txt").write_text("-c other.txt\n")
    with pytest.raises(ValueError, match=r"bad.txt': '-c other.txt': only requirement lines and -r includes are read"):
        Environment(files=[str(tmp_path / "bad.txt")])
    with pytest.raises(ValueError, match=r"requirements file '.*missing.txt' cannot be read"):
        Environment(files=[str(tmp_path / "missing.txt")])
    with pytest.raises(ValueError, match=r"give requirements="):
        Environment()
    with pytest.raises(TypeError, match=r"expected a list of strings"):
        Environment(requirements="tabulate==0.9.0")


def test_a_direct_reference_is_refused_where_it_is_declared(tmp_path):
    """An environment holds released versions (`NAME==VERSION` installed from an index or a wheelhouse): a requirement
    naming a URL (a fork's wheel, a git branch) cannot be honoured, and is named where it is declared."""
    with pytest.raises(ValueError, match=r"requirement 'tabulate @ file:///w/tabulate-0.9.0-py3-none-any.whl' is a "
                                         r"direct reference"):
        Environment(requirements=["tabulate @ file:///w/tabulate-0.9.0-py3-none-any.whl"])
    (tmp_path / "req.txt").write_text("tabulate @ git+https://example.invalid/tabulate@fix\n")
    with pytest.raises(ValueError, match=r"req.txt': requirement 'tabulate @ git\+https://.*' is a direct reference"):
        Environment(files=[str(tmp_path / "req.txt")])


def test_a_resolution_that_installs_from_a_url_fails_naming_it(tmp_path, tool):
    """Never an overlay that leaves the URL's package out (the case would run in the running environment instead,
    its record saying the running one satisfies it) nor one that installs the registry's build of its version."""
    fork = write_wheel(tmp_path / "fork", "3.0")
    with pytest.raises(EnvironmentFailed, match=r"cannot resolve gbtiny @ file://.*: gbtiny comes from a URL") as failed:
        environment.resolve([f"gbtiny @ {fork.as_uri()}"], tool, environment.running_versions())
    assert failed.value.kind == "resolve"


def test_a_package_needing_torch_keeps_the_running_torch_and_its_own_requirements(tool):
    """accelerate 1.7.0 needs torch: resolved over the running CPU torch, nothing of the registry's CUDA build of that
    torch version (its nvidia and triton packages, gigabytes) comes in."""
    running = environment.running_versions()
    if "torch" not in running or "+cpu" not in metadata.version("torch"):
        pytest.skip("needs the running environment's CPU torch (constraints/cpu.txt)")
    overlay = environment.resolve(["accelerate==1.7.0"], tool, running)
    assert overlay.get("accelerate") == "1.7.0" and "torch" not in overlay, overlay
    assert not [name for name in overlay if name.startswith(("nvidia-", "cuda-")) or name == "triton"], overlay


def test_a_running_package_whose_requirement_the_overlay_breaks_is_named():
    """An install into the running environment resolves only what the requirements pull in: a running package
    they leave in place may need another version of one they replace. Read from the running packages' own metadata."""
    if "transformers" not in set(requirers("huggingface-hub")):
        pytest.skip("needs the running transformers (the scenarios extra)")
    found = environment.conflicts({"huggingface-hub": "0.0.1"})
    assert any(c.startswith(f"transformers {metadata.version('transformers')} needs huggingface-hub") and
               c.endswith("(here 0.0.1)") for c in found), found
    assert not [c for c in found if c.startswith("huggingface-hub ")]  # the replaced package itself is not judged
    assert environment.conflicts({}) == ()
    held = metadata.version("huggingface-hub")
    assert not [c for c in environment.conflicts({"huggingface-hub": held}) if "huggingface-hub" in c]


def test_workers_reading_conflicts_from_threads_at_once_read_them_whole(switching):
    """packaging parses a marker's strings with ast.literal_eval, and CPython 3.11's AST constructor keeps one
    recursion depth for every thread: two threads building ASTs at once, one switched out mid-build (a garbage
    collection running Python code), raise "SystemError: AST constructor recursion depth mismatch" (seen in a CI
    run of the test above). The running requirements are read one thread at a time."""
    read, failed = [], []

    def ask():
        try:
            read.append(environment.conflicts({"packaging": "20.0", "tabulate": OTHER}))
        except SystemError as exc:
            failed.append(exc)

    at_once(ask, 2)
    assert failed == [] and len(read) == 2 and read[0] == read[1]


@pytest.fixture
def switching():
    """Threads switched as often as they can be, and at every few allocations' garbage collection (which runs
    Python code, so another thread may run mid-way through a C routine that allocates)."""
    interval, threshold = sys.getswitchinterval(), gc.get_threshold()
    switch = lambda *_: time.sleep(0)
    sys.setswitchinterval(1e-6)
    gc.set_threshold(20)
    gc.callbacks.append(switch)
    yield
    gc.callbacks.remove(switch)
    gc.set_threshold(*threshold)
    sys.setswitchinterval(interval)


def requirers(package: str):
    """The running packages that require `package`."""
    from packaging.requirements import InvalidRequirement, Requirement

    from gpu_budget.declare.environment import canonical

    for dist in metadata.distributions():
        for line in dist.requires or ():
            try:
                if canonical(Requirement(line).name) == package:
                    yield canonical(dist.metadata["Name"])
            except InvalidRequirement:
                continue


def test_an_environments_folder_that_cannot_be_written_is_named_not_a_traceback(tmp_path):
    """A folder that cannot be written (read-only, a full disk, under a file) fails the environment naming the
    folder and the option that moves it, as EnvironmentFailed (the case's row, the sweep's point), never an OSError
    from deep in a lock that loses the case's row."""
    (tmp_path / "a-file").write_text("")
    root = tmp_path / "a-file" / "envs"
    with pytest.raises(EnvironmentFailed) as failed:
        make([OLD], root)
    said = str(failed.value)
    assert failed.value.kind == "folder", said
    assert said.startswith(f"the environments folder {root} cannot be written (") and "--gpu-budget-envs" in said


def test_a_requirements_file_is_read_as_pip_reads_one(tmp_path):
    """pip's requirements-file syntax: a comment after any whitespace (a tab too), a line continued by a backslash,
    and `-r` / `--requirement` including another file, relative to the file that names it (once, however often)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.txt").write_text("# base\npsutil\t# a tab before the comment\n-r ../more.txt\n")
    (tmp_path / "more.txt").write_text("packaging \\\n  >=20\n--requirement=sub/base.txt\n")
    (tmp_path / "req.txt").write_text("-r sub/base.txt\ntabulate==0.9.0\n-rmore.txt\n")
    env = Environment(files=[str(tmp_path / "req.txt")])
    assert env.lines == ("psutil", "packaging >=20", "tabulate==0.9.0")
    (tmp_path / "broken.txt").write_text("-r missing.txt\n")
    with pytest.raises(ValueError, match=r"broken.txt': -r: requirements file '.*missing.txt' cannot be read"):
        Environment(files=[str(tmp_path / "broken.txt")])


def test_a_relative_requirements_file_that_cannot_be_read_names_where_it_was_looked_for(tmp_path, monkeypatch):
    """files=["sub/req.txt"] is read from pytest's working folder: a session started elsewhere (from the repository
    root, a CI step) said only "requirements file 'sub/req.txt' cannot be read", not where it looked."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=re.escape(f"requirements file 'sub/req.txt' ({tmp_path / 'sub' / 'req.txt'}, "
                                                   "relative to the working folder) cannot be read")):
        Environment(files=["sub/req.txt"])


def test_a_hashed_lock_file_is_refused_naming_its_option_not_called_invalid(tmp_path):
    """pip-compile and `uv pip compile --generate-hashes` write each pin with --hash options, which pip reads: the
    environment cannot check them (it installs NAME==VERSION), so the file is refused saying so, not as a line
    that is no PEP 508 requirement."""
    lock = tmp_path / "requirements.txt"
    lock.write_text(f"{OLD} \\\n    --hash=sha256:{'0' * 64} \\\n    --hash=sha256:{'1' * 64}\n    # via -r req.in\n")
    with pytest.raises(ValueError) as refused:
        Environment(files=[str(lock)])
    said = str(refused.value)
    assert "not a valid requirement" not in said, said
    assert "--hash" in said and "cannot check" in said and "--generate-hashes" in said, said
