"""pytest-xdist: one worker per GPU (or per share of the cores); workers measure, the controller records.

Registered only when xdist is installed (pytest_plugin.py). Three jobs:

- Placement. On a worker of a `--gpu-budget` run, before its forkserver
  starts, `CUDA_VISIBLE_DEVICES` is set to one GPU picked by the worker id
  (gw0 -> the first visible GPU, gw1 -> the second, round robin past the
  last), and the worker's CPU affinity to its own equal share of the cores.
  The forkserver, and so every measured child, inherits both; the children
  run the session's thread count (one by default, as in a serial run, so
  both give the same peaks). On a CPU host two workers then never measure
  while fighting over one core.
- Scheduling. With `-n` and no `--dist`, the gate's cases are handed out by
  xdist's own work-stealing scheduler (`--dist worksteal`) instead of its
  default `load`: `load` queues cases ahead on a worker that cannot give
  them back, and measured cases are long, so they can pile up on one worker
  while the other idles (benchmarks/RESULTS.md, section 6, times both). An
  explicit `--dist` (or `-d`, its shortcut for `load`) is kept as given.
- Records. Workers never write baselines or reports. They ship their
  SessionData (data.py: result rows, notes, explorations, the
  baseline entries to write, those withheld because their test failed
  (session/held.py: an entry is shipped only once its test passed), which
  budget tests they collected and whether
  the selection was narrowed) through `workeroutput`; the controller merges
  it and alone writes baselines (the baseline store) and the outputs
  (outputs.py: the terminal's tables, the JSON report, the step summary, the
  plots). Each test's rows and notes also ride on its call report
  (`gpu_budget_rows`, which xdist serialises with the report), with the
  baseline entries that report settled (written: its test passed; or
  withheld), and what a fixture measured after the call rides on the
  teardown's report. So a worker that never finishes (Ctrl-C, a timeout's
  SIGINT, a crash) loses nothing of its finished tests: the controller
  reports their rows and writes their entries, as a serial run interrupted
  at the same point has written them as each test reported; the gate fails
  naming the worker. A test that did not finish has reported nothing, so
  nothing of it is written, and a worker that finishes ships its whole
  data instead of its reports' copies: no entry is written twice. The
  controller writes each entry as the report carrying it arrives, as a
  serial session writes it as its test reports, so a controller killed
  outright (SIGKILL, the OOM killer: its session's end never runs) has
  written every passed test's entry too.

A SIGTERM or SIGINT to the controller alone (a CI job's timeout or cancel,
`kill PID`, `kill -INT PID`) is passed on to its local workers as a SIGTERM,
as Ctrl-C reaches every process of the terminal's group: otherwise each worker
measures on while xdist waits out its shutdown (its teardown asks each worker
to end, execnet's worker waits 5 s for a busy test, then interrupts itself;
execnet's `Group.terminate` kills a worker still there after xdist's 10 s).
A worker's pid is known from the moment xdist sets it up, so one still
starting up (a slow conftest, a large collection) is not left to that wait.
Workers a terminal's Ctrl-C reached already take the SIGTERM as part of that
same ending (isolate/lifecycle.py), and pids no longer the controller's
children are skipped.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Generator, Iterable, Mapping
from typing import TYPE_CHECKING

import pytest

from gpu_budget.isolate import lifecycle
from gpu_budget.isolate.placement import place, visible_gpus, worker_index
from gpu_budget.judge.store import PendingWrite
from gpu_budget.session import held, own_rows
from gpu_budget.session.data import SessionData
from gpu_budget.session.session import write_pending

if TYPE_CHECKING:
    from gpu_budget.session.session import BudgetSession

_OUTPUT_KEY = "gpu_budget"
ROWS_ATTR = "gpu_budget_rows"  # what a test's report settled (SessionData JSON: rows, notes, entries to write or
# withheld): kept if its worker never finishes
WORKER_ID, WORKER_COUNT = "workerid", "workercount"  # what xdist's workerinput holds of a worker
SLOT = "gpu_budget_slot"  # what the controller adds: the worker's share (a replaced worker's, for its replacement)
WorkerInput = Mapping[str, str | int]


class XdistBudget:
    """The xdist side of BudgetSession: places workers, ships their SessionData, merges it on the controller."""

    def __init__(self, session: BudgetSession) -> None:
        self.session = session
        self.carried: dict[str, dict[str, list[str]]] = {}  # controller: worker id -> test -> what its reports carried,
        # until the worker ships its whole data
        self.slots: dict[str, int] = {}  # controller: live worker id -> its share's index
        self.pids: dict[str, int] = {}  # controller: live worker id -> its process, where it runs on this host
        self.written = Counter[str]()  # controller: the entries written as a report carried them, until shipped again
        workerinput = getattr(session.config, "workerinput", None)
        if workerinput is not None and session.options.enabled:
            self._place(workerinput)

    def _place(self, workerinput: WorkerInput) -> None:
        worker = workerinput[WORKER_ID]
        placement = place(worker, int(workerinput.get(SLOT, worker_index(worker))), int(workerinput[WORKER_COUNT]),
                          visible_gpus(), list(os.sched_getaffinity(0)), self.session.options.gpus_per_worker)
        if placement.gpu is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = placement.gpu
        os.sched_setaffinity(0, placement.cpus)  # the forkserver and its children inherit the mask
        self.session.machine.placement = placement  # its children measure there, with the session's threads

    # -- controller: placement and scheduling ------------------------------
    def pytest_configure_node(self, node) -> None:
        """Give a starting worker the first share no live worker holds: xdist numbers a dead worker's replacement on
        ("gw2" of 2), whose own index is past the last share (no CPU at all) and whose GPUs another worker may hold.
        Keep a local worker's pid, from what execnet learnt of it as xdist set the worker up (never asked now: a busy
        worker would not answer), so an interrupt reaches a worker still starting up too."""
        count = int(node.workerinput[WORKER_COUNT])
        held = set(self.slots.values())
        slot = next((i for i in range(count) if i not in held), worker_index(node.gateway.id) % count)
        node.workerinput[SLOT] = self.slots[node.gateway.id] = slot
        info = getattr(node.gateway, "_cache_rinfo", None)
        if node.gateway.spec.popen and isinstance(getattr(info, "pid", None), int):
            self.pids[node.gateway.id] = info.pid

    def pytest_xdist_make_scheduler(self, config, log):
        if not self.session.options.enabled or config.getoption("dist") != "load" or _dist_given(config):
            return None  # xdist's own choice
        from xdist.scheduler import WorkStealingScheduling

        return WorkStealingScheduling(config, log)

    # -- worker -------------------------------------------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: BudgetSession's wrapper has settled the rows first
    def pytest_runtest_makereport(self, item: pytest.Item, call) -> Generator[None, pytest.TestReport,
                                                                               pytest.TestReport]:
        """A worker's call and teardown reports carry what each settled of the test: its rows and notes not carried
        yet, the baseline entries its passing test recorded and those withheld (session/held.py), so the controller
        has them as the test ends."""
        data = self.session.data
        pending, withheld = len(data.pending), len(data.withheld)  # BudgetSession's wrapper, inside, adds this report's
        report = yield
        if report.when in ("call", "teardown") and self.session.is_worker:
            rows, notes = own_rows.unshipped(item)
            part = SessionData(rows=list(rows), notes=list(notes), pending=data.pending[pending:],
                               withheld=data.withheld[withheld:])
            if part.rows or part.notes or part.pending or part.withheld:
                setattr(report, ROWS_ATTR, json.dumps(part.to_json()))
        return report

    @pytest.hookimpl(tryfirst=True)  # before BudgetSession's, which writes the outputs on the controller
    def pytest_sessionfinish(self, session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_OUTPUT_KEY] = json.dumps(self.session.data.to_json())
            return
        for worker, carried in sorted(self.carried.items()):  # workers that never shipped their data
            parts = [SessionData.from_json(json.loads(c)) for test in carried.values() for c in test]
            came = {write.row for part in parts for write in part.pending}
            entries = sum(len(p.pending) for p in parts)
            for part in parts:  # a row saying its entry was recorded where no report carried the entry: none is written
                part.rows[:] = [held.withheld_row(r, held.NOT_SHIPPED) if held.claims_written(r) and r.nodeid not in came
                                else r for r in part.rows]
                part.pending.clear()  # written as its report came (pytest_runtest_logreport)
                self.session.data.merge(part)
            self.session.problems.append(
                f"xdist worker {worker} did not finish (interrupted, or it crashed): its {sum(len(p.rows) for p in parts)}"
                f" measured row(s) and the {entries} baseline entr{'y' if entries == 1 else 'ies'} its passed tests "
                "recorded are taken from its tests' reports")
        self.carried.clear()

    # -- controller ---------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep what a worker's report carried of its test, and write the baseline entries it carried now, as a serial
        session writes them as its test reports: a controller killed outright (SIGKILL) never reaches its session's
        end. Another attempt of the test (pytest-rerunfailures) starts with its setup's report: what the earlier one
        carried is forgotten, as its worker forgets it (attempts.py), but the entries it recorded, which its worker
        ships all the same."""
        carried, node = getattr(report, ROWS_ATTR, None), getattr(report, "node", None)
        if node is None or self.session.is_worker:
            return
        tests = self.carried.get(node.gateway.id, {})
        if report.when == "setup" and tests.get(report.nodeid):
            tests[report.nodeid] = [entries_only(tests[report.nodeid])]
        if carried:
            self.carried.setdefault(node.gateway.id, {}).setdefault(report.nodeid, []).append(carried)
            pending = SessionData.from_json(json.loads(carried)).pending  # a write that fails is named at the end
            write_pending(SessionData(pending=list(pending)), self.session.written, self.session.unwritten)
            self.written.update(map(_key, pending))

    def pytest_keyboard_interrupt(self) -> None:
        """The controller interrupted (SIGTERM, or a SIGINT that reached it alone): its workers get a SIGTERM, and end
        their cases now (lifecycle.pass_on_sigterm), not after xdist's shutdown has waited for them."""
        if self.session.options.enabled and not self.session.is_worker:
            lifecycle.pass_on_sigterm(list(self.pids.values()))

    def pytest_testnodedown(self, node, error) -> None:
        self.slots.pop(node.gateway.id, None)  # its share is free for a replacement
        self.pids.pop(node.gateway.id, None)
        output = getattr(node, "workeroutput", None) or {}
        if _OUTPUT_KEY in output:
            data = SessionData.from_json(json.loads(output[_OUTPUT_KEY]))
            data.pending[:] = self._unwritten(data.pending)
            self.session.data.merge(data)
            self.carried.pop(node.gateway.id, None)  # its whole data came: the reports' copies are not needed


    def _unwritten(self, shipped: Iterable[PendingWrite]) -> list[PendingWrite]:
        """Of a worker's shipped entries, those no report carried: the others were written as their report came."""
        left = []
        for write in shipped:
            if self.written[key := _key(write)] > 0:
                self.written[key] -= 1
            else:
                left.append(write)
        return left


def _key(write: PendingWrite) -> str:
    return json.dumps(write.to_json(), sort_keys=True)


def entries_only(carried: list[str]) -> str:
    """What reports carried of a test's earlier attempt, less all but the baseline entries it recorded."""
    parts = [SessionData.from_json(json.loads(c)) for c in carried]
    return json.dumps(SessionData(pending=[write for part in parts for write in part.pending]).to_json())


def _dist_given(config) -> bool:
    """Whether --dist (or -d, xdist's shortcut for --dist=load) was asked for anywhere: the command line,
    PYTEST_ADDOPTS or the ini file's addopts."""
    if config.getoption("distload", False):
        return True
    ini = config.getini("addopts")
    words = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split(),
             *(ini.split() if isinstance(ini, str) else ini)]
    return any(w == "--dist" or w.startswith("--dist=") for w in words)
