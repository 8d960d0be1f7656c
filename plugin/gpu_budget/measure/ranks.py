"""Per-rank figures of a launcher case (torchrun, accelerate launch): one figure per rank, from the tree's phases.

The process tree (tree.py) groups the processes a launcher started by the RANK
in their environment, each rank's own process with its DataLoader workers and
subprocesses, and keeps per phase each rank's largest window sum (`ram_tree`)
and its own process's peak (`ram`). Phases are the ones rank 0 marks (or the
command's own process, the launcher, where no rank marks): under DDP and FSDP
the ranks meet at every collective, so their phases line up with rank 0's to
within one step.

A budget applies to each rank, so a launcher case's row is its worst rank's
(the rank with the largest `ram_tree`): its peaks, and its phases and steps
too, so that every figure of the row means the same thing. The whole node's
figures (the launcher with every rank: what one host must hold) are kept
under `node`: its peaks, phases and steps.
"""

from __future__ import annotations

RANK_METRICS = ("ram", "ram_tree")
NODE_METRICS = ("ram", "ram_tree", "vram_tree")  # what the node's own reading holds (the ranks' GPU peaks are theirs)


def by_rank(phases: list[dict]) -> list[dict]:
    """[{"rank", "peaks": {"ram", "ram_tree"[, "vram_tree"]}, "phases": {name: {"ram_peak", "ram_tree_peak"[,
    "vram_tree", "step"]}}, "steps"}], by rank; [] where no process ran under a launcher's RANK. `vram_tree`:
    NVML's figures of the rank's processes summed, where a GPU poller read them (gpu_tree.py)."""
    ranks: dict[int, dict] = {}
    for phase in phases:
        for key, figures in ((phase.get("tree") or {}).get("ranks") or {}).items():
            rank = int(key)
            entry = ranks.setdefault(rank, {"rank": rank, "peaks": dict.fromkeys(RANK_METRICS, 0), "phases": {},
                                            "steps": []})
            for metric in RANK_METRICS:
                entry["peaks"][metric] = max(entry["peaks"][metric], figures[metric])
            entry["phases"][phase["name"]] = {"ram_peak": figures["ram"], "ram_tree_peak": figures["ram_tree"],
                                              **({"step": phase["step"]} if phase.get("step") is not None else {})}
            step = {"step": phase["step"], "ram": figures["ram"], "ram_tree": figures["ram_tree"]}
            if figures.get("vram_tree") is not None:
                entry["peaks"]["vram_tree"] = max(entry["peaks"].get("vram_tree", 0), figures["vram_tree"])
                entry["phases"][phase["name"]]["vram_tree"] = step["vram_tree"] = figures["vram_tree"]
            if phase.get("step") is not None:
                entry["steps"].append(step)
    return [ranks[r] for r in sorted(ranks)]


def rank_phases(entry: dict, node_phases: list[dict]) -> list[dict]:
    """A rank's phases as phase records (meter.PhaseRecord's JSON), in the node's order: the rank's own figures
    under the node's names, steps and times; a phase only the rank reported (its GPU peaks) after them."""
    known = {p["name"]: p for p in node_phases}
    out = []
    for name, figures in entry["phases"].items():
        node = known.get(name, {})
        out.append({"name": name, "step": node.get("step", figures.get("step")), "seconds": node.get("seconds"),
                    "ram_peak": figures.get("ram_peak"), "ram_tree_peak": figures.get("ram_tree_peak"),
                    **{k: v for k, v in figures.items() if k.startswith("vram_")}})
    return out


def with_cuda(ranks: list[dict], rank_cuda: dict | None) -> None:
    """Each rank's GPU peaks, as its own process reported them (the allocator's peaks at its phase marks and exit,
    and NVML's figure of its process), added to its figures per phase and in all."""
    for entry in ranks:
        reported = (rank_cuda or {}).get(str(entry["rank"])) or {}
        entry["peaks"].update(reported.get("peaks", {}))
        for name, figures in (reported.get("phases") or {}).items():
            entry["phases"].setdefault(name, {}).update(figures)


def worst(ranks: list[dict]) -> dict:
    """The rank whose allocated GPU peak was highest, where the ranks used a GPU, else whose RAM tree peaked
    highest (the lowest rank of a tie)."""
    return max(ranks, key=lambda r: (r["peaks"].get("vram_allocated") or 0, r["peaks"]["ram_tree"], -r["rank"]))


def smallest(ranks: list[dict]) -> dict:
    """The rank whose tree peaked lowest (the lowest rank of a tie)."""
    return min(ranks, key=lambda r: (r["peaks"]["ram_tree"], r["rank"]))


def imbalance(ranks: list[dict]) -> float | None:
    """The largest rank's tree peak over the smallest's; None for fewer than two ranks or a rank at 0."""
    figures = [r["peaks"]["ram_tree"] for r in ranks]
    return max(figures) / min(figures) if len(figures) > 1 and min(figures) > 0 else None
