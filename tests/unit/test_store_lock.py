"""The baseline store's writes: locked beside the file (any two writers of one folder exclude each other), made as
any new file is (the umask), and nothing left in the folder but the baseline (judge/files.py)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from gpu_budget.judge import files

WRITER = textwrap.dedent("""
    import sys
    from gpu_budget.judge import files

    path, who, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(count):
        files.write(path, "tiny", {f"test_{who}_{i}": {"peaks": {"ram": i + 1}, "fingerprint": {"malloc": "steady"}}})
""")


def test_writers_with_different_temp_dirs_keep_every_entry(tmp_path):
    """Two processes, each its own TMPDIR, 150 writes each into one file: all 300 entries are kept."""
    path = tmp_path / "baselines" / "cpu-x86_64" / "test_mod.json"
    count = 150
    writers = []
    for who in ("a", "b"):
        temp = tmp_path / f"tmp-{who}"
        temp.mkdir()
        env = {**os.environ, "TMPDIR": str(temp)}
        writers.append(subprocess.Popen([sys.executable, "-c", WRITER, str(path), who, str(count)], env=env))
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    stored = files.load(path)["entries"]["tiny"]
    assert len(stored) == 2 * count, f"kept {len(stored)} of {2 * count} entries"
    assert sorted(p.name for p in path.parent.iterdir()) == ["test_mod.json"]  # no lock or temp file left


def test_a_lock_file_left_by_a_killed_writer_is_harmless(tmp_path):
    """A writer killed while holding the lock leaves its lock file; the next write takes it and removes it."""
    path = tmp_path / "hw" / "test_mod.json"
    path.parent.mkdir()
    files.lock_path(path).write_text("")
    files.write(path, "tiny", {"test_a": {"peaks": {"ram": 1}, "fingerprint": {"malloc": "steady"}}})
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a"}
    assert sorted(p.name for p in path.parent.iterdir()) == ["test_mod.json"]


def test_the_lock_file_is_not_a_json_file():
    """Folder scans (`baselines drop`, the tests' and benchmarks' `*.json` globs) never see it as a baseline."""
    lock = files.lock_path(files.Path("baselines/cpu-x86_64/test_mod.json"))
    assert lock.name == ".test_mod.json.lock" and lock.suffix != ".json"


def test_a_left_lock_file_is_kept_out_of_a_commit_by_the_gitignore(tmp_path):
    """docs/baselines.md names the rule; a clone of this repository has it (git check-ignore, no match: exit 1)."""
    root = Path(__file__).resolve().parents[2]
    lock = files.lock_path(Path("baselines/cpu-x86_64/test_mod.json"))
    done = subprocess.run(["git", "-C", str(root), "check-ignore", "--no-index", "-v", str(lock)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "baselines/**/.*.lock" in done.stdout, done


def _written_mode(tmp_path, umask):
    path = tmp_path / f"umask-{umask:o}" / "test_mod.json"
    old = os.umask(umask)
    try:
        files.write(path, "tiny", {"test_a": {"peaks": {"ram": 1}, "fingerprint": {"malloc": "steady"}}})
    finally:
        os.umask(old)
    return path.stat().st_mode & 0o777


def test_a_written_file_follows_the_umask(tmp_path):
    assert _written_mode(tmp_path, 0o022) == 0o644
    assert _written_mode(tmp_path, 0o002) == 0o664
    assert _written_mode(tmp_path, 0o077) == 0o600
