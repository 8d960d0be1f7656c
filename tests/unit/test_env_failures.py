"""A failed environment is remembered for its requirement set (isolate/env_failures.py): made for real with the
installer reading a folder of hand-written wheels alone, where gbtiny 2.0 is missing until a test adds it, so a
second make() that does not fail at once would have found it and succeeded."""

import json
import time

import pytest
from at_once import at_once
from local_wheels import offline, unsatisfiable, write_wheel

from gpu_budget.isolate import env_failures
from gpu_budget.isolate.environment import EnvironmentFailed, Tool, find_tool, make
from gpu_budget.isolate.index_settings import index_settings

MISSING = "gbtiny==2.0"


@pytest.fixture
def links(tmp_path, monkeypatch):
    folder = offline(monkeypatch, tmp_path / "links")
    write_wheel(folder, "1.0")
    return folder


def failed(requirements, root, retry=False) -> EnvironmentFailed:
    with pytest.raises(EnvironmentFailed) as raised:
        make(requirements, root, retry=retry)
    return raised.value


def key_of(requirements=(MISSING,), tool=None) -> str:
    """The key make() keeps a failure of `requirements` under, with the index settings the tool reads now."""
    name = tool or find_tool().name
    return env_failures.key(requirements, name, index_settings(name))


def entry_of(root, requirements=(MISSING,)) -> dict:
    return json.loads(env_failures.path(root, key_of(requirements)).read_text())


def test_a_failure_is_recorded_with_its_key_line_and_time(tmp_path, links):
    first = failed([MISSING], tmp_path / "envs")
    assert (first.kind, first.remembered) == ("resolve", False) and first.seconds > 0
    assert first.error == unsatisfiable(MISSING, find_tool().name)  # uv where the dev extra installed it, else pip
    kept = entry_of(tmp_path / "envs")
    assert (kept["requirements"], kept["kind"], kept["error"], kept["message"]) == (
        [MISSING], "resolve", first.error, str(first))
    assert 0 < kept["seconds"] <= first.seconds and kept["at"] <= time.time()
    assert not list((tmp_path / "envs" / env_failures.FOLDER).glob("*.tmp"))  # written through a renamed temp file
    record = first.record([MISSING]).to_json()
    assert (record["error"], record["seconds"], record["cached"]) == (first.error, first.seconds, False)
    assert "remembered" not in record


def test_a_remembered_failure_is_raised_at_once_without_trying(tmp_path, links):
    first = failed([MISSING], tmp_path / "envs")
    write_wheel(links, "2.0")  # a try would now succeed
    again = failed([MISSING], tmp_path / "envs")
    assert (again.kind, again.error, again.remembered) == ("resolve", first.error, True)
    assert again.seconds < first.seconds
    assert str(again).startswith(str(first)) and "--gpu-budget-update tries it again" in str(again)
    assert again.record([MISSING]).to_json()["remembered"] is True
    assert not list((tmp_path / "envs").glob("env-*"))


def test_update_tries_a_remembered_failure_again_and_forgets_it_once_made(tmp_path, links):
    failed([MISSING], tmp_path / "envs")
    write_wheel(links, "2.0")
    made = make([MISSING], tmp_path / "envs", retry=True)
    assert made.overlay == {"gbtiny": "2.0"} and not made.error
    assert not list((tmp_path / "envs" / env_failures.FOLDER).glob("*.json"))
    assert make([MISSING], tmp_path / "envs").cached  # and the next session finds it made


def test_update_that_fails_again_remembers_the_new_attempt(tmp_path, links):
    failed([MISSING], tmp_path / "envs")
    before = entry_of(tmp_path / "envs")["at"]
    again = failed([MISSING], tmp_path / "envs", retry=True)
    assert (again.remembered, again.by_another) == (False, False) and entry_of(tmp_path / "envs")["at"] > before


def test_a_changed_requirement_set_is_a_new_key_and_is_tried(tmp_path, links):
    failed([MISSING], tmp_path / "envs")
    write_wheel(links, "2.0")
    made = make([MISSING, "gbtiny>=1"], tmp_path / "envs")  # another set: tried, and now it resolves
    assert made.overlay == {"gbtiny": "2.0"}
    assert env_failures.key(["a", "b"], "pip", ()) == env_failures.key(["b", "a", "a"], "pip", ())  # order aside
    assert env_failures.key(["a"], "pip", ()) not in (env_failures.key(["a", "b"], "pip", ()),
                                                      env_failures.key(["a"], "uv", ()),
                                                      env_failures.key(["a"], "pip", ("PIP_INDEX_URL=x",)))


@pytest.mark.parametrize("text", ["", "{not json", '{"requirements": ["gbtiny==2.0"]}', "[1, 2]",
                                  ('{"requirements": [], "kind": "torch", "error": "", "message": "", "seconds": 0,'
                                   ' "at": 0, "python": "", "tool": ""}')])
