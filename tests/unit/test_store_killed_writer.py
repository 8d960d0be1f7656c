"""A baseline writer killed between its temp file's write and the rename (the OOM killer, a CI job's hard stop) leaves
the baseline file as it was and its temp file beside it; the next writer of that file removes the temp file, so no
`.<module>.json.*.tmp` is left for a `git add baselines` to commit (judge/files.py)."""

import os
import signal
import subprocess
import sys
import textwrap

from gpu_budget.judge import files

KILLED = textwrap.dedent("""
    import os, signal, sys
    from gpu_budget.judge import files

    os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)  # killed with its temp file written, not renamed
    files.write(sys.argv[1], "tiny", {"test_b": {"peaks": {"ram": 2}, "fingerprint": {"malloc": "steady"}}})
""")

ENTRY = {"peaks": {"ram": 1}, "fingerprint": {"malloc": "steady"}}


def test_the_temp_file_of_a_writer_killed_before_its_rename_is_removed_by_the_next_writer(tmp_path):
    path = tmp_path / "cpu-x86_64" / "test_mod.json"
    files.write(path, "tiny", {"test_a": ENTRY})
    killed = subprocess.run([sys.executable, "-c", KILLED, str(path)], timeout=120, check=False)
    assert killed.returncode == -signal.SIGKILL
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a"}  # the file as it was: the write never landed
    left = sorted(p.name for p in path.parent.iterdir())
    assert any(name.endswith(".tmp") for name in left), left  # what the kill leaves
    files.write(path, "tiny", {"test_c": ENTRY})
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a", "test_c"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["test_mod.json"]


def test_only_that_files_temp_files_are_removed(tmp_path):
    """Another baseline file's temp file (its writer may be mid-write, holding that file's lock) and files of other
    names are left alone."""
    path = tmp_path / "test_mod.json"
    others = [".test_mod_2.json.0123abcd.tmp", ".test_mod.json.notours.tmp", "notes.tmp"]
    for name in others:
        (tmp_path / name).write_text("{}")
    (tmp_path / ".test_mod.json.0123abcd.tmp").write_text("{")  # this file's, left by a killed writer
    files.write(path, "tiny", {"test_a": ENTRY})
    assert sorted(os.listdir(tmp_path)) == sorted([*others, "test_mod.json"])
