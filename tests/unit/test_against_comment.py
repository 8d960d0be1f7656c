""".github/scripts/gpu_budget_against.py: each side's reports split out, and the one pull-request comment of the GPU
workflow's against mode, created once and then edited in place. No network: the gh CLI is a fake on PATH."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".github" / "scripts" / "gpu_budget_against.py"
spec = importlib.util.spec_from_file_location("gpu_budget_against", SCRIPT)
against = importlib.util.module_from_spec(spec)
spec.loader.exec_module(against)

TABLE = "### GPU budget against `0123456789`: passed (1 pass)\n\n| test | figure |\n|---|---|\n| t::a | ram_tree |\n"
URL = "https://github.com/o/r/actions/runs/7"

FAKE_GH = textwrap.dedent('''\
    #!{python}
    """A fake `gh api` over a JSON file of comments: list (two pages), PATCH one, POST one; each call logged."""
    import json, os, sys
    state = os.environ["FAKE_GH_STATE"]
    data = json.load(open(state))
    args = sys.argv[1:]
    data["calls"].append(args)
    assert args[0] == "api", args
    if args[1] == "--paginate":
        comments = data["comments"]
        print(json.dumps(comments[:1]) + "\\n" + json.dumps(comments[1:]))
    elif args[1:3] == ["-X", "PATCH"]:
        cid = int(args[3].rsplit("/", 1)[1])
        (found,) = [c for c in data["comments"] if c["id"] == cid]
        found["body"] = json.load(sys.stdin)["body"]
        print(json.dumps(found))
    elif args[1:3] == ["-X", "POST"]:
        made = {{"id": 100 + len(data["comments"]), "user": {{"login": "github-actions[bot]"}},
                "body": json.load(sys.stdin)["body"]}}
        data["comments"].append(made)
        print(json.dumps(made))
    else:
        sys.exit(f"unexpected call {{args}}")
    json.dump(data, open(state, "w"))
''')


def _reports(tmp_path: Path, **tables: str | None) -> Path:
    """Downloaded artifacts: a folder gpu-budget-<runner> each, with against.md where the table is not None."""
    reports = tmp_path / "reports"
    for runner, table in tables.items():
        folder = reports / f"gpu-budget-{runner}"
        folder.mkdir(parents=True)
        if table is not None:
            (folder / "against.md").write_text(table)
    return reports


def test_the_comment_starts_with_the_marker_and_holds_each_runners_table(tmp_path):
    reports = _reports(tmp_path, h100=TABLE, a10g=None)
    (reports / "gpu-budget-baselines-h100").mkdir()  # another kind of artifact: not a runner
    body = against.compose(reports, "failure", URL)
    assert body.splitlines()[0] == against.MARKER == "<!-- gpu-budget-against -->"
    assert f"Gate: **failure** ([workflow run]({URL}))" in body and "`gpu-budget-against`" in body
    assert body.index("**Runner `a10g`**") < body.index("**Runner `h100`**")  # sorted by runner name
    assert TABLE.strip() in body
    assert "**Runner `a10g`**\n\nNo table from this runner: its gate ended before the comparison" in body
    assert "baselines-h100" not in body


def test_no_runner_no_table_and_a_body_cut_to_githubs_limit(tmp_path):
    assert "No runner uploaded a report" in against.compose(tmp_path / "absent", "cancelled", URL)
    huge = _reports(tmp_path, h100=TABLE + "| t::b | ram_tree |\n" * 10_000)
    body = against.compose(huge, "success", URL)
    assert len(body) <= against.LIMIT and body.startswith(against.MARKER)
    assert body.endswith("the whole tables are in the run's step summaries.*\n")


def test_only_the_bots_own_marked_comment_is_ours():
    bot = {"login": "github-actions[bot]"}
    comments = [{"id": 1, "user": {"login": "alice"}, "body": against.MARKER + " quoted by a person"},
                {"id": 2, "user": bot, "body": "another bot comment without the marker"},
                {"id": 3, "user": bot, "body": against.MARKER + "\n## GPU budget against the merge base"},
                {"id": 4, "user": bot, "body": against.MARKER + "\na later duplicate"}]
    assert against.ours(comments)["id"] == 3
    assert against.ours(comments[:2]) is None
    assert against.ours(comments, author="alice")["id"] == 1


def test_pages_reads_gh_paginate_output_back_to_back():
    assert against.pages('[{"id": 1}]\n[{"id": 2}, {"id": 3}]\n') == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert against.pages("[]") == [] and against.pages("") == []


def test_post_creates_once_then_updates_the_same_comment():
    comments, calls = [], []

    def api(args, stdin):
        calls.append(list(args))
        if args[0] == "--paginate":
            return json.dumps(comments)
        if args[1] == "POST":
            comments.append({"id": 9, "user": {"login": "github-actions[bot]"}, "body": json.loads(stdin)["body"]})
            return json.dumps(comments[-1])
        assert args[:3] == ["-X", "PATCH", "repos/o/r/issues/comments/9"]
        comments[0]["body"] = json.loads(stdin)["body"]
        return "{}"

    assert against.post("o/r", 5, against.MARKER + "\nfirst", api=api) == "created 9"
    assert against.post("o/r", 5, against.MARKER + "\nsecond", api=api) == "updated 9"
    assert [c["body"] for c in comments] == [against.MARKER + "\nsecond"]
    assert calls[0] == ["--paginate", "repos/o/r/issues/5/comments"]
    assert calls[1] == ["-X", "POST", "repos/o/r/issues/5/comments", "--input", "-"]


def test_the_command_line_edits_one_comment_across_pushes_through_gh(tmp_path):
    """Two runs of `comment` (two pushes) through a fake gh: one comment, created then edited; a person's untouched."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    state = tmp_path / "state.json"
    person = {"id": 1, "user": {"login": "alice"}, "body": against.MARKER + " (a person quoting it)"}
    state.write_text(json.dumps({"comments": [person], "calls": []}))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_GH_STATE": str(state)}

    def comment(table: str) -> subprocess.CompletedProcess:
        reports = tmp_path / "reports"
        (reports / "gpu-budget-h100").mkdir(parents=True, exist_ok=True)
        (reports / "gpu-budget-h100" / "against.md").write_text(table)
        return subprocess.run([sys.executable, str(SCRIPT), "comment", str(reports), "--repo", "o/r", "--pr", "5",
                               "--gate", "success", "--run-url", URL], check=False, env=env, capture_output=True,
                              text=True, timeout=60)

    first = comment(TABLE)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "pull request #5: comment created 101"
    second = comment(TABLE.replace("passed (1 pass)", "FAILED (1 regression)"))
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "pull request #5: comment updated 101"
    data = json.loads(state.read_text())
    assert [c["id"] for c in data["comments"]] == [1, 101]
    assert data["comments"][0] == person
    assert "FAILED (1 regression)" in data["comments"][1]["body"] and "passed (1 pass)" not in data["comments"][1]["body"]
    assert [call[1:4] for call in data["calls"] if call[1] == "-X"] == [
        ["-X", "POST", "repos/o/r/issues/5/comments"], ["-X", "PATCH", "repos/o/r/issues/comments/101"]]


