"""Per-rank figures of a launcher case (torchrun, accelerate launch): one figure per rank, from the tree's phases.

The process tree (tree.py) groups the processes a launcher started by the RANK
in their environment, each rank's own process with its DataLoader workers and
subprocesses, and keeps per phase each rank's largest window sum (`ram_tree`)
and its own process's peak (`ram`). Phases are the ones rank 0 marks (or the
command's own process, the launcher, where no rank marks): under DDP and FSDP
the ranks meet at every collective, so their phases line up with rank 0's to
within one step.

A budget applies to each rank, so a launcher case's `peaks` are its worst
rank's (the rank with the largest `ram_tree`); the whole node's figures (the
launcher with every rank: what one host must hold) are kept beside them.
"""

from __future__ import annotations

RANK_METRICS = ("ram", "ram_tree")


def by_rank(phases: list[dict]) -> list[dict]:
    """[{"rank", "peaks": {"ram", "ram_tree"}, "phases": {name: {"ram_peak", "ram_tree_peak"}}, "steps"}], by rank;
    [] where no process ran under a launcher's RANK."""
    ranks: dict[int, dict] = {}
    for phase in phases:
        for key, figures in ((phase.get("tree") or {}).get("ranks") or {}).items():
            rank = int(key)
            entry = ranks.setdefault(rank, {"rank": rank, "peaks": dict.fromkeys(RANK_METRICS, 0), "phases": {},
                                            "steps": []})
            for metric in RANK_METRICS:
                entry["peaks"][metric] = max(entry["peaks"][metric], figures[metric])
            entry["phases"][phase["name"]] = {"ram_peak": figures["ram"], "ram_tree_peak": figures["ram_tree"]}
            if phase.get("step") is not None:
                entry["steps"].append({"step": phase["step"], "ram": figures["ram"], "ram_tree": figures["ram_tree"]})
    return [ranks[r] for r in sorted(ranks)]


def with_cuda(summary: dict, rank_cuda: dict) -> dict:
    """A command summary with each rank's GPU peaks, as its own process reported them (the allocator's peaks at
    its phase marks and exit, and NVML's figure of its process): per rank and phase, and the case's peaks their
    largest over the ranks."""
    if not rank_cuda or not summary.get("ranks"):
        return summary
    for entry in summary["ranks"]:
        reported = rank_cuda.get(str(entry["rank"])) or {}
        entry["peaks"].update(reported.get("peaks", {}))
        for name, figures in (reported.get("phases") or {}).items():
            entry["phases"].setdefault(name, {}).update(figures)
    for metric in ("vram_allocated", "vram_reserved", "vram_device"):
        values = [r["peaks"][metric] for r in summary["ranks"] if r["peaks"].get(metric) is not None]
        summary["peaks"][metric] = max(values) if values else None
    summary["cuda"] = any(r["peaks"].get("vram_allocated") is not None for r in summary["ranks"])
    return summary


def worst(ranks: list[dict]) -> dict:
    """The rank whose tree peaked highest (the lowest rank of a tie)."""
    return max(ranks, key=lambda r: (r["peaks"]["ram_tree"], -r["rank"]))


def smallest(ranks: list[dict]) -> dict:
    """The rank whose tree peaked lowest (the lowest rank of a tie)."""
    return min(ranks, key=lambda r: (r["peaks"]["ram_tree"], r["rank"]))


def imbalance(ranks: list[dict]) -> float | None:
    """The largest rank's tree peak over the smallest's; None for fewer than two ranks or a rank at 0."""
    figures = [r["peaks"]["ram_tree"] for r in ranks]
    return max(figures) / min(figures) if len(figures) > 1 and min(figures) > 0 else None
