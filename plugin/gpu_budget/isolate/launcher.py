"""A command under a launcher (torchrun, accelerate launch): what its ranks said, and the faults named by rank.

The hook in every Python process of the command (autohook.py) tells the
measuring process, over the mark socket, what a rank's figures alone cannot:
the exception a rank died of, the process group a rank joined, how many
processes accelerate trains with there, and that a rank's own process reached
its exit. From those, a failed case names
the rank and the cause:

- a rank that raised: its exception, whatever the launcher printed after it;
- a rank whose process ended without its exit report, in a launch that
  failed: killed by a signal (the kernel's OOM killer sends SIGKILL), the
  first of several named by the launcher's own record (elastic_record.py)
  or by when the process tree found each gone, and none named first where
  neither tells;
- ranks that each train alone and exit 0, reported, never passed: ranks
  that imported torch but never formed one process group; and ranks whose
  accelerate state says one process (accelerate launch on a host without
  CUDA, without ACCELERATE_USE_CPU=true: DistributedType.NO in every rank,
  though accelerate 1.15 still forms a gloo group of N).

A fault's advice is the message's second line (the first says what went
wrong), so the gate's summary repeats the fault and only the test's failure
report holds the advice (report/once.py). The advice fits the way the case was
launched (its argv):
`accelerate launch --cpu` is no way to train several ranks on a CPU host
(with a config file it starts one process with no RANK; beside --multi_gpu or
--use_fsdp accelerate refuses it), so the advice is ACCELERATE_USE_CPU=true in
the Scenario's env; and `accelerate launch --num_processes N` without
--multi_gpu or a config file starts one process on a host with fewer than 2
GPUs, so a launch of too few ranks names the flag it lacks.

A passing launch still says what accelerate ran: each rank's distributed type
goes into the row (`distributed_type`), and where the launch asked for FSDP
(accelerate launch exports ACCELERATE_USE_FSDP=true to the ranks of an FSDP
config) but the ranks ran something else (MULTI_CPU: accelerate applies no
FSDP plugin on a CPU host), a note says so.

A rank that hangs is the forkserver's timeout: the whole tree is stopped and killed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping, Sequence

from gpu_budget.isolate.elastic_record import FirstFailure
from gpu_budget.isolate.wire import Message
from gpu_budget.measure.ranks import reported_gpu
from gpu_budget.model.figures import PhaseRecord, RankGpu

ACCELERATE_LAUNCH = "accelerate.commands.launch"  # python -m accelerate.commands.launch
ACCELERATE_CLI = "accelerate.commands.accelerate_cli"  # python -m accelerate.commands.accelerate_cli launch
SEVERAL_PROCESSES = ("multi_gpu", "use_fsdp", "use_deepspeed", "use_megatron_lm")  # a launch of several processes
USE_CPU = 'set ACCELERATE_USE_CPU=true in the Scenario\'s env (env={"ACCELERATE_USE_CPU": "true"})'


class RankEvents:
    """What the ranks of one command said over the mark socket."""

    def __init__(self) -> None:
        self.failed: dict[int, str] = {}  # rank -> its uncaught exception
        self.failed_in: dict[int, tuple[str, bool]] = {}  # rank -> (the phase it raised in, out of memory or not)
        self.groups: dict[int, int] = {}  # rank -> the world size of the group it joined (0: imported torch.distributed)
        self.unranked: dict[int, int] = {}  # pid -> the world size (> 1) of the group it joined with no launcher's RANK
        self.exited: set[int] = set()  # ranks whose own process reported its exit
        self.exited_pids: set[int] = set()  # the rank processes that reported their exit
        self.talked: set[int] = set()  # the rank processes that sent anything (the gate's hook ran in them)
        self.accelerate: dict[int, tuple[str, int]] = {}  # rank -> accelerate's (distributed type, processes)
        self.backends: set[str] = set()  # the process groups' backends (gloo, nccl)
        self.fsdp: set[int] = set()  # ranks whose environment asks accelerate for FSDP (ACCELERATE_USE_FSDP=true)
        self.marks: list[tuple[int, str | None, Mapping[str, int] | None, bool]] = []  # (rank, phase or None at its
        # exit, the GPU figures of the phase it closes, whether it marks a gap), in order: ranks.reported_gpu
        self._phase: dict[int, str] = {}  # rank -> the phase it marked last (the one it raised in)

    def take(self, message: Message) -> bool:
        """Record a rank's message; False for one that is not about ranks."""
        rank = message.rank
        if rank is None:
            if message.group is not None and message.group > 1 and message.pid is not None:
                self.unranked[message.pid] = message.group  # its ranks started without RANK (mp.spawn): _unranked
            return False
        if message.pid is not None:
            self.talked.add(message.pid)
        self._take_cuda(rank, message)
        if message.failed is not None:
            self.failed.setdefault(rank, message.failed)
            self.failed_in.setdefault(rank, (self._phase.get(rank, "run"), message.oom))
        elif message.accelerate is not None:
            self.accelerate[rank] = (message.accelerate, message.processes)
            if _asks_fsdp(message.pid):
                self.fsdp.add(rank)
        elif message.group is not None:
            self.groups[rank] = max(self.groups.get(rank, 0), message.group)
            if message.backend:
                self.backends.add(message.backend)
        elif message.exited_own:
            self.exited.add(rank)
            if message.pid is not None:
                self.exited_pids.add(message.pid)
            return False  # the exit report is the tree's too
        else:
            return False
        return True

    def _take_cuda(self, rank: int, message: Message) -> None:
        """A rank's mark (or its exit), with the GPU peaks of the phase it closes."""
        if message.phase is not None or message.exited_own:
            self.marks.append((rank, message.phase, message.cuda, message.gap))
            if message.phase is not None:
                self._phase[rank] = message.phase

    @property
    def cuda(self) -> dict[int, RankGpu]:
        """rank -> what its own process reported of its GPU."""
        return reported_gpu(self.marks)

    def distributed(self, notes: list[str]) -> dict[str, dict[str, str] | bool | list[str]]:
        """What accelerate's state said each rank ran, for the row: {"distributed_type": {rank: "MULTI_CPU", ...}},
        and `notes` with one more where the launch asked for FSDP and the ranks ran something else; {} where no
        rank made an accelerate state."""
        if not self.accelerate:
            return {}
        kinds = {rank: kind.rsplit(".", 1)[-1] for rank, (kind, _) in sorted(self.accelerate.items())}
        facts: dict[str, dict[str, str] | bool | list[str]] = {"distributed_type": {str(rank): kind for rank, kind in kinds.items()}}
        other = sorted(rank for rank in self.fsdp if kinds.get(rank) != "FSDP")
        if self.fsdp:
            facts["fsdp_requested"] = True
        if other:
            ran = "/".join(sorted({kinds[rank] for rank in other}))
            who = "the ranks" if len(other) == len(kinds) else f"rank {', '.join(map(str, other))}"
            why = " (DDP): accelerate applies no FSDP plugin on a CPU host" if ran == "MULTI_CPU" else ""
            note = f"the accelerate config asks for FSDP (ACCELERATE_USE_FSDP=true), but {who} ran {ran}{why}"
            facts["notes"] = [*notes, note]
        return facts

    def fault(self, ranks: set[int], returncode: int, ends: dict[int, float] | None = None,
              declared: int = 1, argv: Sequence[str] = (), signals: dict[int, int] | None = None,
              first: FirstFailure | None = None, own: Mapping[int, Sequence[int]] | None = None,
              attempts: Mapping[int, int | None] | None = None) -> str | None:
        """Why the case fails by its ranks, naming them; None when the ranks give no reason.

        Exceptions come first, in the order they arrived (the first is the root cause, the rest usually its echo: a
        collective whose peer is gone); then the ranks whose process ended without reaching its exit, except the one
        the launcher's record names first: killed while the others waited in a collective, or exited with a failing
        code without raising (sys.exit), it leads, and their exceptions are its echo. Where none raised, the first of
        them is the root cause and the others were stopped by the launcher after it. Which came first is the
        launcher's own record where its output holds one (`first`: torch elastic reaped them and names the first
        failure); else the order the tree found them gone (`ends`), ranks found gone in one poll told apart by the
        signal that ended each where the tree read it before the launcher reaped it (`signals`: one ended by SIGTERM,
        what a launcher stops the others with, comes after one that was not). Where nothing tells them apart, none is
        named first. `argv` picks the advice that fits the launch; `own`: each rank's own processes (two: restarted,
        _restarted, unless `attempts`, each one's elastic attempt, says the later one began a new launch).
        """
        if returncode == 0 and (restarted := self._restarted(own or {}, ends or {}, signals or {}, attempts or {})):
            return restarted
        first = first.ordered_by(ends or {}) if first is not None else None  # failures the record could not order
        causes = [f"rank {rank} raised {text}" for rank, text in self.failed.items()]
        exited = self._exited(own or {})
        gone = ranks - exited - set(self.failed)
        if returncode != 0 and first is not None and first.exitcode != 0 and first.rank in exited - set(self.failed):
            causes.insert(0, f"rank {first.rank} exited first: {_ended(first.exitcode)} (the launcher's record)")
        if returncode != 0 and gone:
            led = first is not None and first.rank in gone  # the launcher saw it fail before any rank that raised
            found = _gone_causes(gone, led or not causes, ends or {}, signals or {}, first)
            causes = [*found[:1], *causes, *found[1:]] if led else causes + found
        return "; ".join(causes) if causes else self._untold(ranks, returncode, declared, argv)

    def _exited(self, own: Mapping[int, Sequence[int]]) -> set[int]:
        """The ranks whose own process reported its exit: by the pid of each rank's own process where the tree found
        it (its last: a restart) and the gate's hook ran in it, since a Python subprocess a rank runs (a helper, not
        a multiprocessing worker) inherits its RANK and reports an own exit too; by the report's rank where the
        tree found none, or the rank's own process never spoke (a shell: torchrun --no-python wrap.sh, whose
        Python reports the exit)."""
        heard = {rank: pids[-1] for rank, pids in own.items() if pids and pids[-1] in self.talked}
        return {rank for rank in self.exited if rank not in heard} | {
            rank for rank, pid in heard.items() if pid in self.exited_pids}

    def _untold(self, ranks: set[int], returncode: int, declared: int, argv: Sequence[str]) -> str | None:
        """Why the case fails where no rank raised or was lost: too few ranks for its declared count, processes
        that no launcher told apart, ranks that each trained alone; None where none of those."""
        short = declared > 1 and len(ranks) != declared
        flag = missing_flag(argv, declared) if short else None
        unranked = self._unranked(ranks)
        if short and (returncode == 0 or (flag and not ranks)):  # a failed launch too where the flag explains it:
            hint = flag or (": ".join(unranked) if unranked else  # its one process had no RANK to read
                            "is the launcher's process count the same?")
            return (f"the scenario declares {declared} ranks (Scenario(ranks={declared})), but "
                    f"{len(ranks) or 'no'} process(es) ran with a launcher's RANK "
                    f"({', '.join(map(str, sorted(ranks))) or 'none'}):\n{hint}")
        if returncode == 0 and unranked:
            return (f"{unranked[0]}: the figures would be the whole node's, not each rank's, and rank 0's phase marks "
                    f"would go unheard\n{unranked[1]}")
        alone = sorted(r for r, (_, processes) in self.accelerate.items() if processes == 1)
        if returncode == 0 and len(ranks) > 1 and alone:
            kind = self.accelerate[alone[0]][0]
            return (f"{len(ranks)} ranks ran, but accelerate trained rank {', '.join(map(str, alone))} as a single "
                    f"process ({kind}, 1 process): each trained alone.\nOn a host without CUDA, {cpu_advice(argv)}")
        if returncode == 0 and len(ranks) > 1 and self.groups and not any(size > 1 for size in self.groups.values()):
            own = "" if accelerate_options(argv) is not None else (
                "make each rank call torch.distributed.init_process_group (backend gloo); with an Accelerator() "
                "script, ")
            return (f"{len(ranks)} ranks ran torch but never formed one process group (no rank's "
                    "torch.distributed.init_process_group joined a group of more than one): each trained alone."
                    f"\nOn a host without CUDA, {own}{cpu_advice(argv)}")
        return None

    def _unranked(self, ranks: set[int]) -> tuple[str, str] | None:
        """What processes that formed a group of several with no launcher's RANK in their environment (started by
        torch.multiprocessing.spawn, or any multiprocessing) did, and the advice: the tree tells ranks apart by RANK
        alone, so the row would be the whole node's, gated as one rank's, and the marks of the process that is rank 0
        go unheard; None where the tree found ranks, or no such group formed."""
        if ranks or not self.unranked:
            return None
        what = (f"{len(self.unranked)} process(es) joined a process group of {max(self.unranked.values())}, but none "
                "ran with a launcher's RANK in its environment (torch.multiprocessing.spawn starts them so)")
        return what, ('set os.environ["RANK"] = str(rank) in each process before it calls '
                      "torch.distributed.init_process_group (the gate then tells its rank apart), or launch with torchrun")

    def _restarted(self, own: Mapping[int, Sequence[int]], ends: dict[int, float], signals: dict[int, int],
                   attempts: Mapping[int, int | None]) -> str | None:
        """Why a launch that exited 0 fails where the launcher restarted its ranks (torchrun --max-restarts): an
        attempt before the last failed, by a rank that raised or whose process ended without reaching its exit
        (killed: the kernel's OOM killer sends SIGKILL), which the exit code no longer shows; None without a restart.
        A rank's later process in its launch's first attempt (`attempts`: TORCHELASTIC_RESTART_COUNT 0) is no restart:
        the command ran a new launch (train, then evaluate)."""
        again = sorted(rank for rank, pids in own.items()
                       if any(attempts.get(pid) != 0 for pid in list(dict.fromkeys(pids))[1:]))
        if not again:
            return None
        causes = [f"rank {rank} raised {text}" for rank, text in self.failed.items()]
        gone = {rank for rank in again if any(pid not in self.exited_pids for pid in own[rank][:-1])}
        led = any(signals.get(rank, signal.SIGTERM) != signal.SIGTERM for rank in gone)  # not the launcher's stop
        found = _gone_causes(gone, led or not causes, ends, signals, None) if gone else []
        causes = [*found[:1], *causes, *found[1:]] if led else causes + found
        return (f"the launcher restarted rank {', '.join(map(str, again))} after a failed attempt (an elastic restart, "
                f"torchrun --max-restarts) and then exited 0: {'; '.join(causes) or 'no rank said why'}\n"
                "Each rank's figures span every attempt and the restarted attempt's phases went unmarked (rank 0's "
                "first process marks them): gate the launch with --max-restarts 0, so a failed attempt fails it")