def test_a_failing_gh_call_fails_the_command_naming_it(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text("#!/bin/sh\necho 'HTTP 403: Resource not accessible by integration' >&2\nexit 1\n")
    (bin_dir / "gh").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, str(SCRIPT), "comment", str(tmp_path), "--repo", "o/r", "--pr", "5",
                           "--gate", "success", "--run-url", URL], check=False, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert "gh api --paginate repos/o/r/issues/5/comments failed (1): HTTP 403" in done.stderr


def _against_json(path: Path) -> Path:
    runs = [{"side": side, "index": i, "commit": side[0] * 40, "exitcode": 0, "wall_seconds": 1.0,
             "report": {"version": 1, "side": side, "pair": i}} for i in (1, 2) for side in ("base", "head")]
    path.write_text(json.dumps({"version": 1, "kind": "against", "runs": runs}))
    return path


def test_sides_writes_each_sessions_gate_report(tmp_path):
    written = against.sides(_against_json(tmp_path / "against.json"), tmp_path / "out")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in written] == [
        "base/run-1.report.json", "head/run-1.report.json", "base/run-2.report.json", "head/run-2.report.json"]
    assert json.loads((tmp_path / "out" / "head" / "run-2.report.json").read_text()) == {"version": 1, "side": "head", "pair": 2}


@pytest.mark.parametrize("report", [None, {"version": 1, "rows": []}])
def test_sides_writes_nothing_without_an_against_report(tmp_path, capsys, report):
    path = tmp_path / "against.json"
    if report is not None:
        path.write_text(json.dumps(report))
    assert against.sides(path, tmp_path / "out") == [] and not (tmp_path / "out").exists()
    assert ("no report" if report is None else "a plain gate's report") in capsys.readouterr().out


def test_sides_from_the_command_line(tmp_path):
    report = _against_json(tmp_path / "against.json")
    done = subprocess.run([sys.executable, str(SCRIPT), "sides", str(report), str(tmp_path)], check=False,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote 4 session report(s)")
    assert sorted(p.name for p in (tmp_path / "base").iterdir()) == ["run-1.report.json", "run-2.report.json"]
