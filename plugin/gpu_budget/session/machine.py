"""The machine a session measures on, read once: its device and setup (the forkserver's probe), and its baselines.

The first case that needs the device starts the forkserver (with the
kernel-dispatch pin, and on a serial run over several GPUs, the one GPU it
pins) and reads the device and the session's fingerprint from its probe
child. The session's data keeps both (an xdist worker ships them); the
baseline store of this hardware is made from them once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from gpu_budget.isolate import forkserver, placement
from gpu_budget.isolate.placement import Placement
from gpu_budget.judge.store import BaselineStore
from gpu_budget.measure import host
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.hardware import Hardware
from gpu_budget.report import artifacts
from gpu_budget.session.data import SessionData
from gpu_budget.session.options import Options


class Machine:
    """The session's device and hardware, its xdist placement or pinned GPU, and its baseline store."""

    def __init__(self, options: Options, data: SessionData, worker: bool) -> None:
        self.options, self.data, self.worker = options, data, worker
        self.placement: Placement | None = None  # an xdist worker's GPU and cores (xdist.py)
        self.pinned_gpu: str | None = None  # a serial run on a multi-GPU host measures on this one (placement.py)
        self._store: BaselineStore | None = None
        self._shared: frozenset[str] | None = None  # the slugs several collected tests have (shares_name)

    def device(self) -> DeviceInfo:
        """Start the forkserver and read the device and the setup, once."""
        if self.data.device is None:
            opts = self.options
            if not self.worker and self.placement is None:  # before the forkserver starts: it inherits the pin
                self.pinned_gpu = placement.pin_gpus(os.environ, opts.gpus_per_worker)
            probed = forkserver.probe(preload=opts.preload, dispatch_mode=opts.dispatch, start_timeout=opts.timeout)
            self.data.hardware = Hardware.from_json(host.collect(
                probed, host.hardware_key(probed.device), forkserver.forkserver_environ(opts.dispatch), opts.threads,
                opts.malloc, opts.dispatch, opts.preload))
            self.data.device = probed.device
        return self.data.device

    def device_quietly(self, problems: list[str]) -> DeviceInfo | None:
        """The device, or None where probing it failed (said in `problems`: the session is ending anyway)."""
        try:
            return self.device()
        except Exception as exc:  # noqa: BLE001  the fail-safe reports it
            problems.append(f"probing the device failed: {exc}")
            return None

    def worker_seen(self, env: Mapping[str, str]) -> dict | None:
        """This xdist worker's placement as a case run under `env` (its own env over this process's) sees it: the GPU
        its processes see; None on a serial run."""
        return None if self.placement is None else self.placement.as_run({**os.environ, **env}).to_json()

    def hardware(self) -> Hardware:
        self.device()
        return self.data.hardware

    def store(self) -> BaselineStore:
        """The baseline store of this hardware under --gpu-budget-baselines."""
        if self._store is None:
            self._store = BaselineStore.of(self.options.baselines, self.hardware())
        return self._store

    def known_store(self) -> BaselineStore | None:
        """The store, where the hardware was read (a controller's, from its workers); None where nothing was probed."""
        return self.store() if self.data.hardware is not None else None

    def namesakes(self, module: str) -> tuple[str, ...]:
        """The other collected test files whose baselines share this module's file (one stem, one folder)."""
        return self.store().namesakes(module, self.data.collected)

    def shares_name(self, nodeid: str) -> bool:
        """Whether another collected test has this one's file name, so its files (a snapshot) take a hash
        (artifacts.shared_slugs, read once: the tests are all collected before the first case runs)."""
        if self._shared is None:
            self._shared = artifacts.shared_slugs(self.data.order)
        return artifacts.slug(nodeid) in self._shared

    def folder(self) -> Path | None:
        """This hardware's baselines folder of the tests' project (None: no hardware read)."""
        store = self.known_store()
        return None if store is None else store.folder(next(iter(self.data.collected), None))
