#!/usr/bin/env bash
# Fetch, here (with a package index), what S3's LLaMA-Factory case (memtests/test_s3_llamafactory.py) needs on the GPU
# image and the image lacks, into .whl-lf/ (git-ignored), and pack it into the one file a device call carries,
# .lfkit/lf.tar.xz (git-ignored):
#
#   bash benchmarks/llamafactory_wheels.sh PYTHON_VERSION     # e.g. 3.12: the GPU host's python3, major.minor
#
#   .whl-lf/overlay/  LLaMA-Factory's environment (benchmarks/llamafactory_overlay.txt): on the host
#                     GPU_BUDGET_WHEELHOUSE names it, and the gate makes the environment from it alone, no index
#   .whl-lf/kit/      bitsandbytes, for the running environment (gpu_kit.sh installs it there, --target): on CUDA the
#                     runner and LLaMA-Factory both load the model in 4-bit. Its native libraries are cut to the CPU's
#                     and CUDA 13's (BNB_RUNTIMES, default "cpu cuda13": the image's torch is CUDA 13.0), 41 MiB to 7
#   .whl-lf/PYTHON    the Python version fetched for (and kit/PYTHON: gpu_kit.sh refuses another host Python)
#
# Why the overlay is trimmed, and why packed: the full resolution over the image pulls in the web UI and API
# (gradio 52 MiB, av 34 MiB, fastapi, uvicorn, pydantic, and the pandas and pillow gradio caps), which `train`
# never imports; benchmarks/llamafactory_kit.py records what was left out and the sizes. Even trimmed, the wheels
# (numpy 1.26.4 and scipy 1.17.1 under LLaMA-Factory's numpy<2 cap) outweigh a device call's 64 MiB with the working
# tree: benchmarks/lf_pack.py re-stores them uncompressed in one xz tar (NO_PACK=1 skips it; minutes of one core).
# The main kit (.whl/, gpu_wheels.sh) is not part of this: the environment needs nothing of it (and a kit on PYTHONPATH
# goes behind the environment's own releases: isolate/environment.py, BEHIND).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: llamafactory_wheels.sh PYTHON_VERSION (major.minor of the GPU host python3, e.g. 3.12)}
[[ "$PY" =~ ^3\.[0-9]+$ ]] || { echo "llamafactory_wheels.sh: '$PY' is not a Python version like 3.12" >&2; exit 2; }
OUT=${WHL_DIR:-.whl-lf}
PACK=${PACK:-.lfkit/lf.tar.xz}
read -r -a RUNTIMES <<< "${BNB_RUNTIMES:-cpu cuda13}"
rm -rf "$OUT" && mkdir -p "$OUT/overlay" "$OUT/kit"
echo "$PY" | tee "$OUT/PYTHON" > "$OUT/kit/PYTHON"  # the kit's: gpu_kit.sh (KIT_WHEELS) refuses another host Python

download() {
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        --platform any -d "$@"
}
download "$OUT/overlay" -r benchmarks/llamafactory_overlay.txt
download "$OUT/kit" "$(grep -iE '^bitsandbytes==' constraints/cpu.txt)"
python3 benchmarks/lf_pack.py trim "$OUT"/kit/bitsandbytes-*.whl "${RUNTIMES[@]}"
ls "$OUT/overlay" "$OUT/kit"
bytes() { du -cb "$@" | tail -1 | cut -f1; }
echo "overlay for Python $PY: $(find "$OUT/overlay" -name '*.whl' | wc -l) wheels, $(bytes "$OUT"/overlay/*.whl) bytes;" \
     "kit: $(bytes "$OUT"/kit/*.whl) bytes"
if [ -z "${NO_PACK:-}" ]; then
    rm -f "$PACK"
    python3 benchmarks/lf_pack.py pack "$OUT" "$PACK"
    echo "carried: $PACK, $(bytes "$PACK") bytes, beside a working tree of $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes tracked"
fi
