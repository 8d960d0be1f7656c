"""`python -m gpu_budget bisect GOOD BAD -k CASE [-- PYTEST ARGS]`: the first commit at which a case's gated figure
moved past its tolerance, found by `git bisect run` over the gate, in a worktree.

GOOD is checked out in a temporary worktree (worktree.py: the user's checkout,
branch and bisect state are never touched; the bisect's refs are the
worktree's own and go with it) and the case measured there once: the
reference. `git bisect start BAD GOOD` and `git bisect run` then measure the
case once per commit tried, each a fresh pytest session as an --against side
runs (pairs.run_session: an empty baselines folder, no stored baseline
judging). A commit is bad when a gated figure regresses past the reference by
the rule verdict.py applies to a pair (the case's tolerance; one run a side, so
no spread widens it): `moved` is an increase, as a regression is. A commit at
which the case cannot be measured (not collected, a session that does not run
to its end, its test failing with no case measured, an error in the measured
child, skipped) is a bisect skip
(exit 125), never a verdict; its reason is the error's last lines (`skip_reason`).
So is one whose test failed after measure() (its own assertion, the row's
`test_outcome`): the commit is broken, and its figure may be of a run that did
less; its reason is pytest's. At GOOD either refuses the reference.
Where skips leave the answer open (git: "only 'skip'ped commits left"), the
answer is the commits it could be (`open_candidates`): listed with the commits
measured, written to `--json`, exit code 1. git never tries BAD itself:
where it names BAD, BAD is measured then (`confirmed`), and named only where
it moved; else no commit is named (exit code 1).

CASE is a node id (it holds `::`: passed to pytest as a path) or a -k
expression, and must select one measured case. At a commit where git sees the
case's test file renamed since GOOD, it is the same case under the new path
(`at_commit`), as --against pairs a renamed file; where its file was rewritten
past git's detection, the one case of its name the selection holds (`measure`).
One run per commit cannot tell a figure that moves only in some runs: with
`--recheck N` the first commit's parent is measured N times more, and a re-run
past the tolerance withdraws the answer (`rechecked`). Each tried commit's figure is
printed as it is measured, and listed again at the end with the first commit
past the tolerance (a moved row's words are verdict.py's: "head" is the commit
tried, "base" the reference); the figure is the one that decided (`decisive`: a
launcher case's is the rank that moved, not its worst rank, whose figure the reference line shows, naming its rank;
a line of another rank names the reference value its change is from). Ctrl-C, SIGTERM or SIGHUP ends the bisect's processes
and removes the worktree (exit code 130). Over 16 commits a bisect measures the reference and
about log2(16) = 4 commits, more where it skips (benchmarks/RESULTS.md, section 5e, counts them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from gpu_budget.against import collected, submodules
from gpu_budget.against.pairs import Side, adopt_orphans, end_group, rootdir_path, run_session
from gpu_budget.against.renames import folder_now, renamed_files
from gpu_budget.against.tree_paths import args_into, session_env
from gpu_budget.against.verdict import FAILED_BEFORE, Figure, case_name, figures, tolerance_of
from gpu_budget.against.worktree import (
    SHALLOW,
    AgainstError,
    Ref,
    Repo,
    Terminated,
    checked_out,
    git,
    missing_at,
    repo_at,
    resolve,
    shallow,
    sigterm_raises,
    tree_git,
    unlocated,
)
from gpu_budget.isolate.lifecycle import adopt
from gpu_budget.measure.ranks import worst
from gpu_budget.model.json_value import JsonMapping, JsonObject
from gpu_budget.model.result import Result, Verdict
from gpu_budget.report.outputs import unwritable, write_whole
from gpu_budget.units import format_change, format_size

SCRATCH = "runs"  # the sessions' reports and logs: a folder beside the worktree, removed with it
STEP_ENV = "GPU_BUDGET_BISECT_STEP"  # the step's settings file, for `git bisect run`'s command
GOOD, BAD, SKIP, ABORT = 0, 1, 125, 255  # git bisect run's exit codes


@dataclass(frozen=True)
class Tried:
    """One commit measured: the figure that decided its outcome (`decisive`: a launcher case's names its rank,
    "rank 0 ram_tree"), that figure at the reference (`base`), and what it was judged."""

    commit: str
    subject: str
    outcome: str  # "reference", "within", "moved" or "skip"
    figure: str | None
    value: int | None
    why: str = ""
    base: int | None = None  # the figure's value at the reference: the change shown is against it

    def to_json(self) -> JsonObject:
        return {"commit": self.commit, "subject": self.subject, "outcome": self.outcome, "figure": self.figure,
                "value": self.value, "why": self.why, "base": self.base}

    def line(self, reference: int | None = None) -> str:
        """The commit, outcome, figure and its change against its own value at the reference (`base`, else
        `reference`, the reference line's figure), subject and why. A change against another figure than the
        reference line's (a launcher case's other rank) names the value it is from."""
        shown = "-" if self.value is None else format_size(self.value)
        base = self.base if self.base is not None else reference
        change = ""
        if self.value is not None and base:
            since = f" from {format_size(base)}" if base != reference else ""
            change = f" ({format_change(self.value / base - 1)}{since})"
        why = f": {self.why}" if self.why else ""
        return f"{self.commit[:10]} {self.outcome:9} {self.figure or '-'} {shown}{change}  {self.subject[:60]}{why}"


def selection(case: str) -> list[str]:
    """The pytest arguments that select CASE: a node id as a path, else a -k expression."""
    return [case] if "::" in case else ["-k", case]


def subject(top: Path, commit: str) -> str:
    return git(["log", "-1", "--format=%s", commit], top).stdout.strip()


def measure(folder: Path, commit: str, args: Sequence[str], scratch: Path, index: int,
            nodeid: str | None = None, env: Mapping[str, str | None] | None = None) -> tuple[Result | None, str]:
    """The case's row at the commit checked out in `folder` and a note (how it was found, where not under its node
    id), or None and why it could not be measured; `env`: what the session's environment sets (pairs.Side.env)."""
    try:
        run = run_session(Side("bisect", commit, folder, env or {}), index, args, scratch, log=lambda line: None)
    except AgainstError as exc:  # paths in the worktree and the scratch folder, as in the repository
        said = str(exc).replace(f" (in {folder})", "").replace(f"{folder}{os.sep}", "").replace(f"{scratch}{os.sep}", "")
        return None, skip_reason(said)
    rows = [r for r in run.rows if nodeid is None or r.nodeid == nodeid]
    note = ""
    if not rows and nodeid is not None:  # its file renamed past git's detection: the one case of its name, as --against
        same = [r for r in run.rows if case_name(r.nodeid) == case_name(nodeid)]
        if len(same) == 1:
            rows, note = same, f"as {same[0].nodeid}, paired by the case's name (git saw no rename)"
    if not rows:
        where = collected.holder(nodeid, run.uncollected) if nodeid else next(iter(run.uncollected), None)
        if where is not None:
            return None, f"{where} could not be collected: {run.uncollected[where]}"
        failed = next((why for test, why in run.failed.items()  # the case's test (a labelled case's id adds ::label)
                       if nodeid is None or nodeid == test or nodeid.startswith(test + "::")), None)
        if failed is not None:
            return None, f"{FAILED_BEFORE}: {failed}"[:REASON_WIDTH]
        return None, "the case is not collected here" if nodeid else "no case selected"
    if len(rows) > 1:
        return None, f"{len(rows)} cases selected ({', '.join(r.nodeid for r in rows[:3])}, ...): select one"
    row = rows[0]
    if row.verdict == Verdict.SKIPPED or row.measurement is None:
        return None, f"skipped: {row.message}"
    if not row.measurement.ok:
        return None, row.message[:200]
    if row.failed_after:  # the commit is broken: its figure is no verdict on the case (nor a reference at GOOD)
        return None, row.failed_after[:REASON_WIDTH]
    return row, note


