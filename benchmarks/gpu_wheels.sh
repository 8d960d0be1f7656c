#!/usr/bin/env bash
# Fetch, here (with a package index), the wheels a bare GPU host lacks, into .whl/ (git-ignored), for
# benchmarks/gpu_kit.sh to install there without an index (--no-index --no-deps --target).
#
#   bash benchmarks/gpu_wheels.sh PYTHON_VERSION        # e.g. 3.12: the GPU host's python3, major.minor
#   IMAGE_HAS="pandas pyarrow" bash benchmarks/gpu_wheels.sh 3.12    # leave out what that image already ships
#
# The target is taken as given, never assumed: the wheels of compiled packages (pyarrow, pandas, xxhash,
# rapidfuzz, ...) exist per Python version, and gpu_kit.sh refuses a host whose python3 is another version
# (.whl/PYTHON holds the one fetched for).
#
# What the wheels cover, beyond what a GPU image is assumed to have (torch, transformers, peft, accelerate,
# nvidia-ml-py, psutil, hypothesis, tabulate, pytest, pytest-xdist and their dependencies): bitsandbytes (S1's
# 8/4-bit fixes, S3, S4, S5's quantization); datasets (S1) and what its import needs (dill, multiprocess, pandas,
# python-dateutil, pyarrow, xxhash); soundfile and cffi (S1's and S2's clips); FunASR's Paraformer path (S2)
# without FunASR's ~900 MB of dependencies: its own wheel, kaldi-native-fbank, and what
# `from funasr.models.paraformer.model import Paraformer` and its WavFrontend import: kaldiio, librosa,
# lazy_loader, rapidfuzz, six. That list was found by importing the paths in a venv holding only the image's
# packages plus these wheels, removing one wheel at a time: each one listed is needed (jaconv, jamo,
# torch-complex, hydra-core, omegaconf, audioread, pooch and tzdata were not), and the tiny suite ran there.
# FunASR's training entry point (funasr.bin.train_ds) needs hydra-core, omegaconf and antlr4-python3-runtime
# besides: it ran here as far as its trainer's first tensor move with modelscope, jieba, tiktoken, sentencepiece, jaconv, jamo,
# tensorboardX, websockets and torch-complex refused at import. soxr
# too: the GPU image's transformers (5.17) imports it in audio_utils at module level, so without it every
# Wav2Vec2/Qwen2-Audio/Llama import there failed (the first GPU run, 2026-11-25).
# Versions: constraints/cpu.txt's where it pins one, else the ones the CPU baselines' environment resolved
# (KIT_PINS below), so GPU and CPU runs use the same libraries. Ends by printing the kit's size: a device
# call carries at most 64 MiB, the working tree included; an image that has pandas and pyarrow (the 'cuda'
# image does) leaves out the two largest wheels with IMAGE_HAS.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:?usage: gpu_wheels.sh PYTHON_VERSION (major.minor of the GPU host python3, e.g. 3.12)}
[[ "$PY" =~ ^3\.[0-9]+$ ]] || { echo "gpu_wheels.sh: '$PY' is not a Python version like 3.12" >&2; exit 2; }
OUT=${WHL_DIR:-.whl}
read -r -a SKIP <<< "${IMAGE_HAS:-}"
rm -rf "$OUT" && mkdir -p "$OUT"
echo "$PY" > "$OUT/PYTHON"

KIT_PINS=(dill==0.4.1 multiprocess==0.70.19 pandas==3.1.1 python-dateutil==4.0.0 xxhash==4.1.0 six==1.17.0
          cffi==2.1.1 pycparser==3.12 kaldi-native-fbank==1.22.5 kaldiio==2.18.1 librosa==0.11.0 lazy-loader==0.6
          rapidfuzz==3.14.6 soxr==1.1.0)
# the requirement for NAME: constraints/cpu.txt's pin, else KIT_PINS', else the name alone
spec() {
    local name=$1 hit
    hit=$(grep -iE "^${name//[-_]/[-_]}==" constraints/cpu.txt | head -1 || true)
    [ -n "$hit" ] || hit=$(printf '%s\n' "${KIT_PINS[@]}" | grep -iE "^${name//[-_]/[-_]}==" | head -1 || true)
    echo "${hit:-$name}"
}
fetch() {
    local name wanted=()
    for name in "$@"; do
        if [[ " ${SKIP[*]:-} " == *" $name "* ]]; then
            echo "gpu_wheels.sh: $name left out (IMAGE_HAS)"
        else
            wanted+=("$(spec "$name")")
        fi
    done
    [ ${#wanted[@]} -gt 0 ] || return 0
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        --platform any -d "$OUT" "${wanted[@]}"
}
fetch bitsandbytes
fetch datasets dill multiprocess pandas python-dateutil pyarrow xxhash
fetch soundfile cffi pycparser
fetch funasr kaldi-native-fbank kaldiio librosa lazy-loader rapidfuzz six
# FunASR's training entry point (S2's tool case, gpu_validation.sh's funasr part) runs under hydra: hydra-core,
# omegaconf, and the antlr4 runtime omegaconf 2.3 takes (4.9), which the index holds as a source archive only: it is
# built here into a pure-Python wheel
fetch hydra-core omegaconf
if [[ " ${SKIP[*]:-} " != *" antlr4-python3-runtime "* ]]; then
    python3 -m pip wheel -q --no-deps -w "$OUT" "$(spec antlr4-python3-runtime)"
fi
fetch soxr
# S4's tool case (gpu_validation.sh's sft part): TRL's SFTTrainer; its dependencies are the image's
fetch trl
ls "$OUT"
echo "kit for Python $PY: $(du -cb "$OUT"/*.whl | tail -1 | cut -f1) bytes ($(du -ch "$OUT"/*.whl | tail -1 | cut -f1))"
