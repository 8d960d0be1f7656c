"""A made environment is kept per index settings (isolate/environment.py): a resolution or venv made while the
installer read one find-links folder is not reused once it reads another, which holds other releases or other wheels
of one release. Made for real from hand-written wheels, no network."""

import json
import subprocess

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
