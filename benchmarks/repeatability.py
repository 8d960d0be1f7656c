"""Section 4, repeatability: the gated RAM peak of each scenario over fresh sessions, steady vs system malloc.

Each repetition is a fresh session (benchmarks/session.py: its own `python`
and forkserver with the gate's preload) measuring every configuration once in
a fresh child, in an order rotated session by session, so a position effect
(a forkserver's first child, say) shows up as spread instead of hiding. S1 is
measured under glibc's default allocator too, to show why children run under
the steady one. The widest steady spread sets the default tolerance.

    python -m benchmarks.repeatability [--sessions 5]
"""

from __future__ import annotations

import argparse

from benchmarks import session
from benchmarks.common import THREADS, scenarios, write

SYSTEM_MALLOC = ("s1 as-reported", "s1 truncate")  # also measured under glibc's defaults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    args = parser.parse_args()
    jobs = [{"case": name, "malloc": "steady"} for name in scenarios()]
    jobs += [{"case": name, "malloc": "system"} for name in SYSTEM_MALLOC]
    runs = []
    for i in range(args.sessions):
        print(f"repeatability: session {i + 1} of {args.sessions}", flush=True)
        k = i % len(jobs)
        runs += [{"session": i, **r} for r in session.fresh(jobs[k:] + jobs[:k])]
    write("repeatability", {"threads": THREADS, "sessions": args.sessions, "runs": runs})


if __name__ == "__main__":
    main()
