"""The checkers of README's figures, and of those of the docs/ pages its sections moved to.

Each checker recomputes one paragraph's figures from benchmarks/results/*.json (with
the benchmark scripts' own section computations where they have them), asserts that its document shows them and
returns what it verified; test_figure_sweep.py fails on any figure no checker returned, and
test_readme_figures.py runs each checker as a test.
When a report is re-measured, a failing checker's message is the text to put in the document.
The checkers keep the `readme_` names they had while their paragraphs were in README.md; DOC_CHECKERS
says which document each reads.
"""

import inspect
import re
import statistics
from itertools import pairwise
from pathlib import Path

from doc_checkers import (
    declaring_card_exploration,
    declaring_cards,
    declaring_command_noise,
    declaring_growth,
    declaring_growth_arenas,
    declaring_growth_long,
    declaring_growth_s5,
    declaring_growth_sawtooths,
)
from doc_figures import ROOT, GiB, MiB, document, load, report, section, shows, words

README = "README.md"
DECLARING = "docs/declaring.md"
REAL_SCALE = "docs/real-scale.md"
FIXES = "docs/fixes.md"
MEASURING = "docs/measuring.md"
BASELINES = "docs/baselines.md"
BENCHMARKS = "docs/benchmarks.md"
CI = "docs/ci.md"


def _mib(nbytes: float) -> str:
    return f"{nbytes / MiB:.1f}"


def _case_name(case: str) -> str:
    """A benchmark's case label ("s1 truncate") as the docs write it ("S1 truncated")."""
    scenario, label = case.split(" ", 1)
    return f"{scenario.upper()} " + {"as-reported": "as reported", "truncate": "truncated"}.get(label, label)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _slash(rows: list[dict], key: str) -> str:
    """The distinct values of a design knob over a benchmark's rows, as '16/64/512'."""
    return "/".join(str(v) for v in sorted({r[key] for r in rows}))


def _and(items: list) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- Quick start: the terminal table ------------------------------------------------------------------

SUITE_TINY = "benchmarks/results/suite-tiny-all.report.json"
EXCERPT = ("memtests/test_s1_wav2vec2.py::test_as_reported::as-reported",
           "memtests/test_s1_wav2vec2.py::test_fixed_truncate::truncate",
           "memtests/test_s3_qwen2_audio.py::test_as_reported::as-reported",
           "memtests/test_s5_generic_oom.py::test_as_reported::as-reported",
           "memtests/test_s5_generic_oom.py::test_fixed_smaller_batch::smaller_batch",
           "memtests/test_s5_generic_oom.py::test_fix[amp]::amp")


class _Terminal:
    """Stands in for pytest's terminal reporter: keeps what the gate writes."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def section(self, title: str) -> None:
        self.lines.append(f"== {title} ==")

    def write_line(self, line: str, **_: object) -> None:
        self.lines.append(line)

    def getreports(self, name: str) -> list:
        return []


def terminal_excerpt() -> str:
    """What the gate prints for the EXCERPT rows of the committed tiny run: its hardware and setup lines, the table."""
    from gpu_budget.model.hardware import Hardware
    from gpu_budget.report.terminal import terminal_table
    from gpu_budget.session import outputs
    from gpu_budget.session.data import SessionData
    from gpu_budget.session.options import Options

    rows, data = report(SUITE_TINY)
    rows = [r for r in rows if r.nodeid in EXCERPT]
    assert len(rows) == len(EXCERPT)
    terminal = _Terminal()
    options = Options(enabled=True, update=False, baselines=Path("baselines"), scale="tiny", json=None, timeout=900,
                      threads=1, preload=())
    outputs.terminal_summary(terminal, SessionData(rows=rows, hardware=Hardware.read(data["hardware"])), options, [], [],
                             None)
    head = [line for line in terminal.lines if line.startswith(("hardware ", "setup: "))]
    assert terminal_table(rows) in terminal.lines
    return "\n".join([*head, terminal_table(rows)])


def readme_terminal_table() -> list[str]:
    block = terminal_excerpt()
    readme = document(README)
    assert block in readme, f"README's Quick start should show the gate's excerpt:\n{block}"
    return [block]


# -- docs/real-scale.md: real scale on CPU ------------------------------------------------------------

def _json_of(part: dict) -> str:
    return re.search(r"--gpu-budget-json (\S+)", part["command"]).group(1)


def _scenario_of(part: dict) -> str:
    """'S1' for a part that ran memtests/test_s1_wav2vec2.py (or one of its tests)."""
    return re.search(r"test_(s\d)_", part["selection"][0]).group(1).upper()


def real_s1_as_reported() -> tuple[int, int]:
    """S1 as reported at real scale, from the real suite's S1 report: its gated peak and its clip length."""
    from benchmarks.suite import counted_real_parts

    part = next(p for p in counted_real_parts(load("benchmarks/results/suite.json")) if _scenario_of(p) == "S1")
    rows, _ = report(_json_of(part))
    row = next(r for r in rows if r.nodeid.endswith("::test_as_reported::as-reported"))
    return row.peaks.gated_ram, row.info["clip_seconds"][0]


