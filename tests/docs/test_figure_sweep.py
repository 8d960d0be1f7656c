"""Every figure in README.md and docs/*.md is verified against a committed report, or allowed here with its reason.

The checkers of tests/docs/readme_checkers.py, estimator_checkers.py and doc_checkers.py
each return the text they verified; the sweep collects it per document, adds the allow-list below,
and fails on any figure token (doc_figures.FIGURE: a number with a unit, a range, an interval, a
count of runs) outside all of them. A figure added without a checker, or left behind when a
checker's text changes, fails here; an allow-list entry that no longer matches fails too.
"""

import doc_checkers
import estimator_checkers
import pytest
import readme_checkers
from doc_figures import FIGURE, ROOT, document, flat, unsourced

CHECKERS = {
    "README.md": readme_checkers.README_CHECKERS,
    **readme_checkers.DOC_CHECKERS,  # docs/declaring.md, measuring.md, baselines.md, ...: README's sections once
    "docs/estimator.md": estimator_checkers.ESTIMATOR_CHECKERS,
    **doc_checkers.DOCS_CHECKERS,
    "docs/layout.md": (),
    "docs/design.md": (),
    "docs/scenario-api.md": (),
    "docs/several-ranks.md": (),
    "docs/gpu-results.md": (doc_checkers.gpu_results_page,),  # rendered from the GPU reports whole
    "docs/estimator-cuda.md": (doc_checkers.estimator_cuda_page,),  # rendered from its estimates and report
    "docs/cards.md": (doc_checkers.cards_page,),  # the capacity column is model/card.py's; the rest the threads'
    "docs/options.md": (),  # generated from options.OPTIONS (tests/docs/test_options_doc.py); defaults carry no unit
}

WRITE_UP = "a write-up's own figure (the memtest module docstrings quote them), not a measurement"
EXAMPLE = "a budget declared in a code example: what the reader writes, not a measurement"
POLL = "NVML's sampling interval (measure/nvml.py SAMPLE_SECONDS): a setting, not a measurement"
CARD_NAMES = "the names of the cards of model/card.py's table, not figures"
GRACE = "the grace a command's descendants get after it exits (isolate/command.py EXIT_GRACE_SECONDS): a setting"
ALLOWED = {  # document -> (snippet holding the figures, why no report holds them)
    "README.md": (
        ('@pytest.mark.gpu_budget(ram="4 GiB", vram="20 GiB", steps=10_000)', EXAMPLE),
        ('(or `card="24 GiB"`)', EXAMPLE),
    ),
    "docs/declaring.md": (
        ('ram={"tiny": "900 MiB", "real": "12.7 GB"}', EXAMPLE),
        ('Sizes: `"12.7 GiB"`, `"24GB"`, `"512 MiB"`', "examples of the size syntax"),
        ("(1 GB = 10^9 bytes)", "a unit's definition"),
        ("(1 GiB = 2^30 bytes)", "a unit's definition"),
        ('A fraction of a byte (`"0.5 B"`)', "an example of the size syntax refused"),
        ('cpu={"ram": {"tiny": "2 GiB"}, "expect": "over-budget"}, cuda={"vram": {"real": "24 GB"}', EXAMPLE),
        ('(an 80 GiB budget sat above what an "80 GB" card offers', "a former declared budget and a write-up's card"),
        ('tolerance={"rel": 0.02, "abs": "16 MiB"}', EXAMPLE),
        ('@pytest.mark.gpu_budget(ram="2 GiB")', EXAMPLE),
        ('@pytest.mark.gpu_budget(ram="4 GiB", vram="6 GiB")', EXAMPLE),
        ("sampled every 20 ms in that process", POLL),
        ("(polled every 20 ms by the measuring child,", POLL),
        ("A lower bound within one 20 ms poll.", POLL),
        ("its descendants get a grace of 2 s to end on", GRACE),
        ('# or card="24 GiB", or', EXAMPLE),
        ("S3 the RTX 3090, S4 the 80 GB A100, S1 Colab's T4", WRITE_UP),
        ("in 1 MiB arenas", "CPython's arena size on 64-bit hosts (Objects/obmalloc.c ARENA_SIZE): a constant"),
    ),
    "docs/several-ranks.md": (
        ('@pytest.mark.gpu_budget(ram="600 MiB")', EXAMPLE),
        ("at every 20 ms poll", POLL),
        ("wide to catch +5 % (`rank 1", "the change the row warns about (compare.MUST_CATCH): a setting"),
    ),
    "docs/real-scale.md": (
        ("against Colab's 12.7 GB", WRITE_UP),
    ),
    "docs/fixes.md": (
        ('@pytest.mark.gpu_budget(ram="1.25 GiB")', EXAMPLE),
    ),
    "docs/baselines.md": (
        ("starts its mmap threshold at 128 KiB and raises it (up to 32 MiB)", "glibc's documented defaults (mallopt(3))"),
        ("(`> baseline ... (6x its spread", "the multiple as the row prints it (compare.SPREAD_MULTIPLE): a setting"),
        ("wide enough to let a +5 % change pass", "the change the row warns about (compare.MUST_CATCH): a setting"),
        ("is too wide to catch +5%`", "the change the row warns about (compare.MUST_CATCH): a setting"),
        ("and a planted +64 MiB still failing", "the change a test plants (tests/integration/test_record_runs.py)"),
        ("(`within its recorded allowance ... (6x the largest", "the multiple as the row prints it (SPREAD_MULTIPLE): a setting"),
        ("whose second run grows 2 MiB a step, then shows a 3 MiB/step leak",
         "what a test plants (tests/integration/test_growth_recorded.py)"),
        ("and a 16 MiB/step leak still failing", "what a test plants (tests/integration/test_growth_recorded.py)"),
        ("a regular file of at most 16 MiB", "the size limit of a baseline file (judge/files.py MAX_FILE_BYTES): a setting"),
    ),
    "docs/benchmarks.md": (
        ("(geometric mean over repetitions, 95 % interval)", "the interval's confidence level (benchmarks/overhead.py)"),
        ("An interval that holds 1.00x", "a definition: no cost at all"),
    ),
    "docs/estimator.md": (
        ('(`--cuda-context 500MiB`, measured on your GPU)', "an example argument"),
        ('--cuda-context "500 MiB"', "an example argument"),
        ("(geomean, 95 % interval)", "the interval's confidence level (benchmarks/estimator_speed.py)"),
        ("The write-up's 24 GB card", WRITE_UP),
        ("over 80 GB (OOM on an 80 GB A100) against about 32 GB", WRITE_UP),
        ("a 24-80 GB GPU", "the write-ups' cards (S3's and S4's)"),
    ),
    "docs/cards.md": (
        ('with `card="A100 80GB"` is skipped', CARD_NAMES),
        ('`"NVIDIA A100-SXM4-80GB"`, `"NVIDIA H100 80GB HBM3"`, `"T4 16GB"`', "names as GPUs print them, not figures"),
    ),
    "docs/gpu-validation.md": (
        ("A device call carries at most 64 MiB", "the device tool's documented limit, not a measurement"),
        ("expected to break the 80 GB budget", WRITE_UP),
        ("S3 the RTX 3090, S4 the 80 GB A100, S1 the T4", WRITE_UP),
        ("reaches the write-up's 12.7 GB", WRITE_UP),
        ("(`REMEDY_MAX_RUNS`, default 4 real runs)", "a setting of gpu_validation.sh, not a measurement"),
    ),
    "docs/scenario-api.md": (
        ('ram={"tiny": "586 MiB", "real": "12.7 GB"}', EXAMPLE),
        ('cpu={"ram": {"tiny": "2 GiB"}, "expect": "over-budget"}, # S3 cuda={"vram": {"real": "24 GB"}', EXAMPLE),
    ),
}


