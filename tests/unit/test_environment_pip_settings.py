"""pip settings that move an install elsewhere or change what a resolution keeps (PIP_TARGET, PIP_USER, a pip.conf's
target) are the user's for their own installs, not for a case's environment, whose place and resolution the gate
decides (isolate/environment.py): made for real with pip reading a folder of hand-written wheels alone."""

import subprocess

import pytest
from local_wheels import offline, write_wheel

from gpu_budget.isolate import env_failures
from gpu_budget.isolate.environment import EnvironmentFailed, find_tool, make


@pytest.fixture
def pip(tmp_path, monkeypatch):
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    return find_tool("pip")


def imported_from(python: str) -> str:
    return subprocess.run([python, "-c", "import gbtiny; print(gbtiny.__file__)"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.parametrize("settings", [{"PIP_TARGET": "elsewhere"}, {"PIP_PREFIX": "elsewhere"},
                                      {"PIP_USER": "1"}, {"PIP_NO_DEPS": "1"}])
def test_pips_install_place_and_resolution_settings_are_not_the_environments(tmp_path, monkeypatch, pip, settings):
    write_wheel(tmp_path / "links", "1.0", name="gbdep")
    write_wheel(tmp_path / "links", "1.0", name="gbneeds", requires=("gbdep",))
    for name, value in settings.items():
        monkeypatch.setenv(name, str(tmp_path / value) if value == "elsewhere" else value)
    made = make(["gbtiny==1.0", "gbneeds==1.0"], tmp_path / "envs", pip)
    assert made.overlay == {"gbdep": "1.0", "gbneeds": "1.0", "gbtiny": "1.0"}  # gbdep too: the resolution is whole
    assert imported_from(made.python).startswith(str(tmp_path / "envs"))
    assert not (tmp_path / "elsewhere").exists()  # nothing installed where the user's own installs go


def test_an_install_a_pip_conf_sends_elsewhere_fails_naming_it_and_is_not_kept(tmp_path, monkeypatch, pip):
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[install]\ntarget = {tmp_path / 'elsewhere'}\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    with pytest.raises(EnvironmentFailed) as failed:
        make(["gbtiny==1.0"], tmp_path / "envs", pip)
    said = str(failed.value)
    assert failed.value.kind == "tool" and "gbtiny 1.0 is not in the environment" in said, said
    assert "target" in said and "pip config list" in said, said
    assert not list((tmp_path / "envs").glob("env-*/"))  # not left as if made
    assert not (tmp_path / "envs" / env_failures.FOLDER).exists()
