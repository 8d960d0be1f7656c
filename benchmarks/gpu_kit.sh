#!/usr/bin/env bash
# Install, on a host without a package index, the wheels benchmarks/gpu_wheels.sh fetched into .whl/, the only
# way they can be installed there: pip --no-index --no-deps --target ROOT/site-packages. This checkout's plugin/gpu_budget/
# is linked as ROOT/site-packages/gpu_budget (its pytest plugin is then loaded by PYTEST_PLUGINS or -p). Refuses
# a host whose Python is not the version the wheels were fetched for, and prints what the run will import.
#
#   bash benchmarks/gpu_kit.sh ROOT && export PYTHONPATH=ROOT/site-packages     # PYTHON=... picks the interpreter
#   KIT_WHEELS=DIR KIT_FETCHER=llamafactory_wheels.sh bash benchmarks/gpu_kit.sh ROOT   # another folder's wheels
#                  (S3's LLaMA-Factory part: bitsandbytes alone; the case's environment needs nothing else of a kit)
#
# Why the folder must be named site-packages: dill (datasets hashes S1's .map function with it) pickles a
# module that lives outside sys.prefix and outside any "site-packages" path by value, and pyarrow's types then
# fail to pickle ("Can't pickle <class 'MonthDayNano'>"). Every S1 case failed that way from a --target
# folder named otherwise; from ROOT/site-packages they run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${1:?usage: gpu_kit.sh ROOT_DIR (the wheels go to ROOT_DIR/site-packages)}
SITE="$ROOT/site-packages"
WHEELS=${KIT_WHEELS:-.whl}
FETCHER=${KIT_FETCHER:-gpu_wheels.sh}
PYTHON=${PYTHON:-python3}
host=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
echo "gpu-kit: $PYTHON is Python $("$PYTHON" -c 'import platform; print(platform.python_version())')"
mkdir -p "$SITE"
if compgen -G "$WHEELS/*.whl" >/dev/null; then
    fetched=$(cat "$WHEELS/PYTHON" 2>/dev/null || echo "an unknown version (no $WHEELS/PYTHON)")
    if [ "$fetched" != "$host" ]; then
        echo "gpu-kit: refusing: the wheels in $WHEELS/ were fetched for Python $fetched, and this host's $PYTHON is" \
             "Python $host, so its compiled wheels would not import. Fetch them for this host where an index is" \
             "reachable: bash benchmarks/$FETCHER $host" >&2
        exit 3
    fi
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
        "$WHEELS"/*.whl
    echo "gpu-kit: installed $(find "$WHEELS" -name '*.whl' | wc -l) wheels for Python $host into $SITE"
else
    echo "gpu-kit: no wheels in $WHEELS/ (bash benchmarks/$FETCHER $host fetches them): the host's packages only"
fi
ln -sfn "$PWD/plugin/gpu_budget" "$SITE/gpu_budget"
PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" - <<'PY'
from importlib import metadata, util

for name in ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "datasets", "pandas", "pyarrow",
             "soundfile", "funasr", "kaldi-native-fbank", "nvidia-ml-py", "pytest", "pytest-xdist", "hypothesis"):
    try:
        print(f"gpu-kit:   {name} {metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(f"gpu-kit:   {name} MISSING (its cases skip, with the reason, or fail)")
print(f"gpu-kit:   gpu_budget from {util.find_spec('gpu_budget').submodule_search_locations[0]}")
PY