def s5_search() -> dict:
    """The note of S5's search for its largest batch, from the latest real part whose report holds one."""
    parts = sorted((p for p in load("benchmarks/results/suite.json")["parts"] if p["part"] == "real"), key=lambda p: p["date"])
    notes = [n for p in parts for n in load(_json_of(p)).get("notes", [])
             if n["nodeid"].endswith("::test_largest_batch_within_budget")]
    assert notes, "no real-scale report holds S5's largest-batch note"
    return notes[-1]["data"]


def readme_real_scale_run() -> list[str]:
    from benchmarks.suite import counted_real_parts

    text = section(REAL_SCALE, "# Real scale on CPU")
    peak, clip = real_s1_as_reported()
    parts = sorted(counted_real_parts(load("benchmarks/results/suite.json")), key=_scenario_of)
    each = ", ".join(f"{_scenario_of(p)} {p['wall_s'] / 60:.0f} min" for p in parts)
    return shows(text,
                 f"the S1 children peak at {peak / GiB:.0f} GiB (as reported: {clip} s clips, {peak / GiB:.2f} GiB",
                 f"the real sessions took {each} ({sum(p['wall_s'] for p in parts) / 60:.0f} min of sessions in all), "
                 f"S5's search for the largest batch within budget included ({s5_search()['runs']} real runs)")


# -- docs/declaring.md: the write-ups' cards in GiB ---------------------------------------------------

def readme_card_sizes() -> list[str]:
    from gpu_budget.units import parse_size

    text = section(DECLARING, "- A VRAM budget above the GPU's total memory", "- `origin=`")
    return shows(text, f'"24 GB" is {parse_size("24 GB") / GiB:.1f} GiB', f'"80 GB" {parse_size("80 GB") / GiB:.1f} GiB')


# -- docs/fixes.md: fix library and remediation -------------------------------------------------------

def _close(text: str, nbytes: int) -> bool:
    """A size as docs/fixes.md prints it (one decimal in MiB, two in GiB) against the report's bytes."""
    number, unit = text.split()
    step = 0.05 * MiB if unit == "MiB" else 0.005 * GiB
    return abs(float(number) * {"MiB": MiB, "GiB": GiB}[unit] - nbytes) <= step


def _gated(peaks: dict) -> int:
    return peaks.get("ram_tree") or peaks["ram"]


SCENARIO_CELL = {  # what the table says of each case, with the knobs its report records
    "test_s1_wav2vec2.py": lambda i: f"S1 wav2vec2 ({i['clip_seconds'][0]} s clips, untruncated)",
    "test_s1_workers.py": lambda i: f"S1 with {i['dataloader_workers']} DataLoader workers (dataset in memory)",
    "test_s2_paraformer.py": lambda i: "S2 Paraformer (dynamic batches, long clips)",
    "test_s3_qwen2_audio.py": lambda i: "S3 Qwen2-Audio (new tokens, modules_to_save)",
    "test_s4_wrap_order.py": lambda i: "S4 wrap before PEFT (8-bit, LoRA)",
    "test_s5_generic_oom.py": lambda i: f"S5 generic OOM (batch {i['batch_size']})",
    "test_several_ranks.py": lambda i: f"Several ranks: DDP on {i['world']} ranks (torchrun, per rank)",
}


