"""The base side of `--gpu-budget-against=REF`: REF resolved in the user's repository, checked out in a temporary worktree.

`git worktree add --detach` of REF's commit in a temporary folder: the user's
checkout, its index and its branch are never touched. The worktree is removed
(`git worktree remove --force`, then the folder) when the `with` block ends,
whether it ends normally, by an error, by Ctrl-C (SIGINT), by SIGTERM (a CI
job's timeout) or by SIGHUP (the terminal closed): SIGTERM and SIGHUP are
turned into an exception for the block's duration so the cleanup runs. A SIGKILLed run removes nothing, so each worktree's
folder names the run that made it, and the next run removes those whose run
is gone (a self-hosted runner keeps /tmp from job to job); a folder whose run
was killed before `git worktree add` made its worktree is in no repository's
list, and the next run removes it by its owner file too.

Every problem is an `AgainstError` naming the value given: not a git
repository, REF not found, a path given on the command line missing at REF.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpu_budget.isolate import lifecycle

OPTION = "--gpu-budget-against"
HOLDER = "gpu-budget-against-"  # the prefix of a worktree's temporary folder
OWNER_FILE = "owner"  # in that folder: the run that made the worktree, as lifecycle.owner_of names it


class AgainstError(Exception):
    """A bad input or a failed step of an --against run, said in one line naming the value."""


class Terminated(BaseException):
    """SIGTERM during an --against run: raised so the worktree and the running session are cleaned up."""


@dataclass(frozen=True)
class Repo:
    """The user's repository: its top folder, HEAD's commit, whether the working tree differs from HEAD."""

    top: Path
    head: str
    dirty: bool


@dataclass(frozen=True)
class Ref:
    """REF as given and the commit it names."""

    given: str
    commit: str
    name: str = OPTION  # how it was given, for the messages

    @property
    def short(self) -> str:
        return self.commit[:10]


def git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


# what names the repository to git over the folder it runs in: a git hook exports them (pre-commit, pre-push)
LOCATING = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE")


def unlocated() -> dict[str, str]:
    """This process's environment less LOCATING: git, and a session, run in the worktree (or a clone in it) find it
    from their folder, not the user's repository a hook's GIT_DIR names (a bisect would check its commits out there)."""
    return {key: value for key, value in os.environ.items() if key not in LOCATING}


def tree_git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess:
    """git run in the worktree, or a repository inside it: found from `cwd` alone (unlocated)."""
    return subprocess.run(["git", *args], cwd=cwd, env=unlocated(), capture_output=True, text=True, check=False)


def repo_at(folder: Path, given: str, name: str = OPTION) -> Repo:
    """The repository holding `folder`, or an AgainstError naming both (`name`: how the value was given)."""
    if shutil.which("git") is None:
        raise AgainstError(f"{name}={given}: git is not installed (needed to check out {given})")
    top = git(["rev-parse", "--show-toplevel"], folder)
    if top.returncode != 0:
        raise AgainstError(f"{name}={given}: {folder} is not in a git repository (git: {top.stderr.strip()})")
    root = Path(top.stdout.strip()).resolve()
    head = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], root)
    if head.returncode != 0:
        raise AgainstError(f"{name}={given}: the repository {root} has no commit yet")
    status = git(["status", "--porcelain"], root)
    return Repo(root, head.stdout.strip(), bool(status.stdout.strip()))


def resolve(repo: Repo, given: str, name: str = OPTION) -> Ref:
    """REF's commit, or an AgainstError naming REF."""
    found = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{given}^{{commit}}"], repo.top)
    if found.returncode != 0 or not found.stdout.strip():
        typed = git(["cat-file", "-t", "--end-of-options", given], repo.top)
        kind = typed.stdout.strip()
        if kind in ("tree", "blob"):  # a name git resolves, to no commit (HEAD:path, a tree's hash)
            raise AgainstError(f"{name}={given}: names a {kind} in {repo.top}, not a commit")
        if "is ambiguous" in typed.stderr:  # an abbreviated hash two commits start with: git lists them as hints
            candidates = [line.removeprefix("hint:").strip() for line in typed.stderr.splitlines()
                          if line.startswith("hint:   ")]
            raise AgainstError(f"{name}={given}: ambiguous in {repo.top}: {'; '.join(candidates) or 'several objects'}"
                               f": give more digits of the hash")
        remote = remote_branches(repo, given)
        if remote:  # fetched, under the remote's name only: git resolves no remote branch by its short name
            raise AgainstError(f"{name}={given}: no branch {given!r} in {repo.top}, only the remote's "
                               f"{' and '.join(remote)}: give {name}={remote[0]}")
        raise AgainstError(f"{name}={given}: no commit {given!r} in {repo.top}"
                           + (f": {SHALLOW}" if shallow(repo) else " (not a branch, tag or commit there; fetch it "
                                                                  "first?)"))
    return Ref(given, found.stdout.strip(), name)


def remote_branches(repo: Repo, given: str) -> list[str]:
    """The remote-tracking branches named `given` under a remote (origin/main for main): a CI checkout of another
    branch holds the base branch only so."""
    remotes = git(["remote"], repo.top).stdout.split()
    return [f"{remote}/{given}" for remote in remotes
            if git(["rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{given}^{{commit}}"],
                   repo.top).returncode == 0]


SHALLOW = ("the repository is a shallow clone, its history cut (actions/checkout fetches one commit by default): "
           "fetch the rest first (`git fetch --unshallow`; actions/checkout with `fetch-depth: 0`)")


def shallow(repo: Repo) -> bool:
    """Whether the repository is a shallow clone: a commit missing from it, or an ancestry it cannot see, may exist."""
    return git(["rev-parse", "--is-shallow-repository"], repo.top).stdout.strip() == "true"


