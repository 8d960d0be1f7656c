"""pytest-xdist: workers hand their result rows to the controller, which alone reports.

Registered only when xdist is installed. Baselines are written by each worker
under a per-file lock (baselines.store), so they merge; pruning happens only in
a serial run or on the controller.
"""

from __future__ import annotations

import json


class XdistRows:
    def __init__(self, session) -> None:
        self.session = session

    def pytest_sessionfinish(self, session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput["gpu_budget_rows"] = json.dumps(self.session.rows)
            workeroutput["gpu_budget_hardware"] = json.dumps(self.session.hardware)

    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.session.rows.extend(json.loads(output.get("gpu_budget_rows", "[]")))
        hardware = json.loads(output.get("gpu_budget_hardware", "null"))
        if hardware and self.session.hardware is None:
            self.session.hardware = hardware
