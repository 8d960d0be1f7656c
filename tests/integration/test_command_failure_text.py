"""What a failed command case says: the command as it was run, and the user's own stderr without the plugin's frames
(isolate/command.py, report/once.py)."""

import json
import re
import sys
import textwrap
import uuid

import pytest
from inner_session import survivors

RAISES = '''
import sys
raise RuntimeError("the dataset has no split named " + sys.argv[1])
'''


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(raises=RAISES)

    def session(body: str):
        pytester.makepyfile(test_mem="import sys\nimport pytest\nfrom gpu_budget import Scenario\n" + textwrap.dedent(body))
        return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")

    return session


def test_a_script_that_raises_shows_its_traceback_once_and_none_of_the_plugins_frames(project):
    result = project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_raises(gpu_budget):
            gpu_budget.measure(Scenario(name="r", command=[sys.executable, "raises.py", "train"]))
    ''')
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "RuntimeError: the dataset has no split named train" in out, out
    assert "child's traceback" not in out and "CommandFailed" not in out, out
    assert not re.search(r'File "[^"]*gpu_budget', out), out


def test_a_failed_command_is_named_as_it_was_run_its_quoting_kept(project):
    """An argument holding spaces is one argument: the message quotes it, so the line shown is the line run."""
    result = project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_shell(gpu_budget):
            gpu_budget.measure(Scenario(name="sh", command=["sh", "-c", "echo broken >&2; exit 3"]))
    ''')
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*measured child failed (exit)*: command \"sh -c 'echo broken >&2; exit 3'\" exited with 3*"])


def test_a_process_left_running_is_named_by_its_command_line(project, pytester):
    """The leftover is killed before the report is read: its pid alone would name a process the user cannot find."""
    marker = f"gpu-budget-left-{uuid.uuid4().hex[:8]}"
    pytester.makepyfile(leave=f'''
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"], start_new_session=True)
    ''')
    result = project('''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_left(gpu_budget):
            gpu_budget.measure(Scenario(name="l", command=[sys.executable, "leave.py"]))
    ''')
    result.assert_outcomes(failed=1)
    named = f"(pid *: *python* -c 'import time; time.sleep(300)' {marker})"
    result.stdout.fnmatch_lines([f"*exited and left 1 process(es) running {named}: killed*"])
    assert survivors(marker) == []


def test_many_processes_left_running_are_counted_and_the_first_named(project):
    """A script that forks in a loop can leave hundreds: each named (up to 200 characters) made a message of tens of
    kilobytes, repeated in the terminal and the report; the first ones (the lowest pids: the one that forked the others
    among them) are named, the rest counted."""
    marker = f"gpu-budget-many-{uuid.uuid4().hex[:8]}"
    result = project(f'''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_left(gpu_budget):
            line = "for i in $(seq 30); do bash -c 'exec -a {marker} sleep 300' & done; sleep 0.5"
            gpu_budget.measure(Scenario(name="l", command=["bash", "-c", line]))
    ''')
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    message = next(line for line in out.splitlines() if "child failed (leftover)" in line)
    assert "exited and left 30 process(es) running (pid " in message, message
    named = message.split("running (", 1)[1]  # the command line holds the marker too
    assert named.count(marker) == 10 and "; and 20 more): killed" in named, message
    assert survivors(marker) == []


