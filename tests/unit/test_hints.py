"""A command's path that failed the way a relative path fails gets a hint naming the folder it was taken from; one
that starts with ~ is named as unexpanded, since no shell runs the command (isolate/hints.py)."""

import os

from gpu_budget.isolate import hints


def test_a_relative_program_names_the_working_folder(tmp_path):
    said = hints.not_found(["./train.sh"], str(tmp_path))
    assert f"'./train.sh' is not in the command's working folder, {tmp_path} (the Scenario's cwd=)" in said


def test_a_path_under_tilde_is_said_to_be_unexpanded(tmp_path):
    said = hints.cannot_open(["python", "~/x.py"], str(tmp_path),
                             f"python: can't open file '{tmp_path}/~/x.py': [Errno 2] No such file or directory")
    assert said.startswith("; '~/x.py' starts with ~, which no shell expands here")
    assert "os.path.expanduser('~/x.py')" in said
    assert hints.not_found(["~/bin/train"], str(tmp_path)).startswith("; '~/bin/train' starts with ~")


def test_a_bare_name_or_an_absolute_path_gets_no_hint():
    assert hints.not_found(["trainer"], None) == ""
    assert hints.not_found([os.path.abspath("x")], None) == ""


def test_a_bare_name_found_in_the_working_folder_is_said_to_need_a_dot_slash(tmp_path):
    """command=["mytrain"] with cwd= holding mytrain said only "command 'mytrain' not found": a bare name is looked up
    on PATH, never in the working folder, as in a shell."""
    (tmp_path / "mytrain").write_text("#!/bin/sh\n")
    said = hints.not_found(["mytrain"], str(tmp_path))
    assert said == (f"; 'mytrain' is in the command's working folder, {tmp_path}, but a bare name is looked up on PATH "
                    "alone, as a shell does: give it as './mytrain'")
    assert hints.not_found(["other"], str(tmp_path)) == ""


def test_a_module_missing_under_another_python_on_path_names_that_python(tmp_path):
    """command=["python", "train.py"] from a venv that is not activated (`.venv/bin/pytest`) starts the `python` PATH
    finds, whose packages lack torch: the failure said only "ModuleNotFoundError: No module named 'torch'", of a
    package the venv running pytest has."""
    other = tmp_path / "bin"
    other.mkdir()
    (other / "python").write_text("#!/bin/sh\n")
    (other / "python").chmod(0o755)
    died = "Traceback ...\nModuleNotFoundError: No module named 'torch'\n"
    said = hints.other_python(["python", "train.py"], None, str(other), died, this="/venv/bin/python3")
    assert said == (f"; 'python' is {other / 'python'} (found on PATH), not the interpreter running pytest "
                    "(/venv/bin/python3), so the module 'torch' was looked for in that one's packages: start the "
                    "command with sys.executable")
    assert hints.other_python(["python", "train.py"], None, str(other), died, this=str(other / "python3")) == ""
    assert hints.other_python(["python", "train.py"], None, str(other), "ValueError: no\n", this="/v/python3") == ""
    assert hints.other_python(["sh", "train.sh"], None, str(other), died, this="/venv/bin/python3") == ""