REASON_LINES = 3  # the last lines of a failed session's output a skip's reason carries
REASON_WIDTH = 200  # characters of each such line kept (its end: where an error's type and words are)


def skip_reason(message: str) -> str:
    """A failed session's error (pairs.run_session: a first line, then "its output ends:" and the output's end) in
    one line: the first line, then the last lines that say something (not pytest's banners, not a caret)."""
    first, _, tail = message.partition("\n")
    first = first.removesuffix("; its output ends:").rstrip(":; ")
    said = []
    for line in tail.splitlines():
        text = line.strip()
        if text.startswith("E "):
            text = text[1:].strip()
        if not text or not any(c.isalnum() for c in text) or set(text[:3]) <= set("=!_-"):
            continue
        said.append(text if len(text) <= REASON_WIDTH else "..." + text[3 - REASON_WIDTH:])
    last = " | ".join(said[-REASON_LINES:])
    return f"{first}: {last}" if last else first


def open_candidates(transcript: str) -> tuple[str, ...]:
    """The commits `git bisect run` says the first bad commit could be, where only skipped commits are left; else ()."""
    if "only 'skip'ped commits left" not in transcript:
        return ()
    after = transcript.split("could be any of:", 1)[-1]
    return tuple(line.strip() for line in after.splitlines()
                 if len(line.strip()) >= 40 and all(c in "0123456789abcdef" for c in line.strip()))


