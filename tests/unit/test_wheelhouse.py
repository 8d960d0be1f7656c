"""A case's environment made from carried wheels alone (GPU_BUDGET_WHEELHOUSE, isolate/wheelhouse.py): what a GPU host
without a package index does. The folder is the resolution: no index is read (the one set here cannot be reached),
its wheels the running environment lacks are installed, and a requirement of theirs the folder left out is named."""

import json
import subprocess
from importlib import metadata

import pytest
from local_wheels import write_wheel

from gpu_budget.isolate.env_failures import EnvironmentFailed
from gpu_budget.isolate.environment import find_tool, make
from gpu_budget.isolate.wheelhouse import VARIABLE, Wheelhouse

RUNNING_TABULATE = metadata.version("tabulate")


@pytest.fixture
def unreachable(monkeypatch, tmp_path):
    """Every index the installers could read is a folder that does not exist: only the wheelhouse can serve."""
    for key in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"):
        monkeypatch.setenv(key, (tmp_path / "no-index").as_uri())
    for key in ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "UV_FIND_LINKS", "UV_INDEX"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize("tool", ["pip", "uv"])
def test_an_environment_is_made_from_the_wheelhouse_alone_and_names_what_it_left_out(tmp_path, monkeypatch,
                                                                                     unreachable, tool):
    try:
        tool = find_tool(tool)
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    house = tmp_path / "house"
    write_wheel(house, "1.0", requires=("gbabsent>=2", "tabulate"))  # gbabsent: the trimmed part, never imported
    write_wheel(house, RUNNING_TABULATE, name="tabulate")  # the running version: not installed again
    monkeypatch.setenv(VARIABLE, str(house))
    made = make(["gbtiny==1.0"], tmp_path / "envs", tool)
    assert made.overlay == {"gbtiny": "1.0"} and made.named == {"gbtiny": "1.0"}
    assert made.conflicts == ("gbtiny 1.0 needs gbabsent>=2 (here none)",)
    assert made.tool.startswith(f"{tool.name}, wheels from {house.resolve()} (")
    seen = subprocess.run([made.python, "-c", "import gbtiny, json; print(json.dumps(gbtiny.__file__))"],
                          capture_output=True, text=True, check=True).stdout
    assert json.loads(seen).startswith(str(tmp_path / "envs"))  # the carried wheel, installed in the overlay
    assert make(["gbtiny==1.0"], tmp_path / "envs", tool).cached is True


def test_a_requirement_neither_the_wheelhouse_nor_the_running_environment_meets_is_named(tmp_path, monkeypatch):
    house = tmp_path / "house"
    write_wheel(house, "1.0")
    monkeypatch.setenv(VARIABLE, str(house))
    with pytest.raises(EnvironmentFailed, match=r"cannot resolve gbtiny==2\.0 from .*: it holds gbtiny 1\.0, and "
                                                r"the running environment lacks it") as failed:
        make(["gbtiny==2.0"], tmp_path / "envs", find_tool("pip"))
    assert failed.value.kind == "wheels"
    assert not (tmp_path / "envs" / "failed").exists()  # instant: not remembered, a fixed folder is read next time
    with pytest.raises(EnvironmentFailed, match=r"no wheel of gbother, and the running environment lacks it"):
        make(["gbother"], tmp_path / "envs", find_tool("pip"))


def test_a_running_version_satisfies_without_a_wheel(tmp_path):
    write_wheel(tmp_path, "1.0")
    house = Wheelhouse.read(tmp_path)
    assert house.overlay([f"tabulate=={RUNNING_TABULATE}", "gbtiny>=1"], {"tabulate": RUNNING_TABULATE}) == \
        {"gbtiny": "1.0"}
    assert house.overlay(['gbtiny; python_version < "3"'], {}) == {"gbtiny": "1.0"}  # a marker that is false: skipped


@pytest.mark.parametrize(("wheels", "said"), [
    ((), "holds no wheel"),
    (("1.0", "2.0"), "holds gbtiny 1.0 and 2.0: keep one version"),
])
def test_a_bad_wheelhouse_is_an_error_naming_it(tmp_path, wheels, said):
    for version in wheels:
        write_wheel(tmp_path, version)
    with pytest.raises(EnvironmentFailed, match=said):
        Wheelhouse.read(tmp_path)


def test_a_wheelhouse_that_is_not_a_folder_is_named(tmp_path):
    with pytest.raises(EnvironmentFailed, match=f"{VARIABLE}='{tmp_path / 'absent'}' is not a folder"):
        Wheelhouse.read(tmp_path / "absent")


def test_a_requirement_naming_the_running_local_version_is_met_by_it(tmp_path):
    """"torch==2.13.0+cpu" names the running build itself: pip keeps it, and so does a wheelhouse, which must not
    say the running environment has "2.13.0" and refuse it."""
    write_wheel(tmp_path, "1.0", requires=("gbrun==2.0+cpu",))
    write_wheel(tmp_path, "2.0", name="gbrun")  # the running release, another build: not laid over it
    house = Wheelhouse.read(tmp_path)
    running = {"gbrun": "2.0+cpu"}  # running_versions(local=True): the label kept
    assert house.overlay(["gbrun==2.0+cpu", "gbrun===2.0+cpu", "gbrun==2.0", "gbtiny==1.0"], running) == \
        {"gbtiny": "1.0"}
    assert house.unmet({"gbtiny": "1.0"}, running) == ()
    with pytest.raises(EnvironmentFailed, match=r"cannot resolve gbrun==2\.0\+cu121 .* has 2\.0\+cpu"):
        house.overlay(["gbrun==2.0+cu121"], running)


def test_a_wheelhouse_made_environment_keeps_the_running_torch_a_requirement_pins_by_its_label(tmp_path, monkeypatch,
                                                                                               unreachable):
    torch = metadata.version("torch")
    write_wheel(tmp_path / "house", "1.0")
    monkeypatch.setenv(VARIABLE, str(tmp_path / "house"))
    made = make([f"torch=={torch}", "gbtiny==1.0"], tmp_path / "envs", find_tool("pip"))
    assert made.overlay == {"gbtiny": "1.0"}


def test_an_extra_asked_for_names_what_the_wheelhouse_left_out_of_it(tmp_path, monkeypatch, unreachable):
    """"gbtiny[fast]" asks for what gbtiny's extra requires (pip installs it): a wheelhouse without it is named
    among the conflicts, as a plain requirement left out is, not passed over as an extra nobody asked for; an
    extra asked by a carried wheel counts too."""
    write_wheel(tmp_path / "house", "1.0", requires=("gbfast>=1; extra == 'fast'", "gbmid[deep]",
                                                     "gbunused; extra == 'other'"))
    write_wheel(tmp_path / "house", "1.0", name="gbmid", requires=("gbdeep==3; extra == 'deep'",))
    house = Wheelhouse.read(tmp_path / "house")
    assert house.unmet({"gbtiny": "1.0", "gbmid": "1.0"}, {}, ["gbtiny[fast]==1.0"]) == (
        "gbmid 1.0 needs gbdeep==3 (here none)", "gbtiny 1.0 needs gbfast>=1 (here none)")
    assert house.unmet({"gbtiny": "1.0", "gbmid": "1.0"}, {}, ["gbtiny==1.0"]) == (
        "gbmid 1.0 needs gbdeep==3 (here none)",)
    monkeypatch.setenv(VARIABLE, str(tmp_path / "house"))
    made = make(["GBTiny[Fast]==1.0"], tmp_path / "envs", find_tool("pip"))
    assert "gbtiny 1.0 needs gbfast>=1 (here none)" in made.conflicts
