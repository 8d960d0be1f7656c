"""`pytest --gpu-budget --gpu-budget-against=REF`: each selected case measured at REF and at the working tree, on
the same runner in one job, and head judged against base; no stored baseline needed (docs/against.md).

pytest itself is the engine: the plugin's pytest_cmdline_main hands the
invocation to `main`, which checks REF out in a temporary git worktree
(worktree.py), runs fresh pytest sessions of the user's own arguments on each
side, one each (base, then head), then a pair more of the undecided cases
alone (pairs.py, narrow.py: drift over the job hits both sides alike), judges
each case from both sides' rows (verdict.py) and
prints one table and writes one JSON report (render.py). Nothing here imports
torch: the sessions' measured children do, as in any gated session.

The head side is the working tree as it is, uncommitted changes included (the
header says so). REF naming HEAD's commit with no change in the working tree
leaves nothing to compare: it is said, and the session measures once, as a
plain gated session against the stored baselines.

The base side runs the same interpreter, plugin and installed libraries in
the worktree; modules found through the session's folder (`python -m pytest`
puts it first on sys.path, the rootdir's conftest, the tests' own imports) are
REF's. A project package installed into the environment (pip install -e) is
imported from where it is installed, on both sides; files git does not track
(data, prepared assets) are not in the worktree.

A path given on the command line that REF does not hold is left out of the
base side's arguments (its cases are new at head), or given under its old path
where git sees it renamed (a folder: the folder or the files it was made from;
a folder REF holds: it and the test files git sees moved into it from elsewhere);
the folder the run starts in, where REF lacks it, is the base's old folder or
the nearest above it REF holds; where REF holds none of the selection, no base
session runs (base_paths.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_budget.against import narrow, submodules
from gpu_budget.against.base_paths import BasePaths, base_paths
from gpu_budget.against.cache import cache_dir, copy_into
from gpu_budget.against.node_ids import as_files
from gpu_budget.against.node_ids import lines as node_lines
from gpu_budget.against.pairs import SIDE_ENV, Run, Side, adopt_orphans, run_session
from gpu_budget.against.renames import renamed_modules
from gpu_budget.against.render import Outcome, append_step_summary, text, write_json
from gpu_budget.against.stored import stored_for
from gpu_budget.against.tree_paths import args_into, session_env
from gpu_budget.against.verdict import CaseVerdict, judge_all, undecided
from gpu_budget.against.worktree import (
    OPTION,
    AgainstError,
    Ref,
    Repo,
    Terminated,
    checked_out,
    repo_at,
    resolve,
    sigterm_raises,
)
from gpu_budget.session.listing import lists_only

SCRATCH = "runs"  # the runs' reports and logs: a folder beside the worktree, in the folder worktree.py removes
MAX_PAIRS = 4  # runs a side of a case at most: one, then more while it is undecided (verdict.undecided)
# options this mode sets per run itself; the user's are not passed on (the JSON path is the pair report's)
STRIPPED = ("--gpu-budget-against", "--gpu-budget-json", "--gpu-budget-baselines", "--gpu-budget-plots", "--gpu-budget")


class SessionFailed(AgainstError):
    """A side's session did not run to its end (pairs.run_session says how)."""


def wanted(config: pytest.Config) -> bool:
    """Whether this invocation asks for --against at all (cheap: nothing imported, nothing resolved)."""
    if os.environ.get(SIDE_ENV):  # a side's own session: it measures
        return False
    if lists_only(config):
        return False
    return bool(config.getoption("gpu_budget_against", None) or str(config.getini("gpu_budget_against")).strip())


