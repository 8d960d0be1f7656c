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
