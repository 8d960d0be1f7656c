#!/usr/bin/env bash
# The GPU validation, on a bare GPU host without a package index, in parts that each fit one device command
# (at most 10 minutes). docs/gpu-validation.md is the plan: the parts in order, what each records, how long each
# may take and how its results come back.
#
#   bash benchmarks/gpu_validation.sh PART OUT      PART: real (S1, S2, S5) | s3 | s4 | tiny | batch | command | funasr
#                                                   | cards (CARD_CASES=s3|s4|s1: one write-up as on its card)
#                                                   | explore (S5 and S3 within their cards, verified under the cap)
#                                                   | s1-colab (S1's whole Colab run and its host-RAM mechanisms)
#                                                   | remedy (REMEDY_CASES=s3|s5|s4|s1: the cheapest passing fixes on CUDA)
#                                                   | growth-gpu (10 clean and 10 leaking script runs: the GPU growth allowance)
#                                                   | llamafactory (S3's LLaMA-Factory CLI, its environment from
#                                                     the carried .lfkit: carry=[".lfkit"], not .whl)
#                                                   | cuda-free (the CUDA-free check alone: no GPU needed)
#
# Every part installs the carried wheels (benchmarks/gpu_kit.sh, which refuses a Python mismatch), stops with
# exit 4 when no CUDA GPU is visible (nothing measured), then runs its cases at most twice within its time budget
# (BUDGET_S, default 540 s, 480 s for `command`; a session stopped at the limit by SIGINT still writes its report): run 1 records
# baselines for this GPU into OUT/PART/baselines, run 2 measures again against them (the allocated peak must
# reproduce). benchmarks/gpu_compare.py then sets allocated against reserved and NVML, run 1 against run 2, and
# the CUDA estimate made on a CPU beforehand (docs/estimator-results/real-cuda-estimates.json) against the
# measured peak. OUT/PART.tar.gz holds everything (a device call brings back at most 8 files).
# Checkpoints are built on this host's GPU (the S3/S4 prepare functions build on the child's device) into
# GPU_BUDGET_ASSETS (default /tmp/gpu-budget-assets). Only measured figures are written.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
usage="usage: gpu_validation.sh PART OUT_DIR (PART: real, s3, s4, tiny, batch, command, funasr, sft, cards, explore, remedy, s1-colab, growth-gpu, llamafactory, cuda-free)"
PART=${1:?$usage}
OUT=${2:?$usage}
PYTHON=${PYTHON:-python3}
case "$PART" in
    real) FILES=(memtests/test_s1_wav2vec2.py memtests/test_s2_paraformer.py memtests/test_s5_generic_oom.py)
          SELECT="test_as_reported or test_fixed"; SCALE=real ;;
    s3)   FILES=(memtests/test_s3_qwen2_audio.py)
          SELECT="test_as_reported or no-embedding or (trainable_token_indices and not dict)"; SCALE=real ;;
    s4)   FILES=(memtests/test_s4_wrap_order.py); SELECT="test_as_reported or test_fixed"; SCALE=real ;;
    tiny) FILES=(memtests); SELECT="not explore"; SCALE=tiny ;;
    # S5's largest batch within a VRAM budget against accelerate's finder: a probe (no baseline, one session),
    # at SCALE (default: tiny, then real in the same call when time is left)
    batch) FILES=(memtests/test_s5_generic_oom.py); SELECT="against_accelerate"; SCALE=${SCALE:-tiny real} ;;
    # a user's own fine-tune as a command on CUDA: S1's unchanged Trainer script and a 2-rank torchrun DDP launch
    # sharing the one GPU over gloo; run 3 plants a leak in the script (memtests/test_gpu_command.py)
    command) FILES=(memtests/test_gpu_command.py); SELECT="trainer_script or ddp"; SCALE=tiny; PART_BUDGET=480 ;;
    # S2 as its user ran it: FunASR's own entry point (train_ds.py, what finetune.sh launches) trains on CUDA only,
    # so its case skips on a CPU host; here it is measured per step beside the S2 runner (the kit needs hydra-core)
    # first its long run (memtests/test_s2_funasr_long_run.py: two epochs over the write-up's length mix, default
    # allocator and expandable_segments, unjudged probes in a session of their own, nothing recorded)
    funasr) FILES=(memtests/test_s2_funasr_train_ds.py); SELECT="test_train_ds and not cpu_host"; SCALE=tiny
            PROBE_FILES=(memtests/test_s2_funasr_long_run.py) ;;
    # S4 as its user ran it: TRL's SFTTrainer on the 8-bit LoRA model in a ModelWrap, the 8B checkpoint built on the
    # GPU (its own prepared folder: the runner's s4 part does not share it)
    sft)  FILES=(memtests/test_s4_sft_trainer.py); SELECT="test_sft_as_reported"; SCALE=real ;;
    # the write-ups' failures on the cards they name (memtests declare card=): each case's allocator capped at the
    # card less its CUDA context, at real scale: which run dies of out-of-memory, in which phase and step, and what
    # the fixes change; CARD_CASES picks the write-up (one a device command: s3 the RTX 3090, s4 the 80 GB A100, s1
    # the T4; the s3 and s4 parts build their checkpoints into the same GPU_BUDGET_ASSETS)
    cards) case "${CARD_CASES:-s3}" in
               s3) FILES=(memtests/test_s3_qwen2_audio.py)
                   SELECT="test_as_reported or no-embedding or (trainable_token_indices and not dict)" ;;
               s4) FILES=(memtests/test_s4_wrap_order.py); SELECT="test_as_reported or test_fixed" ;;
               s1) FILES=(memtests/test_s1_wav2vec2.py); SELECT="test_as_reported or test_fixed" ;;
               *) echo "gpu_validation.sh: CARD_CASES='$CARD_CASES' is not s3, s4 or s1" >&2; exit 2 ;;
           esac
           SCALE=real; PART="cards-${CARD_CASES:-s3}" ;;
    # the exploration within a card, on CUDA (--gpu-budget-explore): S5 within the T4 and S3 within the RTX 3090, the
    # estimated boundary bracketed by real runs under the card's cap, and the estimate's error there (SCALE: real by
    # default; one session per scale, nothing recorded)
    explore) FILES=(memtests/test_explore_s5.py memtests/test_explore_s3.py); SELECT="within"; SCALE=${SCALE:-real} ;;
    # the remediation search on CUDA (--gpu-budget-remediate): a write-up's as-reported case at real scale under its
    # card, and when it breaks its budget or dies of out-of-memory there, its fixes searched cheapest first, each set a
    # real run under the same cap (at most REMEDY_MAX_RUNS, default 4); REMEDY_CASES picks the write-up (one a device
    # command: s3, s5, s4 or s1); one session, nothing recorded
    remedy) case "${REMEDY_CASES:-s3}" in
                s3) FILES=(memtests/test_s3_qwen2_audio.py) ;;
                s5) FILES=(memtests/test_s5_generic_oom.py) ;;
                s4) FILES=(memtests/test_s4_wrap_order.py) ;;
                s1) FILES=(memtests/test_s1_wav2vec2.py) ;;
                *) echo "gpu_validation.sh: REMEDY_CASES='$REMEDY_CASES' is not s3, s5, s4 or s1" >&2; exit 2 ;;
            esac
            SELECT="test_as_reported"; SCALE=real; PART="remedy-${REMEDY_CASES:-s3}" ;;
    # S1 as on Colab (memtests/test_s1_colab.py): the write-up's whole run (3 epochs, an evaluation each, fp16, batch
    # 1, accumulation 4, 20 untruncated clips) under the T4's cap, then one host-RAM mechanism a run (compute_metrics,
    # 48 kHz files unresampled and resampled, clips twice as long): host RAM per phase, which run if any reaches 12.7 GB
    s1-colab) FILES=(memtests/test_s1_colab.py); SELECT="colab"; SCALE=${SCALE:-real} ;;
    # the GPU growth allowance (benchmarks/growth_gpu.py): the command part's Trainer script on CUDA, GROWTH_RUNS
    # (default 10) clean and as many leaking runs (each step's hidden states kept on the GPU), each a fresh measured
    # child, in pytest-xdist sessions of ten; then the derivation; nothing recorded (no run 1 / run 2)
    growth-gpu) FILES=(); SELECT=""; SCALE=tiny ;;
    # S3 as its user ran it: LLaMA-Factory's own CLI (`llamafactory-cli train`) in an environment of its own, made from
    # carried wheels alone (GPU_BUDGET_WHEELHOUSE: no index here). carry=[".lfkit"], NOT .whl: its one file
    # (benchmarks/llamafactory_wheels.sh 3.12, here) holds the trimmed overlay and bitsandbytes cut to CUDA 13, and the
    # main kit is not needed: a kit folder of its own (a warm machine may keep another part's; a main kit's releases
    # would go behind the environment's anyway: isolate/environment.py, BEHIND). A probe: the tool twice in 4-bit and the
    # S3 runner once, their peaks in the report's note, nothing recorded; tiny, the only scale the case has
    llamafactory) FILES=(memtests/test_s3_llamafactory.py); SELECT="beside_the_runner"; SCALE=tiny
          LF=/tmp/gpu-budget-lf KIT=/tmp/gpu-budget-kit-lf
          rm -rf "$LF" "$KIT" && mkdir -p "$LF" || exit 3
          "$PYTHON" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
              .lfkit/lf.tar.xz "$LF" || { echo "gpu_validation.sh: the llamafactory part needs .lfkit/lf.tar.xz" \
              "(bash benchmarks/llamafactory_wheels.sh 3.12 here, then carry=[\".lfkit\"])" >&2; exit 3; }
          export KIT_WHEELS="$LF/kit" KIT_FETCHER=llamafactory_wheels.sh GPU_BUDGET_WHEELHOUSE="$LF/overlay" ;;
    # the CUDA-free check of step 3 alone, with the kit as a part installs it: on a CPU host too (no preflight), to
    # try the check itself before a device session; its exit status is the check's
    cuda-free) FILES=(); SELECT=""; SCALE="" ;;
    *)    echo "gpu_validation.sh: unknown part '$PART'; $usage" >&2; exit 2 ;;
