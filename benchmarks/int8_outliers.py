"""How many of an int8 layer's input columns bitsandbytes treats as outliers, at S4's real scale and initialisation.

    python -m benchmarks.int8_outliers     # -> benchmarks/results/int8_outliers.json (CPU, about a minute)

bitsandbytes' MatMul8bitLt (CUDA, llm_int8_threshold 6.0) keeps for backward a 16-bit copy of every input
column in which any row reaches magnitude 6 (`subA = A[:, outlier_cols]`). Which columns do depends on the
activations' values, which the estimator's fake tensors do not have (it takes none). S4's checkpoint is a
randomly initialised Llama-3-8B (Linear weights drawn from N(0, initializer_range 0.02), RMSNorm weights 1), so
the values of a layer's inputs can be drawn here: the normed hidden state (what q/k/v and gate/up read) as
rows of unit RMS, and down_proj's input silu(x Wg^T) * (x Wu^T) from them, over the run's 4 x 2048 rows.
docs/estimator-cuda.md cites the result for S4's real-scale miss.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks/results/int8_outliers.json"
THRESHOLD = 6.0  # BitsAndBytesConfig.llm_int8_threshold's default
INIT = 0.02  # LlamaConfig.initializer_range's default: nn.Linear weights ~ N(0, INIT)
HIDDEN, INTERMEDIATE, ROWS, CHUNK = 4096, 14336, 4 * 2048, 1024  # S4 real: Llama-3-8B, batch 4 x 2048 tokens


def _normed(rows: int, g: torch.Generator) -> torch.Tensor:
    """Rows of unit RMS: an RMSNorm's output (weight 1) of any hidden state."""
    x = torch.randn(rows, HIDDEN, generator=g)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True))


def outliers(seed: int = 0) -> dict:
    """Outlier columns (any row at magnitude >= THRESHOLD) of the normed input and of down_proj's input."""
    g = torch.Generator().manual_seed(seed)
    gate = torch.randn(INTERMEDIATE, HIDDEN, generator=g) * INIT
    up = torch.randn(INTERMEDIATE, HIDDEN, generator=g) * INIT
    normed_cols = torch.zeros(HIDDEN, dtype=torch.bool)
    down_cols = torch.zeros(INTERMEDIATE, dtype=torch.bool)
    normed_hits = down_hits = 0
    for _ in range(ROWS // CHUNK):
        x = _normed(CHUNK, g)
        h = torch.nn.functional.silu(x @ gate.T) * (x @ up.T)
        normed_out, down_out = x.abs() >= THRESHOLD, h.abs() >= THRESHOLD
        normed_cols |= normed_out.any(0)
        down_cols |= down_out.any(0)
        normed_hits += int(normed_out.sum())
        down_hits += int(down_out.sum())
    return {
        "normed_input": {"columns": HIDDEN, "outlier_columns": int(normed_cols.sum()), "entries_at_threshold": normed_hits},
        "down_proj_input": {"columns": INTERMEDIATE, "outlier_columns": int(down_cols.sum()),
                            "entries_at_threshold": down_hits},
    }


def main() -> int:
    torch.set_num_threads(2)
    t0 = time.perf_counter()
    result = outliers()
    data = {"threshold": THRESHOLD, "initializer_range": INIT, "hidden": HIDDEN, "intermediate": INTERMEDIATE,
            "rows": ROWS, "seed": 0, "torch": torch.__version__, "seconds": round(time.perf_counter() - t0, 1),
            **result}
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data, indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