def test_a_command_stopped_at_its_timeout_says_where_it_was_and_what_it_last_wrote(pytester, monkeypatch):
    """The child that read the command's stderr is killed with it at the timeout: the stderr's tail as it stood, and
    the phase the command was in, still reach the report (isolate/forkserver.py)."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(waits='''
import sys, time
import gpu_budget
gpu_budget.phase("load")
print("loading shards 1/4", file=sys.stderr, flush=True)
print("waiting for rank 1 to join", file=sys.stderr, flush=True)
time.sleep(120)
''', test_mem='''
import sys
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="2 GiB")
def test_waits(gpu_budget):
    gpu_budget.measure(Scenario(name="w", command=[sys.executable, "waits.py"]))
''')
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        ("*measured child failed (timeout), host RAM peak seen so far * MiB: timed out after 4 s and was killed*"
        "it was in phase 'load'; the last lines of its command's stderr:"),
        "loading shards 1/4",
        "waiting for rank 1 to join",
    ])


KILLS_ITSELF = '''
import os, signal
held = bytearray(96 << 20)
held[::4096] = b"x" * len(held[::4096])  # touched: resident
os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would
'''


@pytest.mark.parametrize("through", ["nothing", "sh -c", "a shell script"])
def test_a_sigkill_past_the_budget_reproduces_directly_or_through_a_shell(project, pytester, through):
    """A shell that waited for a SIGKILLed process exits with 137: the same death as the process's own, so the same
    verdict (isolate/command.py _ended), for a shell named and for a script its #! line runs in one (`./train.sh`:
    before, "command './kills.sh' exited with 137", an error, where `sh kills.sh` was over budget as expected); a
    plain exit 137 is not read as a kill."""
    pytester.makepyfile(kills=KILLS_ITSELF)
    script = pytester.path / "kills.sh"
    script.write_text(f"#!/usr/bin/env sh\n{sys.executable} kills.py\n")
    script.chmod(0o755)
    line = {"nothing": '[sys.executable, "kills.py"]', "sh -c": '["sh", "-c", sys.executable + " kills.py"]',
            "a shell script": '["./kills.sh"]'}[through]
    result = project(f'''
        @pytest.mark.gpu_budget(ram="48 MiB", expect="over-budget")
        def test_killed(gpu_budget):
            gpu_budget.measure(Scenario(name="k", command={line}))

        @pytest.mark.gpu_budget(ram="48 MiB", expect="over-budget")
        def test_exits_137(gpu_budget):
            gpu_budget.measure(Scenario(name="e", command=[sys.executable, "-c", "import sys; sys.exit(137)"]))
    ''')
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    killed, exits = rows["test_killed"], rows["test_exits_137"]
    assert (killed["verdict"], killed["passed"], killed["error"]["kind"]) == ("over-budget", True, "killed"), killed
    said = "was killed by SIGKILL" if through == "nothing" else \
        "the code a shell gives when the process it waits for is killed by SIGKILL"
    assert f"{said} (the kernel's OOM killer sends SIGKILL)" in killed["error"]["message"], killed
    assert exits["error"]["kind"] == "exit" and "shell" not in exits["error"]["message"], exits


WORKER_DIES = '''
import os, signal, sys
from torch.utils.data import DataLoader, Dataset


class Held(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        held = bytearray(96 << 20)
        held[::4096] = b"x" * len(held[::4096])  # touched: resident
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))  # SIGKILL: as the kernel's OOM killer would


for batch in DataLoader(Held(), batch_size=2, num_workers=1):
    pass
'''


@pytest.mark.usefixtures("torch")  # imported before pytester notes sys.modules: tests/imported_once.py
def test_a_dataloader_worker_sigkilled_past_the_budget_reproduces_as_the_scripts_own_kill(project, pytester):
    """A DataLoader worker SIGKILLed (the OOM killer's pick is the process that grew): its script raises "DataLoader
    worker (pid(s) N) exited unexpectedly" and exits 1, which is that kill, as a shell's 137 is (isolate/command.py
    _ended). Before: "command '... worker.py SIGKILL' exited with 1", an error under expect="over-budget". A worker
    ended by another signal is no such kill."""
    pytester.makepyfile(worker=WORKER_DIES)
    result = project('''
        @pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
        @pytest.mark.gpu_budget(ram="48 MiB", expect="over-budget")
        def test_worker(gpu_budget, sig):
            gpu_budget.measure(Scenario(name="w", command=[sys.executable, "worker.py", sig]))
    ''')
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["nodeid"].split("::")[-1]: r for r in json.loads((pytester.path / "r.json").read_text())["results"]}
    killed, ended = rows["test_worker[SIGKILL]"], rows["test_worker[SIGTERM]"]
    assert (killed["verdict"], killed["passed"], killed["error"]["kind"]) == ("over-budget", True, "killed"), killed
    assert re.search(r"exited with 1: its DataLoader worker \(pid \d+\) was killed by SIGKILL \(the kernel's OOM "
                     r"killer sends SIGKILL\)", killed["error"]["message"]), killed["error"]
    assert ended["error"]["kind"] == "exit" and "SIGKILL" not in ended["error"]["message"], ended["error"]


OWN_EXCEPTHOOK = '''
import sys
import gpu_budget


def boxed(kind, value, tb):  # as a typer app's hook prints it: the error in a box, whose last line names nothing
    print(f"| {kind.__name__} |", file=sys.stderr)
    print("+---------------+", file=sys.stderr)


sys.excepthook = boxed
gpu_budget.phase("load")
held = bytearray(96 << 20)
held[::4096] = b"x" * len(held[::4096])  # touched: resident
gpu_budget.step()
raise MemoryError()
'''


def test_an_out_of_memory_error_a_scripts_own_excepthook_prints_is_still_named(project, pytester):
    """A script whose own sys.excepthook takes the gate's place (a typer app's does) and whose stderr ends in a line
    that names no error: its uncaught MemoryError is named at its exit (autohook.report_exit, sys.last_value).
    Before: "command '... boxed.py' exited with 1; the last lines of its stderr: | MemoryError | ...", an error
    under expect="over-budget"."""
    pytester.makepyfile(boxed=OWN_EXCEPTHOOK)
    result = project('''
        @pytest.mark.gpu_budget(ram="48 MiB", expect="over-budget")
        def test_boxed(gpu_budget):
            gpu_budget.measure(Scenario(name="b", command=[sys.executable, "boxed.py"]))
    ''')
    result.assert_outcomes(passed=1)
    row = json.loads((pytester.path / "r.json").read_text())["results"][0]
    assert (row["verdict"], row["error"]["kind"]) == ("over-budget", "oom"), row["error"]
    assert "ran out of memory in phase train_step_1 (step 1): MemoryError: " in row["error"]["message"], row["error"]


def test_a_module_missing_under_the_python_path_finds_names_that_python(project, pytester):
    """command=["python", "train.py"] where PATH's `python` is not the one running pytest (a venv not activated):
    its missing torch is named as that python's, with what to start instead."""
    other = pytester.path / "other-bin"
    other.mkdir()
    (other / "python").write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    (other / "python").chmod(0o755)
    result = project(f'''
        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_py(gpu_budget):
            path = "{other}" + ":" + __import__("os").environ["PATH"]
            gpu_budget.measure(Scenario(name="p", command=["python", "train.py"], env={{"PATH": path}}))
    ''')
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([(f"*command 'python train.py' exited with 1; 'python' is {other}/python (found on "
                                  "PATH), not the interpreter running pytest (*), so the module 'torch' was looked for "
                                  "in that one's packages: start the command with sys.executable; the last lines of "
                                  "its stderr:")])
