#!/usr/bin/env bash
# Fetch, here (with a package index), the wheels a bare GPU host lacks, into .whl/ (git-ignored),
# for benchmarks/gpu_validation.sh to install there without an index. The GPU image has torch,
# transformers, peft, accelerate, nvidia-ml-py, psutil, hypothesis, tabulate, pytest and
# pytest-xdist on Python 3.12; it lacks bitsandbytes, datasets (S1) and soundfile (S1's clips).
# FunASR (S2) is large with all its dependencies: its own wheel goes without them, plus
# kaldi-native-fbank and what its Paraformer import path needs; S2 skips if that falls short.
#
#   bash benchmarks/gpu_wheels.sh [python-version, default 3.12]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-3.12}
mkdir -p .whl
fetch() {
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        --platform any -d .whl "$@"
}
# pins: the versions constraints/cpu.txt holds, so the GPU baselines match the CPU ones
pin() { grep -iE "^$1==" constraints/cpu.txt | head -1; }
fetch "$(pin bitsandbytes)"
fetch "$(pin datasets)" dill multiprocess
fetch soundfile cffi pycparser
# FunASR without its ~900 MB of dependencies: what `from funasr.models.paraformer.model import Paraformer`
# and its fbank frontend import (read with python -X importtime here), minus what the image has
fetch "$(pin funasr)" kaldi-native-fbank==1.22.5 kaldiio jaconv jamo hydra-core omegaconf \
    torch-complex librosa soxr audioread pooch
# omegaconf needs antlr4 4.9.*, published as a source archive only: build its (pure Python) wheel here
python3 -m pip wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3
du -sh .whl && ls .whl