esac
# a re-run of part of a part (cases an earlier run lost): ONLY_FILES / ONLY_SELECT replace the part's own
[ -n "${ONLY_FILES:-}" ] && read -r -a FILES <<< "$ONLY_FILES"
SELECT=${ONLY_SELECT:-$SELECT}
DIR="$OUT/$PART"
mkdir -p "$DIR"
deadline=$((SECONDS + ${BUDGET_S:-${PART_BUDGET:-540}}))
export GPU_BUDGET_ASSETS=${GPU_BUDGET_ASSETS:-/tmp/gpu-budget-assets} PYTHONUNBUFFERED=1
log() { echo "gpu-validation $PART: $*" | tee -a "$DIR/validation.log"; }

# 1. the carried wheels, and this checkout's plugin (loaded in every pytest session, pytester's too)
KIT=${KIT:-/tmp/gpu-budget-kit}
PYTHON="$PYTHON" bash benchmarks/gpu_kit.sh "$KIT" 2>&1 | tee -a "$DIR/validation.log"
[ "${PIPESTATUS[0]}" = 0 ] || exit 3
export PYTHONPATH="$KIT/site-packages${PYTHONPATH:+:$PYTHONPATH}"
if ! "$PYTHON" -c 'import sys; from importlib.metadata import entry_points as e
sys.exit(not any(p.name == "gpu_budget" for p in e(group="pytest11")))'; then
    export PYTEST_PLUGINS=gpu_budget.pytest_plugin  # not installed here: load the linked plugin by name
