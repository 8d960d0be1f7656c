"""A constraint file given to pip (PIP_CONSTRAINT, or `constraint` in pip.conf) holds each installer's resolution
(isolate/index_settings.py hands it to uv as UV_CONSTRAINT), and keys it by what the file holds. Made for real from
hand-written wheels, no network."""

from local_wheels import offline, write_wheel

from gpu_budget.isolate.environment import make


def two_releases(monkeypatch, tmp_path):
    """gbtiny 1.0 and 2.0 in one wheel folder, read alone; no constraint but the test's, no host configuration."""
    for name in ("PIP_CONSTRAINT", "UV_CONSTRAINT", "PIP_CONFIG_FILE", "UV_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc"))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # nor /etc/pip.conf: pip reads no file
    for version in ("1.0", "2.0"):
        write_wheel(offline(monkeypatch, tmp_path / "wheels"), version)
    monkeypatch.chdir(tmp_path)


def test_pips_constraint_variable_holds_each_installer_and_an_edit_resolves_again(tmp_path, monkeypatch, tool):
    """PIP_CONSTRAINT pinning gbtiny 1.0: pip resolved 1.0, uv (which reads UV_CONSTRAINT alone) 2.0; and with the
    file's pin edited to 2.0, pip's resolution was the one kept under the same name ({'gbtiny': '1.0'}, cached)."""
    two_releases(monkeypatch, tmp_path)
    (tmp_path / "c.txt").write_text("gbtiny==1.0\n")
    monkeypatch.setenv("PIP_CONSTRAINT", "c.txt")
    assert make(["gbtiny"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}
    (tmp_path / "c.txt").write_text("gbtiny==2.0\n")
    again = make(["gbtiny"], tmp_path / "envs", tool)
    assert (again.overlay, again.cached) == ({"gbtiny": "2.0"}, False)


def test_a_constraint_in_pips_configuration_holds_each_installer(tmp_path, monkeypatch, tool):
    """`constraint = c.txt` in pip.conf: uv read none of it and resolved 2.0; the key held pip.conf's digest, not
    what the file it names holds."""
    two_releases(monkeypatch, tmp_path)
    (tmp_path / "c.txt").write_text("gbtiny==1.0\n")
    (tmp_path / "pip.conf").write_text("[install]\nconstraint = c.txt\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    assert make(["gbtiny"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}
    (tmp_path / "c.txt").write_text("gbtiny==2.0\n")
    again = make(["gbtiny"], tmp_path / "envs", tool)
    assert (again.overlay, again.cached) == ({"gbtiny": "2.0"}, False)


def test_uvs_own_constraint_replaces_pips(tmp_path, monkeypatch):
    from gpu_budget.isolate.index_settings import from_pip

    assert from_pip({"PIP_CONSTRAINT": "a.txt  b.txt"}) == {"UV_CONSTRAINT": "a.txt b.txt"}
    assert from_pip({"PIP_CONSTRAINT": "a.txt", "UV_CONSTRAINT": "u.txt"}) == {}
