"""Without pytest's cache (-p no:cacheprovider) prepared assets and environments are kept in folders of the rootdir,
which git is told to ignore as pytest's own cache folder is (session/folders.py): before, `.gpu-budget-assets/`
stood untracked in the project, its checkpoints one `git add -A` from a commit."""

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
