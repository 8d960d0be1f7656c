"""One object owns the gate's session state: options, the device, baselines touched, result rows.

The pytest hooks (pytest_plugin.py) only delegate here; the measuring,
comparing and reporting live in plain modules.
"""

from __future__ import annotations

import datetime
import json
import os
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpu_budget import artifacts, baselines, failsafe, fingerprint, isolate, placement, remediate, report
from gpu_budget.compare import Setup, judge
from gpu_budget.marks import BudgetMark, expectation_problem
from gpu_budget.marks import gpu_budget as read_mark
from gpu_budget.marks import merge as merge_marks
from gpu_budget.options import Options, is_ci
from gpu_budget.requires import MissingDependency
from gpu_budget.scenario import Scenario
from gpu_budget.units import format_size

MARKER = "gpu_budget"


class BudgetSession:
    """Measures each declared case in a child, judges it, records baselines and result rows."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = Options.from_config(config)
        self.ci = is_ci()
        self.rows: list[dict] = []
        self.device: dict | None = None
        self.hardware: dict | None = None
        self.collected: dict[Path, set[str]] = defaultdict(set)  # module -> test names with the marker
        self.order: list[str] = []  # node ids of the budget tests, in collection order
        self.selected = 0  # budget tests left to run after deselection
        self.narrowed = False  # deselection or node ids: do not prune baselines
        self.placement: dict | None = None  # an xdist worker's GPU and cores (xdist.py)
        self.pending: list[dict] = []  # baseline entries an xdist worker ships to the controller
        self.problems: list[str] = []  # session-level failures: the fail-safe, baseline writes
        self.warnings: list[str] = []  # the fail-safe's findings where it does not fail (no CI)
        self.notes: list[dict] = []  # measured findings that are not one case's peak (fixture.note)
        self.probes = 0  # unjudged children that ran (peak(): bisection, exploration): they count as measured
        self.pinned_gpu: str | None = None  # a serial run on a multi-GPU host measures on this one (placement.py)
        self._assets = assets_folder(config)

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    # -- collection ---------------------------------------------------------
    def modify_items(self, items: list[pytest.Item]) -> None:
        skip = pytest.mark.skip(reason="memory-budget test: run with --gpu-budget")
        for item in items:
            if not _is_budget_test(item):
                continue
            self.collected[Path(str(item.path))].add(item.originalname if hasattr(item, "originalname") else item.name)
            self.order.append(item.nodeid)
            if not self.options.enabled:
                item.add_marker(skip)

    def note_narrowing(self) -> None:
        self.narrowed = True

    def note_selected(self, items: list[pytest.Item]) -> None:
        """How many budget tests are left to run once deselection is done (the fail-safe's count)."""
        self.selected = sum(1 for item in items if _is_budget_test(item))

    def place(self, placement: dict) -> None:
        """An xdist worker's GPU and cores (xdist.py): its children measure there, with the session's threads."""
        self.placement = placement

    # -- measuring ----------------------------------------------------------
    def mark_for(self, item: pytest.Item) -> BudgetMark:
        """The test's budget, expectation and device, for this session's scale and the device its child runs on."""
        arguments = merge_marks(_markers_outermost_first(item), where=item.nodeid)
        host = "cuda" if self._probe()["cuda"] else "cpu"
        return read_mark(**arguments, scale=self.options.scale, host=host, where=item.nodeid)

    def _probe(self) -> dict:
        """Start the forkserver (with the kernel-dispatch pin), and read the device and the setup once."""
        if self.device is None:
            opts = self.options
            if not self.is_worker and self.placement is None:  # before the forkserver starts: it inherits the pin
                self.pinned_gpu = placement.one_gpu(os.environ)
            device = isolate.probe(preload=opts.preload, dispatch_mode=opts.dispatch)
            self.hardware = fingerprint.collect(device, baselines.hardware_key(device), isolate.forkserver_environ(opts.dispatch),
                                                opts.threads, opts.malloc, opts.dispatch, opts.preload)
            self.device = {k: v for k, v in device.items() if k != "setup"}
        return self.device

    def fingerprint_for(self, scenario: Scenario, where: str = "", device: str | None = None) -> dict:
        """The fingerprint a baseline entry of this case stores: the session's, with the case's allocator mode and device."""
        fprint = {k: v for k, v in self.hardware.items() if k not in ("key", "package_versions")}
        return {**fprint, "malloc": self._malloc(scenario, where), **({"device": device} if device else {})}

    def measure(self, item: pytest.Item, scenario: Scenario, label: str | None = None,
                expect: str | None = None) -> dict:
        if not self.options.enabled:
            pytest.skip("memory-budget test: run with --gpu-budget")
        if not isinstance(scenario, Scenario):
            raise TypeError(f"{item.nodeid}: measure() takes a gpu_budget.Scenario, got {scenario!r}")
        mark = self.mark_for(item)
        expect = expect if expect is not None else mark.expect
        scale = self.options.scale
        test_id = item.name + (f"::{label}" if label else "")
        row = {
            "nodeid": item.nodeid + (f"::{label}" if label else ""),
            "scenario": scenario.name, "label": label, "scale": scale, "fixes": list(scenario.fixes),
            "device": mark.device,
            "budget": {"ram": mark.budget.ram, "vram": mark.budget.vram}, "expect": expect,
            "budget_origin": mark.origin,  # where the budget's figure comes from (marks.ORIGINS): FINDINGS.md says what it shows
            "tolerance": {"rel": mark.tolerance.rel, "abs": mark.tolerance.abs},
            "peaks": {"ram": None, "ram_tree": None, "ram_tensor": None, "vram_allocated": None, "vram_reserved": None,
                      "vram_device": None},
            "phases": {}, "steps": [], "growth": {}, "baseline": None, "change": {}, "info": {},
        }
        if self.placement:
            row["worker"] = self.placement
        reason, needs_gpu = self._why_not_measurable(scenario, mark, scale)
        if reason and needs_gpu and self.options.require_gpu:
            message = f"{reason}, and --gpu-budget-require-gpu says this runner must have one"
            return self._finish(item, {**row, "verdict": "error", "passed": False, "message": message})
        if reason:
            self.rows.append({**row, "verdict": "skipped", "passed": True, "message": reason})
            pytest.skip(reason)
        problem = expectation_problem(replace(mark, expect=expect), scale)
        if problem:
            return self._finish(item, {**row, "verdict": "error", "passed": False, "message": problem})

        scenario_json = scenario.to_json(scale)
        path = baselines.path_for(self.options.baselines, self.hardware["key"], str(item.path))
        try:
            stored = baselines.load(path)
            baseline, broken = baselines.lookup(stored, scale, test_id), None
        except baselines.BaselineError as exc:
            stored, baseline, broken = {}, None, str(exc)
        fprint = self.fingerprint_for(scenario, item.nodeid, mark.device)
        setup = Setup.between((baseline or {}).get("fingerprint"), fprint, baselines.packages_of(stored, baseline),
                              self.hardware["package_versions"])
        try:
            measurement = self._measure_child(scenario, mark)
        except MissingDependency as exc:  # in prepare: an optional package that cannot be imported here
            measurement = {"status": "error", "error": {"kind": "missing-dependency", "message": str(exc)}}
        if (measurement.get("error") or {}).get("kind") == "missing-dependency":
            reason = measurement["error"]["message"]
            self.rows.append({**row, "verdict": "skipped", "passed": True, "message": reason})
            pytest.skip(reason)
        if broken:
            return self._finish(item, self._row(row, measurement, None, "error", False, broken, {}))
        verdict = judge(measurement, mark.budget, baseline, mark.tolerance,
                        ci=self.ci, update=self.options.update, expect=expect, setup=setup)
        if verdict.write_baseline and measurement["status"] == "ok":
            entry = baselines.entry_from(measurement, scenario_json, mark.tolerance, fprint,
                                         datetime.date.today().isoformat())
            self._record(path, scale, test_id, entry)
        result = self._row(row, measurement, baseline, verdict.verdict, verdict.passed, verdict.message,
                           verdict.change)
        result["fingerprint_changed"] = list(setup.described) if baseline else []
        result["setup"] = {"policy": setup.policy, "floor_shift": setup.floor_shift} if baseline else None
        if self.options.remediate and remediate.needs_remedy(measurement, mark.budget):
            result["remediation"] = self._remediate(scenario, mark)
            if not result["passed"]:
                result["message"] += "; " + report.remediation_text(result["remediation"])
        if not result["passed"] and self.options.snapshot == "rerun" and artifacts.wants_snapshot(measurement, mark, baseline):
            result.update(self._snapshot_run(scenario, mark, result["nodeid"]))
        return self._finish(item, result)

    def _snapshot_run(self, scenario: Scenario, mark: BudgetMark, nodeid: str) -> dict:
        """Run a failing CUDA case once more with the allocation recorder on, and keep its memory snapshot.

        The recorder costs host RAM and time, so the judged run never records; this
        second run is reported beside the row ("snapshot_run"), never judged or recorded.
        """
        path = artifacts.snapshot_path()
        try:
            again = self._measure_child(scenario, mark, snapshot={"path": path})
            out: dict = {"snapshot_run": {"status": again["status"], "peaks": again["peaks"],
                                          "error": again.get("error"), "wall_seconds": again.get("wall_seconds")}}
            if again.get("snapshot"):
                kept = artifacts.keep_snapshot(again["snapshot"], self.options.snapshots, nodeid)
                if kept:
                    out["snapshot"] = kept
            return out
        finally:
            Path(path).unlink(missing_ok=True)

    def peak(self, item: pytest.Item, scenario: Scenario) -> dict:
        """A measurement neither judged nor recorded: one probe of a search (bisection, exploration)."""
        if not self.options.enabled:
            pytest.skip("memory-budget test: run with --gpu-budget")
        mark = self.mark_for(item)
        reason, needs_gpu = self._why_not_measurable(scenario, mark, self.options.scale)
        if reason and needs_gpu and self.options.require_gpu:
            pytest.fail(f"{reason}, and --gpu-budget-require-gpu says this runner must have one", pytrace=False)
        if reason:
            pytest.skip(reason)
        try:
            measurement = self._measure_child(scenario, mark)
        except MissingDependency as exc:
            pytest.skip(str(exc))
        if (measurement.get("error") or {}).get("kind") == "missing-dependency":
            pytest.skip(measurement["error"]["message"])
        self.probes += "wall_seconds" in measurement  # a child ran, even if it crashed
        return measurement

    def note(self, item: pytest.Item, scenario: Scenario, text: str, data: dict) -> None:
        try:
            json.dumps(data)
        except (TypeError, ValueError) as exc:  # found now, naming the test, not when the report is written
            raise TypeError(f"{item.nodeid}: gpu_budget.note() data must be JSON-able: {exc}") from None
        self.notes.append({"nodeid": item.nodeid, "scenario": scenario.name, "scale": self.options.scale,
                           "text": text, "data": data})

    def _measure_child(self, scenario: Scenario, mark: BudgetMark, snapshot: dict | None = None) -> dict:
        """Prepare the scenario's assets (cached, unmeasured) and measure it in a fresh child.

        A case pinned to device="cpu" runs (and is prepared) in a child that does not see the GPU.
        """
        scale, opts = self.options.scale, self.options
        device = "cpu" if mark.pinned and mark.device == "cpu" else None
        job, assets = scenario.to_json(scale), self._assets / scenario.asset_key(scale)
        if scenario.prepare:
            # unmeasured: as many threads as this process may use, to build real-scale models sooner
            isolate.prepare_assets(job, assets, opts.timeout, len(os.sched_getaffinity(0)), opts.preload,
                                   dispatch_mode=opts.dispatch, device=device)
        tensors = scenario.params.get("tensor_bytes", True)
        if not isinstance(tensors, bool):
            raise TypeError(f"{scenario.name}: scenario param tensor_bytes={tensors!r}: expected True or False")
        return isolate.measure(job, assets, opts.timeout, opts.threads, opts.preload, snapshot=snapshot,
                               malloc=self._malloc(scenario), dispatch_mode=opts.dispatch, tensors=tensors, device=device)

    def _remediate(self, scenario: Scenario, mark: BudgetMark) -> dict:
        """Search the scenario's fixes for the cheapest set within the budget, each set in a fresh child."""
        def trial(candidate: Scenario) -> dict:
            return remediate.trial_outcome(self._measure_child(candidate, mark), mark.budget)

        found = remediate.search(scenario, trial, cuda=mark.device == "cuda", max_runs=self.options.remediate_max_runs)
        return found.to_json()

    def _malloc(self, scenario: Scenario, where: str = "") -> str:
        """The host allocator mode of this case: the scenario's `malloc` param, else --gpu-budget-malloc."""
        mode = scenario.params.get("malloc", self.options.malloc)
        if mode not in isolate.MALLOC_MODES:
            raise ValueError(f"{where or scenario.name}: scenario param malloc={mode!r}: "
                                    f"expected one of {', '.join(isolate.MALLOC_MODES)}")
        return mode

    def _why_not_measurable(self, scenario: Scenario, mark: BudgetMark, scale: str) -> tuple[str | None, bool]:
        """Why this case cannot be measured here, and whether the reason is a missing GPU."""
        if scale not in scenario.scales:
            return f"scenario {scenario.name!r} has no {scale!r} scale (it has: {', '.join(scenario.scales)})", False
        device = self._probe()
        if mark.pinned and mark.device == "cpu" and (scenario.needs_cuda(scale) or mark.budget.vram is not None):
            return (f"the test pins device='cpu', but scenario {scenario.name!r} at scale {scale!r} needs CUDA "
                    "or has a VRAM budget: nothing on the GPU would be measured"), False
        if scenario.needs_cuda(scale) and not device["cuda"]:
            return f"scenario {scenario.name!r} at scale {scale!r} needs a CUDA GPU; this host has none", True
        if mark.pinned and mark.device == "cuda" and not device["cuda"]:
            return "the test pins device='cuda'; this host has no CUDA GPU", True
        if mark.budget.vram is not None and not device["cuda"]:
            return (f"VRAM budget {format_size(mark.budget.vram)} needs a CUDA GPU to measure; "
                    "this host has none (no GPU figure is reported from a CPU host)"), True
        card = device.get("gpu_memory")
        if mark.budget.vram is not None and card and mark.budget.vram > card:
            return (f"VRAM budget {format_size(mark.budget.vram)} is above this GPU's total memory {format_size(card)} "
                    f"({device.get('gpu_name')}): the card cannot reach it, so the budget would test nothing (an "
                    "over-budget run dies of out-of-memory first); it is measured on a card with more memory"), False
        return None, False

    def _record(self, path: Path, scale: str, test_id: str, entry: dict) -> None:
        """Write a baseline entry now; an xdist worker ships it to the controller, which alone writes."""
        packages = {entry["fingerprint"]["packages"]: self.hardware["package_versions"]}
        if self.is_worker:
            self.pending.append({"path": str(path), "scale": scale, "id": test_id, "entry": entry, "packages": packages})
        else:
            baselines.store(path, scale, {test_id: entry}, packages=packages)

    @staticmethod
    def _row(row: dict, m: dict, baseline: dict | None, verdict: str, passed: bool, message: str,
             change: dict) -> dict:
        return {
            **row,
            "peaks": m["peaks"], "step_peaks": m.get("step_peaks"), "growth": m.get("growth", {}),
            "phases": {p["name"]: p for p in m["phases"]}, "steps": m.get("steps", []),
            "info": m.get("info", {}), "error": m.get("error"), "ram_method": m.get("ram_method"),
            "ram_tree_method": m.get("ram_tree_method"), "ram_tree_bound": m.get("ram_tree_bound"),
            "wall_seconds": m.get("wall_seconds"),
            "baseline": None if baseline is None else {"peaks": baseline["peaks"], "recorded": baseline.get("recorded"),
                                                       "fingerprint": baseline.get("fingerprint"),
                                                       "phases": baseline.get("phases", {})},
            "change": change, "verdict": verdict, "passed": passed, "message": message,
        }

    def _finish(self, item: pytest.Item, row: dict) -> dict:
        self.rows.append(row)
        item.user_properties.append(("gpu_budget_ram_peak", row["peaks"]["ram"]))
        item.user_properties.append(("gpu_budget_ram_tree_peak", row["peaks"].get("ram_tree")))
        item.user_properties.append(("gpu_budget_vram_allocated_peak", row["peaks"]["vram_allocated"]))
        item.user_properties.append(("gpu_budget_verdict", row["verdict"]))
        if not row["passed"]:
            pytest.fail(f"[gpu-budget {row['verdict']}] {row['message']}", pytrace=False)
        return row

    # -- xdist (xdist.py carries these between worker and controller) ------------
    def shipment(self) -> dict:
        """What a worker hands the controller at its end: JSON-able."""
        return {
            "rows": self.rows, "hardware": self.hardware, "device": self.device, "pending": self.pending,
            "collected": {str(k): sorted(v) for k, v in self.collected.items()}, "order": self.order,
            "selected": self.selected, "narrowed": self.narrowed, "probes": self.probes,
            "notes": self.notes,
        }

    def merge(self, shipped: dict) -> None:
        """On the controller: take in one worker's shipment."""
        self.rows.extend(shipped["rows"])
        self.hardware = self.hardware or shipped["hardware"]
        self.device = self.device or shipped["device"]
        self.pending.extend(shipped["pending"])
        for module, names in shipped["collected"].items():
            self.collected[Path(module)].update(names)
        self.order = self.order or shipped["order"]
        self.selected = max(self.selected, shipped["selected"])  # every worker collects the whole selection
        self.narrowed = self.narrowed or shipped["narrowed"]
        self.probes += shipped["probes"]
        self.notes.extend(shipped["notes"])
        position = {nodeid: i for i, nodeid in enumerate(self.order)}
        self.rows.sort(key=lambda r: position.get(_item_nodeid(r), len(position)))  # stable: labels keep order

    # -- end of session -----------------------------------------------------
    def finish(self, session: pytest.Session) -> None:
        """Serial run or xdist controller: write baselines, plots and reports; apply the fail-safe.

        An xdist worker stops here: xdist.py ships its state to the controller.
        """
        if self.is_worker:
            return
        self._write_pending()
        if self.options.update and not self.narrowed and self.hardware:
            self._prune()
        if self.options.enabled and not self.config.option.collectonly:  # collecting measures nothing, by design
            found = self._nothing_measured()
            (self.problems if self.ci or self.options.require_gpu else self.warnings).extend(found)
        if self.options.plots and self.rows:
            self._plot()
        if self.options.json:
            report.write_json(self.options.json, self.rows, self.hardware, self.problems, self.notes)
        base = self.options.json.parent if self.options.json else self.options.plots
        report.append_step_summary(self.rows, self.hardware, self.problems, base=base)
        if self.problems:
            session.shouldfail = session.shouldfail or "gpu-budget gate failed: " + "; ".join(self.problems)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _write_pending(self) -> None:
        """The controller writes what its workers measured, one locked write per file and scale."""
        grouped: dict[tuple[str, str], dict] = defaultdict(dict)
        packages: dict[str, dict] = {}
        for pending in self.pending:
            grouped[(pending["path"], pending["scale"])][pending["id"]] = pending["entry"]
            packages.update(pending.get("packages", {}))
        for (path, scale), entries in grouped.items():
            try:
                baselines.store(Path(path), scale, entries, packages=packages)
            except (baselines.BaselineError, OSError) as exc:
                self.problems.append(f"could not write baselines to {path}: {exc}")
        self.pending.clear()

    def _nothing_measured(self) -> list[str]:
        opts = self.options
        return failsafe.nothing_measured(
            selected=self.selected, rows=self.rows, probes=self.probes, require_gpu=opts.require_gpu, ci=self.ci,
            update=opts.update, baselines=opts.baselines, hardware=self.hardware,
            device=lambda: self.device or self._probe_quietly())

    def _probe_quietly(self) -> dict | None:
        try:
            return self._probe()
        except Exception as exc:  # noqa: BLE001  the fail-safe reports it; the session is ending anyway
            self.problems.append(f"probing the device failed: {exc}")
            return None

    def _plot(self) -> None:
        from gpu_budget import plots

        for row in self.rows:
            if row.get("phases"):
                path = self.options.plots / f"{artifacts.slug(row['nodeid'])}.png"
                try:
                    plots.write(row, path, self.hardware)
                except Exception as exc:  # noqa: BLE001  a broken picture must not hide the verdicts
                    self.problems.append(f"plotting {row['nodeid']} failed: {exc!r}")
                else:
                    row["plot"] = str(path)

    def _prune(self) -> None:
        """Drop entries of tests that no longer exist, only when the whole suite was selected."""
        for module, names in self.collected.items():
            path = baselines.path_for(self.options.baselines, self.hardware["key"], str(module))
            try:
                stored = baselines.load(path)
            except baselines.BaselineError:
                continue  # already reported as its tests' error; a broken file is never rewritten
            ids = set(stored["entries"].get(self.options.scale, {}))
            keep = {i for i in ids if i.split("::")[0].split("[")[0] in names}
            if keep != ids:
                baselines.store(path, self.options.scale, {}, prune_except=keep)

    def terminal_summary(self, terminalreporter: Any) -> None:
        if not (self.rows or self.problems or self.warnings):
            return
        terminalreporter.section("gpu-budget")
        if self.hardware:
            fp = self.hardware
            terminalreporter.write_line(f"hardware {fp['key']}: torch {fp.get('torch')}, transformers "
                                        f"{fp.get('transformers')}, peft {fp.get('peft')}, python {fp.get('python')}")
            terminalreporter.write_line(f"setup: {fp.get('cpu')} ({fp.get('cpu_level')}), kernels {fp.get('isa')} "
                                        f"(dispatch {fp.get('dispatch')}), {fp.get('threads')} thread(s) per child, "
                                        f"malloc {fp.get('malloc')}, import floor {format_size(fp.get('floor'))}")
        for line in report.setup_lines(self.rows):
            terminalreporter.write_line(line)
        if self.pinned_gpu is not None:
            terminalreporter.write_line(f"serial run on a host with several GPUs: measured on one, "
                                        f"CUDA_VISIBLE_DEVICES={self.pinned_gpu} (set it yourself to choose another)")
        if self.rows:
            terminalreporter.write_line(report.terminal_table(self.rows))
        for line in report.remediation_lines(self.rows):
            terminalreporter.write_line(line)
        for line in report.tree_lines(self.rows):
            terminalreporter.write_line(line)
        for row in self.rows:
            if not row["passed"] or row["verdict"] in ("improved", "error"):
                terminalreporter.write_line(f"{row['nodeid']}: {row['message']}")
            if row.get("snapshot"):
                terminalreporter.write_line(f"{row['nodeid']}: memory snapshot {row['snapshot']} "
                                            f"({report.SNAPSHOT_HOWTO})")
        for problem in self.problems:
            terminalreporter.write_line(f"gpu-budget gate FAILED: {problem}", red=True)
        for warning in self.warnings:
            terminalreporter.write_line(f"gpu-budget warning: {warning} (fails the run under CI or with "
                                        f"--gpu-budget-require-gpu)", yellow=True)
        if self.options.plots and any(row.get("plot") for row in self.rows):
            terminalreporter.write_line(f"plots: {self.options.plots}")
        if self.options.json:
            terminalreporter.write_line(f"JSON report: {self.options.json}")


def assets_folder(config: pytest.Config) -> Path:
    """Where prepared assets (checkpoints, clips) are kept: $GPU_BUDGET_ASSETS, else pytest's cache.

    Real-scale checkpoints are gigabytes and take minutes to build; a CI checkout
    wipes the workspace (and pytest's cache in it), so a self-hosted runner points
    GPU_BUDGET_ASSETS at a folder of its own. Assets are keyed by what builds them
    (Scenario.asset_key), so a kept folder is never stale.
    """
    env = os.environ.get("GPU_BUDGET_ASSETS", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-assets"))) if cache else Path(str(config.rootpath)) / ".gpu-budget-assets"


def _is_budget_test(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None or "gpu_budget" in getattr(item, "fixturenames", ())


def _item_nodeid(row: dict) -> str:
    """The pytest node id a result row belongs to (rows of labelled measurements add '::label')."""
    return row["nodeid"][: -len(row["label"]) - 2] if row.get("label") else row["nodeid"]


def _markers_outermost_first(item: pytest.Item) -> list[tuple[tuple, dict]]:
    """The item's gpu_budget markers as (args, kwargs): module, class, function, then parametrize marks."""
    by_node: list[tuple[Any, list]] = []
    for node, mark in item.iter_markers_with_node(MARKER):  # closest node first; a node's marks in order
        if not by_node or by_node[-1][0] is not node:
            by_node.append((node, []))
        by_node[-1][1].append((mark.args, mark.kwargs))
    return [marks for _, node_marks in reversed(by_node) for marks in node_marks]
