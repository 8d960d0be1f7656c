"""`estimate --cuda --card NAME`: each estimate against the memory card= would leave on that card, and whether it fits."""

import json
from pathlib import Path

import pytest

from gpu_budget.estimate.card_room import FROM_9, WORKSPACE_BEFORE_9, CardRoom
from gpu_budget.estimate.cli import main as cli
from gpu_budget.estimate.on_card import MISS_OVER, MISS_UNDER, card_lines, verdict
from gpu_budget.estimate.rows import EstimateRow
from gpu_budget.model.card import CARDS, CONTEXT_ALLOWANCE, Card
from gpu_budget.units import GiB, MiB, format_size

S5_SPEC = str(Path(__file__).resolve().parents[2] / "memtests" / "s5_generic_oom" / "scenarios.py") + ":S5"
T4 = round(14.75 * GiB)  # docs/cards.md's T4


def row(allocated: int | None, reserved: int | None, estimate: int = 100 * MiB) -> EstimateRow:
    return EstimateRow("a", "s", (), "tiny", "vram_allocated_estimate", estimate, {}, "step2.backward", 0.1, None, (),
                       {}, {}, allocated, reserved)


def test_a_case_on_a_named_card_is_held_against_the_card_less_the_context_allowance(tmp_path, capsys):
    out = tmp_path / "est.json"
    assert cli(["--cuda", "--card", "Tesla T4", "--json", str(out), f"s5={S5_SPEC}"]) == 0
    printed = capsys.readouterr().out
    (saved,) = json.loads(out.read_text())["estimates"]
    limit = T4 - CONTEXT_ALLOWANCE
    assert (f"On T4 ({format_size(T4)}), card= would cap the caching allocator at {format_size(limit)}: the card less "
            f"{format_size(CONTEXT_ALLOWANCE)} for the CUDA context, the allowance for one not measured") in printed
    assert (f"s5: the estimated allocated peak, {format_size(saved['allocated_peak'])}, fits with "
            f"{format_size(limit - saved['allocated_peak'])} to spare") in printed
    assert "Not estimated: the cache at the run's own peak" in printed
    assert json.loads(out.read_text())["card"] == {"name": "T4", "capacity": T4, "written": "Tesla T4", "context": CONTEXT_ALLOWANCE,
                                                   "context_measured": False, "limit": limit}


def test_a_case_over_a_card_given_as_a_size_does_not_fit_with_the_context_given(tmp_path, capsys):
    """The context the user measured (--cuda-context) is what is taken off the card, as the cap takes its own."""
    out = tmp_path / "est.json"
    assert cli(["--cuda", "--cuda-context", "800 MiB", "--card", "1 GiB", "--json", str(out), f"s5={S5_SPEC}"]) == 0
    printed = capsys.readouterr().out
    (saved,) = json.loads(out.read_text())["estimates"]
    assert "On a 1 GiB card, card= would cap the caching allocator at 224.00 MiB: the card less 800.00 MiB for the " \
           "CUDA context (--cuda-context)." in printed
    assert (f"s5: the estimated allocated peak, {format_size(saved['allocated_peak'])}, does not fit: "
            f"{format_size(saved['allocated_peak'] - 224 * MiB)} over") in printed


BEFORE_9 = 4096 * 1024 * 2 + 16 * 1024 * 8  # torch's default cuBLAS workspace below compute capability 9


def test_a_card_before_compute_capability_9_is_estimated_with_its_own_cublas_workspace(tmp_path, capsys):
    """torch gives each matmul thread 8,519,680 bytes of cuBLAS workspace on a T4 (32 MiB only from compute capability
    9): a T4's verdict on the H200's workspaces counts 47.75 MiB its run never takes. A workspace given is kept."""
    saved = {}
    for name, args in (("t4", ["--card", "T4"]), ("h100", ["--card", "H100 80GB"]),
                       ("asked", ["--cublas-workspace", "8320 KiB"]), ("t4 given", ["--card", "T4", "--cublas-workspace", "32 MiB"])):
        out = tmp_path / f"{name}.json"
        assert cli(["--cuda", *args, "--json", str(out), f"s5={S5_SPEC}"]) == 0
        saved[name] = json.loads(out.read_text())
    printed = capsys.readouterr().out
    workspace = {name: data["cublas_workspace"] for name, data in saved.items()}
    assert workspace == {"t4": BEFORE_9, "h100": 32 * MiB, "asked": BEFORE_9, "t4 given": 32 * MiB}
    peak = {name: data["estimates"][0]["allocated_peak"] for name, data in saved.items()}
    assert peak["t4"] == peak["asked"] and peak["h100"] == peak["t4 given"] == peak["t4"] + 2 * (32 * MiB - BEFORE_9)
    assert ("The estimates take a cuBLAS workspace of 8.12 MiB per thread, torch's default on T4 (compute capability "
            "below 9; --cublas-workspace sets another).") in printed
    assert FROM_9 <= set(CARDS) and WORKSPACE_BEFORE_9 == 8320 * 1024


