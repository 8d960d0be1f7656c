"""The case studies' own wiring: under xdist, their launches go out first.

xdist's work stealing (the gate's scheduler under -n) first gives each worker
a contiguous share of the collection, then moves queued cases from a busy
worker to an idle one, but never the last two a worker holds. The launches on
several ranks (test_several_ranks.py) are the gate's longest cases and are
collected last, so they all queued on one worker and ran there at the end while
the other sat idle (benchmarks/RESULTS.md, section 6). Handed out first, they
start early and the cases left at the end are short ones. Only the order in
which cases run changes: each is still measured in its own child, and the
reports list the rows in collection order (the plugin records that order
before this hook runs).
"""

import pytest

FIRST = "test_several_ranks.py"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker; a serial run keeps pytest's order
        items.sort(key=lambda item: item.path.name != FIRST)  # stable: every other case keeps its place
