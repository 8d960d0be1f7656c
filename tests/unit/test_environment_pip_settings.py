"""pip settings that move an install elsewhere or change what a resolution keeps (PIP_TARGET, PIP_USER, a pip.conf's
target) are the user's for their own installs, not for a case's environment, whose place and resolution the gate
decides (isolate/environment.py): made for real with pip reading a folder of hand-written wheels alone."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from local_wheels import offline, write_wheel

from gpu_budget.isolate import env_failures
from gpu_budget.isolate.environment import EnvironmentFailed, find_tool, make

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"


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


def test_pips_virtualenv_guard_does_not_refuse_a_running_environment_that_is_no_venv(tmp_path, monkeypatch, pip):
    """PIP_REQUIRE_VIRTUALENV=1, a guard many set against installing into a system Python, refused the resolve where
    the running environment is no venv (a conda environment, a system or pyenv Python): but the resolve installs
    nothing there, and the install goes to the gate's own venv. Run by the running venv's base interpreter."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    if sys.prefix == sys.base_prefix or not base.exists() or subprocess.run(
            [base, "-m", "pip", "--version"], capture_output=True, check=False).returncode:
        pytest.skip("no base interpreter with pip behind a running venv here")
    monkeypatch.setenv("PIP_REQUIRE_VIRTUALENV", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN), sysconfig.get_paths()["purelib"]]))  # its imports
    script = ("import sys; from gpu_budget.isolate.environment import find_tool, make; "
              "print(make(['gbtiny==1.0'], sys.argv[1], find_tool('pip')).python)")
    done = subprocess.run([base, "-c", script, str(tmp_path / "envs")], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-600:]
    assert imported_from(done.stdout.strip()).startswith(str(tmp_path / "envs"))
