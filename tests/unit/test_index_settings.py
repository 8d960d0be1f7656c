"""The index settings a remembered environment failure is kept under (isolate/index_settings.py): what points each
tool at an index, credentials never kept."""

import os

from gpu_budget.isolate.index_settings import (
    CREDENTIALS,
    PIP_OFF,
    VARIABLES,
    described,
    from_pip,
    index_settings,
    redact,
    tool_environ,
)


def clean(monkeypatch, tmp_path) -> None:
    for name in (*VARIABLES["pip"], *VARIABLES["uv"]):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc"))


def test_each_url_loses_its_credentials():
    assert redact("https://u:p@a.example/simple http://token@b.example/x /local/wheels") == (
        "https://***@a.example/simple http://***@b.example/x /local/wheels")
    assert redact("https://a.example/simple") == "https://a.example/simple"


def test_each_tool_is_keyed_by_the_settings_it_reads(monkeypatch, tmp_path):
    clean(monkeypatch, tmp_path)
    monkeypatch.setenv("PIP_INDEX_URL", "https://me:pw@mirror.example/simple")
    monkeypatch.setenv("UV_FIND_LINKS", "/wheels")
    pip = [s for s in index_settings("pip") if not s.startswith("config ")]
    assert pip[0] == "PIP_INDEX_URL=https://***@mirror.example/simple" and pip[1].startswith(CREDENTIALS)
    assert len(pip) == 2 and "pw" not in pip[1]
    assert [s for s in index_settings("uv") if not s.startswith("config ")][:2] == [
        "UV_INDEX_URL=https://***@mirror.example/simple (from PIP_INDEX_URL)", "UV_FIND_LINKS=/wheels"]


def test_uv_is_given_the_pip_settings_its_own_leave_open(monkeypatch, tmp_path):
    """uv reads none of pip's settings: each one a user set reaches uv as uv's own, unless a uv setting replaces it;
    pip's lists (space-separated) in uv's spelling; pip's no-index passes over every index URL, as pip does."""
    clean(monkeypatch, tmp_path)
    for name, value in {"PIP_INDEX_URL": "https://mirror.example/simple", "PIP_TRUSTED_HOST": "a.example b.example",
                        "PIP_EXTRA_INDEX_URL": "https://x.example/simple https://y.example/simple",
                        "PIP_FIND_LINKS": "/wheels /more"}.items():
        monkeypatch.setenv(name, value)
    assert from_pip(os.environ) == {"UV_INDEX_URL": "https://mirror.example/simple",
                                    "UV_EXTRA_INDEX_URL": "https://x.example/simple https://y.example/simple",
                                    "UV_FIND_LINKS": "/wheels,/more", "UV_INSECURE_HOST": "a.example b.example",
                                    "UV_INDEX_STRATEGY": "unsafe-best-match"}  # pip reads its indexes alike
    assert "UV_INDEX_STRATEGY=unsafe-best-match (from pip, which reads its indexes alike)" in index_settings("uv")
    monkeypatch.setenv("UV_INDEX_STRATEGY", "first-index")  # the user's own choice stands
    assert "UV_INDEX_STRATEGY" not in from_pip(os.environ)
    monkeypatch.delenv("UV_INDEX_STRATEGY")
    monkeypatch.setenv("UV_DEFAULT_INDEX", "https://own.example/simple")
    monkeypatch.setenv("UV_FIND_LINKS", "/own")
    assert sorted(from_pip(os.environ)) == ["UV_EXTRA_INDEX_URL", "UV_INDEX_STRATEGY", "UV_INSECURE_HOST"]
    monkeypatch.setenv("PIP_NO_INDEX", "yes")
    assert from_pip(os.environ) == {"UV_NO_INDEX": "1", "UV_INSECURE_HOST": "a.example b.example"}
    assert "UV_NO_INDEX=1 (from PIP_NO_INDEX)" in index_settings("uv")
    assert tool_environ("pip") == {**os.environ, **PIP_OFF}  # no index setting of uv's


def test_a_config_file_counts_by_its_content(monkeypatch, tmp_path):
    clean(monkeypatch, tmp_path)
    conf = tmp_path / "home" / "uv" / "uv.toml"
    conf.parent.mkdir(parents=True)
    conf.write_text('index-url = "https://me:pw@one.example/simple"\n')
    first = index_settings("uv")
    assert any(s.startswith(f"config {conf} (sha256 ") for s in first) and "me:pw" not in described(first)
    conf.write_text('index-url = "https://two.example/simple"\n')
    assert index_settings("uv") != first
    assert described(()) == "the tool's default index"


