"""The words the gate's terminal section uses, each explained once at its end: only those the section printed.

docs/measuring.md ("Words the summary uses") holds the same explanations; the
test of this module keeps the two the same (tests/unit/test_legend.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Term:
    """One word of the section, how to find it in a printed line, and what it means."""

    word: str
    pattern: str
    meaning: str

    def seen(self, text: str) -> bool:
        return re.search(self.pattern, text) is not None


TERMS = (
    Term("RAM tree", r"\bRAM tree\b", "host RAM peak of the measured process and all its descendants "
         "(DataLoader workers, subprocesses) together; the figure a RAM budget gates"),
    Term("RAM main", r"\bRAM main\b|\(main\)", "host RAM peak of the measured process alone, shown beside the tree's, "
         "not gated; '-' where it was never read (a command's process that exited before the first poll); a "
         "baseline marked (main) holds this figure only"),
    Term("VRAM peak", r"\bVRAM peak\b", "peak GPU memory allocated by torch (torch.cuda.max_memory_allocated); "
         "'-' where the case ran without CUDA"),
    Term("so far", r"\bso far\b", "a figure of a case whose measured child failed (crashed, died of out-of-memory, "
         "timed out): the peak it reached before it stopped, a lower bound of the run's peak, not a measured one"),
    Term("tensors", r"\btensors [+-]", "the peak of the live CPU tensor bytes torch's ops produced (the CPU's "
         "counterpart of the allocated GPU peak): compared with the baseline beside host RAM, where measured"),
    Term("import floor", r"\bimport floor\b", "the RAM a fresh measured process starts with: the pages of the "
         "libraries the gate imported once for every case (gpu_budget_preload's, those installed: by default torch "
         "and transformers); measured in every session"),
    Term("floor taken off", r"\bfloor taken off\b|taken off the host RAM peak",
         "the baseline was recorded at another import floor: the host RAM peak is compared less the difference "
         "(peak - import floor shift = the figure compared), so an import change alone moves no verdict"),
    Term("malloc", r"\bmalloc (steady|system)\b", "steady: each measured process runs glibc's malloc with its mmap "
         "and trim thresholds fixed, so peaks repeat run to run; system: glibc's defaults (--gpu-budget-malloc)"),
    Term("kernels", r"\bkernels (not read|\S+) \(dispatch", "the CPU kernels torch used in the measured process, and the "
         "dispatch pin the gate set (avx2: the same kernels, so the same peaks, on any x86-64 host); "
         "not read: torch was not preloaded, so none was read"),
    Term("clean allowance", r"\bclean allowance\b", "the most growth per step the growth rule reads in runs "
         "without a leak; a growth within it is read as steady, past it as growth"),
    Term("expected", r"\(expected( over-budget)?\)", "the case reproduces a reported failure (expect=\"over-budget\"): "
         "breaking its budget is the passing outcome; pass FAIL (expected over-budget): it stayed within it"),
    Term("unchecked", r"\bunchecked\b", "a budget declared but not checked on this machine (a VRAM budget on a host "
         "without CUDA)"),
    Term("as on", r"\bas on (a [0-9]|[A-Z0-9])", "the case ran as on that card: each process's GPU allocator capped at the card's "
         "memory less its CUDA context"),
)

HEADING = "what the words above mean:"


def lines(shown: Sequence[str], terms: Sequence[Term] = TERMS) -> list[str]:
    """The legend for the lines `shown`: a heading and one line per term that appears in them; none where none does."""
    text = "\n".join(shown)
    said = [f"  {term.word}: {term.meaning}" for term in terms if term.seen(text)]
    return [HEADING, *said] if said else []