fi

# The CUDA-free check (step 3, and the whole of the `cuda-free` part, which needs no GPU and so comes before the
# preflight): neither the pytest process nor the forkserver touches CUDA on this host. Its outcome goes to
# validation.log (pytest's closing line and exit status): a check that failed to run is not a check that passed
cuda_free() {
    log "CUDA-free check with this host's torch and bitsandbytes: tests/integration/test_cuda_free.py"
    timeout -s INT -k 30 240 "$PYTHON" -m pytest -p no:cacheprovider -p no:randomly tests/integration/test_cuda_free.py -q \
        2>&1 | tee "$DIR/cuda-free.log"
    local status=${PIPESTATUS[0]}
    log "CUDA-free check: exit $status, $(grep -E '^[0-9]+ [a-z]+.* in [0-9.]+s' "$DIR/cuda-free.log" | tail -1)"
    return "$status"
}
if [ "$PART" = cuda-free ]; then
    cuda_free
    status=$?
    tar -czf "$OUT/$PART.tar.gz" -C "$OUT" "$PART" && log "results: $OUT/$PART.tar.gz"
    exit "$status"
fi

# 2. a CUDA GPU, or nothing is measured (this preflight is its own process: never the forkserver)
if ! "$PYTHON" - "$DIR/visible-gpus" <<'PY' 2>&1 | tee -a "$DIR/validation.log"; then
import sys

import torch

if not torch.cuda.is_available():
    sys.exit(f"gpu-validation: no CUDA GPU visible to torch {torch.__version__}")
p = torch.cuda.get_device_properties(0)
print(f"gpu-validation: device {p.name}, total memory {p.total_memory} bytes, torch {torch.__version__}, "
      f"CUDA {torch.version.cuda}, {torch.cuda.device_count()} visible")
with open(sys.argv[1], "w") as out:  # what the gate measures on: CUDA_VISIBLE_DEVICES applied
    out.write(str(torch.cuda.device_count()))
PY
    log "no CUDA GPU visible: this script measures GPU memory; nothing was measured"
    exit 4
fi
nvidia-smi > "$DIR/nvidia-smi.txt" 2>&1 || true
# a launcher case takes 2 GPUs (one per rank): on a one-GPU host --gpu-budget-require-gpu would fail each of them
if [ "$PART" = tiny ] && [ "$(cat "$DIR/visible-gpus")" -lt 2 ]; then
    SELECT="($SELECT) and not several_ranks"
    log "fewer than 2 GPUs: the several-ranks cases (2 ranks, one GPU each) are left out"
fi

