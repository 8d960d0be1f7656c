"""A function case's fix that its runner never read is noted not applied, not shown as applied (declare/fix_reads.py)."""

import json

from gpu_budget.declare.fix_reads import Reads
from gpu_budget.declare.scenario import RunContext

ALL = ("truncate", "fewer_workers", "lora")


def handed(fixes=ALL, params=None):
    reads = Reads(fixes, {"truncate": (), "fewer_workers": ("dataloader_workers",), "lora": ()})
    ctx = RunContext("tiny", reads.params(params or {"dataloader_workers": 1, "batch": 8}), reads.fixes(), None, "cpu")
    return reads, ctx


def test_a_fix_asked_by_name_or_through_its_params_is_read_and_one_never_asked_about_is_not():
    reads, ctx = handed()
    assert ctx.has("lora") and ctx.params["dataloader_workers"] == 1 and ctx.params.get("batch") == 8
    assert reads.unread() == ("truncate",)
    info = reads.noted({"fixes_applied": {"lora": "applied"}, "other": 1})
    assert info["other"] == 1 and info["fixes_applied"]["lora"] == "applied"
    assert info["fixes_applied"]["truncate"].startswith("not applied: its runner never read it (ctx.has('truncate')")


def test_what_the_runner_says_of_a_fix_itself_stands():
    reads, _ = handed()
    assert reads.noted({"fixes_applied": {"truncate": "applied"}})["fixes_applied"]["truncate"] == "applied"
    assert reads.noted({"fixes_applied": "its own text"}) == {"fixes_applied": "its own text"}


def test_going_over_every_param_or_comparing_the_fixes_whole_reads_them_all():
    for read_all in (lambda ctx: json.dumps(ctx.params), lambda ctx: {**ctx.params}, lambda ctx: ctx.fixes == ("truncate",)):
        reads, ctx = handed()
        read_all(ctx)
        assert reads.unread() == (), read_all
        assert reads.noted({}) == {}


def test_going_over_the_fixes_to_log_them_reads_none():
    """A runner that logs its fixes (and honours none) once made every fix count as read, hiding "(not applied)"."""
    reads, ctx = handed()
    logged = [", ".join(ctx.fixes), json.dumps(list(ctx.fixes)), *(f"{f}" for f in ctx.fixes),
              *(str(f) for f in ctx.fixes), repr(sorted(ctx.fixes)), str(ctx.fixes[1:]),
              "fix %s" % ctx.fixes[0]]  # noqa: UP031  as logging formats its arguments
    assert logged[0] == "truncate, fewer_workers, lora" and logged[1] == '["truncate", "fewer_workers", "lora"]'
    assert reads.unread() == ALL


def test_a_fix_compared_or_asked_of_while_going_over_them_is_read():
    for apply, read in ((lambda f: f == "lora", {"lora"}), (lambda f: f != "truncate", {"truncate"}),
                        (lambda f: {"lora": 1}.get(f), {"lora"}), (lambda f: f in {"lora", "qlora"}, {"lora"}),
                        (lambda f: str(f) == "lora", {"lora"}), (lambda f: f.startswith("fewer"), set(ALL))):
        reads, ctx = handed()
        for fix in ctx.fixes:
            apply(fix)
        assert set(ALL) - set(reads.unread()) == read, read
    reads, ctx = handed()
    match ctx.fixes[2]:
        case "lora":
            pass
    assert reads.unread() == ("truncate", "fewer_workers")


def test_a_fix_whose_params_are_not_known_is_not_judged():
    reads = Reads(("truncate",), None)
    assert reads.unread() == () and reads.noted({}) == {}
    assert "truncate" in reads.fixes() and reads.fixes() == ("truncate",)  # still the tuple of names the runner had
