"""A resolve or install cut off by its timeout (isolate/environment.py TOOL_TIMEOUT) is a slow index or network, not
the requirements' failure: not remembered, the next session tries again (isolate/env_failures.py), as an index out
of reach is not. The real tool, made to hang where it would install."""

import pytest
from local_wheels import offline, write_wheel

from gpu_budget.isolate import env_failures, environment
from gpu_budget.isolate.environment import EnvironmentFailed, Tool, find_tool, make


def test_a_tool_cut_off_by_its_timeout_is_not_remembered(tmp_path, monkeypatch):
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    tool = find_tool()
    slow = tmp_path / "slow-tool"  # a download that never ends
    slow.write_text("#!/bin/sh\ncase \" $* \" in *' --dry-run '*) ;; *' install '*) exec sleep 60 ;; esac\n"
                    f"exec {' '.join(tool.argv)} \"$@\"\n")
    slow.chmod(0o755)
    monkeypatch.setattr(environment, "TOOL_TIMEOUT", 2)
    with pytest.raises(EnvironmentFailed) as raised:
        make(["gbtiny==1.0"], tmp_path / "envs", Tool(tool.name, (str(slow),)))
    said = str(raised.value)
    assert raised.value.kind == "install" and "timed out after 2 s" in said and "not remembered" in said, said
    kept = list((tmp_path / "envs" / env_failures.FOLDER).glob("*.json"))
    assert not [p for p in kept if '"passing": false' in p.read_text()]  # for its session alone, if at all
    assert make(["gbtiny==1.0"], tmp_path / "envs", tool).overlay == {"gbtiny": "1.0"}  # tried again, and made
