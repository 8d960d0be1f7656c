"""Make wheels small enough for one device call (64 MiB, working tree included): the carried bytes, not the wheels.

Two levers, both lossless for what runs on the GPU image:
- `trim`: a wheel with native libraries for many runtimes (bitsandbytes 0.50.2: 41 MiB, ten CUDA builds, six ROCm
  and two XPU) keeps those of the runtimes named (the image's torch is CUDA 13.0: its loader picks the CUDA 13
  library, another 13.x if 13.0's were missing) and the CPU one; its RECORD lists what it keeps, so pip installs it.
- `pack`: the wheels re-stored uncompressed in one tar, compressed with xz as a whole, its window as large as the
  tar (a wheel's zip deflates each file alone; xz over all of them shares what they have in common). `tar -xJf` (or
  Python's tarfile) on the host gives wheels pip installs.

    python3 benchmarks/lf_pack.py trim WHEEL cpu cuda13     # in place
    python3 benchmarks/lf_pack.py pack FOLDER OUT.tar.xz    # FOLDER's files, relative paths kept
"""

from __future__ import annotations

import lzma
import re
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

LIBRARY = re.compile(r"^[^/]+/lib[A-Za-z0-9_]+?_(cpu|cuda\d+|rocm\d+|xpu\d+)\.(so|dylib|dll)$")


def kept(name: str, runtimes: tuple[str, ...]) -> bool:
    """Whether a wheel's entry stays: anything but a native library for a runtime none of `runtimes` begins."""
    found = LIBRARY.match(name)
    return found is None or any(found.group(1).startswith(runtime) for runtime in runtimes)


def trim(wheel: Path, runtimes: tuple[str, ...]) -> list[str]:
    """Rewrite `wheel` without the native libraries of other runtimes; the entries dropped. A ValueError where the
    runtimes would drop every library (a misspelt runtime would leave a wheel that cannot load)."""
    if not runtimes:
        raise ValueError("trim: name the runtimes to keep (cpu, cuda13, ...)")
    with zipfile.ZipFile(wheel) as zin:
        names = [i.filename for i in zin.infolist()]
        dropped = [n for n in names if not kept(n, runtimes)]
        libraries = [n for n in names if LIBRARY.match(n)]
        if libraries and len(dropped) == len(libraries):
            raise ValueError(f"trim {wheel.name}: runtimes {' '.join(runtimes)} keep none of its libraries "
                             f"({', '.join(LIBRARY.match(n).group(1) for n in libraries)})")
        with (tempfile.NamedTemporaryFile(dir=wheel.parent, suffix=".whl", delete=False) as tmp,
              zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout):
            for info in zin.infolist():
                if info.filename in dropped:
                    continue
                data = zin.read(info)
                if info.filename.endswith(".dist-info/RECORD"):
                    lines = data.decode().splitlines(keepends=True)
                    data = "".join(line for line in lines if line.split(",", 1)[0] not in dropped).encode()
                zout.writestr(info, data, zipfile.ZIP_DEFLATED)
    Path(tmp.name).chmod(wheel.stat().st_mode & 0o777)
    Path(tmp.name).replace(wheel)
    return dropped


def restored(wheel: Path, folder: Path) -> Path:
    """`wheel` written into `folder` with every entry stored uncompressed (same entries, same RECORD)."""
    out = folder / wheel.name
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info), zipfile.ZIP_STORED)
    return out


def pack(folder: Path, out: Path) -> int:
    """Every file under `folder` in one xz tar at `out` (wheels re-stored first); its size in bytes."""
    with tempfile.TemporaryDirectory(prefix="lf-pack-") as tmp:
        staged = Path(tmp)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            target = staged / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix == ".whl":
                restored(path, target.parent)
            else:
                target.write_bytes(path.read_bytes())
        out.parent.mkdir(parents=True, exist_ok=True)
        files = sorted(p for p in staged.rglob("*") if p.is_file())
        with lzma.open(out, "w", filters=[{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME,
                                           "dict_size": window(sum(p.stat().st_size for p in files))}]) as xz, \
                tarfile.open(fileobj=xz, mode="w") as tar:
            for path in files:
                tar.add(path, arcname=str(path.relative_to(staged)))
    return out.stat().st_size


def window(total: int) -> int:
    """xz's dictionary for `total` bytes: all of them (preset 9's 64 MiB misses what wheels far apart in the tar
    share: S3's kit packed 2 MiB smaller with its 300 MB in the window), within 8 MiB to 1 GiB (compressing takes
    about 12 times it in memory, here; unpacking once it, on the host)."""
    return min(max(total, 8 << 20), 1 << 30)


def main(argv: list[str]) -> None:
    usage = "usage: lf_pack.py trim WHEEL RUNTIME... | pack FOLDER OUT.tar.xz"
    if len(argv) >= 3 and argv[0] == "trim":
        dropped = trim(Path(argv[1]), tuple(argv[2:]))
        print(f"lf_pack: {Path(argv[1]).name}: {len(dropped)} libraries of other runtimes dropped")
    elif len(argv) == 3 and argv[0] == "pack":
        size = pack(Path(argv[1]), Path(argv[2]))
        print(f"lf_pack: {argv[2]}: {size} bytes ({size / 2**20:.1f} MiB)")
    else:
        sys.exit(usage)


if __name__ == "__main__":
    main(sys.argv[1:])
