"""A baseline file git left with conflict markers: named as a merge conflict (not "delete it and re-record", which
drops one branch's entries), and `baselines resolve` keeps both sides' entries (judge/conflict.py, judge/files.py).
The conflicts are made by git itself: two branches recording entries in one file, merged."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_budget.judge import baselines_cli, conflict, files
from gpu_budget.judge.conflict import ConflictError
from gpu_budget.judge.contents import Contents

ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def entry(ram, digest=None):
    return {"peaks": {"ram": ram, "ram_tree": ram}, "tolerance": {"rel": 0.005, "abs": 4 * 2**20},
            "fingerprint": {"malloc": "steady", **({"packages": digest} if digest else {})}, "recorded": "2026-11-27"}


def git(folder, *args, check=True):
    done = subprocess.run(["git", "-c", "init.defaultBranch=main", *args], cwd=folder, capture_output=True, text=True,
                          env={**ENV, "PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0 or not check, done.stderr
    return done


def conflicted(tmp_path, ours, theirs, style="merge", attributes=None):
    """A repository whose baseline file holds test_a, then `ours` written on main and `theirs` on a branch, merged:
    the file as git leaves it (`attributes`: the repository's .gitattributes)."""
    path = tmp_path / "baselines" / "cpu-x86_64" / "test_mod.json"
    git(tmp_path, "init", "-q")
    if attributes:
        (tmp_path / ".gitattributes").write_text(attributes)
    git(tmp_path, "config", "merge.conflictStyle", style)
    files.write(path, "tiny", {"test_a": entry(100 * 2**20)})
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "other")
    for scale, entries, packages in theirs:
        files.write(path, scale, entries, packages=packages)
    git(tmp_path, "commit", "-q", "-am", "theirs")
    git(tmp_path, "checkout", "-q", "main")
    for scale, entries, packages in ours:
        files.write(path, scale, entries, packages=packages)
    git(tmp_path, "commit", "-q", "-am", "ours")
    assert git(tmp_path, "merge", "-q", "other", check=False).returncode != 0  # a conflict, as on a real merge
    assert "<<<<<<<" in path.read_text()
    return path


def test_markers_of_the_size_gitattributes_sets_are_a_merge_conflict_resolve_merges(tmp_path, capsys):
    """conflict-marker-size=10: the file read as "not valid JSON ... delete it and re-record", and resolve found no
    markers in it ("nothing to resolve"); the size is read from git (check-attr) as git writes it."""
    path = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)],
                      attributes="*.json conflict-marker-size=10\n")
    assert "<" * 10 + " HEAD" in path.read_text().splitlines()
    with pytest.raises(files.BaselineError, match="holds git's merge conflict markers"):
        files.load(path)
    assert baselines_cli.main(["resolve", str(path)]) == 0
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a", "test_b", "test_c"}
    assert "kept both sides' entries, 3 in all" in capsys.readouterr().out


@pytest.mark.parametrize("style", ["merge", "diff3"])
def test_a_conflicted_file_is_named_a_merge_conflict_with_advice_that_keeps_both(tmp_path, style):
    path = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)], style)
    with pytest.raises(files.BaselineError) as info:
        files.load(path)
    message = str(info.value)
    assert str(path) in message and "merge conflict" in message and "Keep both sides' entries" in message
    assert f"python -m gpu_budget baselines resolve {path}" in message
    assert "not valid JSON" not in message