def decisive(judged: Sequence[Figure]) -> Figure | None:
    """The figure a commit's line shows: of those past the tolerance, the one furthest past it; where none is, the
    host RAM figure (a launcher case's: of the rank nearest its limit, as each rank is judged against its own), so
    the line's figure and change are the ones that decided, not the worst rank's, in which another rank moves unseen.
    None where no figure was judged."""
    moved = [f for f in judged if f.regressed]
    host = moved or [f for f in judged if f.metric in ("ram", "ram_tree")]
    return max(host, key=_used, default=None)


def _used(fig: Figure) -> float:
    """The share of its tolerance's margin a figure's head used above its base (over 1: past the limit)."""
    rise = fig.head_median - fig.base_median
    return rise / fig.margin if fig.margin > 0 else float("inf") if rise > 0 else 0.0


def _figure(row: Result) -> tuple[str, int | None]:
    """The row's host RAM figure, named as a judged Figure names it: a launcher case's row is its worst rank's
    (measure/ranks.py), so its name says which rank ("rank 1 ram_tree"), as the lines of the commits tried name theirs."""
    metric = "ram_tree" if row.peaks.ram_tree is not None else "ram"
    name = f"rank {worst(list(row.ranks)).rank} {metric}" if row.ranks else metric
    return name, row.peaks.figure(metric)


# -- the step git bisect run calls, in the worktree ---------------------------------------------------------------

@dataclass(frozen=True)
class StepSettings:
    """What each step of `git bisect run` measures with, written by the driver to a file STEP_ENV names: the worktree,
    the folder pytest starts in there, the user's arguments, the scratch folder, the log of commits tried, and the
    reference row (and its figure) measured at GOOD."""

    tree: Path
    folder: Path
    args: tuple[str, ...]
    scratch: Path
    log: Path
    reference: Result
    reference_value: int | None
    good: str = ""  # GOOD's commit: a test file git sees renamed since holds the same case (`at_commit`)
    env: Mapping[str, str | None] | None = None  # what the sessions' environment sets (tree_paths.session_env)
    rootdir: str | None = None  # the pytest rootdir at GOOD, relative to the worktree: node ids' paths start there
    top: Path | None = None  # the user's repository: its submodules' copies are checked out from (submodules.py)

    def to_json(self) -> JsonObject:
        return {"tree": str(self.tree), "folder": str(self.folder), "args": list(self.args), "scratch": str(self.scratch),
                "log": str(self.log), "reference": self.reference.to_json(), "reference_value": self.reference_value,
                "good": self.good, "env": dict(self.env or {}), "rootdir": self.rootdir,
                "top": None if self.top is None else str(self.top)}

    @classmethod
    def from_json(cls, data: JsonMapping) -> StepSettings:
        return cls(Path(data["tree"]), Path(data["folder"]), tuple(data["args"]), Path(data["scratch"]), Path(data["log"]),
                   Result.from_json(data["reference"]), data.get("reference_value"), str(data.get("good") or ""),
                   data.get("env"), data.get("rootdir"), Path(data["top"]) if data.get("top") else None)


def step() -> int:
    """Measure the checked-out commit; GOOD, BAD or SKIP for git bisect run (ABORT on a broken setting)."""
    adopt()  # started by git, owned by the bisect's driver: ends with the driver, its session with it
    try:
        settings = StepSettings.from_json(json.loads(Path(os.environ[STEP_ENV]).read_text()))
    except (KeyError, OSError, ValueError) as exc:
        print(f"gpu-budget bisect: no step settings ({exc})", file=sys.stderr)
        return ABORT
    tried = try_commit(settings, tree_git(["rev-parse", "HEAD"], settings.tree).stdout.strip())
    print(f"gpu-budget bisect: {tried.line(settings.reference_value)}", flush=True)
    return {"skip": SKIP, "moved": BAD}.get(tried.outcome, GOOD)