def _gone_causes(gone: set[int], root: bool, ends: dict[int, float], signals: dict[int, int],
                 first: FirstFailure | None) -> list[str]:
    """What became of the ranks that ended without their exit report; `root`: no rank raised, so the first of
    them is the case's root cause."""
    key = {r: (ends.get(r, float("inf")), signals.get(r) == signal.SIGTERM) for r in gone}
    order = sorted(gone, key=lambda r: (key[r], r))
    causes = []
    if root and first is not None and first.rank in gone:
        order.remove(first.rank)
        causes.append(f"rank {first.rank} ended first without reaching its exit: {_ended(first.exitcode)} (the "
                      "launcher's record)")
    elif root and (len(order) == 1 or key[order[0]] != key[order[1]]):
        causes.append(f"rank {order[0]} ended first without reaching its exit: {_ended(-signals.get(order[0], 0))}")
        order.pop(0)
    elif root:
        tied = [r for r in order if key[r] == key[order[0]]]
        order = order[len(tied):]
        causes.append(f"{_ranks(tied)} ended without reaching their exit, found gone together: the "
                      "first killed by a signal (the kernel's OOM killer sends SIGKILL), the others stopped by the "
                      "launcher after it; neither the process tree nor the launcher's output tells which came first")
    if order:
        causes.append(f"{_ranks(order)} ended without reaching {'its' if len(order) == 1 else 'their'} exit: stopped "
                      "by the launcher after that")
    return causes