def test_an_unreadable_entry_counts_as_absent_and_is_written_anew(tmp_path, links, text):
    failed([MISSING], tmp_path / "envs")
    kept = env_failures.path(tmp_path / "envs", key_of())
    kept.write_text(text)
    again = failed([MISSING], tmp_path / "envs")
    assert again.remembered is False  # tried again, not an error about the cache
    assert entry_of(tmp_path / "envs")["error"] == again.error


def test_processes_asking_at_once_try_once(tmp_path, links):
    """xdist workers share the folder: the one that fails remembers it under the lock the others wait on, and they
    raise its failure as it was (the same message: not one remembered from an earlier session)."""
    raised = []
    since = time.time()  # the session's start

    def ask():
        try:
            make([MISSING], tmp_path / "envs", since=since)
        except EnvironmentFailed as exc:
            raised.append(exc)

    at_once(ask, 3)
    assert [e.remembered for e in raised] == [False] * 3
    assert sorted(e.by_another for e in raised) == [False, True, True]
    assert len({str(e) for e in raised}) == 1
    waited = [e.record([MISSING]) for e in raised if e.by_another]
    assert all(r.waited == r.seconds for r in waited) and "remembered" not in waited[0].to_json()


def test_the_key_line_is_the_tools_own_reason():
    pip = ("Collecting tokenizers!=0.11.3,<0.13,>=0.11.1\n  Downloading tokenizers-0.12.1.tar.gz (220 kB)\n"
           "  error: subprocess-exited-with-error\n\n  × Building wheel for tokenizers (pyproject.toml) did not run "
           "successfully.\n  │ exit code: 1\n  ╰─> [6 lines of output]\n      error: can't find Rust compiler\n"
           "      [end of output]\n\n  note: This error originates from a subprocess, and is likely not a problem "
           "with pip.\n  ERROR: Failed building wheel for tokenizers\nERROR: Could not build wheels for tokenizers, "
           "which is required to install pyproject.toml-based projects\n")
    assert env_failures.key_line(pip) == "Failed building wheel for tokenizers"
    uv = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of gbtiny==2.0 and "
          "you require\n      gbtiny==2.0, we can conclude that your requirements are unsatisfiable.\n\n"
          "  help: a hint\n")
    assert env_failures.key_line(uv) == ("No solution found when resolving dependencies: Because there is no version "
                                         "of gbtiny==2.0 and you require gbtiny==2.0, we can conclude that your "
                                         "requirements are unsatisfiable.")
    assert env_failures.key_line("WARNING: slow\nsomething broke\nWARNING: again\n") == "something broke"
    off_a_terminal = ("Using Python 3.11.7 environment at: /v\nerror: No solution found when resolving dependencies\n"
                      "  cause: Because there is no version of gbtiny==2.0 and you require gbtiny==2.0, we can\n"
                      "  conclude that your requirements are unsatisfiable.\n")  # uv wraps a cause where COLUMNS is narrow
    assert env_failures.key_line(off_a_terminal) == unsatisfiable("gbtiny==2.0", "uv")


def index_down(monkeypatch) -> None:
    """Each installer pointed at an index that refuses connections, and told to give up on it at once."""
    for key in ("PIP_NO_INDEX", "PIP_FIND_LINKS", "UV_NO_INDEX", "UV_FIND_LINKS", "UV_OFFLINE", "PIP_EXTRA_INDEX_URL",
                "UV_EXTRA_INDEX_URL", "UV_INDEX"):
        monkeypatch.delenv(key, raising=False)
    down = "http://127.0.0.1:9/simple"  # nothing listens on the discard port: connection refused at once
    for key, value in {"UV_INDEX_URL": down, "UV_DEFAULT_INDEX": down, "UV_HTTP_RETRIES": "0", "PIP_INDEX_URL": down,
                       "PIP_CONFIG_FILE": "/dev/null", "PIP_RETRIES": "1", "PIP_TIMEOUT": "2"}.items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize("name", ["uv", "pip"])
def test_a_failure_to_reach_the_index_is_not_remembered(tmp_path, monkeypatch, name):
    """An index out of reach (a network outage, a proxy down) says nothing of the requirements: the next session
    tries again, instead of replaying the outage until --gpu-budget-update re-records every baseline."""
    try:
        tool = find_tool(name)
    except EnvironmentFailed as exc:
        pytest.skip(str(exc))
    index_down(monkeypatch)
    with pytest.raises(EnvironmentFailed) as raised:
        make([MISSING], tmp_path / "envs", tool)
    assert raised.value.kind == "resolve" and "not remembered" in str(raised.value)
    kept = json.loads(env_failures.path(tmp_path / "envs", key_of(tool=tool.name)).read_text())
    assert kept["passing"] is True  # for this session's other workers alone
    write_wheel(offline(monkeypatch, tmp_path / "links"), "2.0")  # the index back: the next session tries, and makes it
    assert make([MISSING], tmp_path / "envs", tool).overlay == {"gbtiny": "2.0"}