@pytest.mark.parametrize("style", ["merge", "diff3"])
def test_resolve_keeps_both_sides_entries_and_package_lists(tmp_path, capsys, style):
    ours = [("tiny", {"test_b": entry(200, "aaa")}, {"aaa": {"torch": "2.13.0"}}),
            ("real", {"test_a": entry(5 * 2**30)}, None)]
    theirs = [("tiny", {"test_c": entry(300, "bbb")}, {"bbb": {"torch": "2.14.0"}})]
    path = conflicted(tmp_path, ours, theirs, style)
    assert baselines_cli.main(["resolve", str(tmp_path / "baselines")]) == 0
    data = files.load(path)
    assert set(data["entries"]["tiny"]) == {"test_a", "test_b", "test_c"} and set(data["entries"]["real"]) == {"test_a"}
    assert data["packages"] == {"aaa": {"torch": "2.13.0"}, "bbb": {"torch": "2.14.0"}}
    assert data["entries"]["tiny"]["test_c"] == entry(300, "bbb")
    out = capsys.readouterr().out
    assert f"{path}: kept both sides' entries, 4 in all (2 from HEAD's side of the conflict alone, 1 from other's alone)" in out
    assert sorted(p.name for p in path.parent.iterdir()) == ["test_mod.json"]


def test_an_entry_both_sides_changed_is_refused_by_name_and_the_file_left(tmp_path, capsys):
    path = conflicted(tmp_path, [("tiny", {"test_a": entry(110 * 2**20), "test_b": entry(200)}, None)],
                      [("tiny", {"test_a": entry(120 * 2**20)}, None)])
    before = path.read_text()
    assert baselines_cli.main(["resolve", str(path)]) == 1
    err = capsys.readouterr().err
    assert "both sides recorded 1 entry with other figures, left as it is: 'test_a' (scale 'tiny')" in err
    assert "HEAD: ram_tree 110.00 MiB" in err and "other: ram_tree 120.00 MiB" in err
    assert "--keep ours (HEAD) or --keep theirs (other)" in err
    assert path.read_text() == before  # nothing written


@pytest.mark.parametrize("keep, ram", [("ours", 110 * 2**20), ("theirs", 120 * 2**20)])
def test_keep_takes_one_sides_figures_for_an_entry_both_changed_and_says_so(tmp_path, capsys, keep, ram):
    path = conflicted(tmp_path, [("tiny", {"test_a": entry(110 * 2**20), "test_b": entry(200)}, None)],
                      [("tiny", {"test_a": entry(120 * 2**20)}, None)])
    assert baselines_cli.main(["resolve", "--keep", keep, str(path)]) == 0
    stored = files.load(path)["entries"]["tiny"]
    assert stored["test_a"]["peaks"]["ram"] == ram and set(stored) == {"test_a", "test_b"}
    assert f"'test_a' (scale 'tiny') differed on both sides: kept the {keep} side's entry (--keep {keep})" in capsys.readouterr().out


def test_a_write_into_a_conflicted_file_is_refused_and_writes_nothing(tmp_path):
    path = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)])
    before = path.read_text()
    with pytest.raises(files.BaselineError, match="merge conflict"):
        files.write(path, "tiny", {"test_d": entry(400)})
    assert path.read_text() == before


def test_resolve_twice_says_the_file_has_nothing_to_resolve_and_exits_0(tmp_path, capsys):
    """Before: a second `resolve FILE` (its markers gone with the first) exited 1, saying "the file holding conflict
    markers or unreadable left as it was", as though it had failed; a folder so resolved twice exited 0."""
    path = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)])
    assert baselines_cli.main(["resolve", str(path)]) == 0
    capsys.readouterr()
    assert baselines_cli.main(["resolve", str(path)]) == 0
    said = capsys.readouterr()
    assert said.out == f"{path}: holds no merge conflict markers: nothing to resolve\n" and not said.err
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a", "test_b", "test_c"}


def test_resolve_names_a_file_without_markers_and_a_side_that_is_not_json(tmp_path, capsys):
    clean = tmp_path / "clean.json"
    files.write(clean, "tiny", {"test_a": entry(1)})
    assert baselines_cli.main(["resolve", str(clean)]) == 0
    assert "holds no merge conflict markers" in capsys.readouterr().out
    broken = tmp_path / "broken.json"
    broken.write_text('{"entries": {},\n<<<<<<< HEAD\n  "schema": "gpu-budget-baselines/1"\n=======\n  "schema":\n'
                      '>>>>>>> other\n}\n')
    with pytest.raises(ConflictError, match=r"the theirs side \(other\) is not valid JSON"):
        files.resolve(broken)
    unclosed = tmp_path / "unclosed.json"
    unclosed.write_text('{\n<<<<<<< HEAD\n  "schema": 1\n=======\n}\n>>>>>>> other\n<<<<<<< HEAD\n')
    with pytest.raises(ConflictError, match="not closed"):
        files.resolve(unclosed)


