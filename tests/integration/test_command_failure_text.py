"""What a failed command case says: the command as it was run, and the user's own stderr without the plugin's frames
(isolate/command.py, report/once.py)."""

import re
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
        return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")

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
    result.stdout.fnmatch_lines(["*measured child failed (exit): command \"sh -c 'echo broken >&2; exit 3'\" exited with 3*"])


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