def main(config: pytest.Config) -> int | None:
    """The exit code of the --against run, or None: pytest goes on with a plain session (REF is HEAD, unchanged)."""
    from gpu_budget.session.options import Options

    options = Options.from_config(config)
    given, where = options.against, given_where(config)
    if given is None:
        return None
    if not options.enabled:
        if config.getoption("gpu_budget_against", None):
            raise pytest.UsageError(f"--gpu-budget-against={given} needs --gpu-budget (it measures the memory tests)")
        return None  # set in the ini file: a plain pytest skips the memory tests as usual
    if options.update:
        raise pytest.UsageError(f"{where}={given} with --gpu-budget-update: a comparison of two revisions "
                                f"records no baseline; run --gpu-budget-update alone")
    here = Path(config.invocation_params.dir).resolve()
    try:
        repo = repo_at(here, given, where)
        ref = resolve(repo, given, where)
        nowhere = absent_paths(config, here)
        if nowhere:
            raise AgainstError(f"{where}={given}: {', '.join(nowhere)}: file or directory not found "
                               f"(in the working tree, from {here})")
        base = base_of(config, here, repo, ref)
        if ref.commit == repo.head and not repo.dirty:
            same = f"{given} is HEAD" if given != "HEAD" else "it names HEAD"
            print(f"gpu-budget against {given}: {same} ({ref.short}) and the working tree has no change: "
                  f"nothing to compare; measuring once, against the stored baselines", flush=True)
            return None
        args = list(config.invocation_params.args)
        outcome = compare(repo, ref, here, args, rootdir=Path(str(config.rootpath)), base=base,
                          cache=cache_dir(config))
        named = [path for _, path in named_paths(config, here)]
        outcome = replace(outcome, stored=stored_beside(outcome, Path(str(config.rootpath)), options.baselines, named))
    except SessionFailed as exc:
        sys.stderr.write(f"ERROR: gpu-budget against: {exc}\n")
        return pytest.ExitCode.TESTS_FAILED
    except AgainstError as exc:
        raise pytest.UsageError(str(exc)) from None
    except (KeyboardInterrupt, Terminated) as exc:
        sys.stderr.write(f"gpu-budget against {given}: interrupted ({type(exc).__name__}): the sessions were ended "
                         f"and the worktree removed\n")
        return pytest.ExitCode.INTERRUPTED
    sys.stdout.write(text(outcome))
    append_step_summary(outcome, options.json)  # written next: where every case is
    if options.json is not None:
        write_json(options.json, outcome)
        print(f"gpu-budget against: report written to {options.json}")
    return pytest.ExitCode.OK if outcome.passed else pytest.ExitCode.TESTS_FAILED


def base_of(config: pytest.Config, here: Path, repo: Repo, ref: Ref) -> BasePaths:
    """Where the base session starts and what it is given (base_paths.py; node ids as their files: node_ids.py)."""
    named = named_in_repo(config, here, repo.top)
    return as_files(base_paths(repo, ref, here, named,
                               collects_here=config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR,
                               testpaths=testpaths_in_repo(config, here, repo.top)), named)


def base_env(repo: Repo, tree: Path, base_at: BasePaths, scratch: Path) -> dict[str, str | None]:
    """The base sessions' environment: tree_paths.session_env's, and the node ids given as their files (narrow.py)."""
    env = dict(session_env(repo.top, tree))
    if base_at.selected:
        chosen = scratch / "base.selected"
        chosen.write_text(node_lines(base_at.selected, tree / base_at.start, lambda a: at_base(a, repo.top, tree)))
        env[narrow.SELECT_ENV] = str(chosen)
    return env


def given_where(config: pytest.Config) -> str:
    """Where REF was given, as the messages name it: the flag, `-o gpu_budget_against`, or the ini file and its key."""
    from gpu_budget.session.options import BY_NAME, read

    return read(config, BY_NAME["gpu_budget_against"]).source or OPTION


def stored_beside(outcome: Outcome, rootdir: Path, folder: Path, named: Sequence[Path] = ()) -> dict:
    """Each head case's stored baseline on this hardware, where one exists (shown, not judged: stored.py); `named`:
    the paths the command line named."""
    heads = [r for r in outcome.runs if r.side == "head"]
    key = heads[-1].hardware_key if heads else None
    rows = list({row.nodeid: row for run in heads for row in run.rows}.values())
    return stored_for(rows, rootdir, folder, key, named)