def test_workers_asking_while_the_index_is_out_of_reach_try_once(tmp_path, monkeypatch):
    """xdist workers wait on one lock: where the index cannot be reached, the one that tried keeps the failure for
    this session, and the others raise it, instead of each trying the index in turn (each try is minutes where the
    index times out instead of refusing: pip's 5 retries of PIP_DEFAULT_TIMEOUT each)."""
    index_down(monkeypatch)
    tool = find_tool()
    tries = tmp_path / "tries"
    counted = tmp_path / "counted-tool"  # the real tool, counting each time it runs
    counted.write_text(f"#!/bin/sh\necho x >> {tries}\nexec {' '.join(tool.argv)} \"$@\"\n")
    counted.chmod(0o755)
    raised = []
    since = time.time()  # the session's start

    def ask():
        try:
            make([MISSING], tmp_path / "envs", Tool(tool.name, (str(counted),)), since=since)
        except EnvironmentFailed as exc:
            raised.append(exc)

    at_once(ask, 3)
    assert (tries.read_text().count("x"), sorted(e.by_another for e in raised)) == (1, [False, True, True])
    assert len({str(e) for e in raised}) == 1 and "not remembered" in str(raised[0])
    with pytest.raises(EnvironmentFailed) as later:  # the next session (since: now): tries the index again
        make([MISSING], tmp_path / "envs", Tool(tool.name, (str(counted),)))
    assert (later.value.remembered, later.value.by_another, tries.read_text().count("x")) == (False, False, 2)


def test_a_failure_is_remembered_under_its_index_and_tried_again_under_another(tmp_path, monkeypatch):
    """A set that fails against one index (a mirror without the version) is replayed while the installer reads that
    index, and tried again once it reads another, which may have it."""
    mirror = offline(monkeypatch, tmp_path / "mirror")
    write_wheel(mirror, "1.0")
    first = failed([MISSING], tmp_path / "envs")
    write_wheel(mirror, "2.0")  # a try would now succeed: the same index replays the failure without trying
    again = failed([MISSING], tmp_path / "envs")
    assert again.remembered and str(again).startswith(str(first))
    assert f"FIND_LINKS={mirror}" in str(again)  # it says which index settings it failed under
    other = offline(monkeypatch, tmp_path / "other")
    write_wheel(other, "2.0")
    assert make([MISSING], tmp_path / "envs").overlay == {"gbtiny": "2.0"}  # another index: tried, and made


def test_an_index_url_is_remembered_without_its_credentials(tmp_path, links, monkeypatch):
    for name in ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"):  # read by neither: the tools read the folder alone
        monkeypatch.setenv(name, "https://reader:s3cret@mirror.invalid/simple")
    first = failed([MISSING], tmp_path / "envs")
    text = env_failures.path(tmp_path / "envs", key_of()).read_text()
    assert "s3cret" not in text and "reader" not in text and "https://***@mirror.invalid/simple" in text
    again = failed([MISSING], tmp_path / "envs")
    assert again.remembered and "***@mirror.invalid" in str(again) and "s3cret" not in str(again)
    monkeypatch.setenv("UV_EXTRA_INDEX_URL", "https://reader:s3cret@other.invalid/simple")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "https://reader:s3cret@other.invalid/simple")
    assert failed([MISSING], tmp_path / "envs").remembered is False and first.remembered is False


def test_a_changed_index_password_alone_tries_a_remembered_failure_again(tmp_path, links, monkeypatch):
    """A failure under a wrong password (the index's 401) says nothing of the right one: it is tried again under the
    next, whose digest alone (never the password, nor the digest in the message) tells them apart."""
    for name in ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"):
        monkeypatch.setenv(name, "https://reader:wrong@mirror.invalid/simple")
    failed([MISSING], tmp_path / "envs")
    assert failed([MISSING], tmp_path / "envs").remembered
    for name in ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"):
        monkeypatch.setenv(name, "https://reader:right@mirror.invalid/simple")
    again = failed([MISSING], tmp_path / "envs")
    assert again.remembered is False and "right" not in str(again) and "pbkdf2" not in str(again)


def test_a_tool_killed_by_a_signal_is_named_so_and_not_remembered(tmp_path, links):
    """An installer killed by a signal (the kernel's OOM killer, a Ctrl-C that reached it first, a job being
    cancelled) says nothing of the requirements: the failure names the signal, not "exit -9", and the next session
    tries again instead of replaying it until --gpu-budget-update."""
    tool = find_tool()
    killer = tmp_path / "killed-tool"  # the real tool, but killed by SIGKILL where it would install
    killer.write_text("#!/bin/sh\ncase \" $* \" in *' --dry-run '*) ;; *' install '*) kill -KILL $$ ;; esac\n"
                      f"exec {' '.join(tool.argv)} \"$@\"\n")
    killer.chmod(0o755)
    with pytest.raises(EnvironmentFailed) as raised:
        make(["gbtiny==1.0"], tmp_path / "envs", Tool(tool.name, (str(killer),)))
    said = str(raised.value)
    assert raised.value.kind == "install" and "killed by SIGKILL" in said and "exit -9" not in said, said
    assert "not remembered" in said
    assert not list((tmp_path / "envs").glob("env-*/"))  # the half-made venv is not left behind
    assert make(["gbtiny==1.0"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}  # tried again, and made
    assert not list((tmp_path / "envs" / env_failures.FOLDER).glob("*.json"))
