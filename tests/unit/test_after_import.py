"""autohook.after_import: a project's own hook runs on a module once it has run, or at once where it already has."""

import sys

from gpu_budget.isolate import autohook


def test_a_hook_runs_once_the_module_has_run_and_at_once_where_it_already_has(tmp_path, monkeypatch):
    (tmp_path / "late_trainer.py").write_text("class Trainer:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "late_trainer", raising=False)
    seen = []
    autohook.after_import("late_trainer", lambda module: seen.append(module.Trainer.__name__))
    assert seen == []  # not imported yet: nothing ran
    import late_trainer  # noqa: F401

    assert seen == ["Trainer"]  # after the module's code ran, with the module
    autohook.after_import("late_trainer", lambda module: seen.append(module.__name__))
    assert seen == ["Trainer", "late_trainer"]  # already imported: at once
    monkeypatch.delitem(sys.modules, "late_trainer")
