"""against/bisect.py: a skipped commit's reason carries the error's last lines, and an answer skips left open is the
commits it could be, said, written to JSON and exit code 1 (git's own transcript, as `git bisect run` prints it)."""

import pytest

from gpu_budget.against.bisect import Found, Tried, measure, open_candidates, skip_reason
from gpu_budget.against.pairs import Side, run_session
from gpu_budget.against.worktree import AgainstError

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
