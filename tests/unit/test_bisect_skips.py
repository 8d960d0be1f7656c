"""against/bisect.py: a skipped commit's reason carries the error's last lines (a crash: where it happened), an answer
skips left open is the commits it could be, said, written to JSON and exit code 1 (git's own transcript, as `git bisect
run` prints it), and --recheck withdraws an answer a re-run of its parent contradicts."""

import re
import subprocess
from pathlib import Path

import pytest

from gpu_budget.against import bisect as bisect_module
from gpu_budget.against.bisect import Found, StepSettings, Tried, measure, open_candidates, rechecked, skip_reason
from gpu_budget.against.pairs import Side, ended, fatal, run_session
from gpu_budget.against.worktree import AgainstError, Ref

FAILED = """the bisect session at 70f26e3ebe (in base) ended with exit code 4 and no report; its output ends:
ImportError while loading conftest 'conftest.py'.
.venv/lib/python3.11/site-packages/_pytest/assertion/rewrite.py:357: in _rewrite_test
    co = compile(tree, strfn, "exec", dont_inherit=True)
E     File "conftest.py", line 3
E       def oops(:
E               ^
E   SyntaxError: invalid syntax
"""

COLLECTION = """the bisect session at 1234567890 (in base) ended with exit code 3; its output ends:
INTERNALERROR>   File "plugin.py", line 12, in pytest_collection_finish
INTERNALERROR> RuntimeError: the hook broke
========================= 1 error in 0.52s =========================
"""

A, B, C = "8787c9d8d8b7def1b56bfb3bad9455505f5a3208", "e08a9f21acc1b937d9c3901ea3f74cf07074d224", "c" * 40
OPEN = f"""running  'python' '-m' 'gpu_budget.against.bisect'
gpu-budget bisect: 8787c9d8d8 skip      - -  commit 1: ...
Bisecting: 1 revision left to test after this (roughly 1 step)
[{B}] commit 2
running  'python' '-m' 'gpu_budget.against.bisect'
There are only 'skip'ped commits left to test.
The first bad commit could be any of:
{A}
{B}
We cannot bisect more!
error: bisect run cannot continue any more
"""


def test_a_skip_reason_ends_with_the_error_not_with_its_output_ends():
    reason = skip_reason(FAILED)
    assert "its output ends" not in reason and "\n" not in reason
    assert reason.startswith("the bisect session at 70f26e3ebe (in base) ended with exit code 4 and no report: ")
    assert reason.endswith('File "conftest.py", line 3 | def oops(: | SyntaxError: invalid syntax'), reason
    assert skip_reason(COLLECTION).endswith("INTERNALERROR> RuntimeError: the hook broke")  # pytest's banner dropped
    assert skip_reason("one line only") == "one line only"
    long = skip_reason("x; its output ends:\nE   ValueError: " + "v" * 500)
    assert long.endswith("v" * 50) and len(long) < 260


def test_an_answer_skips_left_open_is_the_commits_git_names():
    assert open_candidates(OPEN) == (A, B)
    assert open_candidates(f"{A} is the first bad commit\n") == ()
    reference = Tried(C, "base", "reference", "ram_tree", 100)
    found = Found(reference, (Tried(A, "commit 1", "skip", None, None, "why"),), None, "open", (A, B))
    data = found.to_json()
    assert data["first"] is None and data["candidates"] == [A, B] and data["tried"][0]["why"] == "why"
    assert found.text().splitlines()[-1] == "gpu-budget bisect: no single first commit: open"


def test_a_commit_that_does_not_hold_the_folder_is_a_skip_not_a_traceback(tmp_path):
    """Before: FileNotFoundError out of the step: git bisect run read its exit code 1 as "bad"."""
    row, why = measure(tmp_path / "gone", "c" * 40, ["-k", "test_fn"], tmp_path, 1, "t.py::test_fn")
    assert row is None and why.startswith("the bisect session at cccccccccc: ") and "is not in that commit" in why
    with pytest.raises(AgainstError, match="is not in that commit"):
        run_session(Side("base", "c" * 40, tmp_path / "gone"), 1, [], tmp_path)


def _history(folder, monkeypatch) -> list[str]:
    """A repository of four commits, GOOD first; their hashes."""
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1",
                       "GIT_CONFIG_GLOBAL": "/dev/null"}.items():
        monkeypatch.setenv(key, value)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=folder, check=True)
    out = []
    for k in range(4):
        (folder / "README").write_text(f"{k}\n")
        subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"commit {k}"], cwd=folder, check=True)
        out.append(subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, check=True, capture_output=True,
                                  text=True).stdout.strip())
    return out