def missing_at(repo: Repo, ref: Ref, paths: Sequence[Path]) -> list[str]:
    """Of `paths` (absolute, inside the repository), those REF does not hold, relative to the top folder."""
    out = []
    for path in paths:
        rel = path.relative_to(repo.top).as_posix()
        if rel in ("", ".") or git(["cat-file", "-e", f"{ref.commit}:{rel}"], repo.top).returncode == 0:
            continue
        out.append(rel)
    return out


ENDING = (signal.SIGTERM, signal.SIGHUP)  # a CI job's timeout; the terminal closed (an ssh session dropped)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Terminated inside the block (from the main thread only; elsewhere nothing changes):
    the block's cleanup runs, as on Ctrl-C. A SIGHUP left to its default would end the run at once, its worktree and
    folders left for the next run to find."""

    def handler(signum, frame):
        raise Terminated(f"terminated by {signal.Signals(signum).name}")

    try:  # a SIGHUP ignored (nohup) stays ignored: the run outlives its terminal, as asked
        previous = {sig: signal.signal(sig, handler) for sig in ENDING
                    if sig == signal.SIGTERM or signal.getsignal(sig) != signal.SIG_IGN}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for sig, was in previous.items():
            signal.signal(sig, was)


@contextlib.contextmanager
def checked_out(repo: Repo, ref: Ref, log=None) -> Iterator[Path]:
    """A detached worktree of REF's commit in a temporary folder, removed when the block ends however it ends; first,
    those that killed runs left (said through `log`)."""
    for left in remove_abandoned(repo):
        if log is not None:
            log(f"gpu-budget against: removed {left}, the worktree of a run that was killed before it could")
    where = holder_parent(repo)
    for left in remove_unstarted(where):
        if log is not None:
            log(f"gpu-budget against: removed {left}, the folder of a run that was killed before it made its worktree")
    holder = Path(tempfile.mkdtemp(prefix=HOLDER, dir=where))
    (holder / OWNER_FILE).write_text(lifecycle.owner_of(os.getpid()))
    tree = holder / "base"
    try:
        added = git(["worktree", "add", "--detach", str(tree), ref.commit], repo.top)
        if added.returncode != 0:
            raise AgainstError(f"{ref.name}={ref.given}: git worktree add of {ref.short} failed: "
                               f"{added.stderr.strip()}")
        yield tree
    finally:
        remove(repo, tree)
        remove_holder(holder)


def holder_parent(repo: Repo) -> str | None:
    """Where the worktree's folder is made: the temporary folder (None: tempfile's), or where that is inside the
    repository (TMPDIR=$PWD/tmp) its git folder. A worktree inside the working tree is collected by the head's
    session, which collecting `.` imported the base's runner modules from it and measured the base as the head."""
    tmp = Path(tempfile.gettempdir()).resolve()
    if not tmp.is_relative_to(repo.top):
        return None
    common = git(["rev-parse", "--git-common-dir"], repo.top).stdout.strip()
    return str((repo.top / common).resolve()) if common else None


HOLDER_GRACE = 10.0  # seconds a run's ending processes may still write into its folder (they end within one: RESULTS 3b)


def remove_holder(holder: Path, grace: float = HOLDER_GRACE) -> None:
    """The run's folder removed, tried again while a process of the run that is still ending writes into it: a
    bisect step's session, orphaned when its step was killed, ends within a second by its owner watch, and a file
    it writes meanwhile made the removal fail (the folder left, the removal's errors ignored)."""
    deadline = time.monotonic() + grace
    while True:
        shutil.rmtree(holder, ignore_errors=True)
        if not os.path.lexists(holder) or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def remove_abandoned(repo: Repo) -> list[Path]:
    """The worktrees of this repository that an --against run made and whose run is gone, removed with their
    folders; a worktree without the owner file (not this plugin's, or an older one's) is left as it is."""
    gone = []
    for line in git(["worktree", "list", "--porcelain"], repo.top).stdout.splitlines():
        tree = Path(line.removeprefix("worktree "))
        if not line.startswith("worktree ") or tree.name != "base" or not tree.parent.name.startswith(HOLDER):
            continue
        if _gone(tree.parent):
            remove(repo, tree)
            shutil.rmtree(tree.parent, ignore_errors=True)
            gone.append(tree)
    return gone


def remove_unstarted(tmp: str | None = None) -> list[Path]:
    """The worktree folders under the temporary folder (`tmp`, tempfile's by default) whose run is gone and that hold
    no worktree (killed before `git worktree add` made it: no repository lists them), removed; those removed. One
    that holds a worktree is remove_abandoned's, in its repository's next run."""
    gone = []
    with contextlib.suppress(OSError):
        for holder in Path(tempfile.gettempdir() if tmp is None else tmp).glob(HOLDER + "*"):
            if holder.is_dir() and not holder.is_symlink() and not os.path.lexists(holder / "base") and _gone(holder):
                shutil.rmtree(holder, ignore_errors=True)
                gone.append(holder)
    return gone


def _gone(holder: Path) -> bool:
    """Whether the run named in a worktree folder's owner file is gone; a folder without one (being made, not this
    plugin's, an older one's) is not taken for gone."""
    try:
        owner = (holder / OWNER_FILE).read_text().strip()
    except OSError:
        return False
    return bool(owner) and not lifecycle.running(owner)


def remove(repo: Repo, tree: Path) -> None:
    """The worktree gone, from git's list and from the disk (pruned where its folder was already removed)."""
    if tree.exists():
        git(["worktree", "remove", "--force", "--force", str(tree)], repo.top)
        shutil.rmtree(tree, ignore_errors=True)
    git(["worktree", "prune"], repo.top)
