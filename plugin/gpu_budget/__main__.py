"""`python -m gpu_budget <command>`: tools around the gate's reports."""

import sys
from importlib import metadata

from gpu_budget.session.extras import DISTRIBUTION


def version() -> str:
    """The installed distribution's version: pyproject.toml's, the one source (`pytest --version` lists it too)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown (not installed: run from a source tree)"


def options(argv: list[str], description: str) -> int:
    """`options`: the options table as docs/options.md holds it (--help: what it prints, as every command's does)."""
    import argparse

    argparse.ArgumentParser(prog="python -m gpu_budget options", description=description).parse_args(argv)
    from gpu_budget.session.options import document

    sys.stdout.write(document())
    return 0


def main() -> int:
    commands = {"findings": "turn a JSON report into FINDINGS.md",
                "estimate": "estimate CASE ...: GPU-free step peak of the Scenarios named (and its error against real runs)",
                "baselines": "baselines drop --scale SCALE FOLDER|FILE ...: remove a scale's entries, to re-record them; "
                             "baselines resolve FOLDER|FILE ...: merge a file git left with conflict markers; "
                             "baselines merge-driver %O %A %B %P: git's merge driver for baseline files",
                "options": "print docs/options.md: the options table, from the option definitions",
                "bisect": "bisect GOOD BAD -k CASE [-- PYTEST ARGS]: the first commit at which a case's gated figure "
                          "moved past its tolerance (git bisect run over the gate, in a worktree)"}
    usage = "usage: python -m gpu_budget [--version] <command> ...\n" + "\n".join(f"  {k}: {v}" for k, v in commands.items())
    asked = sys.argv[1] if len(sys.argv) > 1 else None
    if asked in ("-h", "--help", "help", "-V", "--version") and len(sys.argv) > 2:
        print(f"python -m gpu_budget: {asked} takes no arguments; got {' '.join(sys.argv[2:])!r}\n{usage}",
              file=sys.stderr)
        return 2
    if asked in ("-h", "--help", "help"):  # asked for: the usage is the answer
        print(usage)
        return 0
    if asked in ("-V", "--version"):
        print(f"{DISTRIBUTION} {version()}")
        return 0
    if asked not in commands:
        print((f"python -m gpu_budget: unknown command {asked!r}\n" if asked is not None else "") + usage, file=sys.stderr)
        return 2
    if sys.argv[1] == "baselines":
        from gpu_budget.judge.baselines_cli import main as baselines

        return baselines(sys.argv[2:])
    if sys.argv[1] == "options":
        return options(sys.argv[2:], commands["options"])
    if sys.argv[1] == "bisect":
        from gpu_budget.against.bisect import main as bisect

        return bisect(sys.argv[2:])
    if sys.argv[1] == "estimate":
        from gpu_budget.estimate.cli import main as estimate

        return estimate(sys.argv[2:])
    from gpu_budget.report.findings import main as findings

    return findings(sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
