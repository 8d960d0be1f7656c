"""Threads started together and waited for: a test's stand-in for xdist workers that ask for one thing at once."""

import threading
from collections.abc import Callable


def at_once(target: Callable[[], object], times: int) -> None:
    """`target` run in `times` threads started together; returns when all have ended."""
    threads = [threading.Thread(target=target) for _ in range(times)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
