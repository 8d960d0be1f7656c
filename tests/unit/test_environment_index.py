"""A made environment is kept per index settings (isolate/environment.py): a resolution or venv made while the
installer read one find-links folder is not reused once it reads another, which holds other releases or other wheels
of one release. Made for real from hand-written wheels, no network."""

import json
import os
import subprocess

import pytest
from local_wheels import offline, write_wheel

from gpu_budget.isolate.environment import make

MORE = 'gbextra; extra == "more"'  # a Requires-Dist line the first index's wheel lacks
REQUIRES = "import json, importlib.metadata as m; print(json.dumps(m.requires('gbtiny') or []))"


def test_a_loose_requirement_is_resolved_again_under_another_index(tmp_path, monkeypatch, tool):
    write_wheel(offline(monkeypatch, tmp_path / "first"), "1.0")
    assert make(["gbtiny<2"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}
    write_wheel(offline(monkeypatch, tmp_path / "second"), "1.5")  # another index, with another release below 2
    again = make(["gbtiny<2"], tmp_path / "envs", tool)
    assert (again.overlay, again.cached) == ({"gbtiny": "1.5"}, False)
    write_wheel(offline(monkeypatch, tmp_path / "first"), "1.0")  # back to the first: its own resolution and venv
    back = make(["gbtiny<2"], tmp_path / "envs", tool)
    assert (back.overlay, back.cached) == ({"gbtiny": "1.0"}, True)
    assert len(list((tmp_path / "envs" / "resolved").glob("*.json"))) == 2


def test_a_pinned_release_is_installed_from_the_index_read_now(tmp_path, monkeypatch, tool):
    """Two indexes may hold different wheels of one version (a mirror's own build): the venv holds the one the
    installer reads now, not the one a venv made under the other index holds."""
    write_wheel(offline(monkeypatch, tmp_path / "first"), "1.0")
    first = make(["gbtiny==1.0"], tmp_path / "envs", tool)
    write_wheel(offline(monkeypatch, tmp_path / "mirror"), "1.0", requires=(MORE,))
    mirrored = make(["gbtiny==1.0"], tmp_path / "envs", tool)
    assert (mirrored.overlay, mirrored.cached) == ({"gbtiny": "1.0"}, False) and mirrored.python != first.python
    assert requires_in(mirrored.python) == [MORE]  # the mirror's wheel, not the first index's
    assert requires_in(first.python) == []


def requires_in(python: str) -> list[str]:
    """gbtiny's Requires-Dist lines as the environment of `python` holds them."""
    return json.loads(subprocess.run([python, "-c", REQUIRES], capture_output=True, text=True, check=True).stdout)


def test_a_project_uv_config_is_read_by_the_resolution_and_keys_it(tmp_path, monkeypatch):
    """uv reads the project's own uv.toml (or pyproject's [tool.uv]) where it runs: the resolution reads the one the
    install reads, and a changed index there is resolved again, not the resolution made under the other."""
    from gpu_budget.isolate.environment import EnvironmentFailed, find_tool

    try:
        uv = find_tool("uv")
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    for name in ("UV_FIND_LINKS", "UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_CONFIG_FILE", "UV_NO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("UV_NO_INDEX", "1")
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    for folder, version in (("first", "1.0"), ("second", "1.5")):
        (tmp_path / folder).mkdir()
        write_wheel(tmp_path / folder, version)
    (project / "uv.toml").write_text(f'find-links = ["{tmp_path / "first"}"]\n')
    assert make(["gbtiny<2"], tmp_path / "envs", uv).overlay == {"gbtiny": "1.0"}
    (project / "uv.toml").write_text(f'find-links = ["{tmp_path / "second"}"]\n')
    again = make(["gbtiny<2"], tmp_path / "envs", uv)
    assert (again.overlay, again.cached) == ({"gbtiny": "1.5"}, False)


def pip_settings_only(monkeypatch, folder):
    """pip pointed at `folder` alone, as a mirror or a wheel folder is given to pip; no uv setting, and uv's default
    index (pypi.org) made unreachable, so only a uv that reads pip's settings finds the wheels."""
    from gpu_budget.isolate.index_settings import VARIABLES

    for name in (*VARIABLES["pip"], *VARIABLES["uv"]):
        monkeypatch.delenv(name, raising=False)
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens: the registry is never read
    return folder


def test_uv_reads_the_index_settings_given_to_pip(tmp_path, monkeypatch):
    """With uv as the installer, PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, ... reach it as its own UV_ settings:
    uv reads none of pip's, so an environment behind a mirror given to pip was resolved from pypi.org. Keyed by them
    too, so another pip index is another resolution."""
    from gpu_budget.isolate.environment import EnvironmentFailed, find_tool

    try:
        uv = find_tool("uv")
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    write_wheel(pip_settings_only(monkeypatch, tmp_path / "first"), "1.0")
    made = make(["gbtiny<2"], tmp_path / "envs", uv)
    assert made.overlay == {"gbtiny": "1.0"}
    write_wheel(pip_settings_only(monkeypatch, tmp_path / "second"), "1.5")
    again = make(["gbtiny<2"], tmp_path / "envs", uv)
    assert (again.overlay, again.cached) == ({"gbtiny": "1.5"}, False)


def test_a_relative_wheel_folder_is_read_from_the_working_folder(tmp_path, monkeypatch, tool):
    """PIP_FIND_LINKS=wheels (relative, as a CI step writes it) is the working folder's, as for pip run there: pip's
    resolution ran in a temporary folder, where it found no such folder, and failed (remembered, too) with
    "Could not find a version that satisfies the requirement gbtiny==1.0 (from versions: none)"."""
    write_wheel(offline(monkeypatch, tmp_path / "wheels"), "1.0")
    monkeypatch.chdir(tmp_path)
    for name in ("PIP_FIND_LINKS", "UV_FIND_LINKS"):
        monkeypatch.setenv(name, "wheels")
    assert make(["gbtiny==1.0"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}


def test_projects_sharing_an_environments_folder_each_read_their_own_relative_wheels(tmp_path, monkeypatch, tool):
    """Two projects with PIP_FIND_LINKS=wheels and one --gpu-budget-envs folder: the second resolved nothing and
    reused the first's gbtiny 1.0 ("installs gbtiny==1.0: found made"), its own wheels/ holding 2.0 alone."""
    envs = tmp_path / "shared"
    for project, version in (("a", "1.0"), ("b", "2.0")):
        write_wheel(offline(monkeypatch, tmp_path / project / "wheels"), version)
        monkeypatch.chdir(tmp_path / project)
        for name in ("PIP_FIND_LINKS", "UV_FIND_LINKS"):
            monkeypatch.setenv(name, "wheels")
        made = make(["gbtiny<3"], envs, tool)
        assert (made.overlay, made.cached) == ({"gbtiny": version}, False)


def pip_config_only(monkeypatch, tmp_path, lines: str):
    """pip pointed at an index or a wheel folder by its configuration file alone (PIP_CONFIG_FILE), as a mirror is
    set for a host; no PIP_ or UV_ variable, and no other configuration file read."""
    from gpu_budget.isolate.index_settings import VARIABLES

    for name in (*VARIABLES["pip"], *VARIABLES["uv"]):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc"))
    conf = tmp_path / "pip.conf"
    conf.write_text(lines)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.chdir(tmp_path)


def test_uv_reads_the_index_settings_of_pips_configuration_file(tmp_path, monkeypatch):
    """A mirror or a wheel folder set in pip.conf reaches uv too (read as pip reads it, `pip config list`): uv read
    none of it and resolved from pypi.org ("cannot resolve gbtiny==1.0: ... Because gbtiny was not found in the
    package registry")."""
    from gpu_budget.isolate.environment import EnvironmentFailed, find_tool
    from gpu_budget.isolate.index_settings import index_settings

    try:
        uv = find_tool("uv")
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    write_wheel(tmp_path / "wheels", "1.0")
    pip_config_only(monkeypatch, tmp_path, "[global]\nindex-url = http://127.0.0.1:9/simple\nfind-links = wheels\n"
                                           "[install]\nno-index = yes\n")
    assert make(["gbtiny==1.0"], tmp_path / "envs", uv).overlay == {"gbtiny": "1.0"}
    pip_config_only(monkeypatch, tmp_path, "[global]\nindex-url = http://127.0.0.1:9/simple\n")
    with pytest.raises(EnvironmentFailed, match="127.0.0.1:9") as failed:  # the mirror, not pypi.org
        make(["gbtiny==1.0"], tmp_path / "envs", uv)
    assert "index could not be reached" in str(failed.value)
    assert "UV_INDEX_URL=http://127.0.0.1:9/simple (from pip config global.index-url)" in index_settings("uv")


def simple_index(folder, version: str) -> str:
    """A package index on disk (PEP 503's simple layout) holding gbtiny `version` alone: its file:// URL."""
    wheel = write_wheel(folder / "wheels", version)
    (folder / "gbtiny").mkdir(parents=True, exist_ok=True)
    (folder / "gbtiny" / "index.html").write_text(f'<a href="{wheel.as_uri()}">{wheel.name}</a>\n')
    return folder.as_uri()


def test_uv_reads_pips_indexes_alike_as_pip_does(tmp_path, monkeypatch):
    """pip takes the best release any of its indexes holds; uv, given pip's extra index as its own, read only the
    first index holding the package: "cannot resolve gbtiny==1.0: ... hint: `gbtiny` was found on file:///.../extra,
    but not at the requested version"."""
    from gpu_budget.isolate.environment import EnvironmentFailed, find_tool

    try:
        uv = find_tool("uv")
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    from gpu_budget.isolate.index_settings import VARIABLES

    for name in (*VARIABLES["pip"], *VARIABLES["uv"]):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # pip's variables alone
    monkeypatch.setenv("PIP_INDEX_URL", simple_index(tmp_path / "main", "1.0"))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", simple_index(tmp_path / "extra", "2.0"))
    assert make(["gbtiny==1.0"], tmp_path / "envs", uv).overlay == {"gbtiny": "1.0"}


def test_projects_sharing_a_pip_conf_with_relative_wheels_each_read_their_own(tmp_path, monkeypatch, tool):
    """One pip.conf with `find-links = wheels` and one --gpu-budget-envs folder for two projects: under pip the key
    held the file's digest alone, so the second found the first's resolution and venv (gbtiny 1.0, cached), its own
    wheels/ holding 2.0 alone."""
    from gpu_budget.isolate.index_settings import VARIABLES

    for name in (*VARIABLES["pip"], *VARIABLES["uv"]):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    (tmp_path / "pip.conf").write_text("[global]\nfind-links = wheels\nno-index = yes\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    for project, version in (("a", "1.0"), ("b", "2.0")):
        (tmp_path / project / "wheels").mkdir(parents=True)
        write_wheel(tmp_path / project / "wheels", version)
        monkeypatch.chdir(tmp_path / project)
        made = make(["gbtiny<3"], tmp_path / "shared", tool)
        assert (made.overlay, made.cached) == ({"gbtiny": version}, False)
