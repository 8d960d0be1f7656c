"""Section 8, what keeping CUDA out of the forkserver costs: peft (and the Trainer) imported in each child.

peft imports bitsandbytes, which asks torch.cuda at import; a child forked
from a forkserver that initialised CUDA cannot use CUDA. So the gate's preload
no longer holds peft, and the runners that need it (S1, S3, S4) import it, and
transformers' Trainer, which imports peft, in the measured child. Two
forkservers side by side, each in its own process (a process has one):

  cuda-free   the gate's preload (pyproject.toml)
  with-peft   the same plus peft and transformers.trainer (what S1's module used to import)

In each: N children time `import peft` + `from transformers import Trainer,
TrainingArguments` and the RSS it adds; then the tiny cases whose runners import
peft are measured (RAM peak), to show what the move does to the gated figures.

    python -m benchmarks.preload_cost [--children 10] [--reps 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import MIB, ROOT, THREADS, gate_preload, med, missing, ran, write

VARIANTS = {"cuda-free": (), "with-peft": ("peft", "transformers.trainer")}


def import_peft(ctx) -> dict:
    """A measured child: the imports the runners now do themselves, timed, with the RSS they add."""
    from gpu_budget.measure.procfs import read_status

    before = read_status("self")["VmRSS"]
    with ctx.meter.phase("import"):
        t0 = time.perf_counter()
        import peft  # noqa: F401
        from transformers import Trainer, TrainingArguments  # noqa: F401
        seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rss_added": read_status("self")["VmRSS"] - before}


def cases() -> dict:
    """The tiny cases whose runners import peft, as the memtests gate them."""
    from s1_wav2vec2.scenarios import AS_REPORTED as S1
    from s3_qwen2_audio.scenarios import AS_REPORTED as S3
    from s4_wrap_order.scenarios import FIXED as S4

    return {"s1 as-reported": S1, "s3 as-reported": S3, "s4 fixed": S4}


def one_variant(variant: str, children: int, reps: int) -> dict:
    """In this process: a forkserver with the variant's preload, `children` import children, then the cases."""
    from gpu_budget import Scenario
    from gpu_budget.isolate import forkserver

    preload = (*gate_preload(), *VARIANTS[variant])
    t0 = time.perf_counter()
    forkserver.probe(preload=preload)
    out = {"variant": variant, "preload": list(preload), "forkserver_start_s": time.perf_counter() - t0,
           "imports": [], "cases": {}}
    job = Scenario(name="import-peft", run="benchmarks.preload_cost:import_peft").to_json("tiny")
    for _ in range(children):
        m = forkserver.measure(job, Path("."), 900, THREADS, preload)
        if not m.ok:
            raise RuntimeError(m.error)
        out["imports"].append({"seconds": m.info["seconds"], "rss_added": m.info["rss_added"],
                               "wall_seconds": m.wall_seconds})
    for label, scenario in cases().items():
        job, assets = scenario.to_json("tiny"), Path(tempfile.gettempdir()) / "gpu-budget-bench" / scenario.asset_key("tiny")
        forkserver.prepare_assets(job, assets, 900, THREADS, preload)
        peaks = []
        for _ in range(reps):
            m = forkserver.measure(job, assets, 900, THREADS, preload)
            if not m.ok:
                raise RuntimeError(m.error)
            peaks.append({"ram": m.peaks["ram"], "wall_seconds": m.wall_seconds})
        out["cases"][label] = peaks
        print(f"preload {variant} {label}: {[round(p['ram'] / 2**20, 1) for p in peaks]} MiB", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=10)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--variant", choices=list(VARIANTS), help=argparse.SUPPRESS)  # internal: one forkserver
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        Path(args.out).write_text(json.dumps(one_variant(args.variant, args.children, args.reps)))
        return
    variants = []
    for variant in VARIANTS:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([sys.executable, "-m", "benchmarks.preload_cost", "--variant", variant, "--out", out.name,
                            "--children", str(args.children), "--reps", str(args.reps)], cwd=ROOT, check=True)
            variants.append(json.loads(Path(out.name).read_text()))
    write("preload", {"threads": THREADS, "variants": variants})


# -- RESULTS.md section 8, from this script's JSON (benchmarks/report.py joins the sections) -------------------------

def section(pre: dict | None) -> list[str]:
    """Section 8 from preload.json: importing peft in each child against preloading it."""
    out = ["## 8. Keeping CUDA out of the forkserver: peft imported in each child", ""]
    if pre is None:
        return out + missing("preload", "preload")
    by = {v["variant"]: v for v in pre["variants"]}
    free, old = by["cuda-free"], by["with-peft"]
    extra = [m for m in old["preload"] if m not in free["preload"]]
    out += [ran(pre), "",
            ("peft imports bitsandbytes, which calls `torch.cuda.is_available()` and `device_count()` at import (and "
             "`get_device_capability()` on a CUDA host), and a child forked from a process that initialised CUDA cannot "
             "use CUDA; transformers' `Trainer` and `TrainingArguments` import peft. So the gate's preload holds neither "
             "(`tests/integration/test_cuda_free.py` traps torch.cuda while it is imported), and the S1, S3 and S4 runners import them "
             f"in the measured child. Two forkservers side by side (`benchmarks/preload_cost.py`): the gate's preload, and "
             f"the same plus {', '.join(extra)}. Each forked {len(free['imports'])} children that timed `import peft` + "
             "`from transformers import Trainer, TrainingArguments`, then measured the tiny cases whose runners import "
             "peft."), "",
            "| forkserver preload | import in the child: median s (min .. max) | RSS it added: median MiB | forkserver start s |",
            "|---|---|---|---|"]
    for v in (free, old):
        s = [i["seconds"] for i in v["imports"]]
        rss = [i["rss_added"] / MIB for i in v["imports"]]
        out.append(f"| {v['variant']} | {med(s):.2f} ({min(s):.2f} .. {max(s):.2f}) | {med(rss):.1f} | "
                   f"{v['forkserver_start_s']:.1f} |")
    out += ["", "| tiny case | RAM peak, cuda-free preload (MiB) | with peft preloaded (MiB) | change |", "|---|---|---|---|"]
    for case, peaks in free["cases"].items():
        a = [p["ram"] / MIB for p in peaks]
        b = [p["ram"] / MIB for p in old["cases"][case]]
        out.append(f"| {case} | {', '.join(f'{x:.1f}' for x in a)} | {', '.join(f'{x:.1f}' for x in b)} | "
                   f"{med(a) - med(b):+.1f} MiB |")
    return out + [""]


if __name__ == "__main__":
    main()
