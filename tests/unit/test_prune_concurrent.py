"""An update's prune drops the entries it read as stale, never one another session wrote meanwhile (judge/store.py).

The prune reads a file, decides what stays, then writes under the file's lock.
It wrote "keep only what I decided", so an entry another session recorded
between that read and the write (`pytest tests/a --gpu-budget-update` and
`pytest tests/b --gpu-budget-update` at once, their namesake modules sharing one
file) was dropped with the stale ones, and its test had no baseline next run.
"""

from gpu_budget.judge import files, keys, store

ENTRY = {"peaks": {"ram": 123}, "fingerprint": {"torch": "2.13.0+cpu"}}


def test_a_prune_keeps_an_entry_another_session_wrote_after_its_read(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("")
    for sub in ("a", "b"):
        (tmp_path / "tests" / sub).mkdir(parents=True)
        (tmp_path / "tests" / sub / "test_same.py").write_text("")
    module = str(tmp_path / "tests" / "a" / "test_same.py")
    baselines = store.BaselineStore(tmp_path / "baselines", "cpu-x86_64")
    path = baselines._file(module)
    files.write(path, "tiny", {"tests/a/test_same.py::test_kept": ENTRY, "tests/a/test_same.py::test_gone": ENTRY})
    decide = keys.kept_on_prune

    def other_session_writes_meanwhile(*args, **kwargs):
        kept = decide(*args, **kwargs)
        files.write(path, "tiny", {"tests/b/test_same.py::test_new": ENTRY})
        return kept

    monkeypatch.setattr(keys, "kept_on_prune", other_session_writes_meanwhile)
    dropped = {}
    assert baselines.prune({module: {"test_kept"}}, "tiny", dropped=dropped) == []
    assert sorted(files.load(path)["entries"]["tiny"]) == ["tests/a/test_same.py::test_kept",
                                                           "tests/b/test_same.py::test_new"]
    assert dropped == {str(path): ["tests/a/test_same.py::test_gone"]}