def test_the_project_uv_config_counts_where_uv_reads_it(monkeypatch, tmp_path):
    """uv reads the nearest uv.toml, or pyproject.toml with a [tool.uv] table, from its folder up: that file counts
    by its uv settings (a pyproject's other tables change no index), unless UV_CONFIG_FILE or UV_NO_CONFIG."""
    clean(monkeypatch, tmp_path)
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    monkeypatch.chdir(project / "sub")
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n')
    assert index_settings("uv") == ()  # no [tool.uv]: uv passes over it
    pyproject.write_text('[project]\nname = "x"\n\n[tool.uv]\nindex-url = "https://one.example/simple"\n')
    (first,) = index_settings("uv")
    assert first.startswith(f"config {pyproject} (sha256 ")
    pyproject.write_text('[project]\nname = "x"\nversion = "2"\n\n[tool.uv]\nindex-url = "https://one.example/simple"\n')
    assert index_settings("uv") == (first,)
    pyproject.write_text('[project]\nname = "x"\n\n[tool.uv]\nindex-url = "https://two.example/simple"\n')
    assert index_settings("uv") != (first,)
    (project / "uv.toml").write_text('index-url = "https://three.example/simple"\n')  # wins over pyproject's
    assert [s.split(" (")[0] for s in index_settings("uv")] == [f"config {project / 'uv.toml'}"]
    assert not any(str(project) in s for s in index_settings("pip"))  # pip reads no project file
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    assert index_settings("uv") == ("UV_NO_CONFIG=1",)


def test_a_changed_password_is_another_key_and_never_said(monkeypatch, tmp_path):
    """A remembered 401 must not outlive the password that caused it: the credentials count by a digest, which the
    message (described) leaves out, as it leaves out the credentials themselves."""
    clean(monkeypatch, tmp_path)
    monkeypatch.setenv("UV_INDEX_URL", "https://me:old@mirror.example/simple")
    old = index_settings("uv")
    monkeypatch.setenv("UV_INDEX_URL", "https://me:new@mirror.example/simple")
    new = index_settings("uv")
    assert old != new
    assert described(old) == described(new) == "UV_INDEX_URL=https://***@mirror.example/simple"
    assert not any("old" in s or "new" in s for s in (*old, *new))
    monkeypatch.setenv("UV_INDEX_URL", "https://mirror.example/simple")
    assert index_settings("uv") == ("UV_INDEX_URL=https://mirror.example/simple",)


def test_a_relative_wheel_folder_counts_as_the_folder_it_names(monkeypatch, tmp_path):
    """PIP_FIND_LINKS=wheels names the working folder's wheels/: two projects sharing one environments folder
    with that same text read two folders, so the key names each one's resolved path (a URL or an absolute path
    stays as it was written)."""
    clean(monkeypatch, tmp_path)
    for project in ("a", "b"):
        (tmp_path / project).mkdir()
    monkeypatch.setenv("PIP_FIND_LINKS", "wheels https://x.example/links /abs")
    monkeypatch.chdir(tmp_path / "a")
    a_pip, a_uv = settings("pip"), settings("uv")
    assert a_pip == (f"PIP_FIND_LINKS=wheels https://x.example/links /abs (read as {tmp_path / 'a' / 'wheels'})",)
    read_as = f"(read as {tmp_path / 'a' / 'wheels'})"
    assert a_uv == (f"UV_FIND_LINKS=wheels,https://x.example/links,/abs (from PIP_FIND_LINKS) {read_as}",)
    monkeypatch.chdir(tmp_path / "b")
    assert settings("pip") != a_pip and settings("uv") != a_uv
    monkeypatch.setenv("UV_FIND_LINKS", "./wheels")
    assert settings("uv") == (f"UV_FIND_LINKS=./wheels (read as {tmp_path / 'b' / 'wheels'})",)
    monkeypatch.setenv("PIP_FIND_LINKS", "/abs")
    assert settings("pip") == ("PIP_FIND_LINKS=/abs",)


def settings(tool: str) -> tuple[str, ...]:
    """index_settings(tool) less the host's own configuration files."""
    return tuple(s for s in index_settings(tool) if not s.startswith("config "))


def test_uv_is_given_the_index_settings_of_pips_configuration(monkeypatch, tmp_path):
    """pip's configuration files hold a mirror as often as its variables do, and uv reads neither: uv is given what
    pip would read there (its [install] section over [global]), unless a variable, pip's or uv's, replaces it."""
    clean(monkeypatch, tmp_path)
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex_url = https://me:pw@mirror.example/simple\nfind-links = /global\n"
                    "trusted-host = mirror.example\n[install]\nfind-links =\n    /wheels\n    /more\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    assert {k: v for k, v in tool_environ("uv").items() if k.startswith("UV_")} == {
        "UV_INDEX_URL": "https://me:pw@mirror.example/simple", "UV_FIND_LINKS": "/wheels,/more",
        "UV_INSECURE_HOST": "mirror.example"}
    uv = settings("uv")
    assert uv[:3] == ("UV_INDEX_URL=https://***@mirror.example/simple (from pip config global.index-url)",
                      "UV_FIND_LINKS=/wheels,/more (from pip config install.find-links)",
                      "UV_INSECURE_HOST=mirror.example (from pip config global.trusted-host)")
    assert uv[3].startswith(CREDENTIALS) and len(uv) == 4
    monkeypatch.setenv("PIP_INDEX_URL", "https://env.example/simple")  # pip's variable wins over its file
    monkeypatch.setenv("UV_FIND_LINKS", "/own")
    assert settings("uv") == ("UV_INDEX_URL=https://env.example/simple (from PIP_INDEX_URL)", "UV_FIND_LINKS=/own",
                              "UV_INSECURE_HOST=mirror.example (from pip config global.trusted-host)")
    assert tool_environ("pip") == {**os.environ, **PIP_OFF}  # no index setting of uv's