def test_resolve_refuses_a_side_that_gives_a_key_twice(tmp_path):
    """A side whose JSON repeats a key would lose the first's entries to the parser: refused, the file left."""
    path = tmp_path / "test_mod.json"
    one, two = (json.dumps({"tiny": {name: entry(1)}}) for name in ("test_a", "test_b"))
    path.write_text(f'{{"schema": "gpu-budget-baselines/1",\n<<<<<<< HEAD\n  "entries": {one}, "entries": {two}\n'
                    f'=======\n  "entries": {one}\n>>>>>>> other\n}}\n')
    before = path.read_text()
    with pytest.raises(ConflictError, match=r"the ours side \(HEAD\) gives the key 'entries' twice in one object"):
        files.resolve(path)
    assert path.read_text() == before


@pytest.mark.parametrize("bad", [b'{"schema": "gpu-budget-baselines/1", "entries": {', b"\xff\xfe{}"],
                         ids=["not-json", "not-utf8"])
def test_resolve_goes_on_past_a_broken_file_names_it_and_exits_1(tmp_path, capsys, bad):
    """A broken file between two conflicted ones: named with its error, left as it was, and both others resolved."""
    made = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)])
    folder = tmp_path / "folder"
    folder.mkdir()
    first, broken, last = folder / "a.json", folder / "b.json", folder / "c.json"
    first.write_bytes(made.read_bytes())
    last.write_bytes(made.read_bytes())
    broken.write_bytes(bad)
    assert baselines_cli.main(["resolve", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert f"baseline file {broken} is not" in err and ("valid JSON" in err or "UTF-8" in err)
    assert f"{first}: kept both sides' entries, 3 in all" in out and f"{last}: kept both sides' entries" in out
    for path in (first, last):
        assert set(files.load(path)["entries"]["tiny"]) == {"test_a", "test_b", "test_c"}
    assert broken.read_bytes() == bad
    assert sorted(path.name for path in folder.iterdir()) == ["a.json", "b.json", "c.json"]  # no temp or lock left
    assert "1 of the 3 files holding conflict markers, unmerged or unreadable left as it was" in err, err


def test_the_count_of_files_left_is_of_those_with_markers_not_of_every_file_searched(tmp_path, capsys):
    """One conflicted file that cannot be resolved beside a clean one said "1 of 2 files left as it was", as though
    both had conflicts."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "clean.json").write_text(json.dumps({"schema": files.SCHEMA, "entries": {}}))
    (folder / "torn.json").write_text("<<<<<<< HEAD\n{}\n=======\n")  # markers, but no merge to rebuild
    assert baselines_cli.main(["resolve", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "the file holding conflict markers, unmerged or unreadable left as it was" in err and " of " not in err.splitlines()[-1]


def test_resolve_goes_on_past_a_file_it_cannot_write(tmp_path, capsys, refuse_a_json):
    """A write refused by the system (an unwritable folder) names the file and leaves it whole; the next is resolved."""
    made = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)])
    first, last = tmp_path / "a.json", tmp_path / "c.json"
    first.write_bytes(made.read_bytes())
    last.write_bytes(made.read_bytes())
    refuse_a_json()
    assert baselines_cli.main(["resolve", str(first), str(last)]) == 1
    out, err = capsys.readouterr()
    assert f"{first}: [Errno 13] Permission denied" in err and f"{last}: kept both sides' entries" in out
    assert first.read_bytes() == made.read_bytes() and "<<<<<<<" not in last.read_text()


def three_way(tmp_path, ours, theirs, style="diff3"):
    """A baseline file holding test_a and test_x, then each side's writes (scale, entries, keys kept: None keeps all),
    merged with git's conflict style `style`; the file as git leaves it."""
    path = tmp_path / "baselines" / "cpu-x86_64" / "test_mod.json"
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "merge.conflictStyle", style)
    files.write(path, "tiny", {"test_a": entry(100 * 2**20), "test_x": entry(50 * 2**20)})
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    for branch, writes in (("other", theirs), ("main", ours)):
        git(tmp_path, "checkout", "-q", *(["-b"] if branch == "other" else []), branch)
        for scale, entries, kept in writes:
            files.write(path, scale, entries, prune_except=kept)
        git(tmp_path, "commit", "-q", "-am", branch)
    assert git(tmp_path, "merge", "-q", "other", check=False).returncode != 0
    assert "<<<<<<<" in path.read_text()
    return path


@pytest.mark.parametrize("style", ["diff3", "zdiff3"])
def test_an_entry_one_side_deleted_and_the_other_left_stays_deleted_where_git_wrote_the_base(tmp_path, capsys, style):
    """Before: ours dropped test_x (a test removed) while theirs recorded test_y beside it: resolve put test_x back,
    exit 0, saying only "kept both sides' entries", although git's base section showed theirs held it as it was."""
    path = three_way(tmp_path, [("tiny", {}, {"test_a"})], [("tiny", {"test_y": entry(300)}, None)], style)
    assert baselines_cli.main(["resolve", str(path)]) == 0
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a", "test_y"}
    out = capsys.readouterr().out
    assert "'test_x' (scale 'tiny') deleted on HEAD's side and as it was on other's: left out" in out, out


def test_an_entry_one_side_changed_takes_that_sides_figures_where_git_wrote_the_base():
    """The same rule for an entry one side re-recorded and the other held as it was: the re-recorded one, not a
    conflict needing --keep (which would take one side's figures for every such entry)."""
    def text(*entries):
        return json.dumps({"schema": "gpu-budget-baselines/1", "entries": {"tiny": dict(entries)}}, indent=2)

    base, ours, theirs = (text(("test_a", entry(a)), ("test_b", entry(b))) for a, b in ((1, 2), (10, 2), (1, 20)))
    conflicted = f"<<<<<<< HEAD\n{ours}\n||||||| base\n{base}\n=======\n{theirs}\n>>>>>>> other\n"
    sides = conflict.split(conflicted, "f.json")
    read = [Contents.from_json(json.loads(side)) for side in (sides.ours, sides.theirs, sides.base)]
    merged = conflict.merge(*read[:2], "f.json", ("HEAD", "other"), base=read[2])
    assert {k: e["peaks"]["ram"] for k, e in merged.data.scale("tiny").items()} == {"test_a": 10, "test_b": 20}
    assert merged.kept == ()


def test_with_git_s_default_style_the_base_comes_from_the_index(tmp_path, capsys):
    """Before: git's default style writes no base section, so resolve put back test_x, which ours had deleted (a
    removed test) while theirs held it as it was. The unresolved merge's index holds the base (stage 1)."""
    path = three_way(tmp_path, [("tiny", {}, {"test_a"})], [("tiny", {"test_y": entry(300)}, None)], "merge")
    assert "|||||||" not in path.read_text()
    assert baselines_cli.main(["resolve", str(path)]) == 0
    assert set(files.load(path)["entries"]["tiny"]) == {"test_a", "test_y"}
    assert "'test_x' (scale 'tiny') deleted on HEAD's side and as it was on other's: left out" in capsys.readouterr().out


def test_without_any_base_an_entry_one_side_holds_alone_is_kept(tmp_path, capsys):
    """A conflicted file outside its merge (copied away: no index to read the base from, no base section): an entry
    one side holds alone may be new there, so it is kept."""
    (tmp_path / "repo").mkdir()
    path = three_way(tmp_path / "repo", [("tiny", {}, {"test_a"})], [("tiny", {"test_y": entry(300)}, None)], "merge")
    away = tmp_path / "away" / path.name
    away.parent.mkdir()
    away.write_text(path.read_text())
    assert baselines_cli.main(["resolve", str(away)]) == 0
    assert set(files.load(away)["entries"]["tiny"]) == {"test_a", "test_x", "test_y"}
    assert "left out" not in capsys.readouterr().out


def test_a_file_named_twice_is_resolved_once(tmp_path, capsys):
    """Before: `resolve baselines baselines/cpu-x86_64/test_mod.json` resolved the file, then took it again as a file
    "holding no merge conflict markers", and exited 1 with "1 of 2 files left as it was"."""
    path = conflicted(tmp_path, [("tiny", {"test_b": entry(200)}, None)], [("tiny", {"test_c": entry(300)}, None)])
    assert baselines_cli.main(["resolve", str(tmp_path / "baselines"), str(path), f"{path.parent}/./{path.name}"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("kept both sides' entries") == 1 and captured.err == "", captured


def merged_from(tmp_path, base, ours, theirs, style="merge", driver=False):
    """A repository whose baseline file is `base`, then `ours` on main and `theirs` on a branch (scale -> key -> ram),
    merged (with `driver`, by `baselines merge-driver`): the file as git leaves it, and whether the merge failed."""
    path = tmp_path / "baselines" / "cpu-x86_64" / "test_mod.json"
    path.parent.mkdir(parents=True)
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "merge.conflictStyle", style)
    if driver:
        plugin = Path(files.__file__).parents[2]
        git(tmp_path, "config", "merge.gpu-budget-baselines.driver",
            f"PYTHONPATH={plugin} {sys.executable} -m gpu_budget baselines merge-driver %O %A %B %P")
        (tmp_path / ".gitattributes").write_text("baselines/**/*.json merge=gpu-budget-baselines\n")
    for branch, held in (("main", base), ("other", theirs), ("main", ours)):
        if branch == "other":
            git(tmp_path, "checkout", "-q", "-b", branch)
        elif held is ours:
            git(tmp_path, "checkout", "-q", branch)
        entries = {scale: {key: entry(ram) for key, ram in by.items()} for scale, by in held.items()}
        path.write_text(json.dumps({"schema": "gpu-budget-baselines/1", "entries": entries}, indent=2, sort_keys=True))
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", branch)
    return path, git(tmp_path, "merge", "-q", "other", check=False).returncode != 0


@pytest.mark.parametrize("style", ["merge", "diff3", "zdiff3"])
def test_an_entry_takes_its_own_figures_where_git_joined_its_key_to_another_entrys(tmp_path, capsys, style):
    """git merges lines: here it took ours' test_n lines for base's test_h (the same figures), and theirs' re-recorded
    test_h figures into them, outside any conflict region. Before, resolve read ours from the regions and wrote
    test_n with test_h's 3 MiB, exit 0: a baseline that test never measured. The index holds each side as
    committed."""
    mib = 2**20
    path, failed = merged_from(tmp_path, {"real": {"test_h": mib}},
                               {"real": {"test_e": 3 * mib, "test_j": mib, "test_n": mib}},
                               {"tiny": {"test_f": 2 * mib, "test_h": 3 * mib}}, style)
    assert failed
    assert baselines_cli.main(["resolve", str(path)]) == 0
    held = {scale: {key: e["peaks"]["ram"] // mib for key, e in by.items()}
            for scale, by in files.load(path)["entries"].items()}
    assert held == {"real": {"test_e": 3, "test_j": 1, "test_n": 1}, "tiny": {"test_f": 2, "test_h": 3}}
    out = capsys.readouterr().out
    assert "'test_n' (scale 'real') taken as the branches committed it: the file's conflict regions read it" in out


def test_an_entry_one_side_deleted_and_the_other_re_recorded_is_kept_and_named(tmp_path, capsys):
    """Before: kept, counted among "1 from other's alone" and unnamed, although git calls it a conflict (modify/delete):
    the test may be gone on HEAD's side, its entry then kept until a --gpu-budget-update prunes it."""
    path = three_way(tmp_path, [("tiny", {}, {"test_a"})], [("tiny", {"test_x": entry(70 * 2**20)}, None)], "merge")
    assert baselines_cli.main(["resolve", str(path)]) == 0
    assert files.load(path)["entries"]["tiny"]["test_x"] == entry(70 * 2**20)
    out = capsys.readouterr().out
    assert ("'test_x' (scale 'tiny') deleted on HEAD's side and re-recorded on other's: kept (where its test is gone, "
            "the next --gpu-budget-update drops it)") in out, out


def test_a_top_level_field_the_schema_does_not_name_is_kept_through_a_resolve(tmp_path):
    """Such a field is written back as read by every write; before, resolve wrote the file without it."""
    path = tmp_path / "test_mod.json"

    def text(*keys, note="recorded on the lab's runner"):
        return json.dumps({"schema": "gpu-budget-baselines/1", "note": note,
                           "entries": {"tiny": {key: entry(2**20) for key in keys}}}, indent=2, sort_keys=True)

    path.write_text(f"<<<<<<< HEAD\n{text('test_a', 'test_b')}\n=======\n{text('test_a', 'test_c')}\n>>>>>>> other\n")
    files.resolve(path)
    data = files.load(path)
    assert set(data["entries"]["tiny"]) == {"test_a", "test_b", "test_c"}
    assert data["note"] == "recorded on the lab's runner"
    path.write_text(f"<<<<<<< HEAD\n{text('test_b')}\n=======\n{text('test_c', note='on mine')}\n>>>>>>> other\n")
    with pytest.raises(ConflictError, match="the top-level field 'note' with other values"):
        files.resolve(path)
    assert files.resolve(path, "theirs").data.other == {"note": "on mine"}


def test_resolve_refuses_a_side_holding_nan_naming_where_and_leaves_the_file(tmp_path):
    """NaN is not JSON: before, resolve read it and wrote it back into the file committed, which jq then refused."""
    path = tmp_path / "test_mod.json"
    text = json.dumps({"schema": "gpu-budget-baselines/1", "note": 1, "entries": {"tiny": {"test_a": entry(2**20)}}})
    path.write_text(f"<<<<<<< HEAD\n{text}\n=======\n{text.replace('1,', 'NaN,', 1)}\n>>>>>>> other\n")
    before = path.read_text()
    with pytest.raises(ConflictError, match=r"the theirs side \(other\): note is NaN, which is not JSON"):
        files.resolve(path, "theirs")
    assert path.read_text() == before


def held_in(path):
    return {scale: {key: e["peaks"]["ram"] // 2**20 for key, e in by.items()}
            for scale, by in files.load(path)["entries"].items()}


BEFORE_84 = {"real": {"test_a": 4, "test_e": 9, "test_h": 8, "test_j": 3}}
OURS_84 = {"real": {**BEFORE_84["real"], "test_l": 3}}
THEIRS_84 = {"real": {"test_a": 4, "test_e": 9}, "tiny": {"test_h": 1, "test_k": 3}}


def mib(held):
    return {scale: {key: ram * 2**20 for key, ram in by.items()} for scale, by in held.items()}


def test_the_merge_driver_merges_entry_by_entry(tmp_path):
    """Before: ours recorded test_l at scale 'real', theirs dropped two entries and recorded its first 'tiny' ones;
    git merged the lines with no conflict and test_l's entry landed under 'tiny', with nothing for resolve to find.
    With `baselines merge-driver` set as the files' driver, each entry stays at its own scale."""
    path, failed = merged_from(tmp_path, mib(BEFORE_84), mib(OURS_84), mib(THEIRS_84), driver=True)
    assert not failed
    assert held_in(path) == {"real": {"test_a": 4, "test_e": 9, "test_l": 3}, "tiny": {"test_h": 1, "test_k": 3}}


def test_the_merge_driver_leaves_gits_markers_where_both_sides_re_recorded_an_entry(tmp_path, capsys):
    path, failed = merged_from(tmp_path, mib({"tiny": {"test_a": 1}}), mib({"tiny": {"test_a": 2, "test_b": 1}}),
                               mib({"tiny": {"test_a": 3}}), driver=True)
    assert failed and "<<<<<<< ours" in path.read_text()
    assert baselines_cli.main(["resolve", "--keep", "theirs", str(path)]) == 0
    assert held_in(path) == {"tiny": {"test_a": 3, "test_b": 1}}


@pytest.mark.parametrize("ours_date, theirs_date", [("2026-11-29", "2026-11-28"), ("2026-11-28", "2026-11-30")])
def test_an_entry_both_sides_re_recorded_alike_on_other_dates_takes_the_later_date(tmp_path, capsys, ours_date,
                                                                                     theirs_date):
    """Two branches re-recorded test_a with the same figures on other days: the entries differed only in `recorded`,
    and resolve refused them as "other figures" (naming the same figures twice) until --keep was given."""
    def dated(day):
        return {**entry(120 * 2**20), "recorded": day}

    path = conflicted(tmp_path, [("tiny", {"test_a": dated(ours_date), "test_b": entry(200)}, None)],
                      [("tiny", {"test_a": dated(theirs_date)}, None)])
    assert baselines_cli.main(["resolve", str(path)]) == 0
    stored = files.load(path)["entries"]["tiny"]
    assert stored["test_a"] == dated(max(ours_date, theirs_date)) and set(stored) == {"test_a", "test_b"}
    side = "HEAD" if ours_date > theirs_date else "other"
    assert (f"'test_a' (scale 'tiny') recorded alike on both sides but for the date: kept {side}'s, the later "
            f"({max(ours_date, theirs_date)})") in capsys.readouterr().out


@pytest.mark.parametrize("deleted_on", ["theirs", "ours"])
def test_a_file_one_side_deleted_and_the_other_changed_is_named_with_what_to_do(tmp_path, capsys, deleted_on):
    """git leaves a modify/delete conflict as the changed side's whole file, no markers in it: resolve said "holds no
    merge conflict markers: nothing to resolve" and exited 0, though git still holds the file unmerged."""
    path = tmp_path / "baselines" / "cpu-x86_64" / "test_mod.json"
    git(tmp_path, "init", "-q")
    files.write(path, "tiny", {"test_a": entry(100 * 2**20)})
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    for branch, side in (("other", "theirs"), ("main", "ours")):
        git(tmp_path, "checkout", "-q", *(["-b"] if branch == "other" else []), branch)
        if side == deleted_on:
            git(tmp_path, "rm", "-q", str(path))
        else:
            files.write(path, "tiny", {"test_b": entry(200)})
        git(tmp_path, "commit", "-q", "-am", side)
    assert git(tmp_path, "merge", "-q", "other", check=False).returncode != 0  # CONFLICT (modify/delete)
    for given in (path, tmp_path / "baselines"):
        assert baselines_cli.main(["resolve", str(given)]) == 1
        said = capsys.readouterr()
        assert "nothing to resolve" not in said.out, said.out
        side, kept = ("HEAD", "the merged branch") if deleted_on == "ours" else ("the merged branch", "HEAD")
        assert (f"{path}: git left it unmerged whole, no conflict markers in it: deleted on {side}'s side and changed "
                f"on {kept}'s. Keep it as the working tree holds it (the changed side's entries) with `git add {path}`, "
                f"or delete it with `git rm {path}`") in said.err, said.err
