"""What pip says of its configuration is kept for the next session (isolate/pip_config.py), and never read stale:
each file pip looks for counts by its content, found or not. Real pip runs, no network."""

import pytest

from gpu_budget.isolate import pip_config, pip_readings
from gpu_budget.isolate.index_settings import VARIABLES


@pytest.fixture
def conf(monkeypatch, tmp_path):
    """A pip.conf named by PIP_CONFIG_FILE, pip's global files in tmp_path/etc, no other pip or uv setting."""
    for name in (*VARIABLES["pip"], *VARIABLES["uv"]):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "etc"))
    path = tmp_path / "pip.conf"
    path.write_text("[global]\nindex-url = http://a.example/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(path))
    return path


@pytest.fixture
def session(monkeypatch, tmp_path):
    """read(): pip's settings as a new session reads them (nothing of this process's kept), and the pip runs it took."""
    runs: list[tuple[str, ...]] = []
    real = pip_config._pip
    monkeypatch.setattr(pip_config, "_pip", lambda *commands: runs.append(commands) or real(*commands))

    def read(*files) -> dict[str, str]:
        monkeypatch.setattr(pip_config, "_readings", {})
        runs.clear()
        found = pip_config.settings(files, tmp_path / "envs")
        return {name: setting.value for name, setting in found.items()}
    read.runs = runs
    return read


def test_a_second_session_reads_what_pip_said_without_running_it(conf, session):
    """Each session with an environment ran `pip config list` (0.8 s here) to read pip's settings for uv."""
    assert session(conf) == {"PIP_INDEX_URL": "http://a.example/simple"} and session.runs
    assert session(conf) == {"PIP_INDEX_URL": "http://a.example/simple"} and session.runs == []


def test_a_file_pip_reads_edited_made_or_removed_is_read_again(conf, session, tmp_path, monkeypatch):
    session(conf)
    conf.write_text("[global]\nindex-url = http://b.example/simple\n")
    assert session(conf) == {"PIP_INDEX_URL": "http://b.example/simple"}
    made = tmp_path / "etc" / "pip" / "pip.conf"  # a global file pip looked for and did not find
    made.parent.mkdir(parents=True)
    made.write_text("[install]\nfind-links = /wheels\n")
    assert session(conf) == {"PIP_INDEX_URL": "http://b.example/simple", "PIP_FIND_LINKS": "/wheels"}
    made.unlink()
    assert session(conf) == {"PIP_INDEX_URL": "http://b.example/simple"}
    other = tmp_path / "other.conf"
    other.write_text("[global]\nno-index = yes\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(other))  # another key: pip asked again
    assert session(other) == {"PIP_NO_INDEX": "yes"} and session.runs


def test_a_pip_whose_listing_is_not_as_known_keeps_nothing(conf, session, monkeypatch, tmp_path):
    monkeypatch.setattr(pip_config, "_looked_at", lambda debug: None)
    assert session(conf) == {"PIP_INDEX_URL": "http://a.example/simple"}
    assert session(conf) == {"PIP_INDEX_URL": "http://a.example/simple"} and session.runs
    assert not (tmp_path / "envs" / pip_readings.KEPT).exists()


@pytest.mark.parametrize("text", ["{", '{"files": [["/x"]], "listed": ""}', '["files"]', '{"files": [], "listed": 3}'])
def test_a_kept_reading_that_cannot_be_read_is_asked_again(conf, session, tmp_path, text):
    session(conf)
    (kept,) = (tmp_path / "envs" / pip_readings.KEPT).iterdir()
    kept.write_text(text)
    assert session(conf) == {"PIP_INDEX_URL": "http://a.example/simple"} and session.runs
