#!/usr/bin/env bash
# GPU validation on a bare GPU host without a package index: real-scale runs, GPU baselines,
# a reproducibility check, and the estimator beside the measured peaks.
#
# Here (with an index):  bash benchmarks/gpu_wheels.sh          # the wheels the host lacks -> .whl/
# There (repo root):     bash benchmarks/gpu_validation.sh OUT  # OUT gets baselines/, JSON reports, the table
#
# SELECT (a pytest -k expression) picks the cases; the default fits about 25 minutes of GPU time:
# every scenario's as-reported and fixed runs, S2's CUDA allocator fixes and S3's embedding variants.
# Only measured figures are written: each number in OUT comes from a run on this host.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${1:?usage: gpu_validation.sh OUT_DIR}
mkdir -p "$OUT"
SITE=/tmp/gpu-budget-site
SELECT=${SELECT:-"as_reported or fixed or cuda_fix or trainable_token_indices or no-embedding"}
log() { echo "gpu-validation: $*" | tee -a "$OUT/validation.log"; }

# 1. what the host lacks, from the wheels brought along; 2. this project, without an index:
#    the import package gpu_budget is the folder plugin/ (linked), its pytest plugin loaded by -p
mkdir -p "$SITE"
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        || { log "installing the carried wheels failed"; exit 1; }
fi
ln -sfn "$PWD/plugin" "$SITE/gpu_budget"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | tee -a "$OUT/validation.log" || exit 1
import importlib.util, torch
assert torch.cuda.is_available(), "no CUDA GPU visible: this script measures GPU memory"
print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__)
for name in ("transformers", "peft", "accelerate", "bitsandbytes", "datasets", "soundfile", "funasr", "pynvml"):
    print(f"  {name}: {'present' if importlib.util.find_spec(name) else 'MISSING (its cases skip or fail)'}")
PY

PYTEST=(python3 -m pytest -p gpu_budget.pytest_plugin -p no:cacheprovider -p no:randomly memtests
        --gpu-budget --gpu-budget-scale=real --gpu-budget-require-gpu -k "$SELECT" -rs)

# 3. record: fresh baselines for this GPU, from what is measured now
log "run 1: record baselines into $OUT/baselines"
"${PYTEST[@]}" --gpu-budget-update --gpu-budget-baselines="$OUT/baselines" --gpu-budget-json="$OUT/real-1.json" \
    2>&1 | tee "$OUT/run-1.log"
# 4. repeat against them: the allocated peak must reproduce (the gate's verdicts say whether it did)
log "run 2: the same cases against the new baselines"
"${PYTEST[@]}" --gpu-budget-baselines="$OUT/baselines" --gpu-budget-json="$OUT/real-2.json" 2>&1 | tee "$OUT/run-2.log"

# 5. the estimator's CUDA-mode predictions for the same scenarios
if python3 -m gpu_budget estimate --help >/dev/null 2>&1; then
    python3 -m gpu_budget estimate --scale real --cuda --json "$OUT/estimates.json" 2>&1 | tee "$OUT/estimate.log"
else
    log "this checkout has no estimator command: the table leaves the estimate column empty"
fi

# 6. the table: allocated / reserved / NVML per case, run 1 vs run 2, estimate vs measured
python3 benchmarks/gpu_compare.py "$OUT/real-1.json" "$OUT/real-2.json" --estimates "$OUT/estimates.json" \
    -o "$OUT/gpu-validation.md" && cat "$OUT/gpu-validation.md"
