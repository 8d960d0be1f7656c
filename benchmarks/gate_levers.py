"""Section 6b, the tiny gate's levers: what each one named for cutting its time costs, in CPU seconds.

The tiny gate is CPU-bound on its two cores (one xdist worker and one measured
child per core), so its wall time is its children's CPU time halved. Each
lever is measured here as the CPU time (user + system, from the process's own
rusage or wait4's) of what it would remove, with every process pinned to one
core as a gate worker's child is, and the gate's pins set (the AVX2 dispatch
level and the steady allocator's glibc variables):

  launch        the several-ranks case as the gate runs it: torchrun, 2 ranks of
                several_ranks/train.py (DDP, tiny), at 3 optimizer steps and at 1
  launcher      torchrun alone (--no-python, 2 ranks of /bin/true)
  rank          what a rank imports (torch, torch.distributed, LlamaForCausalLM):
                CPU at the end of its imports and in all (the rest is its exit)
  import funasr / import peft   in a process holding the gate's preload: the
                CPU seconds and resident MiB of the import a measured S2 child,
                or an S1/S3/S4 child (peft + the Trainer), makes itself; and the
                part of the peft import that is bitsandbytes' torch._inductor
                import (its CPU and MiB when preloaded first)

Preloading an import in the forkserver would take it out of every child's time
and put its resident pages into every child's floor: the MiB column is what
each measured child of every scenario would then hold more.

    python -m benchmarks.gate_levers [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, RESULTS, ROOT, THREADS, gate_preload, med, missing, ran, span, write

CORE = min(os.sched_getaffinity(0))
SUITE = RESULTS / "suite-tiny-all.report.json"  # the gate's own report: which cases pay which cost


def gate_env() -> dict[str, str]:
    """This environment with the pins every measured process of the gate gets."""
    from gpu_budget.isolate.command import STEADY_MALLOC_ENV
    from gpu_budget.isolate.dispatch import pin_env

    return {**os.environ, **pin_env("avx2"), **STEADY_MALLOC_ENV, "OMP_NUM_THREADS": str(THREADS)}


def pinned(argv: list[str], cwd: Path = ROOT) -> dict:
    """Run argv pinned to one core; its wall seconds and the CPU seconds of it and every process it waited for."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(["taskset", "-c", str(CORE), *argv], cwd=cwd, env=gate_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # taskset execs argv: wait4 reads argv's own usage
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[:6]} exited {os.waitstatus_to_exitcode(status)}: {err[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "stdout": out}


def model_dir() -> Path:
    """The several-ranks tiny checkpoint, prepared as the gate prepares it."""
    from several_ranks.scenarios import DDP

    from gpu_budget.isolate import forkserver

    job = DDP.to_json("tiny")
    assets = Path(tempfile.gettempdir()) / "gpu-budget-bench" / DDP.asset_key("tiny")
    forkserver.prepare_assets(job, assets, 900, THREADS, gate_preload())
    return assets / "model"


RANK_IMPORTS = "import torch, torch.distributed\nfrom transformers import LlamaForCausalLM\n"
CPU_NOW = ("import resource, json\nu = resource.getrusage(resource.RUSAGE_SELF)\n"
           "print(json.dumps({'cpu_imports': u.ru_utime + u.ru_stime}))\n")


def in_preloaded(module: str, first: str | None = None) -> str:
    """Code for a process holding the gate's preload: the CPU seconds and resident bytes `module`'s import adds."""
    pre = "".join(f"import {m}\n" for m in gate_preload())
    warm = f"import {first}\n" if first else ""
    return ("import os, sys, json, resource\nsys.path[:0] = [os.getcwd(), os.path.join(os.getcwd(), 'memtests')]\n"
            + pre + warm +
            "def cpu():\n    u = resource.getrusage(resource.RUSAGE_SELF)\n    return u.ru_utime + u.ru_stime\n"
            "def rss():\n    return next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') "
            "if l.startswith('VmRSS'))\n"
            f"c, r = cpu(), rss()\nimport {module}\n"
            "print(json.dumps({'cpu': cpu() - c, 'rss': rss() - r}))\n")


def imports() -> dict[str, str]:
    """The per-child imports measured: what each would cost preloaded (rss) and what it costs each child (cpu)."""
    return {
        "funasr": in_preloaded("funasr"),
        "peft": in_preloaded("peft"),  # peft imports bitsandbytes; the Trainer imports peft
        "peft after torch._inductor": in_preloaded("peft", first="torch._inductor.compile_fx"),
        "torch._inductor": in_preloaded("torch._inductor.compile_fx"),
    }


def measure(reps: int) -> dict:
    from several_ranks import scenarios as several

    model = model_dir()
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    out: dict = {"core": CORE, "reps": reps, "launch": {"3": [], "1": []}, "launcher": [], "rank": [],
                 "python": [], "imports": {name: [] for name in imports()}}
    for rep in range(reps):  # interleaved: each kind of run sees the same load over the run
        for steps in ("3", "1"):
            out["launch"][steps].append(pinned([*torchrun, "train.py", "--model_dir", str(model), "--steps", steps],
                                               cwd=Path(several.HERE)))
        out["launcher"].append(pinned([*torchrun, "--no-python", "true"]))
        rank = pinned([sys.executable, "-c", RANK_IMPORTS + CPU_NOW])
        out["rank"].append({**rank, **json.loads(rank.pop("stdout"))})
        out["python"].append(pinned([sys.executable, "-c", "pass"]))
        for name, code in imports().items():
            run = pinned([sys.executable, "-c", code])
            out["imports"][name].append({"wall": run["wall"], **json.loads(run["stdout"].splitlines()[-1])})
        print(f"rep {rep + 1}/{reps}: launch {out['launch']['3'][-1]['cpu']:.1f} s CPU", flush=True)
    for runs in (*out["launch"].values(), out["launcher"], out["python"]):
        for run in runs:
            run.pop("stdout", None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    write("gate_levers", {"threads": THREADS, **measure(args.reps)})


# -- RESULTS.md section 6b, from this script's JSON (benchmarks/report.py joins the sections) ------------------------

def _cpu(runs: list[dict], key: str = "cpu") -> str:
    values = [r[key] for r in runs]
    return f"{med(values):.2f} ({span(values, '.2f')})"


def _counts(suite: dict) -> dict[str, int]:
    """How many measured cases of the gate's report pay each cost."""
    rows = [r for r in suite["results"] if r.get("wall_seconds")]
    module = {r["nodeid"]: r["nodeid"].split("::")[0].rsplit("/", 1)[-1] for r in rows}
    count = {"launch": sum(m == "test_several_ranks.py" for m in module.values()),
             "funasr": sum(m == "test_s2_paraformer.py" for m in module.values()),
             "peft": sum(m in ("test_s1_wav2vec2.py", "test_s1_workers.py", "test_s3_qwen2_audio.py",
                               "test_s4_wrap_order.py") for m in module.values())
             + sum(r["label"] == "runner" for r in rows if module[r["nodeid"]] == "test_s1_script.py")}
    count["children_s"] = round(sum(r["wall_seconds"] for r in rows))
    return count


def section(data: dict | None) -> list[str]:
    """Section 6b from gate-levers.json and the tiny gate's report."""
    out = ["## 6b. The tiny gate's levers", ""]
    if data is None:
        return out + missing("gate_levers", "gate_levers")
    suite = json.loads(SUITE.read_text()) if SUITE.exists() else None
    launch3, launch1 = data["launch"]["3"], data["launch"]["1"]
    rank, imp = data["rank"], data["imports"]
    exits = [r["cpu"] - r["cpu_imports"] for r in rank]
    out += [ran(data), "",
            ("CPU seconds, median (min .. max) of "
            f"{data['reps']} runs interleaved, each process pinned to one core with the gate's pins "
            "(`benchmarks/gate_levers.py`). The tiny gate is CPU-bound on its two cores, so a CPU second taken out of "
            "the children is half a second of its wall time."), "",
            "| what | CPU s | wall s |", "|---|---|---|",
            f"| several-ranks launch, DDP tiny, 3 optimizer steps | {_cpu(launch3)} | {_cpu(launch3, 'wall')} |",
            f"| the same launch, 1 optimizer step | {_cpu(launch1)} | {_cpu(launch1, 'wall')} |",
            f"| torchrun alone (2 ranks of /bin/true) | {_cpu(data['launcher'])} | {_cpu(data['launcher'], 'wall')} |",
            f"| a rank's imports (torch, torch.distributed, LlamaForCausalLM) | {_cpu(rank, 'cpu_imports')} | - |",
            f"| that process's exit after them | {med(exits):.2f} ({span(exits, '.2f')}) | - |",
            f"| an empty Python | {_cpu(data['python'])} | {_cpu(data['python'], 'wall')} |", "",
            "| import in a process holding the gate's preload | CPU s | MiB it adds |", "|---|---|---|"]
    for name, runs in imp.items():
        rss = [r["rss"] / MIB for r in runs]
        out.append(f"| {name} | {_cpu(runs)} | {med(rss):.1f} |")
    out.append("")
    if suite is None:
        return out
    n = _counts(suite)
    steps = med([a["cpu"] for a in launch3]) - med([a["cpu"] for a in launch1])
    launch = med([a["cpu"] for a in launch3])
    funasr = med([r["cpu"] for r in imp["funasr"]])
    peft = med([r["cpu"] for r in imp["peft"]])
    inductor = med([r["cpu"] for r in imp["peft"]]) - med([r["cpu"] for r in imp["peft after torch._inductor"]])
    levers = n["launch"] * steps + n["funasr"] * funasr + n["peft"] * peft
    out += [(f"Against the tiny gate's report (`{SUITE.name}`: {n['children_s']} s of children's wall time over "
            f"{n['launch']} several-ranks launches, {n['funasr']} S2 children and {n['peft']} children that import "
            "peft):"), "",
            (f"- The several-ranks launches: {n['launch']} x {launch:.1f} s = {n['launch'] * launch:.0f} s of CPU, of "
            f"which their optimizer steps beyond the first are {n['launch'] * steps:.0f} s. The rest is the launcher, "
            "two interpreters importing torch and transformers, and their exits: the libraries' own start and stop, "
            "which a launched script pays as users run it."),
            (f"- S2's FunASR import: {n['funasr']} x {funasr:.1f} s = {n['funasr'] * funasr:.0f} s. Preloaded, it "
            f"would put {med([r['rss'] / MIB for r in imp['funasr']]):.0f} MiB into every child of every scenario."),
            (f"- peft (and bitsandbytes) in each child that uses the Trainer or LoRA: {n['peft']} x {peft:.1f} s = "
            f"{n['peft'] * peft:.0f} s, of which bitsandbytes' torch._inductor import is {n['peft'] * inductor:.0f} s. "
            "peft cannot be preloaded (section 8); torch._inductor could, adding "
            f"{med([r['rss'] / MIB for r in imp['torch._inductor']]):.0f} MiB to every child's floor."),
            (f"- All three taken out entirely ({levers:.0f} s) would leave {(n['children_s'] - levers) / 2:.0f} s of "
            "children's time per worker, before the session's own start (collection, each worker's forkserver)."), ""]
    return out


if __name__ == "__main__":
    main()