@pytest.mark.parametrize("again", [["within", "within"], ["within", "moved"]], ids=["steady", "intermittent"])
def test_recheck_measures_the_first_commits_parent_again_and_withdraws_an_answer_it_contradicts(tmp_path, monkeypatch,
                                                                                              again):
    """A figure that moves only some runs can read "within" at a commit after the one that moved it, and git then
    names a later commit. --recheck N measures the named commit's parent N times more: past the tolerance once, and
    the answer is withdrawn (no commit named, exit 1), saying why."""
    good, one, two, _bad = _history(tmp_path, monkeypatch)
    measured = []

    def tried(settings, commit):
        measured.append(commit)
        return Tried(commit, "c", again[len(measured) - 1], "ram_tree", 100)

    monkeypatch.setattr(bisect_module, "try_commit", tried)
    reference = Tried(good, "good", "reference", "ram_tree", 100)
    found = Found(reference, (Tried(two, "commit 2", "moved", "ram_tree", 200),), two, "")
    settings = StepSettings(tmp_path, tmp_path, (), tmp_path, tmp_path / "log", None, 100, good)
    answer = rechecked(found, settings, Ref("main~3", good), 2, log=lambda line: None)
    assert measured == [one, one]  # the parent of the commit named, twice
    if again[-1] == "within":
        assert (answer.first, answer.rechecked) == (two, 2)
        assert answer.text().splitlines()[-1] == ("gpu-budget bisect: its parent measured 2 time(s) more, within the "
                                                  "tolerance each time")
    else:
        assert answer.first is None and answer.to_json()["first"] is None
        assert answer.said.startswith(f"the figure moves intermittently: {one[:10]}, the parent of {two[:10]}, "
                                      f"measured past the tolerance on a re-run")
    assert rechecked(found, settings, Ref("main~3", good), 0, log=lambda line: None) is found
    assert Path(tmp_path / "README").read_text() == "1\n"  # the parent checked out to be measured


CRASH = """Fatal Python error: Aborted

Thread 0x00007f5e1a5fe6c0 (most recent call first):
  File "plugin/gpu_budget/isolate/lifecycle.py", line 254 in _wait_gone

Current thread 0x00007ff1997d4b80 (most recent call first):
  File "memtests/test_segv.py", line 2 in <module>
  File "_pytest/python.py", line 528 in importtestmodule

Extension modules: yaml._yaml (total: 1)
"""


def test_a_session_killed_by_a_signal_says_which_and_where_it_crashed():
    """Before: "ended with exit code -6", then the end of the fault handler's stack: pytest's frames, not the file."""
    assert (ended(4), ended(-6), ended(-9)) == ("exit code 4", "signal SIGABRT (killed)", "signal SIGKILL (killed)")
    assert fatal(CRASH) == ': Fatal Python error: Aborted | File "memtests/test_segv.py", line 2 in <module>'
    assert fatal("ERROR: usage\n") == ""


def test_a_revision_naming_a_tree_or_a_file_says_what_it_names(tmp_path, monkeypatch):
    """GOOD, BAD and --gpu-budget-against's REF: before, a tree's hash or `main:path` read "no commit ... fetch it
    first?", though git knows it, as something else."""
    from gpu_budget.against.worktree import repo_at, resolve

    _history(tmp_path, monkeypatch)
    repo = repo_at(tmp_path, "HEAD")
    for given, kind in (("HEAD^{tree}", "tree"), ("HEAD:README", "blob")):
        with pytest.raises(AgainstError, match=rf"^GOOD={re.escape(given)}: names a {kind} in .*, not a commit$"):
            resolve(repo, given, "GOOD")
    with pytest.raises(AgainstError, match="no commit 'nope' in .* fetch it first"):
        resolve(repo, "nope", "GOOD")


def test_a_json_path_that_is_a_folder_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    """Before: the folder passed the check (its parent is a folder), the whole bisect ran, then the answer was not
    written (`--json=/tmp: [Errno 21] Is a directory`) and the exit code was 2, as for bad input."""
    monkeypatch.chdir(tmp_path)  # in no git repository: anything that ran would fail otherwise
    with pytest.raises(SystemExit) as stopped:
        bisect_module.main(["HEAD~1", "HEAD", "-k", "test_x", "--json", str(tmp_path)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert f"--json={tmp_path}: a folder, not a file" in err and "git repository" not in err, err


def test_good_after_bad_is_named_as_such(tmp_path, capsys, monkeypatch):
    """Before: GOOD and BAD swapped said only "GOOD main (...) is not an ancestor of BAD main~1 (...)", the same words
    as two unrelated branches, with nothing on which to fix."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=tmp_path, check=True)
    for n in range(2):
        (tmp_path / "f.txt").write_text(f"{n}\n")
        subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
        subprocess.run(["git", "commit", "-qm", f"c{n}"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    assert bisect_module.main(["main", "main~1", "-k", "test_x"]) == 2
    err = capsys.readouterr().err
    assert "GOOD main (" in err and "comes after BAD main~1 (" in err and "swap them" in err, err


def test_an_answer_not_rechecked_says_how_sure_it_is():
    """Before: "first commit past the tolerance: <commit>" and nothing more, as sure as a rechecked answer, though its
    parent was measured once: a figure that moves only some runs can put the answer after the commit that moved it."""
    good, two = "a" * 40, "b" * 40
    reference = Tried(good, "good", "reference", "ram_tree", 100)
    found = Found(reference, (Tried(two, "commit 2", "moved", "ram_tree", 200),), two, "")
    said = found.text().splitlines()[-1]
    assert said == ("gpu-budget bisect: its parent measured once, within the tolerance: a figure that moves only "
                    "some runs can place the answer after the commit that moved it (--recheck N measures the parent "
                    "N times more)"), said
    assert "measured once" not in Found(reference, found.tried, two, "", rechecked=2).text()