def try_commit(settings: StepSettings, commit: str) -> Tried:
    """The commit checked out in the worktree measured and judged against the reference, and logged."""
    top, scratch, reference = settings.tree, settings.scratch, settings.reference
    index = sum(1 for _ in scratch.glob("bisect-*.json")) + 1
    nodeid, args = at_commit(settings)
    unmade = submodules.check_out(settings.top, commit, top) if settings.top else []
    row, why = measure(settings.folder, commit, args, scratch, index, nodeid, settings.env)
    if row is None:
        tried = Tried(commit, subject(top, commit), "skip", None, None, "; ".join([why, *unmade]))
    else:
        judged = figures([reference], [row], tolerance_of([row]))
        moved = [f for f in judged if f.regressed]
        shown = decisive(judged)
        name, value, base = (shown.name, shown.head[0], shown.base[0]) if shown else (*_figure(row), None)
        tried = Tried(commit, subject(top, commit), "moved" if moved else "within", name, value,
                      "; ".join([*([why] if why else []), *(f.said() for f in moved)]), base)
    with open(settings.log, "a") as fh:
        fh.write(json.dumps(tried.to_json()) + "\n")
    return tried


def _rootdir(scratch: Path, tree: Path) -> str | None:
    """The reference session's rootdir relative to the worktree (posix, "" the top), None where unknown or outside."""
    written = rootdir_path(scratch, "bisect", 0)
    try:
        rel = Path(written.read_text()).resolve().relative_to(tree.resolve()).as_posix()
    except (OSError, ValueError):
        return None
    return "" if rel == "." else rel


def at_commit(settings: StepSettings) -> tuple[str, tuple[str, ...]]:
    """The reference case's node id at the commit checked out, and the arguments that select it: where git sees its
    test file renamed since GOOD (renames.py, as --against pairs a renamed file), the file's path there, in the node
    id and in a node id given as the case; else both as at GOOD. The file is the one under GOOD's rootdir, not another
    whose path ends as the node id's does (`examples/tests/test_a.py` beside `tests/test_a.py`)."""
    nodeid, args = settings.reference.nodeid, settings.args
    module, sep, rest = nodeid.partition("::")
    renamed = renamed_files(settings.tree, settings.good) if settings.good else {}
    args = _moved_folders(args, settings, renamed)
    for old, new in renamed.items():
        prefix = old[:len(old) - len(module)]  # the rootdir's folder: node ids' paths are relative to it
        if settings.rootdir is not None and prefix != (settings.rootdir and settings.rootdir + "/"):
            continue
        if old.endswith(module) and prefix in ("", prefix.rstrip("/") + "/") and new.startswith(prefix):
            return f"{new[len(prefix):]}{sep}{rest}", tuple(_moved_arg(arg, settings, old, new) for arg in args)
    return nodeid, args


def _moved_folders(args: Sequence[str], settings: StepSettings, renamed: Mapping[str, str]) -> tuple[str, ...]:
    """Each folder argument that the commit lacks, where git sees its files renamed since GOOD into one folder
    (`git mv memtests gputests`, the case's file among them), pointed at that folder; any other argument as it is (a
    -k or -m expression is no path)."""
    out: list[str] = []
    for before, arg in zip(("", *args), args):
        rel = os.path.normpath(os.path.relpath(settings.folder / arg, settings.tree))
        now = None if arg.startswith("-") or before in ("-k", "-m") or "::" in arg or (settings.tree / rel).exists() \
            else folder_now(renamed, rel)
        out.append(arg if now is None else os.path.relpath(settings.tree / now, settings.folder))
    return tuple(out)


def _moved_arg(arg: str, settings: StepSettings, old: str, new: str) -> str:
    """A node id or path argument naming the file `old` (top-relative) pointed at `new`, relative to where pytest
    starts; any other argument as it is."""
    path, sep, rest = arg.partition("::")
    if arg.startswith("-") or not path:
        return arg
    if os.path.normpath(os.path.relpath(settings.folder / path, settings.tree)) != os.path.normpath(old):
        return arg
    return f"{os.path.relpath(settings.tree / new, settings.folder)}{sep}{rest}"


