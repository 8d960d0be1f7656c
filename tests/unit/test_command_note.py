"""compare.command_note: what a command case's row says of arguments changed since its entry was recorded."""

from gpu_budget.judge.compare import command_note

THEN = ("python", "train.py", "--batch", "16")


def test_the_same_arguments_or_no_stored_ones_say_nothing():
    assert command_note(THEN, list(THEN)) is None  # the entry's JSON holds a list
    assert command_note(THEN, None) is None  # an entry recorded before commands were kept, or a function case's
    assert command_note(None, THEN) is None


def test_a_changed_argument_is_named_with_the_flag_before_it():
    assert command_note(("python", "train.py", "--batch", "64"), THEN) == \
        "command differs from the baseline's: argument 3 (after '--batch'): '16' -> '64'"
    assert command_note(("python3", *THEN[1:]), THEN) == "command differs from the baseline's: the program: " \
        "'python' -> 'python3'"


def test_arguments_added_or_removed_show_both_commands():
    assert command_note((*THEN, "--fp16"), THEN) == \
        "command differs from the baseline's: 'python train.py --batch 16' -> 'python train.py --batch 16 --fp16'"
