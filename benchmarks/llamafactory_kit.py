"""What S3's LLaMA-Factory environment would take to a GPU host: its overlay's wheels for the host's Python.

The GPU host has no package index, so an environment a case declares can be
made there only from wheels carried to it, and a device call carries at most
64 MiB. This resolves the case's requirements over the running environment
(isolate/environment.py, as the gate does), downloads the overlay's wheels for
Python 3.12 on x86-64 Linux (the GPU image's) into a temporary folder, and
records each wheel's size.

    python -m benchmarks.llamafactory_kit
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import MIB, write

PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "any")
CARRY_MIB = 64  # what one device call carries (the device tool's limit)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memtests"))
    from s3_qwen2_audio.tool import REQUIREMENTS

    from gpu_budget.isolate.environment import find_tool, resolve, running_versions

    overlay = resolve(REQUIREMENTS, find_tool(), running_versions())
    with tempfile.TemporaryDirectory(prefix="lf-kit-") as folder:
        pins = Path(folder, "overlay.txt")
        pins.write_text("".join(f"{name}=={version}\n" for name, version in overlay.items()))
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", *(a for p in PLATFORMS for a in ("--platform", p)),
                        "-d", folder, "-r", str(pins)], check=True)
        wheels = {p.name: p.stat().st_size for p in sorted(Path(folder).glob("*.whl"))}
    write("llamafactory_kit", {"requirements": REQUIREMENTS, "python": "3.12", "overlay": overlay,
                               "wheels": wheels, "carry_mib": CARRY_MIB})


def summary(data: dict) -> str:
    """One sentence: the wheels' total against what a device call carries, the largest three named."""
    sizes = sorted(data["wheels"].items(), key=lambda kv: -kv[1])
    largest = ", ".join(f"{name.split('-')[0]} {size / MIB:.0f}" for name, size in sizes[:3])
    return (f"{len(sizes)} wheels for Python {data['python']}, {sum(data['wheels'].values()) / MIB:.0f} MiB in all "
            f"({largest} MiB), against the {data['carry_mib']} MiB a device call carries")


if __name__ == "__main__":
    main()