def _ranks(ranks: list[int]) -> str:
    """'rank 2' or 'ranks 1, 0' (in the order given)."""
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


def _ended(exitcode: int) -> str:
    """How a process ended, from its exit code (negative: the signal; 0: not known, a signal all the same)."""
    if exitcode > 0:
        return f"exit code {exitcode}"
    if exitcode == -signal.SIGKILL:
        return "killed by SIGKILL, what the kernel's OOM killer sends"
    try:
        return f"killed by {signal.Signals(-exitcode).name}"
    except ValueError:
        return "killed by a signal (the kernel's OOM killer sends SIGKILL)"


def ranks_seen(phases: Sequence[PhaseRecord]) -> set[int]:
    """The ranks the process tree found in a command's phases."""
    return {rank for p in phases if p.tree is not None for rank in p.tree.ranks}


def accelerate_options(argv: Sequence[str]) -> set[str] | None:
    """The options an `accelerate launch` command line gives before its script, '-' read as '_' (accelerate takes
    --multi-gpu for --multi_gpu); None for a command that is not an accelerate launch."""
    args = list(argv)
    name = os.path.basename(args[0]) if args else ""
    rest = None
    if name == "accelerate-launch":
        rest = args[1:]
    elif name == "accelerate" and args[1:2] == ["launch"]:
        rest = args[2:]
    elif "-m" in args:
        at = args.index("-m")
        if args[at + 1:at + 2] == [ACCELERATE_LAUNCH]:
            rest = args[at + 2:]
        elif args[at + 1:at + 3] == [ACCELERATE_CLI, "launch"]:
            rest = args[at + 3:]
    if rest is None:
        return None
    options = set()
    for arg in rest:
        if arg.endswith(".py"):
            break  # the script: what follows is its own
        if arg.startswith("--"):
            options.add(arg[2:].split("=", 1)[0].replace("-", "_"))
    return options


