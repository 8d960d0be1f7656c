"""isolate/held_path.py: a marked path whose lock no process holds is removed; a held one, and an unmarked one, kept.

A flock is the open file description's, so a second descriptor opened here
contends with the first as another process's would."""

import os
import shutil

from gpu_budget.isolate import held_path

MARK = b"held"


def make(tmp_path, name: str, *, marked: bool = True) -> tuple[str, int]:
    """A held file `name` under tmp_path, locked by the descriptor returned and marked (unless `marked` is False)."""
    path = str(tmp_path / name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    held_path.hold(fd, (lambda: os.write(fd, MARK)) if marked else (lambda: None))
    return path, fd


def sweep(path: str) -> bool:
    """remove_stale on the held file at `path`, its mark its content; removing it is unlinking it."""
    return held_path.remove_stale(path, lambda fd: os.read(fd, len(MARK)) == MARK, lambda: os.unlink(path))


def test_a_held_path_is_kept_and_an_unheld_one_removed(tmp_path):
    held, fd = make(tmp_path, "held")
    gone, dropped = make(tmp_path, "gone")
    os.close(dropped)  # as its maker's death does: the lock goes, the marked file stays
    assert not sweep(held) and os.path.exists(held)
    assert sweep(gone) and not os.path.exists(gone)
    os.close(fd)
    assert sweep(held) and not os.path.exists(held)  # let go of: stale from now on


def test_a_path_without_the_mark_is_kept_and_its_lock_not_taken(tmp_path):
    unmarked, fd = make(tmp_path, "unmarked", marked=False)
    os.close(fd)
    assert not sweep(unmarked) and os.path.exists(unmarked)
    maker = os.open(unmarked, os.O_RDWR)
    held_path.hold(maker, lambda: os.write(maker, MARK))  # its maker locks and marks it only now: held, so kept
    assert not sweep(unmarked) and os.path.exists(unmarked)
    os.close(maker)
    assert sweep(unmarked) and not os.path.exists(unmarked)


def test_a_held_folder_is_locked_through_itself(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    held_path.hold(fd, lambda: (folder / "owned").touch())

    def stale() -> bool:
        return held_path.remove_stale(str(folder), lambda _fd: (folder / "owned").is_file(),
                                      lambda: shutil.rmtree(folder), folder=True)

    assert not stale() and folder.is_dir()
    os.close(fd)
    assert stale() and not folder.exists()


def test_a_path_that_is_gone_or_a_link_is_not_taken(tmp_path):
    assert not sweep(str(tmp_path / "missing"))
    target, fd = make(tmp_path, "target")
    os.close(fd)
    link = tmp_path / "link"
    link.symlink_to(target)
    assert not sweep(str(link)) and link.is_symlink() and os.path.exists(target)
