"""One object owns the gate's session state: options, the device, baselines touched, result rows.

The pytest hooks (pytest_plugin.py) only delegate here; the measuring,
comparing and reporting live in plain modules.
"""

from __future__ import annotations

import datetime
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpu_budget import baselines, isolate, report
from gpu_budget.compare import judge
from gpu_budget.marks import BudgetMark, gpu_budget as read_mark
from gpu_budget.scenario import Scenario
from gpu_budget.units import format_size

MARKER = "gpu_budget"


def is_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@dataclass
class Options:
    enabled: bool
    update: bool
    baselines: Path
    scale: str
    json: Path | None
    timeout: float
    threads: int
    preload: tuple[str, ...]

    @classmethod
    def from_config(cls, config: pytest.Config) -> "Options":
        root = Path(str(config.rootpath))
        value = config.getoption("gpu_budget_baselines") or config.getini("gpu_budget_baselines") or "baselines"
        json_path = config.getoption("gpu_budget_json")
        threads = config.getoption("gpu_budget_threads")
        if not threads:  # split the cores between xdist workers
            workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
            threads = max(1, (os.cpu_count() or 1) // workers)
        preload = config.getini("gpu_budget_preload")
        return cls(
            enabled=bool(config.getoption("gpu_budget")),
            update=bool(config.getoption("gpu_budget_update")),
            baselines=(root / value).resolve(),
            scale=config.getoption("gpu_budget_scale"),
            json=Path(json_path).resolve() if json_path else None,
            timeout=float(config.getoption("gpu_budget_timeout")),
            threads=threads,
            preload=tuple(preload) if preload is not None else isolate.DEFAULT_PRELOAD,
        )


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
        self.narrowed = False  # deselection or node ids: do not prune baselines
        cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
        self._assets = (Path(str(cache.mkdir("gpu-budget-assets"))) if cache
                        else Path(str(config.rootpath)) / ".gpu-budget-assets")

    # -- collection ---------------------------------------------------------
    def modify_items(self, items: list[pytest.Item]) -> None:
        skip = pytest.mark.skip(reason="memory-budget test: run with --gpu-budget")
        for item in items:
            if item.get_closest_marker(MARKER) is None and "gpu_budget" not in getattr(item, "fixturenames", ()):
                continue
            self.collected[Path(str(item.path))].add(item.originalname if hasattr(item, "originalname") else item.name)
            if not self.options.enabled:
                item.add_marker(skip)

    def note_narrowing(self) -> None:
        self.narrowed = True

    # -- measuring ----------------------------------------------------------
    def mark_for(self, item: pytest.Item) -> BudgetMark:
        marker = item.get_closest_marker(MARKER)
        args, kwargs = (marker.args, marker.kwargs) if marker else ((), {})
        return read_mark(*args, **kwargs, scale=self.options.scale, where=item.nodeid)

    def _probe(self) -> dict:
        if self.device is None:
            self.device = isolate.probe(preload=self.options.preload)
            key = baselines.hardware_key(self.device)
            self.hardware = {"key": key, **baselines.fingerprint(self.device)}
        return self.device

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
            "budget": {"ram": mark.budget.ram, "vram": mark.budget.vram}, "expect": expect,
            "peaks": {"ram": None, "vram_allocated": None, "vram_reserved": None, "vram_device": None},
            "phases": {}, "steps": [], "growth": {}, "baseline": None, "change": {}, "info": {},
        }
        reason = self._skip_reason(scenario, mark, scale)
        if reason:
            self.rows.append({**row, "verdict": "skipped", "passed": True, "message": reason})
            pytest.skip(reason)

        scenario_json = scenario.to_json(scale)
        assets = self._assets / scenario.asset_key(scale)
        if scenario.prepare:
            isolate.prepare_assets(scenario_json, assets, self.options.timeout, self.options.threads,
                                   self.options.preload)
        measurement = isolate.measure(scenario_json, assets, self.options.timeout, self.options.threads,
                                      self.options.preload)
        path = baselines.path_for(self.options.baselines, self.hardware["key"], str(item.path))
        try:
            stored = baselines.load(path)
            baseline = baselines.lookup(stored, scale, test_id)
        except baselines.BaselineError as exc:
            return self._finish(item, self._row(row, measurement, None, "error", False, str(exc), {}))
        verdict = judge(measurement, mark.budget, baseline, mark.tolerance,
                        ci=self.ci, update=self.options.update, expect=expect)
        if verdict.write_baseline and measurement["status"] == "ok":
            fprint = {k: v for k, v in self.hardware.items() if k != "key"}
            entry = baselines.entry_from(measurement, scenario_json, mark.tolerance, fprint,
                                         datetime.date.today().isoformat())
            baselines.store(path, scale, {test_id: entry})
        result = self._row(row, measurement, baseline, verdict.verdict, verdict.passed, verdict.message, verdict.change)
        result["fingerprint_changed"] = _fingerprint_changed(baseline, self.hardware)
        return self._finish(item, result)

    def _skip_reason(self, scenario: Scenario, mark: BudgetMark, scale: str) -> str | None:
        if scale not in scenario.scales:
            return f"scenario {scenario.name!r} has no {scale!r} scale (it has: {', '.join(scenario.scales)})"
        cuda = self._probe()["cuda"]
        if scenario.needs_cuda(scale) and not cuda:
            return f"scenario {scenario.name!r} at scale {scale!r} needs a CUDA GPU; this host has none"
        if mark.budget.vram is not None and not cuda:
            return (f"VRAM budget {format_size(mark.budget.vram)} needs a CUDA GPU to measure; "
                    "this host has none (no GPU figure is reported from a CPU host)")
        return None

    @staticmethod
    def _row(row: dict, m: dict, baseline: dict | None, verdict: str, passed: bool, message: str,
             change: dict) -> dict:
        return {
            **row,
            "peaks": m["peaks"], "step_peaks": m.get("step_peaks"), "growth": m.get("growth", {}),
            "phases": {p["name"]: p for p in m["phases"]}, "steps": m.get("steps", []),
            "info": m.get("info", {}), "error": m.get("error"), "ram_method": m.get("ram_method"),
            "wall_seconds": m.get("wall_seconds"),
            "baseline": None if baseline is None else {"peaks": baseline["peaks"], "recorded": baseline.get("recorded"),
                                                       "fingerprint": baseline.get("fingerprint")},
            "change": change, "verdict": verdict, "passed": passed, "message": message,
        }

    def _finish(self, item: pytest.Item, row: dict) -> dict:
        self.rows.append(row)
        item.user_properties.append(("gpu_budget_ram_peak", row["peaks"]["ram"]))
        item.user_properties.append(("gpu_budget_vram_allocated_peak", row["peaks"]["vram_allocated"]))
        item.user_properties.append(("gpu_budget_verdict", row["verdict"]))
        if not row["passed"]:
            pytest.fail(f"[gpu-budget {row['verdict']}] {row['message']}", pytrace=False)
        return row

    # -- end of session -----------------------------------------------------
    def finish(self, is_worker: bool) -> None:
        if self.options.update and not self.narrowed and not is_worker and self.hardware:
            self._prune()
        if is_worker:
            return
        if self.options.json:
            report.write_json(self.options.json, self.rows, self.hardware)
        report.append_step_summary(self.rows, self.hardware)

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
        if not self.rows:
            return
        terminalreporter.section("gpu-budget")
        if self.hardware:
            fp = self.hardware
            terminalreporter.write_line(f"hardware {fp['key']}: torch {fp.get('torch')}, transformers "
                                        f"{fp.get('transformers')}, peft {fp.get('peft')}, python {fp.get('python')}")
        terminalreporter.write_line(report.terminal_table(self.rows))
        for row in self.rows:
            if not row["passed"] or row["verdict"] in ("improved", "error"):
                terminalreporter.write_line(f"{row['nodeid']}: {row['message']}")
        if self.options.json:
            terminalreporter.write_line(f"JSON report: {self.options.json}")


def _fingerprint_changed(baseline: dict | None, hardware: dict) -> list[str]:
    """What differs between the baseline's fingerprint and now; reported, and the comparison still runs."""
    then = (baseline or {}).get("fingerprint") or {}
    return [f"{k} {then[k]} -> {hardware.get(k)}" for k in sorted(then) if k != "key" and then[k] != hardware.get(k)]