def cpu_advice(argv: Sequence[str]) -> str:
    """How the ranks of this launch train as one on a host without CUDA: ACCELERATE_USE_CPU=true in their environment,
    since `accelerate launch --cpu` starts no ranks at all in any launch of several."""
    options = accelerate_options(argv)
    if options is None:
        return f"{USE_CPU} for its ranks to train as one (MULTI_CPU, gloo)"
    beside = [f"--{flag}" for flag in SEVERAL_PROCESSES if flag in options]
    if beside:
        why = f"accelerate launch refuses --cpu beside {beside[0]}"
    elif "config_file" in options or _default_config():
        why = "with a config file, accelerate launch --cpu starts one process, with no RANK"
    else:
        why = "accelerate launch --cpu starts one process, with no RANK"
    return f"{USE_CPU} for its ranks to train as one (MULTI_CPU, gloo); not --cpu: {why}"


def missing_flag(argv: Sequence[str], declared: int) -> str | None:
    """Why an accelerate launch started fewer ranks than declared, naming the flag it lacks; None where it lacks none
    (or is no accelerate launch)."""
    options = accelerate_options(argv)
    if options is None or "config_file" in options or options & set(SEVERAL_PROCESSES) or _default_config():
        return None
    return ("accelerate launch without --multi_gpu or a config file starts its one-process launcher (one process, no "
            "RANK) on a host with fewer than 2 GPUs, whatever --num_processes says: add --multi_gpu (or --config_file "
            f"with num_processes: {declared})")


def _default_config() -> str | None:
    """accelerate's default config file where one exists (accelerate launch reads it when no --config_file is given):
    it, not the flags, may then set how many processes start."""
    home = os.environ.get("HF_HOME", os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface"))
    path = os.path.join(os.path.expanduser(home), "accelerate", "default_config.yaml")
    return path if os.path.isfile(path) else None


def _asks_fsdp(pid: int | None) -> bool:
    """Whether a process was started with ACCELERATE_USE_FSDP=true (what accelerate launch exports to the ranks of an
    FSDP config, read from the environment the process was exec'd with: it waits for our answer, so it is alive)."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            entries = fh.read().split(b"\0")
    except OSError:
        return False
    return any(entry.lower() == b"accelerate_use_fsdp=true" for entry in entries)