@pytest.mark.parametrize(("given", "said"), [
    ("NVIDIA B200", "--card: card='NVIDIA B200' is neither a known card (RTX 3080 10GB, RTX 3060 12GB, T4, RTX A4000"),
    ("4090", "--card: card='4090' is a bare number: did you mean \"RTX 4090\"?"),
    ("4090 24GB", "--card: card='4090 24GB' is not a card of the table: did you mean \"RTX 4090\"?"),
    ("24 GB", "--card: card='24 GB' reads as 24,000,000,000 bytes"),
    ("500 MiB", "--card '500 MiB': a 500 MiB card less 610.00 MiB for the CUDA context"),
])
def test_a_bad_card_is_a_usage_error_naming_it_before_estimating(given, said, tmp_path, capsys):
    """The lookup and the messages of a marker's card=; a card its context leaves nothing of is refused too."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--cuda", "--card", given, S5_SPEC, "--json", str(tmp_path / "est.json")])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "est.json").exists()


def test_a_card_without_cuda_mode_is_a_usage_error(tmp_path, capsys):
    """A CPU estimate is host RAM: held against a GPU's memory it would answer nothing."""
    with pytest.raises(SystemExit) as stopped:
        cli(["--card", "T4", S5_SPEC, "--json", str(tmp_path / "est.json")])
    assert stopped.value.code == 2
    assert "--card 'T4' holds a GPU estimate against the card: it needs --cuda" in capsys.readouterr().err


def test_the_verdict_is_on_allocated_memory_and_says_where_reserved_stands():
    room = CardRoom(Card("T4", T4), 500 * MiB, measured=True)
    limit = T4 - 500 * MiB
    assert verdict(row(limit - GiB, limit + MiB), room) == (
        f"a: the estimated allocated peak, {format_size(limit - GiB)}, fits with 1.00 GiB to spare; the estimated "
        f"reserved peak, {format_size(limit + MiB)}, is over it")
    assert "does not fit: 1.00 GiB over" in verdict(row(limit + GiB, None), room)
    assert verdict(row(None, None, estimate=GiB), room).startswith("a: the estimated allocated peak, 1.00 GiB, fits")


def test_a_margin_inside_the_estimates_own_error_is_too_close_to_call():
    """The estimate missed measured runs by up to MISS_UNDER of the peak (under) and MISS_OVER (over): a peak that
    fits by less, or is over by less, is not answered as fitting or not."""
    room = CardRoom(Card("T4", T4), 500 * MiB, measured=True)
    limit = T4 - 500 * MiB
    close = round(limit / (1 + MISS_UNDER / 2))  # fits by half the largest under-estimate: a run could still not fit
    said = verdict(row(close, None), room)
    assert said == (f"a: the estimated allocated peak, {format_size(close)}, fits by {format_size(limit - close)}, "
                    f"less than the estimate's error ({format_size(round(close * MISS_UNDER))}: it has been "
                    f"{MISS_UNDER:.1%} under a measured run, docs/estimator-cuda.md): too close to call")
    over = round(limit * (1 + MISS_OVER / 2))
    assert verdict(row(over, None), room).startswith(
        f"a: the estimated allocated peak, {format_size(over)}, is over by {format_size(over - limit)}, less than the "
        f"estimate's error ({format_size(round(over * MISS_OVER))}: it has been {MISS_OVER:.1%} over")
    clear = round(limit / (1 + 2 * MISS_UNDER))
    assert f"fits with {format_size(limit - clear)} to spare" in verdict(row(clear, None), room)


def test_a_saved_estimate_renders_with_its_card(tmp_path, capsys):
    room = CardRoom(Card("T4", T4), CONTEXT_ALLOWANCE, measured=False)
    saved = tmp_path / "v.json"
    saved.write_text(json.dumps({"scale": "tiny", "device": "cuda (modelled)", "cases": {}, "card": room.to_json(),
                                 "estimates": [row(GiB, 2 * GiB).to_json()]}))
    assert cli(["--render", str(saved)]) == 0
    assert card_lines([row(GiB, 2 * GiB)], room) in capsys.readouterr().out