# -- the driver -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Found:
    """A bisect's answer: the reference, each commit tried in order, and the first commit past the tolerance (or
    None where skips left it open: then `candidates`, the commits it could be, and the words saying so)."""

    reference: Tried
    tried: tuple[Tried, ...]
    first: str | None
    said: str
    candidates: tuple[str, ...] = ()
    rechecked: int = 0  # the times the first commit's parent was measured again (--recheck), each within the tolerance

    def text(self) -> str:
        ref = self.reference.value
        lines = ["gpu-budget bisect: commits measured, in the order tried:", f"  {self.reference.line()}"]
        lines += [f"  {t.line(ref)}" for t in self.tried]
        if self.first:
            moved = next((t for t in self.tried if t.commit == self.first), None)
            lines.append(f"gpu-budget bisect: first commit past the tolerance: {self.first[:10]} "
                         f"{moved.subject if moved else ''}" + (f" ({moved.why})" if moved and moved.why else ""))
            if self.rechecked:
                lines.append(f"gpu-budget bisect: its parent measured {self.rechecked} time(s) more, within the "
                             f"tolerance each time")
            else:  # one run per commit: as sure as a figure that repeats run to run, no surer
                lines.append("gpu-budget bisect: its parent measured once, within the tolerance: a figure that moves "
                             "only some runs can place the answer after the commit that moved it (--recheck N "
                             "measures the parent N times more)")
        else:
            lines.append(f"gpu-budget bisect: no single first commit: {self.said}")
        return "\n".join(lines) + "\n"

    def to_json(self) -> JsonObject:
        return {"reference": self.reference.to_json(), "tried": [t.to_json() for t in self.tried],
                "first": self.first, "candidates": list(self.candidates), "git": self.said, "rechecked": self.rechecked}


