"""Without pytest's cache (-p no:cacheprovider) prepared assets and environments are kept in folders of the rootdir,
which git is told to ignore as pytest's own cache folder is (session/folders.py): before, `.gpu-budget-assets/`
stood untracked in the project, its checkpoints one `git add -A` from a commit."""

import pytest

from gpu_budget.session.folders import assets_folder, environments_folder


def test_the_rootdir_folders_tell_git_to_ignore_them(pytester):
    config = pytester.parseconfigure("-p", "no:cacheprovider")
    assets, envs = assets_folder(config, made=True), environments_folder(config, None)
    assert (assets, envs) == (pytester.path / ".gpu-budget-assets", pytester.path / ".gpu-budget-envs")
    for folder in (assets, envs):
        assert "*" in (folder / ".gitignore").read_text().splitlines()


def test_a_session_that_prepares_nothing_makes_no_folder(pytester):
    config = pytester.parseconfigure("-p", "no:cacheprovider")
    assert not assets_folder(config, made=False).exists()


def test_an_assets_folder_that_is_a_file_is_a_usage_error_naming_the_variable(pytester, monkeypatch):
    """GPU_BUDGET_ASSETS at a file: before, a case that prepares assets failed with pathlib's traceback ending in
    "FileExistsError: [Errno 17] File exists: '...'", naming neither the variable nor the fix."""
    config = pytester.parseconfigure()
    (pytester.path / "assets").write_text("a file")
    monkeypatch.setenv("GPU_BUDGET_ASSETS", str(pytester.path / "assets" / "kept"))
    with pytest.raises(pytest.UsageError, match=r"GPU_BUDGET_ASSETS='.*assets/kept': .*kept lies under .*assets, a file"):
        assets_folder(config, made=True)
    monkeypatch.setenv("GPU_BUDGET_ASSETS", str(pytester.path / "assets"))
    with pytest.raises(pytest.UsageError, match="assets is a file, not a folder"):
        assets_folder(config, made=True)
    assert assets_folder(config, made=False) == pytester.path / "assets"  # a run without the gate is not stopped


def test_a_chosen_environments_folder_tells_git_to_ignore_it(pytester):
    """--gpu-budget-envs inside the project: its venvs of hundreds of MiB stood untracked there (`?? envs/` in git
    status), one `git add -A` from a commit, where the default folder is ignored. A folder the session makes, or finds
    holding only what it keeps there, gets the same marker; a folder of the user's own is left as it is."""
    config = pytester.parseconfigure()
    chosen = pytester.path / "build" / "envs"
    assert environments_folder(config, chosen) == chosen
    assert "*" in (chosen / ".gitignore").read_text().splitlines()
    earlier = pytester.path / "envs"  # made by an earlier session, before the marker was written
    (earlier / "env-0123456789abcdef").mkdir(parents=True)
    (earlier / "env-0123456789abcdef.lock").write_text("")
    (earlier / "resolved").mkdir()
    environments_folder(config, earlier)
    assert "*" in (earlier / ".gitignore").read_text().splitlines()
    own = pytester.path / "tools"  # the user's folder, holding the user's files: no marker that would hide new ones
    own.mkdir()
    (own / "notes.txt").write_text("mine")
    environments_folder(config, own)
    assert not (own / ".gitignore").exists()
    kept = pytester.path / "kept"  # a .gitignore of the user's own is never replaced
    kept.mkdir()
    (kept / ".gitignore").write_text("!keep-me\n")
    environments_folder(config, kept)
    assert (kept / ".gitignore").read_text() == "!keep-me\n"


def test_a_run_without_the_gate_leaves_pytest_cache_as_pytest_leaves_it(pytester):
    """The plugin is thin where --gpu-budget is not given: before, every plain `pytest` made an empty
    .pytest_cache/d/gpu-budget-assets, the assets folder a session without the gate never uses."""
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=1)
    assert (pytester.path / ".pytest_cache").is_dir()
    assert not (pytester.path / ".pytest_cache" / "d").exists()