def verified(path: str) -> list[str]:
    """Everything the checkers of one document verified (each checker asserts as it goes)."""
    return [snippet for checker in CHECKERS[path] for snippet in checker()]


def allowed(path: str) -> list[str]:
    return [snippet for snippet, _ in ALLOWED.get(path, ())]


def test_every_document_is_swept():
    """README.md and every docs/*.md have checkers or an allow-list here (an empty one holds no figure)."""
    docs = {"README.md", *(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))}
    assert docs == set(CHECKERS)


@pytest.mark.parametrize("path", sorted(CHECKERS))
def test_every_figure_is_verified_or_allowed(path):
    """No figure in the document is outside what a checker verified against a report or the allow-list explains."""
    missing = unsourced(document(path), verified(path), allowed(path))
    assert not missing, f"{path}: figures no committed report backs (add a checker, or remove them):\n" + "\n".join(missing)


def test_the_sweep_fails_on_a_planted_figure():
    """A new unsourced figure in the README (here a planted '123.4 MiB') makes the sweep fail, naming it."""
    text = document("README.md") + "\n\nA new paragraph: the step now peaks at 123.4 MiB.\n"
    missing = unsourced(text, verified("README.md"), allowed("README.md"))
    assert len(missing) == 1 and missing[0].startswith("'123.4 MiB'")


def test_the_sweep_fails_on_a_changed_figure():
    """A verified figure edited by hand (5.0 -> 5.00 min) leaves its checker's text unmatched: the sweep fails."""
    path = readme_checkers.BENCHMARKS
    snippet = flat(readme_checkers.readme_suite_time()[0])
    edited = flat(document(path)).replace(snippet, snippet.replace(" min", "0 min", 1))
    with pytest.raises(AssertionError, match="not in the document"):
        unsourced(edited, verified(path), allowed(path))


def test_what_counts_as_a_figure():
    """Sizes, shares, durations, ratios, ranges, intervals and counts are figures; model names and exponents are not."""
    figures = ["874.5 MiB", "2.54 GiB", "12.7 GB", "24GB", "0.15 %", "-33%", "6.0 min", "0.10 s", "20 ms", "1.07x",
               "934.4-991.1 MiB", "-8.9 .. +5.6 MiB", "(0.92 .. 1.24)", "7 of 180", "5 fresh sessions", "10 runs",
               "1,680 MiB", "512 bytes", "0 B", "missed 137"]
    for text in figures:
        assert [m.group() for m in FIGURE.finditer(f"then {text} here")] == [text], text
    for text in ["Qwen2-Audio-7B", "an 8B model", "1 GB = 10^9 bytes", "N·K/2 bytes", "batch 4 x 2048", "S5", "3.11"]:
        assert [m.group() for m in FIGURE.finditer(text)] in ([], ["1 GB"]), text