def bisect(repo: Repo, good: Ref, bad: Ref, here: Path, args: Sequence[str], log=print, recheck: int = 0) -> Found:
    """The reference measured at GOOD, then git bisect run over GOOD..BAD, in a worktree removed afterwards; where a
    first commit is found, its parent measured `recheck` times more (rechecked)."""
    adopt_orphans()
    with sigterm_raises(), checked_out(repo, good, log) as tree:
        scratch = tree.parent / SCRATCH  # beside the worktree: removed with it, by the next run where this one is killed
        scratch.mkdir()
        folder, env = tree / here.relative_to(repo.top), session_env(repo.top, tree)
        args = args_into(args, repo.top, tree)  # an absolute path into the repository: the commit's file, not yours
        row = _reference(repo, good, tree, folder, args, scratch, env)
        metric, value = _figure(row)
        reference = Tried(good.commit, subject(repo.top, good.commit), "reference", metric, value)
        log(f"gpu-budget bisect: {reference.line()}")
        started = tree_git(["bisect", "start", bad.commit, good.commit], tree)
        if started.returncode != 0:
            raise AgainstError(f"bisect: git bisect start {bad.given} {good.given} failed: {started.stderr.strip()}")
        settings = StepSettings(tree, folder, tuple(args), scratch, scratch / "tried.jsonl", row, value, good.commit,
                                env, _rootdir(scratch, tree), repo.top)
        (scratch / "step.json").write_text(json.dumps(settings.to_json()))
        if f"{bad.commit} is the first bad commit" in started.stdout:  # BAD is GOOD's child: nothing for git to try
            return rechecked(confirmed(Found(reference, (), bad.commit, ""), settings, bad, log), settings, good,
                             recheck, log)
        command = ["git", "bisect", "run", sys.executable, "-m", "gpu_budget.against.bisect"]
        process = subprocess.Popen(command, cwd=tree, env={**unlocated(), STEP_ENV: str(scratch / "step.json")},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        said = []
        try:
            for line in process.stdout:
                said.append(line)
                if line.startswith("gpu-budget bisect: "):
                    log(line.rstrip())
            process.wait()
        except BaseException:
            end_group(process)
            raise
        tried = _logged(settings.log)
        text = "".join(said)
        first = None
        for line in said:
            if line.strip().endswith("is the first bad commit"):
                first = line.split()[0]
        candidates = () if first else open_candidates(text)
        if candidates:
            return Found(reference, tried, None, left_open(repo.top, candidates, tried, bad.commit), candidates)
        if first is None and process.returncode != 0:
            raise AgainstError(f"bisect: git bisect run failed (exit {process.returncode}): {text[-2000:]}")
        words = "" if first else text.strip().splitlines()[-1] if text.strip() else ""
        return rechecked(confirmed(Found(reference, tried, first, words), settings, bad, log), settings, good, recheck,
                         log)


def _reference(repo: Repo, good: Ref, tree: Path, folder: Path, args: Sequence[str], scratch: Path,
               env: Mapping[str, str | None]) -> Result:
    """The case's row at GOOD, checked out in the worktree `tree` (its submodules too), or AgainstError saying why not."""
    unmade = submodules.check_out(repo.top, good.commit, tree)
    row, why = measure(folder, good.commit, args, scratch, 0, env=env)
    if row is None:
        raise AgainstError(f"bisect: the case cannot be measured at GOOD {good.given} ({good.short}): "
                           + "; ".join([why, *unmade]))
    return row


def _logged(log: Path) -> tuple[Tried, ...]:
    """The commits the steps tried, in order, from their log (none where no step ran)."""
    return tuple(Tried(**json.loads(line)) for line in log.read_text().splitlines()) if log.exists() else ()


def confirmed(found: Found, settings: StepSettings, bad: Ref, log) -> Found:
    """The answer, BAD measured where git names it without having tried it (git takes BAD as given): named where it
    moved past the tolerance; where it did not, or cannot be measured, no commit is named and the words say why."""
    if found.first != bad.commit or any(t.commit == bad.commit for t in found.tried):
        return found
    checkout = tree_git(["checkout", "-q", "--detach", bad.commit], settings.tree)
    if checkout.returncode != 0:
        raise AgainstError(f"bisect: git checkout of BAD {bad.given} ({bad.short}) failed: {checkout.stderr.strip()}")
    tried = try_commit(settings, bad.commit)
    log(f"gpu-budget bisect: {tried.line(settings.reference_value)}")
    found = replace(found, tried=(*found.tried, tried))
    if tried.outcome == "moved":
        return found
    why = ("is within the tolerance of GOOD: no commit from GOOD to BAD moved the case's gated figure past it"
           if tried.outcome == "within" else f"cannot be measured ({tried.why}): the first commit cannot be told")
    return replace(found, first=None, said=f"BAD {bad.given} ({bad.short}) {why}")


def rechecked(found: Found, settings: StepSettings, good: Ref, times: int, log) -> Found:
    """The answer, its first commit's parents (those from GOOD on, GOOD included) each measured `times` more: one run
    per commit cannot tell a figure that moves only some runs from one that moved at that commit, and a parent judged
    within the tolerance on a run that happened to stay low puts the answer after the commit that moved it. Any
    re-run past the tolerance withdraws the answer: no commit is named, and the words say why."""
    if not found.first or times <= 0:
        return found
    tree = settings.tree
    parents = tree_git(["rev-list", "--parents", "-n", "1", found.first], tree).stdout.split()[1:]
    parents = [p for p in parents
               if tree_git(["merge-base", "--is-ancestor", good.commit, p], tree).returncode == 0]  # GOOD is its own
    tried = list(found.tried)
    for parent in parents:
        checkout = tree_git(["checkout", "-q", "--detach", parent], tree)
        if checkout.returncode != 0:
            raise AgainstError(f"bisect: git checkout of {parent[:10]} failed: {checkout.stderr.strip()}")
        for _ in range(times):
            again = try_commit(settings, parent)
            log(f"gpu-budget bisect: {again.line(settings.reference_value)}")
            tried.append(again)
            if again.outcome == "moved":
                return replace(found, tried=tuple(tried), first=None, said=(
                    f"the figure moves intermittently: {parent[:10]}, the parent of {found.first[:10]}, measured "
                    f"past the tolerance on a re-run, within it before: the first commit is {found.first[:10]} or "
                    f"one before it, and one run per commit cannot place it: a figure that moves only some runs "
                    f"needs a case whose peak repeats (a fixed seed, a fixed data order)"))
    return replace(found, tried=tuple(tried), rechecked=times * len(parents))


def left_open(top: Path, candidates: Sequence[str], tried: Sequence[Tried], bad: str) -> str:
    """The words for an answer skips left open: each commit it could be, with how it was judged where it was tried."""
    judged = {**{t.commit: t.outcome for t in tried}, bad: "BAD as given"}
    each = [f"{c[:10]} {subject(top, c)[:60]} ({judged.get(c, 'not measured')})" for c in candidates]
    return (f"skipped commits leave it open: the first commit past the tolerance is one of {len(candidates)}: "
            + ", ".join(each))


def _range(here: Path, given_good: str, given_bad: str) -> tuple[Repo, Ref, Ref]:
    """The repository and the two commits given, GOOD an ancestor of BAD and not BAD itself; else AgainstError saying
    which (two commits given the wrong way round are named as such)."""
    repo = repo_at(here, given_good, "GOOD")
    good, bad = resolve(repo, given_good, "GOOD"), resolve(repo, given_bad, "BAD")
    if git(["merge-base", "--is-ancestor", good.commit, bad.commit], repo.top).returncode != 0:
        swapped = git(["merge-base", "--is-ancestor", bad.commit, good.commit], repo.top).returncode == 0
        raise AgainstError(f"bisect: GOOD {given_good} ({good.short}) " + (
            f"comes after BAD {given_bad} ({bad.short}): GOOD is the older commit, where the figure is as it should "
            "be; swap them" if swapped else f"cannot be seen to be an ancestor of BAD {given_bad} ({bad.short}): "
            f"{SHALLOW}" if shallow(repo) else f"is not an ancestor of BAD {given_bad} ({bad.short})"))
    if good.commit == bad.commit:
        raise AgainstError(f"bisect: GOOD {given_good} and BAD {given_bad} are the same commit ({good.short})")
    return repo, good, bad


def main(argv: Sequence[str]) -> int:
    """`python -m gpu_budget bisect GOOD BAD -k CASE [--json PATH] [-- PYTEST ARGS]`."""
    import argparse

    extra: list[str] = []
    if "--" in argv:
        at = list(argv).index("--")
        argv, extra = list(argv[:at]), list(argv[at + 1:])
    parser = argparse.ArgumentParser(prog="python -m gpu_budget bisect", description=__doc__.split("\n\n")[0],
                                     usage="%(prog)s [-h] -k CASE [--json JSON] [--recheck N] good bad "
                                           "[-- PYTEST ARGS]",
                                     epilog="after --: the arguments each step's pytest run is given besides the "
                                            "gate's (e.g. -- memtests -p no:randomly)")
    parser.add_argument("good", help="a commit where the case's figure is as it should be")
    parser.add_argument("bad", help="a later commit where it has moved past the tolerance")
    parser.add_argument("-k", dest="case", required=True, help="the case: a node id (with ::) or a -k expression")
    parser.add_argument("--json", type=Path, help="write the commits tried and the answer here")
    parser.add_argument("--recheck", type=int, default=0, metavar="N",
                        help="measure the first commit's parent N times more (an intermittent figure misplaces "
                             "the answer: any re-run past the tolerance withdraws it); default 0")
    options = parser.parse_args(list(argv))
    here = Path.cwd().resolve()
    if options.recheck < 0:
        parser.error(f"--recheck={options.recheck}: expected 0 or more")
    refused = None if options.json is None else unwritable(options.json.resolve())
    if refused is not None:
        parser.error(f"--json={options.json}: {refused} (the answer would be lost after the bisect)")
    try:
        repo, good, bad = _range(here, options.good, options.bad)
        if missing_at(repo, good, [here]):
            raise AgainstError(f"bisect: {here.relative_to(repo.top).as_posix()} not found at GOOD {options.good} "
                               f"({good.short}): start it from a folder GOOD holds")
        found = bisect(repo, good, bad, here, [*selection(options.case), *extra],
                       log=lambda line: print(line, flush=True), recheck=options.recheck)
    except AgainstError as exc:
        print(f"gpu-budget bisect: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated):
        print("gpu-budget bisect: interrupted: its processes were ended and the worktree removed", file=sys.stderr)
        return 130
    sys.stdout.write(found.text())
    if options.json:
        try:
            write_whole(options.json, json.dumps(found.to_json(), indent=2) + "\n")
        except OSError as exc:
            print(f"gpu-budget bisect: error: --json={options.json}: {exc}", file=sys.stderr)
            return 2
    return 0 if found.first else 1


if __name__ == "__main__":
    raise SystemExit(step())