def readme_remediation_table() -> list[str]:
    rep = load("benchmarks/results/remediation-tiny.report.json")
    doc = document(FIXES)
    table = doc[doc.index("| scenario | budget | as reported | passing set found |"):].split("\n\n")[0]
    lines = table.splitlines()[2:]
    assert len(lines) == len(rep["results"])
    for line, row in zip(lines, rep["results"], strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        rem = row["remediation"]
        assert cells[0] == SCENARIO_CELL[row["nodeid"].split("::")[0].split("/")[-1]](row["info"]), (cells, row["nodeid"])
        assert _close(cells[1].removeprefix("RAM "), row["budget"]["ram"]), (cells, row["nodeid"])
        assert _close(cells[2], _gated(row["peaks"])), (cells, row["nodeid"])
        assert re.findall(r"`([^`]+)`", cells[3].split(" replacing ")[0]) == rem["found"]
        assert _close(cells[4], _gated(rem["peaks"]))
        assert cells[5] == f"{rem['runs']} ({rem['bound']})"
        for tried in rem["tried"][:-1]:
            shown = f"{'+'.join(tried['fixes'])} {_gated(tried['peaks']) / MiB:.1f}"
            assert shown in cells[6], (shown, cells[6])
    return lines


REMEDIATION_EXAMPLE = ("memtests/test_s1_wav2vec2.py::test_as_reported::as-reported",
                       "memtests/test_s5_generic_oom.py::test_as_reported::as-reported")


def remediation_excerpt() -> str:
    """What the gate prints of the REMEDIATION_EXAMPLE cases' searches (gpu_budget.report.terminal.remediation_lines)."""
    from gpu_budget.report.terminal import remediation_lines

    rows, _ = report("benchmarks/results/remediation-tiny.report.json")
    return "\n".join(remediation_lines([r for r in rows if r.nodeid in REMEDIATION_EXAMPLE]))


def readme_remediation_example() -> list[str]:
    block = remediation_excerpt()
    assert block in document(FIXES), f"{FIXES}'s remediation example should show:\n{block}"
    return [block]


# -- docs/measuring.md: how it measures ---------------------------------------------------------------

def _isolation() -> dict:
    """Per case of benchmarks/results/isolation.json: median seconds per way and the runs behind them."""
    iso = load("benchmarks/results/isolation.json")
    return {c["case"]: {w: (statistics.median(v["seconds"]), len(v["seconds"])) for w, v in c["ways"].items()}
            for c in iso["cases"]}


ISOLATION_CASES = {"trivial (one phase, a 4 MiB tensor)": "a trivial case", "S1 truncate, tiny": "S1 truncated at tiny scale"}


def readme_isolation_step() -> list[str]:
    iso, cases = load("benchmarks/results/isolation.json"), _isolation()
    trivial = cases["trivial (one phase, a 4 MiB tensor)"]
    (fork, n_fork), (fresh, n_fresh) = trivial["forkserver"], trivial["fresh"]
    assert n_fork == n_fresh
    return shows(section(MEASURING, "# How it measures", "2. **Host RAM.**"),
                 f"a trivial case took {fork:.2f} s in a forkserver child against {fresh:.2f} s in a fresh interpreter "
                 f"paying its own imports, medians of {n_fork} runs each; the forkserver's own start, its preload "
                 f"imported, took {iso['forkserver_start_s']:.1f} s, once per session")


def _session_endings() -> dict:
    """benchmarks/results/session_endings.json (RESULTS 3b) as the docs quote it: endings, sessions each, the slowest
    clean-up and session end, and how many of the sessions at the base commit left their case running."""
    from benchmarks.session_endings import ENDINGS

    data = load("benchmarks/results/session_endings.json")
    this = [r for r in data["rows"] if r["side"] == "this"]
    before = [r for r in data["rows"] if r["side"] == "before"]
    reps = {sum(1 for r in this if r["ending"] == e) for e in ENDINGS}
    assert len(reps) == 1 and not any(r["left"] for r in this)
    return {"ways": len(ENDINGS), "each": reps.pop(), "slowest": f"{max(r['gone_s'] for r in this):.2f}",
            "ended": f"{max(r['ended_s'] for r in this):.2f}",
            "linger": f"{data['linger_s']:.0f}", "left": sum(1 for r in before if r["left"]), "before": len(before),
            "commit": data["before"]["commit"][:7]}


def measuring_session_endings() -> list[str]:
    """The early endings sentence of "Isolation"."""
    e = _session_endings()
    return shows(section(MEASURING, "# How it measures", "2. **Host RAM.**"),
                 f"Ended early in {e['ways']} ways, {e['each']} sessions each",
                 f"the last was gone at most {e['slowest']} s after the signal",
                 f"the session itself had ended at most {e['ended']} s after it",
                 f"left its case running {e['linger']} s later in {e['left']} of {e['before']}.")


def benchmarks_session_endings() -> list[str]:
    """The early endings line of docs/benchmarks.md."""
    e = _session_endings()
    return shows(section(BENCHMARKS, "- **Early endings**", "- **Repeatability"),
                 f"sessions ended {e['ways']} ways, {e['each']} sessions each",
                 f"the last was gone at most {e['slowest']} s after the signal",
                 f"the session itself had ended at most {e['ended']} s after it",
                 f"`{e['commit']}`, before the owner watch, run beside it, left its case running {e['linger']} s later "
                 f"in {e['left']} of {e['before']}.")


def readme_process_tree() -> list[str]:
    from benchmarks.tree_spikes import UssSampler, tree_totals
    from gpu_budget.measure.tree import ProcessTree

    tree = load("benchmarks/results/fidelity.json")["tree"]
    totals, rows = tree_totals(tree), tree["rows"]
    worst_rest = max((r for r in rows if r.get("truth_at_rest")), key=lambda r: abs(r["rest_hwm_sum"] - r["truth_at_rest"]))
    polled = inspect.signature(ProcessTree.__init__).parameters["interval"].default
    sampler = inspect.signature(UssSampler.__init__).parameters["interval"].default
    t = totals["tree"]
    return shows(section(MEASURING, "3. **Host RAM of the process tree.**", "4. **GPU.**"),
                 f"(+{(worst_rest['rest_hwm_sum'] - worst_rest['truth_at_rest']) / MiB:.0f} MiB at rest with "
                 f"{worst_rest['workers']} workers of a {tree['base_mib']} MiB parent)",
                 f"reads them every {_ms(polled)}",
                 f"Planted {_and(sorted({r['mib'] for r in rows}))} MiB spikes held {_and(sorted({r['ms'] for r in rows}))} ms "
                 f"in {_and(sorted({r['workers'] for r in rows}))} workers",
                 f"within {abs(t['worst']):.1f} MiB of the truth, {words(t['missed'])} missed of {t['spikes']} "
                 f"(a {_ms(sampler)} sampler missed {totals['sampled']['missed']};")


def readme_command_tree() -> list[str]:
    from gpu_budget.measure.tree import ProcessTree

    polled = inspect.signature(ProcessTree.__init__).parameters["interval"].default
    return shows(section(DECLARING, "## Gate your training script"),
                 f"read and reset every {_ms(polled)}")


def readme_nvml_interval() -> list[str]:
    from gpu_budget.measure.nvml import SAMPLE_SECONDS

    return shows(section(MEASURING, "4. **GPU.**", "5. **Series.**"), f"sampled every {SAMPLE_SECONDS * 1000:.0f} ms")


def measuring_xdist_shutdown() -> list[str]:
    """How xdist's shutdown treats a busy worker: execnet's wait before it interrupts the worker, and xdist's before it
    kills one, read from the installed packages' own source."""
    from execnet.gateway_base import WorkerGateway
    from xdist.workermanage import NodeManager

    wait = re.search(r"waitall\(([\d.]+)\)", inspect.getsource(WorkerGateway._terminate_execution))
    assert wait is not None, "execnet's worker no longer waits a fixed time before it interrupts itself"
    return shows(section(MEASURING, "# How it measures", "2. **Host RAM.**"),
                 f"execnet waited {float(wait.group(1)):.0f} s for its busy test and then interrupted it, and xdist kills "
                 f"a worker still there after {NodeManager.EXIT_TIMEOUT} s")


# -- docs/baselines.md: baselines and tolerance -------------------------------------------------------

def _tol(tol) -> str:
    return f"{tol.rel * 100:.1f} % + {tol.abs / MiB:.0f} MiB"


def tiny_spread_table() -> str:
    """docs/baselines.md's spread table: each steady configuration of the repeatability report."""
    from benchmarks.repeatability import spreads

    rows = sorted((r for r in spreads(load("benchmarks/results/repeatability.json")) if r["malloc"] == "steady"),
                  key=lambda r: r["case"])
    return "\n".join(["| configuration | fresh sessions | spread of the RAM peak |", "|---|---|---|"]
                     + [f"| {_case_name(r['case'])} | {r['n']} | {_mib(r['spread'])} MiB ({r['spread_rel'] * 100:.2f} %) |"
                        for r in rows])


def readme_tiny_tolerance() -> list[str]:
    from benchmarks.detection_power import PREVIOUS_DEFAULT, detection_counts
    from benchmarks.repeatability import spreads
    from gpu_budget.declare.marks import DEFAULT_TOLERANCE as TOL

    text = section(BASELINES, "# Baselines and tolerance", "At real scale the spread")
    rep = load("benchmarks/results/repeatability.json")
    steady = [r for r in spreads(rep) if r["malloc"] == "steady"]
    low = min(steady, key=lambda r: r["median"])
    allowed, plant = TOL.limit(low["median"]) - low["median"], 0.02 * low["median"]
    widest = max(steady, key=lambda r: r["spread"])
    assert widest["case"] == "s5 as-reported"  # "The widest, S5 as reported, is two-valued"
    runs = [r for r in rep["runs"] if r["case"] == widest["case"] and r["malloc"] == "steady"]
    peaks = sorted(r["peaks"]["ram"] for r in runs)
    step = max(b - a for a, b in pairwise(peaks))
    assert step >= 0.8 * widest["spread"] and sum(p > peaks[0] + step / 2 for p in peaks) == 2  # "two ... above the other three"
    assert len(peaks) == 5 and len({r["peaks"]["ram_tensor"] for r in runs}) == 1  # "with the same tensor bytes"
    assert plant > allowed  # "still fails"
    det = load("benchmarks/results/detection.json")
    now, before = detection_counts(det, TOL.rel, TOL.abs), detection_counts(det, *PREVIOUS_DEFAULT)
    planted = [f for f in det["fractions"] if f]
    runs = {n for _, n, _ in now.values()}
    assert len(runs) == 1
    n = runs.pop()
    assert {now[(c, f)][0] for c in det["baselines"] for f in planted} == {n}  # "flagged n of n times each"
    assert {now[(c, 0)][0] for c in det["baselines"]} == {0}  # "no false alarm"
    missed_before = {before[(c, planted[0])][0] for c in det["baselines"]}
    assert len(missed_before) == 1
    return shows(text,
                 f"The default tolerance is **{_tol(TOL)}**",
                 tiny_spread_table(),
                 f"the tolerance allows {(TOL.limit(widest['median']) - widest['median']) / widest['spread']:.1f}x it there",
                 f"At the smallest tiny peak (~{low['median'] / MiB:.0f} MiB) the tolerance allows {_mib(allowed)} MiB, "
                 f"{allowed / low['spread']:.0f}x the spread there, and a +2 % regression ({plant / MiB:.0f} MiB) still fails: "
                 f"planted retained allocations of {_and([f'+{f * 100:.0f}' for f in planted])} % were flagged {n} of {n} "
                 f"times each on {_and([c.split()[0].upper() for c in det['baselines']])}, with no false alarm in {n} "
                 f"clean sessions",
                 f"the previous default, {PREVIOUS_DEFAULT[0] * 100:.0f} % + {PREVIOUS_DEFAULT[1] / MiB:.0f} MiB, caught "
                 f"+{planted[0] * 100:.0f} % {missed_before.pop()} of {n} times on each")


def readme_plugin_test() -> list[str]:
    source = (ROOT / "tests/integration/test_plugin.py").read_text()
    divisor = int(re.search(r'"PLANT": str\(peak // (\d+)\)', source).group(1))
    return shows(section(BASELINES, "# Baselines and tolerance", "At real scale the spread"),
                 f"`tests/integration/test_plugin.py` also fails a planted +{100 / divisor:.0f} % through the whole plugin")


def _median(xs: list[int]) -> float:
    return statistics.median(xs)


def readme_real_scale_spreads() -> list[str]:
    from benchmarks.repeatability import MARGIN
    from gpu_budget.declare.marks import default_tolerance

    text = section(BASELINES, "At real scale the spread", "## Why peaks repeat")
    rep = load("benchmarks/results/repeatability.json")["real"]
    tol, ratios, shown = default_tolerance("real"), [], []
    for case in sorted({r["case"] for r in rep["runs"]}):
        peaks = [r["peaks"]["ram"] for r in rep["runs"] if r["case"] == case]
        spread, median = max(peaks) - min(peaks), _median(peaks)
        shown.append(f"{_case_name(case)} {_mib(spread)} MiB ({spread / median * 100:.2f} % of {median / GiB:.2f} GiB)")
        ratios.append((tol.limit(median) - median) / spread)
    s1, _ = real_s1_as_reported()
    return shows(text,
                 f"section 4, \"Real scale\": {rep['sessions']} fresh",
                 ", ".join(shown),
                 f"at least {MARGIN}x the widest relative spread rounded up to a half percent, gives the same **{_tol(tol)}**",
                 f"it allows each case at least {min(ratios):.1f}x its spread",
                 f"lowered the peak by more than {_tol(tol)}",
                 f"S1 as reported (~{s1 / GiB:.0f} GiB) was not repeated")


def _repeat_peaks(case: str, malloc: str = "steady") -> list[int]:
    rep = load("benchmarks/results/repeatability.json")
    return [r["peaks"]["ram"] for r in rep["runs"] if r["case"] == case and r["malloc"] == malloc]


def readme_allocator() -> list[str]:
    from gpu_budget.isolate.child import _STEADY_BYTES

    para = section(BASELINES, "## Why peaks repeat", "## Across machines")
    system, steady = _repeat_peaks("s1 as-reported", "system"), _repeat_peaks("s1 as-reported")
    fell = 1 - _median(steady) / _median(system)
    fell_truncated = 1 - _median(_repeat_peaks("s1 truncate")) / _median(_repeat_peaks("s1 truncate", "system"))
    return shows(para,
                 f"{_mib(min(system))}-{_mib(max(system))} MiB over {len(system)} fresh sessions",
                 f"at their {_STEADY_BYTES // 1024} KiB starting values",
                 f"{_mib(min(steady))}-{_mib(max(steady))} MiB over {len(steady)} fresh sessions",
                 f"fell {fell * 100:.1f} % (S1 truncated: {fell_truncated * 100:.1f} %)",
                 f"+{(_median(system) / _median(steady) - 1) * 100:.1f} % at the median")


# -- docs/baselines.md: across machines ---------------------------------------------------------------

def baselines_across_cpus() -> list[str]:
    """The CPU model's paragraph: the committed sessions' CPUs, range, the cases lower in every session, spread and
    the +2 % plants that would pass (RESULTS 7b)."""
    from benchmarks.across_cpus import cases

    run = load("benchmarks/results/across_cpus.json")
    rows = cases(run)
    quiet = {q for c in rows for q in c["quiet"]} | {q for s in run["sessions"] for r in s["rows"]
                                                      for q in ((r.get("setup") or {}).get("quiet") or [])}
    assert quiet == {"cpu AMD EPYC -> Intel(R) Xeon(R) Processor"}, quiet  # the only difference, then kept quiet
    assert run["sessions"][0]["hardware"]["cpu"] == "Intel(R) Xeon(R) Processor"
    shares = [100 * s for c in rows for s in c["shares"]]
    spread = max(max(c["changes_mib"]) - min(c["changes_mib"]) for c in rows)
    missed = sum(not c["plant_caught"] for c in rows)
    lower = sum(all(x < 0 for x in c["changes_mib"]) for c in rows)
    venvs = [s["venv"] for s in run["sessions"]]
    assert len(venvs) == 5 and venvs.count(venvs[0]) == 3 and venvs[3] == venvs[4] != venvs[0], venvs
    assert "fresh clone" in venvs[3] and "README command" in venvs[3]
    first = [c for c in rows if all(x < 0 for x in c["changes_mib"][:3])]  # lower in the first venv's sessions ...
    both = [c for c in first if all(x < 0 for x in c["changes_mib"][3:])]  # ... and in the fresh clone's: shared
    between = statistics.median(statistics.mean(c["changes_mib"][3:]) - statistics.mean(c["changes_mib"][:3])
                                for c in rows)
    return shows(section(BASELINES, "## Across machines", "## Re-recording the baselines"),
                 "five fresh sessions of the\ntiny gate on an Intel Xeon runner, three in one venv and two in a fresh "
                 "clone's\nvenv made by the README command, read "
                 f"{min(shares):+.2f}% .. {max(shares):+.2f}% (RESULTS.md section 7b),\n{lower} of the {len(rows)} "
                 f"cases lower in every session, while a case moved at most\n{spread:.2f} MiB between the sessions",
                 f"Of the {len(first)} cases lower in\nevery session of the first venv, {len(both)} are lower in both of the "
                 f"fresh clone's,\nwhose sessions read a median {between:.2f} MiB from the first venv's",
                 f"a +2 % plant would have passed\n{missed} of the {len(rows)} cases on that runner")


def readme_setups() -> list[str]:
    from benchmarks.common import span
    from benchmarks.setups import setup_gate_rows

    su = load("benchmarks/results/setups.json")
    rows = setup_gate_rows(su["gate"])
    text = section(BASELINES, "## Across machines", "## Re-recording the baselines")
    foreign = [n for n, r in rows.items() if "foreign" in r["policies"]]
    assert len(foreign) == 1
    native = su["gate"][foreign[0]]["rows"]
    higher = max((r for r in native if r.get("baseline") and r["peaks"].get("ram")),
                 key=lambda r: r["peaks"]["ram"] - r["baseline"]["ram"])
    assert higher["nodeid"].startswith("memtests/test_s1_")  # "S1's tiny cases"
    extras = [r["shifts"] for r in rows.values() if "floor" in r["policies"]]
    assert len(extras) == 1 and len(extras[0]) == 1
    tensor = max(abs(b) for r in rows.values() for b in r["tensor_bytes"])
    cases = {r["n"] for r in rows.values()}
    assert len(cases) == 1
    compared = [d for r in rows.values() if "foreign" not in r["policies"] for d in r["deltas"]]
    det = su["detection"]
    fraction = next(iter(det.values()))["fraction"]
    runs = [x for d in det.values() for x in d["runs"]]
    tensors = [x for x in runs if x["kind"] == "tensor"]
    assert not any(x["verdict"] == "regression" for x in runs if x["kind"] == "clean")  # "no clean run was flagged"
    no_avx2 = [x for x in det["no-avx2-host"]["runs"] if x["case"] == "s1 truncate"]
    lower = statistics.median(x["change"]["ram"] for x in no_avx2 if x["kind"] == "clean")
    hidden = [x for x in no_avx2 if x["kind"] == "bytes"]
    return shows(text,
                 f"peaked up to {max(rows[foreign[0]]['deltas']):.1f} MiB ({max(rows[foreign[0]]['changes']['ram']) * 100:.1f} %) "
                 "higher with AVX-512 kernels",
                 f"{extras[0][0]:.1f} MiB more on a machine that has them",
                 f"within {tensor} bytes of the baselines on every setup tried",
                 f"the clean peaks of all {cases.pop()} cases stayed within {span(compared, '+.1f')} MiB of the baselines",
                 f"a planted +{fraction * 100:.0f} % tensor was flagged {sum(x['verdict'] == 'regression' for x in tensors)} "
                 f"of {len(tensors)} times in {len(det)} setups, and no clean run was flagged",
                 f"runs S1 about {abs(lower) * 100:.1f} % lower, which hid a planted +{fraction * 100:.0f} % of non-tensor "
                 f"bytes in S1 ({sum(x['verdict'] == 'regression' for x in hidden)} of {len(hidden)} flagged;")


# -- docs/benchmarks.md -------------------------------------------------------------------------------

def readme_spikes() -> list[str]:
    from benchmarks.fidelity import tool_totals
    from benchmarks.spikes import PsutilSampler

    fid = load("benchmarks/results/fidelity.json")
    totals = tool_totals(fid)
    errors = sorted([((r["seen"] - r["mib"] * MiB) / MiB, r) for r in fid["rows"] if r["tool"] == "meter"],
                    key=lambda e: e[0])
    worst, first = errors[-1]
    within = max(abs(e) for e, _ in errors[:-1])
    assert worst > within and first["kind"] == "torch" and first["rep"] == 0  # one over-read, the process's first torch one
    psutil = totals["psutil"]
    interval = inspect.signature(PsutilSampler.__init__).parameters["interval"].default
    return shows(section(BENCHMARKS, "- **Spikes**", "- **Overhead on an S1 step**"),
                 f"({_slash(fid['rows'], 'mib')} MiB held {_slash(fid['rows'], 'ms')} ms, {_and(sorted({r['kind'] for r in fid['rows']}))}, "
                 f"{fid['reps']} each): the meter's error stayed within {within:.1f} MiB with "
                 f"{totals['meter']['missed'] or 'no'} misses (one {worst:+.1f} MiB over-read",
                 f"a {interval * 1000:.0f} ms psutil thread missed {psutil['missed']} of {psutil['n']} and was off by up to "
                 f"{abs(psutil['worst']):.0f} MiB; transformers' `TrainerMemoryTracker` missed {words(totals['tracker']['missed'])}")


def overhead_sentence() -> str:
    """docs/benchmarks.md's overhead figures, as benchmarks/overhead.py computes them from the committed overhead.json."""
    from benchmarks.overhead import _iv, _order, overhead_ratios

    ov = load("benchmarks/results/overhead.json")
    ratios, parts = overhead_ratios(ov), []
    for scale in ("real", "tiny"):
        res, tools = ov["scales"][scale], ratios[scale]
        reps = len({r["rep"] for r in res["runs"]})
        loads = [r["load_average"] for r in res["runs"] if "load_average" in r]
        where = f"{reps} repetitions, {_order(res)} order" + (f", load {min(loads):.1f}-{max(loads):.1f}" if loads else "")
        named = {"meter": "the meter", "memray": "memray", "tracker": "`TrainerMemoryTracker`'s busy loop"}
        parts.append(f"at {scale} scale ({where}) " + ", ".join(f"{named[t]} {_iv(tools[t]['step_iv'])}"
                                                                for t in named if t in tools))
    return "; ".join(parts) + "."


def readme_overhead() -> list[str]:
    """The sentence, and the reading after it: real intervals hold 1.00x, tiny ones do not, the meter's lowest."""
    from benchmarks.overhead import overhead_ratios

    ratios = overhead_ratios(load("benchmarks/results/overhead.json"))
    intervals = {scale: {t: v["step_iv"] for t, v in tools.items() if v["step_iv"]} for scale, tools in ratios.items()}
    assert all(iv["low"] <= 1 <= iv["high"] for iv in intervals["real"].values())
    assert all(iv["low"] > 1 for iv in intervals["tiny"].values())
    assert min(intervals["tiny"], key=lambda t: intervals["tiny"][t]["geomean"]) == "meter"
    return shows(section(BENCHMARKS, "# Benchmarks"), overhead_sentence(),
                 "at real scale both do; the quiet tiny run shows every tool's cost, the meter's the smallest")


def readme_benchmarks_isolation() -> list[str]:
    iso, cases = load("benchmarks/results/isolation.json"), _isolation()
    parts = []
    for case, name in ISOLATION_CASES.items():
        (fork, n), (fresh, _) = cases[case]["forkserver"], cases[case]["fresh"]
        parts.append(f"{fork:.2f} s against {fresh:.2f} s for {name} ({n} runs)")
    return shows(section(BENCHMARKS, "- **Isolation**", "- **Repeatability and detection**"),
                 f"per case (medians), a forkserver child against a fresh interpreter: {', '.join(parts)}; the "
                 f"forkserver itself starts once per session ({iso['forkserver_start_s']:.1f} s, its preload imported)")


def readme_suite_time() -> list[str]:
    from benchmarks.suite import counted_real_parts

    su = load("benchmarks/results/suite.json")
    tiny = [p for p in su["parts"] if p["part"] == "tiny"]
    load_ = [p for p in su["parts"] if p["part"] == "tiny-load"]
    before = [p for p in su["parts"] if p["part"].startswith("tiny@")]
    probes = [p for p in su["parts"] if p["part"] == "probes"]
    assert len(tiny) == len(load_) == len(before) == len(probes) == 1
    real = counted_real_parts(su)
    return shows(section(BENCHMARKS, "- **Suite time**"),
                 f"the tiny gate (`-n 2`) took {tiny[0]['wall_s'] / 60:.1f} min ({tiny[0]['summary'].split(' in ')[0]}; "
                 f"the machine's 1-minute load average {tiny[0]['load_average_start']:.1f} at its start), against "
                 f"{load_[0]['wall_s'] / 60:.1f} min for the same gate with xdist's default scheduler asked for "
                 f"(`--dist load`), run beside it, and {before[0]['wall_s'] / 60:.1f} min for the gate at "
                 f"`{before[0]['ref']}`, before its tiny runs were shortened, run the same hour (section 6 gives the runs "
                 f"of that before and after); the probes (`--gpu-budget-probes -m gpu_budget_probe`) took "
                 f"{probes[0]['wall_s'] / 60:.1f} min on their own. The real-scale CPU cases took "
                 f"{sum(p['wall_s'] for p in real) / 60:.0f} min")


def readme_gate_order() -> list[str]:
    """The order's before and after, as benchmarks/gate_order.py computes them from the committed gate_order.json."""
    from benchmarks.gate_order import figures

    f = figures(load("benchmarks/results/gate_order.json"))
    assert f["same"] and f["after"]["wall"] < f["before"]["wall"]
    ratio = f["ratio"]
    return shows(section(BENCHMARKS, "- **Suite time**"),
                 f"(section 6c, {f['rounds']} rounds alternating with the gate before the change) took the median from "
                 f"{f['before']['wall']:.1f} s to {f['after']['wall']:.1f} s, {ratio['geomean']:.3f}x per round "
                 f"({ratio['low']:.3f} .. {ratio['high']:.3f}), every row's verdict unchanged: one worker no longer sits "
                 f"idle for {f['before']['idle']:.1f} s (median) at the end")


# -- docs/ci.md: adding the gate to a repository ------------------------------------------------------

def readme_checkpoints() -> list[str]:
    from benchmarks.checkpoint_build import checkpoint_extrapolation

    built = sorted(checkpoint_extrapolation(load("benchmarks/results/checkpoint_build.json")), key=lambda r: r["scenario"])
    assert [r["scenario"] for r in built] == ["s3", "s4"]
    sizes = [f"{r['full_bytes'] / GiB:.1f}" for r in built]
    return shows(section(CI, "# Adding the gate to a repository", "## Runner labels"),
                 f"(S3's and S4's real checkpoints: {_and(sizes)} GiB, "
                 "extrapolated in benchmarks/RESULTS.md section 9)")


def readme_plot() -> list[str]:
    rows, _ = report(SUITE_TINY)
    row = next(r for r in rows if r.nodeid == "memtests/test_s3_qwen2_audio.py::test_as_reported::as-reported")
    over = next(p for p in row.phases.values() if p.ram_tree_peak > row.budget.ram)
    assert over.step == 1  # "at the first optimizer step"
    return shows(section(CI, "## Reading the summary"),
                 f"breaks its {row.budget.ram / GiB:g} GiB budget at the first optimizer step")


README_CHECKERS = (readme_terminal_table,)
DOC_CHECKERS = {  # the docs/ pages README's sections moved to, each with the checkers of its figures
    DECLARING: (readme_card_sizes, readme_command_tree, declaring_command_noise, declaring_growth, declaring_growth_long, declaring_growth_s5,
                declaring_growth_arenas, declaring_growth_sawtooths, declaring_cards,
                declaring_card_exploration),
    REAL_SCALE: (readme_real_scale_run,),
    FIXES: (readme_remediation_table, readme_remediation_example),
    MEASURING: (readme_isolation_step, measuring_session_endings, measuring_xdist_shutdown, readme_process_tree,
                readme_nvml_interval),
    BASELINES: (readme_tiny_tolerance, readme_plugin_test, readme_real_scale_spreads, readme_allocator, readme_setups,
                baselines_across_cpus),
    BENCHMARKS: (readme_spikes, readme_overhead, readme_benchmarks_isolation, benchmarks_session_endings,
                 readme_suite_time, readme_gate_order),
    CI: (readme_checkpoints, readme_plot),
}
