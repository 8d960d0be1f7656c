"""Making a case's environment says so as it starts, and a wait on another process making it says whom it waits for:
a resolve against an index that never answers runs minutes (pip retries each request, PIP_DEFAULT_TIMEOUT each), and
a wait said nowhere looks like a hang (isolate/environment.py). Made for real from hand-written wheels."""

from at_once import at_once
from local_wheels import offline, write_wheel

from gpu_budget.isolate.environment import find_tool, make


def test_making_an_environment_says_each_step_and_finding_it_made_says_nothing(tmp_path, monkeypatch):
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    said, tool = [], find_tool()
    make(["gbtiny==1.0"], tmp_path / "envs", tool, say=said.append)
    assert said == [f"gpu-budget: resolving the environment of gbtiny==1.0 ({tool.name})",
                    f"gpu-budget: installing gbtiny==1.0 into the environment of gbtiny==1.0 ({tool.name})"]
    said.clear()
    assert make(["gbtiny==1.0"], tmp_path / "envs", tool, say=said.append).cached and said == []


def test_a_worker_waiting_on_another_making_it_says_so(tmp_path, monkeypatch):
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    said = []
    at_once(lambda: make(["gbtiny>=1"], tmp_path / "envs", say=said.append), 2)
    waits = [line for line in said if line.startswith("gpu-budget: waiting for another process")]
    assert waits and all(line.endswith("the environment of gbtiny>=1") for line in waits), said
    assert sum(line.startswith("gpu-budget: resolving") for line in said) == 1, said
