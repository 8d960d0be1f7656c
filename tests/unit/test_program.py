"""A command's program in a case's own environment (isolate/program.py), on stand-in bin folders: the running
environment's (its interpreter and a console script whose #! line names it) and the environment's."""

import sys

import pytest

from gpu_budget.isolate.program import OutsideEnvironment, in_environment, is_shell


def executable(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def bins(tmp_path):
    running, own = tmp_path / "running" / "bin", tmp_path / "env" / "bin"
    for name in ("python", "python3"):
        executable(running / name)
        executable(own / name)
    executable(running / "launch", f"#!{running / 'python3'}\nimport sys\nfrom launch.cli import main\nmain()\n")
    return running, own


def mapped(argv, bins, **where):
    running, own = bins
    return in_environment(argv, str(own / "python"), "gbtiny==1.0", this=str(running / "python"),
                          path=where.get("path", str(running)), cwd=where.get("cwd"))


def test_the_running_interpreter_under_any_of_its_names_becomes_the_environments(bins):
    running, own = bins
    assert mapped([str(running / "python"), "train.py"], bins) == (str(own / "python"), "train.py")
    assert mapped([str(running / "python3"), "train.py"], bins) == (str(own / "python3"), "train.py")
    assert mapped(["python3", "train.py"], bins) == (str(own / "python3"), "train.py")


def test_a_console_script_of_the_running_environment_is_refused_naming_it_and_its_module(bins):
    running, _ = bins
    with pytest.raises(OutsideEnvironment) as raised:
        mapped(["launch", "--nproc", "2", "train.py"], bins)
    said = str(raised.value)
    assert said.startswith(f"command 'launch' runs {running / 'python3'} (its #! line)")
    assert "gbtiny==1.0 would not take effect there" in said
    assert '[sys.executable, "-m", "launch.cli", ...]' in said
    with pytest.raises(OutsideEnvironment):
        mapped([str(running / "launch"), "train.py"], bins)


def test_a_console_script_the_environment_also_has_is_the_environments(bins):
    _, own = bins
    executable(own / "launch", f"#!{own / 'python'}\n")
    assert mapped(["launch", "train.py"], bins) == (str(own / "launch"), "train.py")


def test_another_interpreter_is_refused(bins, tmp_path):
    other = executable(tmp_path / "usr" / "bin" / "python3.9")
    with pytest.raises(OutsideEnvironment, match=rf"command '{other}' is the interpreter {other}: gbtiny==1.0"):
        mapped([str(other), "train.py"], bins)
    with pytest.raises(OutsideEnvironment, match="command 'python3.9' is the interpreter"):
        mapped(["python3.9", "train.py"], bins, path=str(other.parent))


def test_pips_long_interpreter_form_is_read(bins, tmp_path):
    running, _ = bins
    script = executable(tmp_path / "tools" / "long", f"#!/bin/sh\n'''exec' \"{running / 'python3'}\" \"$0\" \"$@\"\n' '''\n")
    with pytest.raises(OutsideEnvironment, match=r"runs .*running/bin/python3 \(its #! line\)"):
        mapped([str(script)], bins)


def test_a_program_that_starts_no_python_of_its_own_is_left_as_it_is(bins, tmp_path):
    tools = tmp_path / "tools"
    executable(tools / "run.sh", "#!/bin/sh\npython3 train.py\n")  # its python3: PATH, the environment's first
    executable(tools / "train", "#!/usr/bin/env python3\n")  # the same: env finds the environment's python3
    for argv in (["./run.sh"], ["./train"], ["no-such-program"]):
        assert mapped(argv, bins, cwd=str(tools)) == tuple(argv)


@pytest.mark.parametrize(("script", "module"), [("torchrun", "torch.distributed.run"),
                                                ("accelerate", "accelerate.commands.accelerate_cli"),
                                                ("accelerate-launch", "accelerate.commands.launch")])
def test_a_launcher_of_the_running_environment_runs_as_its_module_under_the_environments_interpreter(
        bins, script, module):
    """torchrun and accelerate are console scripts of the running interpreter, each calling its module's main(),
    which `python -m` runs too: under the environment's interpreter they run its packages (a swept accelerate's)."""
    running, own = bins
    executable(running / script, f"#!{running / 'python3'}\nimport re\nimport sys\nfrom {module} import main\n"
                                 "if __name__ == '__main__':\n    sys.exit(main())\n")
    argv = [script, "--nproc-per-node", "2", "train.py"]
    assert mapped(argv, bins) == (str(own / "python"), "-m", module, *argv[1:])
    assert mapped([str(running / script), "train.py"], bins) == (str(own / "python"), "-m", module, "train.py")


@pytest.mark.parametrize("head,shell", [
    ("#!/bin/bash", True), ("#!/usr/bin/env bash", True), ("#! /bin/sh -e", True),
    ("#!/usr/bin/env -S LC_ALL=C zsh -e", True), (f"#!{sys.executable}", False), ("#!/usr/bin/env python3", False),
    ("echo no line", False),
])
def test_a_script_whose_hash_bang_line_starts_a_shell_is_a_shell(tmp_path, head, shell):
    """A shell's exit 137 reads as the SIGKILL of the process it waited for (command.py _ended): `./train.sh` is a
    shell as `sh train.sh` is, found by its path, on PATH, or from the command's cwd."""
    executable(tmp_path / "bin" / "train.sh", f"{head}\npython train.py\n")
    assert is_shell(["./train.sh"], cwd=str(tmp_path / "bin")) is shell
    assert is_shell(["train.sh"], path=str(tmp_path / "bin")) is shell
    assert is_shell([str(tmp_path / "bin" / "train.sh")]) is shell


def test_a_shell_named_is_one_and_a_program_not_found_is_none():
    assert is_shell(["sh", "-c", "python train.py"]) and is_shell(["/bin/bash", "run.sh"])
    assert not is_shell(["no-such-program-xyz"], path="/nonexistent") and not is_shell([])
