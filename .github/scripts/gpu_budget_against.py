"""The GPU workflow's against mode (docs/ci.md, "Against the merge base"): each side's gate reports as files of their
own, and one pull-request comment with every runner's table, updated in place on later pushes.

    python .github/scripts/gpu_budget_against.py sides OUT/against.json OUT
        OUT/base/run-1.report.json, OUT/head/run-1.report.json, ...: each session's gate report from the
        --gpu-budget-against JSON (which holds them all), for the uploaded artifact.
    python .github/scripts/gpu_budget_against.py comment REPORTS --repo OWNER/NAME --pr N --gate RESULT --run-url URL
        REPORTS holds the downloaded artifacts, one folder gpu-budget-<runner> each, with the markdown table the
        run wrote (against.md). The comment is found by MARKER, its first line, and edited; else one is created.

Standard library only: it runs on the GPU runner (after setup-python) and on a GitHub-hosted runner. The comment
goes through the gh CLI (`gh api`, GH_TOKEN from the job).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

MARKER = "<!-- gpu-budget-against -->"
LABEL = "gpu-budget-against"
AUTHOR = "github-actions[bot]"  # who posts with the job's GITHUB_TOKEN: only its own marked comment is edited
LIMIT = 65536  # GitHub's largest comment body, in characters
PREFIX = "gpu-budget-"
TABLE = "against.md"

Api = Callable[[Sequence[str], str | None], str]


def sides(report: Path, out: Path) -> list[Path]:
    """Each run's gate report of an --against JSON as OUT/<side>/run-<index>.report.json; none where there is none."""
    if not report.is_file():
        print(f"{report}: no report (the run ended before its comparison): no side's report to write")
        return []
    data = json.loads(report.read_text())
    if data.get("kind") != "against":
        print(f"{report}: a plain gate's report (the merge base is HEAD: measured once), not split")
        return []
    written = []
    for run in data.get("runs", []):
        path = out / run["side"] / f"run-{run['index']}.report.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(run["report"], indent=2) + "\n")
        written.append(path)
    print(f"wrote {len(written)} session report(s): " + ", ".join(str(p) for p in written))
    return written


def runner_tables(reports: Path) -> list[tuple[str, str | None]]:
    """(runner name, its markdown table or None) per artifact folder gpu-budget-<runner>, sorted by name."""
    if not reports.is_dir():
        return []
    out = []
    for folder in sorted(p for p in reports.iterdir() if p.is_dir() and p.name.startswith(PREFIX)):
        if folder.name.startswith(PREFIX + "baselines-"):
            continue
        table = folder / TABLE
        text = table.read_text().strip() if table.is_file() else ""
        out.append((folder.name[len(PREFIX):], text or None))
    return out


def compose(reports: Path, gate: str, run_url: str) -> str:
    """The comment: MARKER first, the gate's result, then each runner's table (or why there is none)."""
    lines = [MARKER, "## GPU budget against the merge base", "",
             (f"Gate: **{gate}** ([workflow run]({run_url})). Each runner measured the merge base and this pull request "
             f"(merged into its base) side by side, with `--gpu-budget-against`. Both sides' reports are in the run's "
             f"artifact `{PREFIX}<runner>`: `against.json`, and each session's gate report under `base/` and `head/`. "
             f"Updated on every push while the pull request carries the label `{LABEL}`."), ""]
    tables = runner_tables(reports)
    if not tables:
        lines += ["No runner uploaded a report: see the workflow run.", ""]
    for runner, table in tables:
        lines += [f"**Runner `{runner}`**", "",
                  table or "No table from this runner: its gate ended before the comparison (see its log).", ""]
    body = "\n".join(lines)
    if len(body) > LIMIT:
        note = "\n\n*Cut to GitHub's largest comment: the whole tables are in the run's step summaries.*\n"
        body = body[:LIMIT - len(note)] + note
    return body


def gh_api(args: Sequence[str], stdin: str | None = None) -> str:
    done = subprocess.run(["gh", "api", *args], input=stdin, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"gh api {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def pages(text: str) -> list[dict]:
    """`gh api --paginate` prints one JSON array per page, back to back: their items, in order."""
    decoder, items, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return items
        page, at = decoder.raw_decode(text, at)
        items += page


def ours(comments: Sequence[dict], author: str = AUTHOR) -> dict | None:
    """The first comment that this mode posted: by `author`, its body starting with MARKER."""
    for comment in comments:
        if (comment.get("user") or {}).get("login") == author and (comment.get("body") or "").startswith(MARKER):
            return comment
    return None


def post(repo: str, pr: int, body: str, api: Api = gh_api, author: str = AUTHOR) -> str:
    """Edit this mode's comment on the pull request, or create it: 'updated <id>' or 'created <id>'."""
    found = ours(pages(api(["--paginate", f"repos/{repo}/issues/{pr}/comments"], None)), author)
    payload = json.dumps({"body": body})
    if found is not None:
        api(["-X", "PATCH", f"repos/{repo}/issues/comments/{found['id']}", "--input", "-"], payload)
        return f"updated {found['id']}"
    made = json.loads(api(["-X", "POST", f"repos/{repo}/issues/{pr}/comments", "--input", "-"], payload))
    return f"created {made['id']}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    split = sub.add_parser("sides", help="each session's gate report of an --against JSON as its own file")
    split.add_argument("report", type=Path)
    split.add_argument("out", type=Path)
    comment = sub.add_parser("comment", help="post or update the pull request's comment")
    comment.add_argument("reports", type=Path, help="the downloaded artifacts, one folder gpu-budget-<runner> each")
    comment.add_argument("--repo", required=True)
    comment.add_argument("--pr", type=int, required=True)
    comment.add_argument("--gate", required=True, help="the gate job's result (needs.gate.result)")
    comment.add_argument("--run-url", required=True)
    comment.add_argument("--author", default=AUTHOR, help="whose marked comment is edited (default %(default)s)")
    args = parser.parse_args(argv)
    if args.command == "sides":
        sides(args.report, args.out)
        return 0
    said = post(args.repo, args.pr, compose(args.reports, args.gate, args.run_url), author=args.author)
    print(f"pull request #{args.pr}: comment {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
