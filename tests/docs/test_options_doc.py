"""docs/options.md is generated from the option definitions the plugin registers (options.OPTIONS)."""

from doc_figures import ROOT

from gpu_budget.session import options


def test_the_options_doc_is_the_render_of_the_definitions():
    """Byte for byte; after changing an option: python -m gpu_budget options > docs/options.md"""
    assert (ROOT / "docs/options.md").read_bytes() == options.document().encode()


def test_the_table_has_one_row_per_option_with_its_flag_ini_and_default():
    rows = options.table().splitlines()[2:]
    assert len(rows) == len(options.OPTIONS)
    for row, option in zip(rows, options.OPTIONS):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[1].startswith(f"`{option.name}`") and cells[2] == f"`{option.shown_default.replace('|', chr(92) + '|')}`"
        assert cells[0].startswith(f"`{option.flag_name}") if option.flag else cells[0] == ""
    assert "| `--gpu-budget-timeout=SECONDS` | `gpu_budget_timeout` | `900` |" in options.table()
    assert "| `--gpu-budget-scale=tiny\\|real` | `gpu_budget_scale` | `tiny` |" in options.table()


def test_pytest_help_shows_each_option_with_the_same_help(pytester):
    """Each row's flag and ini name are what pytest registered, with the table's help text (pytest --help)."""
    result = pytester.runpytest_inprocess("--help", "-p", "no:randomly")
    shown = " ".join(result.stdout.str().split())
    for option in options.OPTIONS:
        assert f"{option.name} (" in shown  # the ini value and its type
        assert " ".join(option.help.split()) in shown
        if option.flag:
            assert option.flag_name + ("" if option.is_switch else f"={option.metavar}") in shown


def test_every_variable_a_user_sets_is_in_the_options_doc():
    """The GPU_BUDGET_* variables the plugin reads from a user's environment; the others are the gate's own, set for
    its children and sessions. docs/options.md named GPU_BUDGET_ASSETS only, though a host without an index needs
    GPU_BUDGET_WHEELHOUSE to make any environment."""
    import re

    own = {"AGAINST_COLLECT", "AGAINST_FAILED", "AGAINST_ONLY", "AGAINST_ROOTDIR", "AGAINST_SELECT", "AGAINST_SIDE", "BEHIND",
           "BISECT_STEP", "CARD", "HELPER_PYTHONPATH", "HELPER_SESSION_PATHS", "OWNER", "PARENT", "SESSION_PATHS", "SNAPSHOT",
           "SOCKET"}
    code = "\n".join(p.read_text() for p in (ROOT / "plugin/gpu_budget").rglob("*.py"))
    read = set(re.findall(r"GPU_BUDGET_([A-Z_]+[A-Z])", code)) - own
    assert read == {"ASSETS", "WHEELHOUSE"}, read  # a new one: document it below the table, or add it to `own`
    doc = (ROOT / "docs/options.md").read_text()
    assert all(f"`GPU_BUDGET_{name}=DIR` (environment)" in doc for name in read)
