"""What S3's LLaMA-Factory environment takes to the GPU image: the resolution over the image, what is left out and why,
and the carried bytes against what one device call carries.

The GPU host has no package index, so the case's environment is made there from
carried wheels (GPU_BUDGET_WHEELHOUSE, isolate/wheelhouse.py), and a device call
carries at most 64 MiB, the working tree included. This:

1. stands the image up on this host's Python 3.12: a venv holding
   benchmarks/cuda_image.txt's releases (--no-deps: their own metadata, which the
   resolution reads; torch left out, the registry's being a CUDA build of
   gigabytes) and resolves the case's REQUIREMENTS there as the gate would (pip's
   dry run keeps what is installed wherever it satisfies);
2. takes off torch's own packages and LEFT_OUT (each with why: `llamafactory-cli
   train` never imports them, which the CPU proof's run shows), and checks that what
   is left is benchmarks/llamafactory_overlay.txt, the list the wheels script
   fetches;
3. sizes the fetched wheels (.whl-lf/ from `bash benchmarks/llamafactory_wheels.sh
   3.12`), the left-out ones (downloaded here), the packed file a call carries
   (.lfkit/lf.tar.xz) and the tracked tree.

    bash benchmarks/llamafactory_wheels.sh 3.12 && python -m benchmarks.llamafactory_kit [--python PYTHON3.12]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import MIB, ROOT, write

PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64", "any")
CARRY_MIB = 64  # what one device call carries, the working tree included (the device tool's limit)
IMAGE = "benchmarks/cuda_image.txt"
OVERLAY = "benchmarks/llamafactory_overlay.txt"
TORCH_OWN = ("torch", "triton", "nvidia-", "cuda-")  # the image's torch 2.11.0+cu130 and what it brings
WEB_UI = "the web UI (llamafactory-cli webui/webchat): gradio and what it alone brings; train never imports it"
API = "the API server (llamafactory-cli api): train never imports it (its request models need pydantic alone)"
LEFT_OUT = {
    **dict.fromkeys(("gradio", "gradio-client", "groovy", "safehttpx", "semantic-version", "tomlkit", "ruff", "ffmpy",
                     "pydub", "aiofiles", "orjson", "websockets", "python-multipart"), WEB_UI),
    **dict.fromkeys(("fastapi", "starlette", "uvicorn", "sse-starlette", "opentelemetry-api", "typing-inspection"),
                    API),
    "av": "PyAV reads video frames (mm_plugin imports it where installed); this case's dataset holds audio alone",
    "pandas": "gradio's cap (pandas<3.0): LLaMA-Factory's own pandas>=2.0.0 takes the image's, imported under numpy "
              "1.26.4 in the CPU proof",
    "pytz": "pandas 2.3.3's, left out with it", "tzdata": "pandas 2.3.3's, left out with it",
    "pillow": "gradio's cap (pillow<12): the image's serves what train imports",
    "fire": "required by llamafactory, never imported by train (the CPU proof's trace)",
    "termcolor": "fire's, left out with it",
}


def image_venv(python: str, folder: Path) -> Path:
    """A venv at `folder` holding the image's releases as cuda_image.txt lists them; its interpreter."""
    subprocess.run([python, "-m", "venv", str(folder)], check=True)
    exe = folder / "bin" / "python"
    subprocess.run([str(exe), "-m", "pip", "install", "--quiet", "--no-deps", "--only-binary=:all:", "-r",
                    str(ROOT / IMAGE)], check=True)
    return exe


def resolved(python: Path, requirements: list[str], report: Path) -> dict[str, str]:
    """What installing `requirements` into `python`'s environment would install: canonical name -> version."""
    subprocess.run([str(python), "-m", "pip", "install", "--dry-run", "--quiet", "--no-input", "--only-binary=:all:",
                    "--report", str(report), *requirements], check=True)
    from gpu_budget.declare.environment import canonical

    return {canonical(i["metadata"]["name"]): i["metadata"]["version"]
            for i in json.loads(report.read_text())["install"]}


def pins(path: Path) -> dict[str, str]:
    from gpu_budget.declare.environment import canonical

    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return dict(sorted((canonical(n), v) for n, v in (line.split("==") for line in lines if line)))


def download(pinned: dict[str, str], folder: Path) -> dict[str, int]:
    """The wheels of `pinned` for Python 3.12 on x86-64 Linux: file name -> bytes."""
    if pinned:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--implementation", "cp",
                        *(a for p in PLATFORMS for a in ("--platform", p)), "-d", str(folder),
                        *(f"{n}=={v}" for n, v in pinned.items())], check=True)
    return sizes(folder)


def sizes(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(folder.glob("*.whl"))}


