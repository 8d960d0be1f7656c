"""Settings that let a resolution take a pre-release (PIP_PRE, pip.conf's `pre`, UV_PRERELEASE) change what it
resolves: they key the kept resolution, and pip's reach uv as its own (isolate/index_settings.py). Made for real from
hand-written wheels, no network."""

import pytest
from local_wheels import offline, write_wheel

from gpu_budget.isolate.environment import EnvironmentFailed, find_tool, make
from gpu_budget.isolate.index_settings import from_pip


@pytest.fixture
def release_and_candidate(monkeypatch, tmp_path):
    """gbtiny 1.0 and 2.0rc1 in one wheel folder, read alone; no pre-release setting but the test's."""
    for name in ("PIP_PRE", "UV_PRERELEASE", "UV_RESOLUTION", "UV_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc"))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    for version in ("1.0", "2.0rc1"):
        write_wheel(offline(monkeypatch, tmp_path / "wheels"), version)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("setting", [("PIP_PRE", "1"), ("pip.conf", "[install]\npre = true\n")])
def test_pips_pre_releases_resolve_again_with_each_installer(tmp_path, monkeypatch, release_and_candidate, tool,
                                                             setting):
    """PIP_PRE=1 lets pip take 2.0rc1 for gbtiny>=1: the resolution kept without it ({'gbtiny': '1.0'}) was reused;
    and uv, which reads no PIP_ setting, resolved 1.0 even anew."""
    assert make(["gbtiny>=1"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}
    name, value = setting
    if name == "pip.conf":
        (tmp_path / "pip.conf").write_text(value)
        monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    else:
        monkeypatch.setenv(name, value)
    assert make(["gbtiny>=1"], tmp_path / "envs", tool).overlay == {"gbtiny": "2.0rc1"}


def test_uvs_own_pre_release_and_resolution_settings_key_the_resolution(tmp_path, monkeypatch, release_and_candidate):
    try:
        uv = find_tool("uv")
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    assert make(["gbtiny>=1"], tmp_path / "envs", uv).overlay == {"gbtiny": "1.0"}
    monkeypatch.setenv("UV_PRERELEASE", "allow")
    assert make(["gbtiny>=1"], tmp_path / "envs", uv).overlay == {"gbtiny": "2.0rc1"}
    monkeypatch.setenv("UV_RESOLUTION", "lowest")
    write_wheel(tmp_path / "wheels", "0.9", name="gbold")
    write_wheel(tmp_path / "wheels", "1.0", name="gbold")
    assert make(["gbold"], tmp_path / "envs", uv).overlay == {"gbold": "0.9"}


def test_pips_pre_is_given_to_uv_unless_its_own_says():
    assert from_pip({"PIP_PRE": "true"}) == {"UV_PRERELEASE": "allow"}
    assert from_pip({"PIP_PRE": "0"}) == {}
    assert from_pip({"PIP_PRE": "1", "UV_PRERELEASE": "disallow"}) == {}