# the growth-gpu part: its own sessions, then its results (benchmarks/growth_gpu.py prints the derivation)
if [ "$PART" = growth-gpu ]; then
    left=$((deadline - SECONDS))
    log "growth-gpu: at most ${left} s"
    timeout -s INT -k 30 "$left" "$PYTHON" -m benchmarks.growth_gpu --device cuda --runs "${GROWTH_RUNS:-10}" \
        --out "$DIR/growth-gpu.json" 2>&1 | tee "$DIR/growth-gpu.log"
    log "growth-gpu: exit ${PIPESTATUS[0]}, ${SECONDS} s into the part"
    tar -czf "$OUT/$PART.tar.gz" -C "$OUT" "$PART" && log "results: $OUT/$PART.tar.gz"
    exit 0
fi

# 3. once per validation, with the `real` part: the CUDA-free check (cuda_free, above)
if [ "$PART" = real ]; then
    cuda_free
fi

# 4. run 1 records this GPU's baselines, run 2 measures against them
PYTEST=("$PYTHON" -m pytest -p no:cacheprovider -p no:randomly -p no:xdist "${FILES[@]}" -k "$SELECT" -rs
        --gpu-budget --gpu-budget-scale="$SCALE" --gpu-budget-require-gpu --gpu-budget-timeout=420
        --gpu-budget-baselines="$DIR/baselines")
session() {  # session N ARGS...: one pytest session within what is left of the budget
    local n=$1 left=$((deadline - SECONDS))
    shift
    if [ "$left" -lt 60 ]; then
        log "run $n: not started, ${left} s left of the budget"
        return 0
    fi
    log "run $n: at most ${left} s"
    timeout -s INT -k 30 "$left" "${PYTEST[@]}" --gpu-budget-json="$DIR/run-$n.json" "$@" 2>&1 | tee "$DIR/run-$n.log"
    log "run $n: exit ${PIPESTATUS[0]}, ${SECONDS} s into the part"
}
case "$PART" in batch|explore|s1-colab|llamafactory) PROBES_ONLY=1 ;; *) PROBES_ONLY= ;; esac
if [ -n "$PROBES_ONLY" ]; then  # probes record nothing: one session per scale, each its own report
    for scale in $SCALE; do
        PYTEST=("${PYTEST[@]/--gpu-budget-scale=*/--gpu-budget-scale=$scale}")
        if [ "$PART" = explore ]; then session "$scale" --gpu-budget-explore -s; else session "$scale" --gpu-budget-probes; fi
    done
    tar -czf "$OUT/$PART.tar.gz" -C "$OUT" "$PART" && log "results: $OUT/$PART.tar.gz"
    exit 0
fi
if [ "${PART%%-*}" = remedy ]; then  # one session: the search's trials are the finding, no baseline recorded
    session 1 --gpu-budget-remediate --gpu-budget-remediate-max-runs="${REMEDY_MAX_RUNS:-4}" --gpu-budget-snapshot=never
    tar -czf "$OUT/$PART.tar.gz" -C "$OUT" "$PART" && log "results: $OUT/$PART.tar.gz"
    exit 0
fi
if [ "$PART" = funasr ]; then  # S2's long run first: unjudged probes in one session of their own, nothing recorded
    JUDGED=("${PYTEST[@]}")
    PYTEST=("$PYTHON" -m pytest -p no:cacheprovider -p no:randomly -p no:xdist "${PROBE_FILES[@]}" -rs --gpu-budget
            --gpu-budget-scale="$SCALE" --gpu-budget-require-gpu --gpu-budget-timeout=420
            --gpu-budget-baselines="$DIR/baselines")
    session long-run --gpu-budget-probes  # -> funasr/run-long-run.json, run-long-run.log
    PYTEST=("${JUDGED[@]}")
fi
session 1 --gpu-budget-update
session 2 --gpu-budget-snapshot=never  # run 1 kept the snapshots of its failures
if [ "$PART" = command ]; then  # the planted leak: the script keeps 1.5 MiB of each step's hidden states on the GPU
    export GPU_BUDGET_PLANT_LEAK_MIB=1.5  # against run 1's baselines: flagged by its slope and its steps, or not
    session 3 --gpu-budget-snapshot=never
    unset GPU_BUDGET_PLANT_LEAK_MIB
fi

# 5. the table, and everything in one file to bring back
if [ -f "$DIR/run-1.json" ]; then
    "$PYTHON" benchmarks/gpu_compare.py "$DIR/run-1.json" "$DIR/run-2.json" \
        --estimates docs/estimator-results/real-cuda-estimates.json -o "$DIR/gpu-validation.md" && cat "$DIR/gpu-validation.md"
fi
tar -czf "$OUT/$PART.tar.gz" -C "$OUT" "$PART" && log "results: $OUT/$PART.tar.gz"