def tree_bytes() -> int:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    return sum((ROOT / f.decode()).stat().st_size for f in files if f and (ROOT / f.decode()).is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="python3.12", help="a Python 3.12 to stand the image up with")
    parser.add_argument("--wheels", default=".whl-lf", help="what llamafactory_wheels.sh 3.12 fetched")
    parser.add_argument("--pack", default=".lfkit/lf.tar.xz", help="what it packed")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "memtests"))
    from s3_qwen2_audio.tool import REQUIREMENTS

    wheels, pack = ROOT / args.wheels, ROOT / args.pack
    fetched_for = (wheels / "PYTHON").read_text().strip() if (wheels / "PYTHON").exists() else None
    if fetched_for != "3.12" or not pack.exists():
        sys.exit(f"llamafactory_kit: run `bash benchmarks/llamafactory_wheels.sh 3.12` first ({wheels} holds "
                 f"{fetched_for or 'nothing'}, {pack} {'is there' if pack.exists() else 'is missing'})")
    python = shutil.which(args.python) or sys.exit(f"llamafactory_kit: no {args.python} here (--python)")
    said = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                          text=True, check=False)
    if said.stdout.strip() != "3.12":  # a pyenv shim of a version not selected says so and exits 127
        sys.exit(f"llamafactory_kit: {python} is not a Python 3.12 ({(said.stdout or said.stderr).strip()[:200]}): "
                 "name one with --python")
    with tempfile.TemporaryDirectory(prefix="lf-kit-") as tmp:
        image = image_venv(python, Path(tmp, "image"))
        full = resolved(image, list(REQUIREMENTS), Path(tmp, "report.json"))
        torch_own = sorted(n for n in full if n.startswith(TORCH_OWN))
        overlay = {n: v for n, v in full.items() if n not in torch_own}
        unknown = sorted(set(LEFT_OUT) - set(overlay))  # a reason for a package the resolution no longer brings
        kept = {n: v for n, v in overlay.items() if n not in LEFT_OUT}
        listed = pins(ROOT / OVERLAY)
        left = download({n: overlay[n] for n in LEFT_OUT if n in overlay}, Path(tmp, "left"))
    fetched, kit = sizes(wheels / "overlay"), sizes(wheels / "kit")
    carried, tree = pack.stat().st_size, tree_bytes()
    write("llamafactory_kit", {
        "requirements": list(REQUIREMENTS), "python": "3.12", "image": IMAGE, "resolved": overlay,
        "torch_own": torch_own, "overlay_file": OVERLAY, "overlay": kept, "overlay_file_matches": kept == listed,
        "overlay_file_differs": {n: [kept.get(n), listed.get(n)] for n in sorted({*kept, *listed})
                                 if kept.get(n) != listed.get(n)},
        "left_out": {n: {"version": overlay[n], "why": why, "bytes": next((b for w, b in left.items()
                                                                          if _named(w) == n), None)}
                     for n, why in LEFT_OUT.items() if n in overlay},
        "left_out_unknown": unknown, "wheels": fetched, "kit": kit, "bnb_runtimes": "cpu cuda13",
        "pack": {"path": args.pack, "bytes": carried}, "tree_bytes": tree, "carry_mib": CARRY_MIB,
        "spare_bytes": CARRY_MIB * MIB - carried - tree})


def _named(wheel: str) -> str:
    from gpu_budget.declare.environment import canonical

    return canonical(wheel.split("-")[0])


def summary(data: dict) -> str:
    """One sentence: the trimmed overlay and what was left out, the packed bytes and the tree against the limit."""
    sizes_ = sorted(data["wheels"].items(), key=lambda kv: -kv[1])
    largest = ", ".join(f"{name.split('-')[0]} {size / MIB:.0f}" for name, size in sizes_[:3])
    left = data["left_out"]
    left_mib = sum(v["bytes"] or 0 for v in left.values()) / MIB
    kit = sum(data["kit"].values()) / MIB
    fits = "fits" if data["spare_bytes"] >= 0 else "does not fit"
    return (f"trimmed to what `train` imports, its overlay for Python {data['python']} is {len(sizes_)} wheels, "
            f"{sum(data['wheels'].values()) / MIB:.0f} MiB ({largest} MiB), {len(left)} wheels "
            f"({left_mib:.0f} MiB) left out; with bitsandbytes cut to CUDA 13 ({kit:.0f} MiB) it packs into "
            f"{data['pack']['bytes'] / MIB:.1f} MiB, which beside the {data['tree_bytes'] / MIB:.1f} MiB tracked tree "
            f"{fits} the {data['carry_mib']} MiB a device call carries")


if __name__ == "__main__":
    main()