def named_paths(config: pytest.Config, here: Path) -> list[tuple[str, Path]]:
    """Each path argument of the command line with the file or folder it names from `here` (a node id's file); none
    where pytest took its arguments from elsewhere (testpaths, the folder it started in)."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return []
    return [(arg, (here / arg.split("::")[0]).resolve()) for arg in config.args]


def named_in_repo(config: pytest.Config, here: Path, top: Path) -> list[tuple[str, Path]]:
    """The path arguments of the command line, with the files and folders they name, that exist in the working tree
    inside the repository."""
    return [(arg, path) for arg, path in named_paths(config, here) if path.exists() and path.is_relative_to(top)]


def testpaths_in_repo(config: pytest.Config, here: Path, top: Path) -> list[tuple[str, Path]]:
    """The ini file's testpaths pytest collects where the command line names no path (globbed from `here`, the
    rootdir), with the files and folders they name; none under --pyargs (module names) or where one lies outside the
    repository (the base, given the others as paths, would run without it)."""
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS or config.getoption("pyargs", False):
        return []
    found = [(arg, (here / arg).resolve()) for arg in config.args]
    return found if all(path.exists() and path.is_relative_to(top) for _, path in found) else []


def absent_paths(config: pytest.Config, here: Path) -> list[str]:
    """The files and folders named on the command line that the working tree lacks: pytest's usage error, said before
    either side starts (not a side's session failing). Module names under --pyargs are not paths."""
    if config.getoption("pyargs", False):
        return []
    return [arg for arg, path in named_paths(config, here) if not path.exists()]


def passed_through(args: Sequence[str]) -> list[str]:
    """The user's arguments less the options each run sets itself (STRIPPED, as --opt=value or --opt value)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in STRIPPED:
            skip = "=" not in arg and name != "--gpu-budget"
            continue
        out.append(arg)
    return out


def at_base(args: Sequence[str], top: Path, tree: Path) -> list[str]:
    """The arguments for the base side: an absolute path inside the repository (through a link to it too) pointed
    into the worktree (tree_paths.py)."""
    return args_into(args, top, tree)


def compare(repo: Repo, ref: Ref, here: Path, args: Sequence[str], log=None, rootdir: Path | None = None,
            base: BasePaths | None = None, cache: Path | None = None) -> Outcome:
    """Both sides measured, interleaved, in a worktree removed afterwards; the verdicts (a test file git saw renamed
    since REF judged as one case, under the pytest rootdir: node ids are relative to it). `base`: base_paths.py's
    where the base starts and what it runs; `cache`: the head's pytest cache, copied into the worktree (cache.py)."""
    base_at = base or BasePaths()
    log = log or (lambda line: print(line, flush=True))
    user = passed_through(args)
    renamed = renamed_modules(repo.top, ref.commit, rootdir or here)
    dirty = " (with the working tree's uncommitted changes)" if repo.dirty else ""
    log(f"gpu-budget against {ref.given}: base {ref.short}, head {repo.head[:10]}{dirty}: a fresh session each, then "
        f"a pair more of the cases it cannot tell")
    gone, nothing = base_at.gone(), base_at.nothing
    if gone or nothing:
        log(f"gpu-budget against {ref.given}: {', '.join(gone) or here.relative_to(repo.top).as_posix()} not at "
            f"{ref.given} ({ref.short}): {'no base session; every case' if nothing else 'its cases'} measured at head "
            f"only (new)")
    if base_at.said:
        log(f"gpu-budget against {ref.given}: {base_at.said}")
    adopt_orphans()
    with sigterm_raises(), checked_out(repo, ref, log) as tree:
        scratch = tree.parent / SCRATCH  # in the worktree's folder: removed with it, by the next run where one is killed
        scratch.mkdir()
        copy_into(cache, repo.top, tree)
        for problem in submodules.check_out(repo.top, ref.commit, tree):
            log(f"gpu-budget against {ref.given}: {problem}: its cases may be errors at base")
        base = Side("base", ref.commit, tree / base_at.start, base_env(repo, tree, base_at, scratch))
        head = Side("head", repo.head, here)
        base_args = at_base(base_at.base_args(user), repo.top, tree)
        sides = (((base, base_args),) if not nothing else ()) + ((head, user),)
        runs: list[Run] = []
        open_cases: list[CaseVerdict] | None = None  # None: the first pair, the whole selection
        for pair in range(1, MAX_PAIRS + 1):
            for side, side_args in sides:
                only = None if open_cases is None else tests_of(open_cases, side.name)
                try:
                    runs.append(run_session(side, pair, side_args, scratch, log, only=only))
                except AgainstError as exc:
                    raise SessionFailed(str(exc)) from None
            cases = judge_all([r.rows for r in runs if r.side == "base"], [r.rows for r in runs if r.side == "head"],
                              renamed=renamed, base_uncollected=uncollected(runs, "base"),
                              head_uncollected=uncollected(runs, "head"), base_failed=failed_tests(runs, "base"),
                              head_failed=failed_tests(runs, "head"))
            open_cases = undecided(cases)
            if not open_cases or pair == MAX_PAIRS:
                break
            names = [c.nodeid for c in open_cases]
            log(f"gpu-budget against: {len(names)} case(s) near their limit or spread wider than their tolerance "
                f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): a pair more of them")
    return Outcome(ref.given, ref.commit, repo.head, repo.dirty, cases, tuple(runs))


def tests_of(cases: Sequence[CaseVerdict], side: str) -> list[str]:
    """The test node ids a side's next run measures for these cases (a labelled case's test once; at base the test's
    id there, its file's old path where git saw it renamed)."""
    rows = [row for case in cases for row in (case.base if side == "base" else case.head)]
    return list(dict.fromkeys(row.test_nodeid for row in rows))


def uncollected(runs: Sequence[Run], side: str) -> dict[str, str]:
    """Each collector a side's runs could not collect, with the error its first run gave."""
    return _first_said(run.uncollected for run in runs if run.side == side)


def failed_tests(runs: Sequence[Run], side: str) -> dict[str, str]:
    """Each test a side's runs failed, with why its first failing run gave."""
    return _first_said(run.failed for run in runs if run.side == side)


def _first_said(said: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """node id -> why, as the first of the runs to say anything of that node id said it."""
    out: dict[str, str] = {}
    for one in said:
        for nodeid, why in one.items():
            out.setdefault(nodeid, why)
    return out
