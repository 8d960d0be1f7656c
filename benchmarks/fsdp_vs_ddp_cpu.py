"""Why FSDP2 can peak above DDP in host RAM per rank on CPU (gloo): what is resident at each phase, per rank.

    .venv/bin/python benchmarks/fsdp_vs_ddp_cpu.py [--reps 3] [--out PATH]

Toy: 8 x nn.Linear(2048, 2048) (fp32, 128.1 MiB of parameters), AdamW, batch 8, 3 steps, launched as
`torchrun --standalone --nproc-per-node 2` (gloo). Wrappers: ddp; ddp_view (gradient_as_bucket_view=True);
fsdp_root (fully_shard on the root only); fsdp_layers (per Linear + root, reshard_after_forward=True);
fsdp_layers_keep (per Linear + root, reshard_after_forward=False).
Allocator/thread environments: system (plain torchrun: glibc defaults, OMP_NUM_THREADS=1 set by torchrun);
pinned (MALLOC_MMAP_THRESHOLD_=MALLOC_TRIM_THRESHOLD_=131072, the project's pins); arena1 (MALLOC_ARENA_MAX=1);
omp2 (glibc defaults, OMP_NUM_THREADS=2).
Three kinds of launch:
  rss   - per phase (init, wrap, forward_k, backward_k, step_k): VmHWM (reset by writing 5 to /proc/self/clear_refs
          after each read, so each figure is that phase's own peak), VmRSS, glibc mallinfo2 (heap bytes, free bytes
          kept in the heaps, mmapped bytes); malloc_info's arena count at the end; held parameter/grad/optimizer
          bytes at the end. Nothing else instruments the process.  (reps x wrappers x environments)
  prof  - torch.profiler(profile_memory=True): the c10 CPU allocator's live bytes (allocs - frees on profiled
          threads, counted from just before the model is built) peak per phase; system environment, 1 rep (the
          allocation sequence is deterministic).
  track - torch.distributed._tools MemTracker (ddp) / FSDPMemTracker (fsdp): peak bytes by category, to see
          whether they run on CPU at all; system environment, 1 rep.
Writes benchmarks/results/fsdp_vs_ddp_cpu.json next to this file's folder unless --out is given.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
WRAPS = ("ddp", "ddp_view", "fsdp_root", "fsdp_layers", "fsdp_layers_keep")
ENVS = {
    "system": {},
    "pinned": {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"},
    "arena1": {"MALLOC_ARENA_MAX": "1"},
    "omp2": {"OMP_NUM_THREADS": "2"},
}
STRIP = re.compile(r"^(MALLOC_.*|GLIBC_TUNABLES|LD_PRELOAD|OMP_.*|MKL_.*|ATEN_CPU_CAPABILITY)$")
MiB = 2**20
STEPS, BATCH, WIDTH, DEPTH = 3, 8, 2048, 8


# ---------------------------------------------------------------- rank side

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _libc():
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    return libc


def status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            k, _, v = line.partition(":")
            if k in ("VmHWM", "VmRSS", "Threads"):
                out[k] = int(v.split()[0]) * (1024 if k != "Threads" else 1)
    return out


def reset_hwm() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def malloc_arenas(libc) -> dict:
    """malloc_info(3): number of arenas and their total/free sizes (bytes)."""
    fd, path = tempfile.mkstemp()
    os.close(fd)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    fp = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    xml = Path(path).read_text()
    os.unlink(path)
    heaps = re.findall(r'<heap nr="(\d+)">.*?<system type="current" size="(\d+)"/>', xml, re.DOTALL)
    tail = xml[xml.rfind("</heap>"):]
    return {"arenas": len(heaps), "arena_current_bytes": [int(s) for _, s in heaps],
            "mmap": int(m.group(1)) if (m := re.search(r'<total type="mmap" count="\d+" size="(\d+)"/>', tail)) else None}


def build(wrap: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(DEPTH)])
    if wrap.startswith("ddp"):
        model = nn.parallel.DistributedDataParallel(model, gradient_as_bucket_view=wrap == "ddp_view")
    else:
        from torch.distributed.fsdp import fully_shard

        keep = wrap == "fsdp_layers_keep"
        if wrap != "fsdp_root":
            for layer in model:
                fully_shard(layer, reshard_after_forward=not keep)
        fully_shard(model, reshard_after_forward=not keep)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, optimizer


def held(model, optimizer) -> dict[str, int]:
    """Bytes of the storages behind parameters, grads and optimizer state (each storage once; DTensor: local shard)."""
    import torch

    def total(ts):
        seen = {}
        for t in ts:
            t = t.to_local() if hasattr(t, "to_local") else t
            s = t.untyped_storage()
            seen[s.data_ptr()] = s.nbytes()
        return sum(seen.values())

    ps = list(model.parameters())
    return {"params": total(ps), "grads": total(p.grad for p in ps if p.grad is not None),
            "optimizer": total(v for st in optimizer.state.values() for v in st.values()
                               if torch.is_tensor(v) and v.dim())}


def rank_body(wrap: str, kind: str, out: str) -> None:
    import torch
    import torch.distributed as dist

    libc = _libc()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    records: list[dict] = []

    def mark(phase: str) -> None:
        if kind == "rss":
            mi = libc.mallinfo2()
            records.append({"phase": phase, **status(), "heap": mi.arena, "heap_free": mi.fordblks,
                            "heap_used": mi.uordblks, "mmapped": mi.hblkhd})
            reset_hwm()
        elif kind == "prof":
            with torch.profiler.record_function(f"mark:{phase}"):
                pass

    def train(model, optimizer, x, tracker=None):
        for step in range(1, STEPS + 1):
            loss = model(x).sum()
            mark(f"forward_{step}")
            loss.backward()
            mark(f"backward_{step}")
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)
            mark(f"step_{step}")
            if tracker is not None:
                tracker.reset_mod_stats()  # (FSDP)MemTracker refuses a module's second call otherwise; peaks are kept

    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(rank))
    dist.barrier()
    extra: dict = {"rank": rank, "wrap": wrap, "kind": kind, "threads_torch": torch.get_num_threads(),
                   "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    if kind == "rss":
        mark("init")
        model, optimizer = build(wrap)
        mark("wrap")
        train(model, optimizer, x)
        extra["held"] = held(model, optimizer)
        extra["malloc_info"] = malloc_arenas(libc)
    elif kind == "prof":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            model, optimizer = build(wrap)
            mark("wrap")
            train(model, optimizer, x)
        live = peak = 0
        threads: dict[int, int] = {}
        phases = []
        for e in sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns()):
            if e.name() == "[memory]":
                live += e.nbytes()
                peak = max(peak, live)
                threads[e.start_thread_id()] = threads.get(e.start_thread_id(), 0) + max(e.nbytes(), 0)
            elif e.name().startswith("mark:"):
                phases.append({"phase": e.name()[5:], "alloc_peak": peak, "alloc_live": live})
                peak = live
        extra["phases"] = phases
        extra["alloc_bytes_by_thread"] = list(threads.values())
        extra["held"] = held(model, optimizer)
    elif kind == "track":
        model, optimizer = build(wrap)
        try:
            if wrap.startswith("fsdp"):
                from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

                tracker = FSDPMemTracker(model, optimizer)
                tracker.track_inputs((x,))
            else:
                from torch.distributed._tools.mem_tracker import MemTracker

                tracker = MemTracker()
                tracker.track_external(model, optimizer)
            with tracker:
                train(model, optimizer, x, tracker)
            snap = tracker.get_tracker_snapshot("peak")
            extra["tracker"] = type(tracker).__name__
            extra["peak_by_category"] = {str(dev): {str(k): v for k, v in cats.items()} for dev, cats in snap.items()}
        except Exception as exc:  # noqa: BLE001 - whether the tracker works on CPU is part of the answer
            extra["tracker_error"] = f"{type(exc).__name__}: {exc}"[:500]
    dist.barrier()
    with open(f"{out}/rank{rank}.json", "w") as fh:
        json.dump({**extra, "records": records}, fh)
    dist.destroy_process_group()


# ---------------------------------------------------------------- launcher side

def launch(wrap: str, env_name: str, kind: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if not STRIP.match(k)}
    env.update(ENVS[env_name])
    with tempfile.TemporaryDirectory() as out:
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                               str(HERE), "--rank-body", wrap, kind, out], env=env, capture_output=True, text=True,
                              check=False)
        if proc.returncode:
            raise RuntimeError(f"{wrap} {env_name} {kind}: rc {proc.returncode}\n{proc.stderr[-3000:]}")
        ranks = [json.loads(p.read_text()) for p in sorted(Path(out).glob("rank*.json"))]
        for r in ranks:
            r["env"], r["wall_s"] = env_name, round(time.monotonic() - t0, 2)
        return ranks


def stat(values: list[float]) -> dict:
    return {"median": round(statistics.median(values) / MiB, 1), "min": round(min(values) / MiB, 1),
            "max": round(max(values) / MiB, 1), "n": len(values)}


def summarize(rss: list[dict], prof: list[dict]) -> dict:
    out: dict = {}
    for env_name in ENVS:
        for wrap in WRAPS:
            ranks = [r for r in rss if r["wrap"] == wrap and r["env"] == env_name]
            if not ranks:
                continue
            phases = [p["phase"] for p in ranks[0]["records"]]
            s = {"rank_peak_rss": stat([max(p["VmHWM"] for p in r["records"]) for r in ranks]),
                 "peak_phase": statistics.mode(max(r["records"], key=lambda p: p["VmHWM"])["phase"] for r in ranks),
                 "by_phase": {ph: {f: stat([next(p[f] for p in r["records"] if p["phase"] == ph) for r in ranks])
                                   for f in ("VmHWM", "VmRSS", "heap", "heap_free", "mmapped")} for ph in phases},
                 "held_end": {k: stat([r["held"][k] for r in ranks]) for k in ("params", "grads", "optimizer")},
                 "arenas": sorted({r["malloc_info"]["arenas"] for r in ranks})}
            out[f"{wrap} {env_name}"] = s
    for r in prof:
        key = f"{r['wrap']} {r['env']}"
        out.setdefault(key, {}).setdefault("alloc_by_rank", {})[r["rank"]] = {
            "peak": round(max(p["alloc_peak"] for p in r["phases"]) / MiB, 1),
            "by_phase": {p["phase"]: round(p["alloc_peak"] / MiB, 1) for p in r["phases"]}}
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-body":
        rank_body(*sys.argv[2:5])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--wraps", default=",".join(WRAPS))
    parser.add_argument("--no-trace", action="store_true", help="skip the prof and track launches")
    parser.add_argument("--out", type=Path, default=HERE.parent / "results" / "fsdp_vs_ddp_cpu.json")
    args = parser.parse_args()
    envs, wraps = args.envs.split(","), args.wraps.split(",")
    t0 = time.monotonic()
    rss, prof, track = [], [], []
    for rep in range(args.reps):  # interleaved, so a drift of the machine falls on every variant alike
        for env_name in envs:
            for wrap in wraps:
                rss += launch(wrap, env_name, "rss")
                print(f"rep {rep} {env_name:7} {wrap:17} peak/rank MiB "
                      + " ".join(f"{max(p['VmHWM'] for p in r['records']) / MiB:.1f}" for r in rss[-2:]), flush=True)
    if not args.no_trace:
        for wrap in wraps:
            prof += launch(wrap, "system", "prof")
            track += launch(wrap, "system", "track")
    import torch

    report = {"torch": torch.__version__, "python": sys.version.split()[0], "cpus": os.cpu_count(), "reps": args.reps,
              "ranks": 2, "backend": "gloo", "model": f"{DEPTH} x Linear({WIDTH}, {WIDTH}) fp32, AdamW, batch {BATCH}, "
              f"{STEPS} steps", "envs": {k: ENVS[k] for k in envs}, "wall_s": round(time.monotonic() - t0, 1),
              "summary": summarize(rss, prof), "track": track, "prof": prof, "rss": rss}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out} in {report['wall_s']} s")


if __name__ == "__main__":
    main()
