"""isolate/building.py: a build folder whose builder is gone is removed by the next build of its target; a live
builder's, and one no lock proves stale, are kept."""

import os

from gpu_budget.isolate import building


def test_a_live_builders_folder_is_kept_and_a_gone_ones_removed(tmp_path):
    target = str(tmp_path / "key")
    live, held = building.build_folder(target)
    gone, dropped = building.build_folder(target)
    os.close(dropped)  # as its session's death does: the lock goes, the marked file and the folder stay
    older = tmp_path / "key.tmp-abcdefgh"  # no held file: being made, or an older version's
    older.mkdir()
    made, fd = building.build_folder(target)  # sweeps first
    assert not os.path.exists(gone) and not os.path.exists(gone + building.HELD)
    assert os.path.isdir(live) and os.path.isdir(older) and os.listdir(made) == []  # empty for the prepare
    for path, descriptor in ((live, held), (made, fd)):
        building.done(path, descriptor)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["key.tmp-abcdefgh"]


def test_a_wait_on_another_build_is_told_once_with_the_builders_pid(tmp_path):
    """A session waiting on another's build of the same assets waited silently: minutes that looked like a hang."""
    import threading
    import time

    target = str(tmp_path / "key")
    (tmp_path / "key.lock").write_text("4194304999")  # a killed builder's file, its pid longer than this one's
    told, done = [], threading.Event()

    def second():
        with building.exclusive(target, told.append):
            done.set()

    with building.exclusive(target, told.append):
        assert told == [] and building.builder(target) == (True, os.getpid())
        waiter = threading.Thread(target=second)
        waiter.start()
        for _ in range(200):
            if told:
                break
            time.sleep(0.01)
        assert told == [os.getpid()] and not done.is_set()
    waiter.join(10)
    assert done.is_set() and told == [os.getpid()]  # told once
    assert building.builder(target) == (False, None) and not (tmp_path / "key.lock").exists()


def test_a_wait_that_cannot_be_said_still_waits(tmp_path):
    """The line is written on a terminal: an OSError writing it was taken for a file system without flock, and the
    waiter built unlocked beside the builder."""
    import threading

    target = str(tmp_path / "key")
    inside = []

    def unsaid(pid):
        raise OSError("terminal gone")

    def second():
        with building.exclusive(target, unsaid):
            inside.append("second")

    with building.exclusive(target):
        waiter = threading.Thread(target=second)
        waiter.start()
        waiter.join(0.5)
        assert inside == [] and waiter.is_alive(), "the waiter went on without the lock"
    waiter.join(10)
    assert inside == ["second"]


def test_a_built_folder_holds_what_prepare_made_alone_and_its_marker_is_beside_it(tmp_path):
    """The gate's own .complete lay in the built folder, so a runner listing ctx.assets found ['.complete',
    'model.bin']; it is beside the folder now, and an earlier version's inside is moved out as it is read."""
    target = str(tmp_path / "KEY")
    made, held = building.build_folder(target)
    with open(os.path.join(made, "model.bin"), "wb") as fh:
        fh.write(b"0")
    assert not building.built(target)
    building.finish(made, target)
    building.done(made, held)
    assert building.built(target) and os.listdir(target) == ["model.bin"]
    assert sorted(os.listdir(tmp_path)) == ["KEY", "KEY.complete"]
    os.rename(target + building.DONE, os.path.join(target, building.DONE))  # as an earlier version left it
    assert building.built(target) and os.listdir(target) == ["model.bin"]
    os.unlink(target + building.DONE)
    assert not building.built(target)  # a folder without its marker is no build


def test_a_marker_without_its_folder_is_no_build(tmp_path):
    target = str(tmp_path / "KEY")
    open(target + building.DONE, "w").close()
    assert not building.built(target)
