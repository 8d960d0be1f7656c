"""Which swept packages a folder ahead of every site folder holds (isolate/shadowed.py): found as the path finder
would take them, without importing."""

import sys

from gpu_budget.isolate.environment import running_sites
from gpu_budget.isolate.shadowed import shadowing


def test_a_package_ahead_of_the_site_folders_is_found_and_one_behind_them_or_a_bare_folder_is_not(tmp_path,
                                                                                                  monkeypatch):
    ahead, bare, behind = tmp_path / "ahead", tmp_path / "bare", tmp_path / "behind"
    (ahead / "gbshadow").mkdir(parents=True)
    (ahead / "gbshadow" / "__init__.py").write_text("")
    (ahead / "gbmodule.py").write_text("")
    (bare / "gbbare").mkdir(parents=True)  # no __init__.py: a namespace portion, which a package later wins over
    (behind / "gbbehind").mkdir(parents=True)
    (behind / "gbbehind" / "__init__.py").write_text("")  # an editable install's folder: its .pth appends it
    sites = running_sites()
    monkeypatch.setattr(sys, "path", [str(ahead), str(bare), *sites, str(behind)])
    assert shadowing("gbshadow") == str(ahead / "gbshadow")
    assert shadowing("gbmodule") == str(ahead / "gbmodule.py")
    assert shadowing("gbbare") is None and shadowing("gbbehind") is None
    assert shadowing("tabulate") is None  # installed in a site folder
