"""The legend explains the words the section printed, and only those; docs/measuring.md explains the same words."""

from pathlib import Path

from gpu_budget.report import legend, once

ROOT = Path(__file__).resolve().parents[2]


def test_the_legend_names_only_the_words_the_lines_use():
    setup = ("setup: cpu (x86-64-v3), kernels avx2 (dispatch avx2), 1 thread(s) per child, malloc steady, "
             "import floor 18.16 MiB")
    message = ("t.py::test_x: ram_tree 621.59 MiB - import floor shift -24.00 KiB = 621.61 MiB (floor taken off) "
               "> baseline 606.26 MiB")
    shown = [setup, message]
    words = [line.split(":")[0].strip() for line in legend.lines(shown)[1:]]
    assert words == ["import floor", "floor taken off", "malloc", "kernels"]
    assert legend.lines(["nothing of the gate's own words"]) == []


def test_a_budget_that_breaks_in_a_growth_note_is_explained():
    shown = ["host RAM steady over steps 3-7 (0.01 MiB/step, within the clean allowance 0.96 MiB/step)",
             "test    RAM tree    RAM main    VRAM peak", "over-budget (expected)", "VRAM 8.00 GiB unchecked as on RTX 3090"]
    words = [line.split(":")[0].strip() for line in legend.lines(shown)[1:]]
    assert words == ["RAM tree", "RAM main", "VRAM peak", "clean allowance", "expected", "unchecked", "as on"]


def test_docs_measuring_explains_every_word_of_the_legend():
    """The glossary in docs/measuring.md lists each term with the legend's own words."""
    text = (ROOT / "docs" / "measuring.md").read_text()
    glossary = text[text.index("## Words the summary uses"):]
    for term in legend.TERMS:
        assert f"- **{term.word}**: {term.meaning}" in " ".join(glossary.split()), term.word


def test_a_message_is_cut_to_its_first_line_with_a_pointer_and_a_plugins_traceback_is_its_own():
    assert once.headline("one line") == "one line"
    assert once.headline("the fault.\nthe advice") == "the fault." + once.MORE
    own = ('Traceback (most recent call last):\n  File "/venv/lib/gpu_budget/isolate/child.py", line 1, in main\n'
           '  File "/x/gpu_budget/isolate/command.py", line 2, in run\ngpu_budget.isolate.command.CommandFailed: x')
    theirs = own.replace("/x/gpu_budget/isolate/command.py", "/home/me/train.py")
    assert once.own_traceback(own) and not once.own_traceback(theirs) and not once.own_traceback("line 1\nline 2")
    assert once.user_type("gpu_budget.isolate.command.CommandFailed") is None


def test_a_users_traceback_quoted_in_the_plugins_exception_leaves_the_traceback_the_plugins_own():
    """A failed command's message holds its stderr: the frames there ran in the command, not in the measuring child."""
    kind = "gpu_budget.isolate.command.CommandFailed"
    quoted = ('Traceback (most recent call last):\n  File "/x/gpu_budget/isolate/command.py", line 2, in run\n'
              f'{kind}: command exited with 1; the last lines of its stderr:\nTraceback (most recent call last):\n'
              '  File "/home/me/train.py", line 3, in <module>\nRuntimeError: no split')
    assert once.own_traceback(quoted, kind) and not once.own_traceback(quoted)
    user = 'Traceback (most recent call last):\n  File "/home/me/run.py", line 1, in run\nRuntimeError: x'
    assert not once.own_traceback(user, "builtins.RuntimeError")
    assert once.user_type("builtins.RuntimeError") == "builtins.RuntimeError"
