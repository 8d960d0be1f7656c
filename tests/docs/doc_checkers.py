"""The checkers of docs/*.md figures (README's and the pages its sections moved to: readme_checkers.py;
docs/estimator.md's: estimator_checkers.py).

Each checker recomputes a paragraph's figures from a committed report (or the script whose
constant it quotes), asserts the document shows them and returns what it verified, for the
sweep (test_figure_sweep.py). A plain module, not a test module: test_docs_figures.py,
test_growth_report.py, test_gpu_results.py and test_estimator_cuda.py run the checkers as tests.
"""

import json
import re

from doc_figures import ROOT, MiB, document, load, report, section, shows, words

STEP_SUMMARY = "docs/step-summary-example.md"
GPU_VALIDATION = "docs/gpu-validation.md"
SUITE_TINY = "benchmarks/results/suite-tiny-all.report.json"


# -- docs/step-summary-example.md ------------------------------------------------------------------------

def step_summary() -> str:
    """What the gate appends to $GITHUB_STEP_SUMMARY for the S3 rows of the committed tiny run."""
    from gpu_budget.report.summary import markdown

    rows, data = report(SUITE_TINY)
    return markdown([r for r in rows if r.nodeid.startswith("memtests/test_s3_qwen2_audio.py::")], data["hardware"])


def step_summary_example() -> list[str]:
    hw = load(SUITE_TINY)["hardware"]
    block = f"```markdown\n{step_summary()}```"
    assert block in document(STEP_SUMMARY), f"{STEP_SUMMARY} should show:\n{block}"
    return [block, *shows(document(STEP_SUMMARY),
                          f"`{hw['key']}`: torch {hw['torch']}, transformers {hw['transformers']}, peft {hw['peft']}, "
                          f"python {hw['python']})")]


# -- docs/gpu-validation.md ------------------------------------------------------------------------------

def gpu_kit_on_cpu() -> list[str]:
    rows, _ = report("benchmarks/results/gpu-kit-on-cpu.report.json")
    shifts = {-r.setup.floor_shift / MiB for r in rows if r.setup and r.setup.floor_shift is not None}
    assert all(s > 0 for s in shifts)  # "below the baselines'"
    assert not any(r.verdict == "regression" for r in rows)  # "no case regressed"
    improved = [r for r in rows if r.verdict == "improved"]
    assert {r.scenario for r in improved} == {"s2_paraformer"}
    lost = [r for r in rows if r.expect == "over-budget" and r.verdict != "over-budget"]
    named = sorted(f"S{r.scenario[1]}" for r in lost)
    assert all(r.label == "as-reported" for r in lost)
    return shows(section(GPU_VALIDATION, "3. The kit, tried on this CPU", "## On the GPU host"),
                 f"Its import floor sat {min(shifts):.1f}-{max(shifts):.1f} MiB below the baselines'",
                 f"{words(len(improved))} S2 cases read \"improved\"",
                 f"{words(len(lost)).capitalize()} reproductions were lost, {' and '.join(named)} as reported")


def gpu_validation_limits() -> list[str]:
    script = (ROOT / "benchmarks/gpu_validation.sh").read_text()
    budget = int(re.search(r"\$\{BUDGET_S:-\$\{PART_BUDGET:-(\d+)\}\}", script).group(1))
    command = int(re.search(r"command\).*PART_BUDGET=(\d+)", script).group(1))
    leak = re.search(r"GPU_BUDGET_PLANT_LEAK_MIB=([\d.]+)", script).group(1)
    skip = int(re.search(r'if \[ "\$left" -lt (\d+) \]', script).group(1))
    return shows(section(GPU_VALIDATION, "## On the GPU host"),
                 f"(`BUDGET_S`, default {budget} s, {command} s for `command`:", f"| {budget / 60:.0f} min |",
                 f"`bash benchmarks/gpu_validation.sh command $OUT` | {command / 60:.0f} min |",
                 f"(`GPU_BUDGET_PLANT_LEAK_MIB={leak}`: the script keeps {leak} MiB of each step's hidden states",
                 f"run 2 is skipped when less than {skip} s is left")


def llamafactory_kit() -> list[str]:
    """S3's LLaMA-Factory part: its trimmed overlay, packed, beside the tree, against what a device call carries."""
    from benchmarks.llamafactory_kit import summary

    data = json.loads((ROOT / "benchmarks/results/llamafactory_kit.json").read_text())
    assert data["overlay_file_matches"] and data["spare_bytes"] >= 0  # the part exists only while its file fits
    return shows(section(GPU_VALIDATION, "## On the GPU host", "## After"), summary(data))


DOCS_CHECKERS = {STEP_SUMMARY: (step_summary_example,),
                 GPU_VALIDATION: (gpu_kit_on_cpu, gpu_validation_limits, llamafactory_kit)}


# -- docs/process-tree.md --------------------------------------------------------------------------------

PROCESS_TREE = "docs/process-tree.md"
TREE_SUM = "benchmarks/results/tree_sum.json"


def process_tree_mechanics() -> list[str]:
    """The poll interval, the shared-page re-read rules: the plugin's own defaults."""
    import inspect

    from gpu_budget.measure.tree import RESHARE_BYTES, ProcessTree

    params = inspect.signature(ProcessTree.__init__).parameters
    interval, shared_every = params["interval"].default, params["shared_every"].default
    return shows(section(PROCESS_TREE, "## The peak over time of the summed tree", "## Blind spots"),
                 f"polls every {interval * 1000:.0f} ms", f"moved by {RESHARE_BYTES // MiB} MiB or more",
                 f"at most every {shared_every} s")


def process_tree_exit_reports() -> list[str]:
    """Every DataLoader worker of the command cases reported, with the command's own process; the runner's workers
    reported (no figure: a fact)."""
    rows = load(TREE_SUM)["rows"]
    loaders = [r for r in rows if r["case"] in ("concurrent", "per_epoch")]
    assert loaders
    for r in loaders:
        workers = sum(len(g["children"]) for g in r["facts"]["groups"])
        if r["mode"] == "command":  # the workers (after-fork registry) and the command's own process (atexit)
            assert r["tree"]["reported"] == r["tree"]["exited"] == workers + 1, r["tree"]
        else:
            assert r["tree"]["reported"] == workers, r["tree"]
    return []


def process_tree_measured() -> list[str]:
    """Section 1c's table and sums, and section 1b's error on coinciding spikes, as RESULTS.md renders them."""
    from benchmarks.tree_spikes import tree_totals
    from benchmarks.tree_sum import tree_sum_groups, tree_sum_table

    ts = load(TREE_SUM)
    by = {(g["case"], g["mode"]): g for g in tree_sum_groups(ts)}
    seq, epoch = by["sequential", "command"], by["per_epoch", "command"]
    errors = [r["error_mib"] for r in ts["rows"]]
    tree = load("benchmarks/results/fidelity.json")["tree"]
    assert tree.get("coincide")  # the spikes of a phase held together: the truth is workers x size
    t = tree_totals(tree)["tree"]
    return shows(section(PROCESS_TREE, "## Measured"),
                 f"{ts['reps']} repetitions of each", "\n".join(tree_sum_table(ts)),
                 f"{sum(r['passed'] for r in ts['rows'])} of {len(ts['rows'])} runs met their threshold; the gate's "
                 f"figure lay {min(errors):+.1f} .. {max(errors):+.1f} MiB from the truth",
                 f"said {seq['loose']:.0f} MiB for the ten sequential subprocesses as a command "
                 f"({seq['loose_ratio']:.1f}x the truth) and {epoch['loose']:.0f} MiB for the per-epoch workers "
                 f"({epoch['loose_ratio']:.2f}x)",
                 f"{tree['reps']} repetitions of each case", f"within {abs(t['worst']):.1f} MiB of the planted total (mean |error| "
                 f"{t['mean_abs']:.2f} MiB), {t['missed']} of {t['spikes']} worker spikes missed") + \
        _largest_spike_error(tree) + \
        shows(section(PROCESS_TREE, "## Blind spots", "## Measured"),
              f"coinciding spikes of {min(r['ms'] for r in tree['rows'])} ms")


def _largest_spike_error(tree: dict) -> list[str]:
    """Section 1b's worst run: workers exiting in the phase whose peaks fell in neighbouring windows (the sum of
    their own peaks held them all; the largest window fell short by about the error)."""
    worst = min(tree["rows"], key=lambda r: r["seen_tree"] - r["truth"])
    error = (worst["seen_tree"] - worst["truth"]) / MiB
    split = (worst["tree_at_spike"]["peak_sum"] - worst["tree_at_spike"]["private"]) / MiB
    assert worst["lifetime"] == "per-phase" and split >= 0.8 * abs(error), worst
    case = ("start", "lifetime", "workers", "mib", "ms")
    others = [abs(r["seen_tree"] - r["truth"]) / MiB for r in tree["rows"]
              if r is not worst and all(r[k] == worst[k] for k in case)]
    return shows(section(PROCESS_TREE, "## Measured"),
                 f"The same case's other runs lay within {max(others):.1f} MiB of the truth.",
                 f"Its largest error, {error:+.1f} MiB, was a run of {words(worst['workers'])} {worst['start']}ed workers "
                 f"exiting in the phase after {worst['mib']} MiB held {worst['ms']} ms: the sum of their own peaks held "
                 f"all of them, the largest window {split:.0f} MiB less")


DOCS_CHECKERS[PROCESS_TREE] = (process_tree_mechanics, process_tree_exit_reports, process_tree_measured)


# -- docs/declaring.md: a script gated as a command, how exact ---------------------------------------------

DECLARING = "docs/declaring.md"
GROWTH_RUN = "benchmarks/results/growth.json"


def declaring_command_noise() -> list[str]:
    """The noise paragraph of "Gate your training script" is the committed command_noise run (RESULTS 5b)."""
    import inspect

    from benchmarks.command_noise import command_noise_summary
    from gpu_budget.measure.tree import ProcessTree

    res = load("benchmarks/results/command_noise.json")
    s = command_noise_summary(res)
    model = res["model"]
    interval = inspect.signature(ProcessTree.__init__).parameters["interval"].default
    return shows(section(DECLARING, "## Gate your training script", None),
                 f"(hidden {model['hidden_size']}, {model['num_hidden_layers']} layers, {model['seq']} tokens, "
                 f"{model['max_steps']} steps)",
                 f"{s['ram_tree_min'] / MiB:.2f}-{s['ram_tree_max'] / MiB:.2f} MiB",
                 f"over {s['clean']} fresh pytest sessions (a {s['spread'] * 100:.3f} %",
                 f"{s['false_alarms']} of {s['clean']} false alarms",
                 f"planted +{res['fraction'] * 100:.0f} %",
                 f"caught {s['caught']} of {s['planted']} times",
                 f"within {interval * 1000:.0f} ms")


def _mib_of(nbytes: float) -> float:
    return nbytes / MiB


def declaring_growth() -> list[str]:
    """The steps= paragraph of docs/declaring.md is the committed growth catalogue and the H200 report."""
    from benchmarks.growth_catalogue import SHAPE_STEPS, catalogue_summary, expected_of
    from benchmarks.growth_shapes import SHAPES_PY
    from gpu_budget.judge import growth
    from gpu_budget.measure import rises

    run = load(GROWTH_RUN)
    s = catalogue_summary(run)
    cases = s["cases"]
    text = section(DECLARING, "- `steps=", "- `gpu_budget.measure(")
    bounded = next(r for sess in run["catalogue"] for r in sess["rows"] if r["case"] == "bounded cache, 10 of its steps")
    must = {k: c for k, c in cases.items() if not c["blind"] and not c["ladder"]}
    passing = [c for c in must.values() if c["expected"] == "pass"]
    failing = [c for c in must.values() if c["expected"] == "fail"]
    (bert_case,) = [k for k in cases if k.startswith("BERT") and "kept" in k]
    bert, bert_mib = cases[bert_case], float(bert_case.split(", ")[1].split(" ")[0])
    assert '"bounded cache, 10 of its steps": leak(5, stop=10)' in SHAPES_PY
    ladder = {float(k.split(", ")[1].split(" ")[0]): c for k, c in cases.items() if c["ladder"]}
    ladder_text = ", ".join(f"{mib} MiB/step {c['failed']} of {c['sessions']}"
                            for mib, c in sorted(ladder.items(), reverse=True))
    assert all(expected_of(k) for k in cases)
    assert bounded["verdict"] == "over-budget" and SHAPE_STEPS['bounded cache, 10 of its steps'] == 12
    return shows(text,
                 "(the catalogue's cache filling for 10 steps fails at 12 steps and passes at 20)",
                 f"more than {rises.DIP // MiB} MiB below the running peak",
                 f"steps each more than {rises.SPIKE // MiB} MiB above both steps around them",
                 f"each case in {run['runs_per_stage']} fresh sessions, {run['steps']} steps, "
                 f"`ram=\"{run['budget']}\", steps={run['declared_steps']:_}`",
                 f"the BERT script keeping {bert_mib} MiB/step",
                 f"fewer than {rises.WINDOW // 2 + 1} of {rises.WINDOW} steps",
                 f"Host RAM {s['allowance'] / 1024:.0f} KiB/step: 6x the largest growth {len(s['calibration'])} clean runs read",
                 f"{len(passing)} shapes that must pass read no growth in {sum(c['right'] for c in passing)} of "
                 f"{sum(c['sessions'] for c in passing)} sessions",
                 f"the {len(failing)} that must fail failed in {sum(c['right'] for c in failing)} of "
                 f"{sum(c['sessions'] for c in failing)}",
                 f"its peak stayed inside its baseline's tolerance in {bert['within_tolerance']} of {bert['sessions']} "
                 f"sessions and the rule failed it in {bert['failed']} of {bert['sessions']}",
                 f"S1's Trainer script, whose RSS grows in lumps, was caught keeping {ladder_text}",
                 f"(up to {_mib_of(max(s['calibration_all'])):.2f} MiB/step, with nothing changed in it",
                 "its peak's comparison with its baseline caught " + " and ".join(
                     f"{mib} MiB/step in {c['sessions'] - c['within_tolerance']} of {c['sessions']}"
                     + (" sessions" if i == 0 else "")
                     for i, (mib, c) in enumerate(sorted(((m, c) for m, c in ladder.items() if m >= 1.0), reverse=True))),
                 f"GPU allocated {growth.ALLOWANCE['vram_allocated'] / 1024:.0f} KiB/step")


GROWTH_LONG_RUN = "benchmarks/results/growth_long.json"


def growth_long_snippets() -> dict[str, str]:
    """The long-run sentences of docs/declaring.md's steps= paragraph, from the committed run (RESULTS 5g): the
    quoted row (the 0.25 MiB/step leak over 200 steps, as the gate printed it at the rule's commit), the clean
    runs, and the verdicts per case and length."""
    from benchmarks.growth_long import CLEAN, RULE_COMMITS, calibration, rows, summary

    run = load(GROWTH_LONG_RUN)
    lengths = sorted({s["steps"] for s in run["sessions"]})
    longest, cases = lengths[-1], summary(run)
    quoted = next(r for sess in run["sessions"] if sess["commit"] in RULE_COMMITS and sess["steps"] == longest
                  for r in sess["rows"] if r["case"] == "slow leak, 0.25 MiB/step")
    cal = calibration(run)

    def count(case: str, said: str, steps: int = longest) -> str:
        c = cases[(case, steps)]
        return f"{c['verdicts'].count(said)} of {c['sessions']}"

    def together(names: tuple[str, ...], said: str) -> str:
        picked = [cases[(n, longest)] for n in names]
        return f"{sum(c['verdicts'].count(said) for c in picked)} of {sum(c['sessions'] for c in picked)}"

    scripts = ("S1 Trainer script, 0.25 MiB/step kept", "BERT Trainer script evaluating first, 0.25 MiB/step kept")
    clean_runs = sum(r["case"] in CLEAN for _, r in rows(run))
    return {
        "QUOTE": re.sub(r"\(.*?\)", "(...)", quoted["message"], count=1),
        "CLEAN": f"{clean_runs} clean runs of {', '.join(map(str, lengths[:-1]))} and {longest} steps",
        "LARGEST": f"read at most {max(c['largest'] for size, c in cal.items() if size > 1) / 1024:.2f} KiB/step at "
                   "any block size of two steps or more",
        "LONG": (f"{longest} steps, `ram=\"{run['budget']}\"`, {cases[('flat', longest)]['sessions']} sessions each), "
                 f"a leak of 0.25 MiB/step failed in {count('slow leak, 0.25 MiB/step', 'fail')} sessions, the same "
                 f"leak kept by S1's and the BERT Trainer scripts in {together(scripts, 'fail')}, and 0.5 MiB/step in "
                 f"the run's last quarter in {count('slow leak in the last quarter, 0.5 MiB/step', 'fail')}, where "
                 f"their steps alone read each as steady; 0.1 MiB/step read as growth in "
                 f"{count('slow leak, 0.1 MiB/step', 'grows')}, its projection's low end within the budget; the clean "
                 f"runs and a cache filled over the run's first half read steady in "
                 f"{together((*CLEAN, 'bounded cache over the first half'), 'pass')}"),
        "POWER": "the 0.25 MiB/step leak " + "; ".join(
            f"in {n} steps " + ", ".join(f"{said} in {count('slow leak, 0.25 MiB/step', verdict, n)}"
                                        for verdict, said in SAID if cases[("slow leak, 0.25 MiB/step", n)]["verdicts"]
                                        .count(verdict))
            for n in reversed(lengths)),
    }


SAID = (("fail", "failed"), ("grows", "read as growth within the budget"), ("pass", "read as steady"))  # verdict words


def declaring_growth_long() -> list[str]:
    """The steps= paragraph's long-run sentences are the committed long-run report (growth_long_snippets), and the
    block sizes and allowances it names are the rule's (judge/growth.py, measure/rises.py)."""
    from gpu_budget.judge import growth
    from gpu_budget.measure import rises

    first = next(m for m in range(rises.MIN_STEPS, 100) if rises.largest_block(m) == 2)
    return shows(section(DECLARING, "- `steps=", "- `gpu_budget.measure("), *growth_long_snippets().values(),
                 f"A run of {first} steps or more is read in blocks too",
                 f"({growth.RAM_ALLOWANCE / 16 / 1024:.1f} KiB/step for blocks of 16)",
                 "(a leak of 0.25 MiB a step over 200 steps: a quarter of what one step is allowed")


GROWTH_S5_RUN = "benchmarks/results/growth_s5.json"


def growth_s5_snippets() -> list[str]:
    """The CPU gate's growth case in the steps= paragraph: its declaration (memtests/test_s5_growth.py) and the
    committed run of its clean and planted sessions (RESULTS 5i)."""
    from benchmarks.growth_s5 import summary
    from gpu_budget.judge import growth

    run = load(GROWTH_S5_RUN)
    s = summary(run)
    c, p = s["clean"], s["planted"]
    first, last = run["sessions"][0]["projection"]["steps_fitted"]
    kib = [f"{min(x) / 1024:.1f} .. {max(x) / 1024:.1f} KiB/step" for x in (c["growth"], p["growth"])]
    return [(f"S5's loop at the write-up's batch 16, {s['marks']} steps, under S5's tiny budget "
             f"({s['budget'] / MiB:.0f} MiB) and `steps={s['declared']:_}`"),
            f"the growth of the tree's host RAM over steps {first}-{last}, projected to step {s['declared']:,}",
            (f"a growth within the clean allowance ({growth.RAM_ALLOWANCE / 1024:.0f} KiB/step) reads steady, and, read "
             f"in blocks of {s['block']} judged steps too (each allowed {s['allowance'] / s['block'] / 1024:.0f} "
             f"KiB/step), the smallest that fails is {s['smallest_failing'] / 1024:.0f} KiB/step"),
            f"Over {c['sessions']} and {p['sessions']} fresh sessions (RESULTS.md, section 5i,",
            (f"its clean runs read {kib[0]}, steady in {c['sessions'] - c['grows']} of {c['sessions']}, at every "
             f"block size at most {100 * max(c['ratio']):.1f} % of its allowance"),
            f"with {run['leak_mib']} MiB of each step's conv features kept",
            (f"(`GPU_BUDGET_PLANT_LEAK_MIB={run['leak_mib']}`) they read {kib[1]} and failed in {p['failed_by_gate']} "
             f"of {p['sessions']}, the projection's low end {min(p['low_ends']) / 2**30:.2f} GiB or more at step "
             f"{s['declared']:,}"),
            (f"their peaks {min(p['peaks']) / MiB:.1f} MiB or more, past the {s['tolerance_limit'] / MiB:.1f} MiB the "
             f"default tolerance allows over the highest clean peak")]


def declaring_growth_s5() -> list[str]:
    """The steps= paragraph's sentences on the CPU gate's growth case are the committed run (growth_s5_snippets)."""
    return shows(section(DECLARING, "- `steps=", "- `gpu_budget.measure("), *growth_s5_snippets())


GROWTH_SAWTOOTHS_RUN = "benchmarks/results/growth_sawtooths.json"


def declaring_growth_sawtooths() -> list[str]:
    """The steps= paragraph's count of the sawtooth grid, the false FAILs left in it and the runs left with no
    verdict (too few steps to tell), and the shortest runs per period: the committed run (RESULTS 5k); "all in runs
    of 10 or 15 steps" holds, and the runs the error asks for are judge/growth.py's tops_run."""
    from gpu_budget.judge.growth import tops_run

    res = load(GROWTH_SAWTOOTHS_RUN)
    rows = res["rows"]
    series, left = sum(r["phases"] for r in rows), sum(r["false_fail"] for r in rows)
    undecided = sum(r["undecided"] for r in rows)
    short = sum(r["false_fail"] + r["undecided"] for r in rows if r["steps"] in (10, 15))
    assert short == left + undecided, (short, left, undecided)
    periods = [r for r in res["shortest"] if r["period"] >= 4]
    assert all(r["asked"] == tops_run(r["period"]) for r in periods), periods

    def listed(items: list) -> str:
        return ", ".join(map(str, items[:-1])) + f" or {items[-1]}"

    return shows(section(DECLARING, "- `steps=", "- `gpu_budget.measure("),
                 f"over a grid of {series:,} sawtooths, the false FAILs left, {left}, and the runs with no verdict, "
                 f"{undecided}, all in runs of 10 or 15 steps",
                 f"for a buffer freed every {listed([r['period'] for r in periods])} steps, "
                 f"{listed([r['asked'] for r in periods])} steps",
                 f"read as steady from {listed([r['steady_from'] for r in periods])} steps")


GROWTH_ARENAS_RUN = "benchmarks/results/growth_arenas.json"


def growth_arenas_snippets() -> list[str]:
    """What S1's clean Trainer script grows by, in the steps= paragraph: the committed arenas run (RESULTS 5j), and
    how often the catalogue's clean 10-step runs of it read growth past the allowance (RESULTS 5c)."""
    from benchmarks.growth_arenas import summary
    from benchmarks.growth_catalogue import clean_runs, growth_of
    from gpu_budget.judge import growth

    run = load(GROWTH_ARENAS_RUN)
    s = summary(run)
    n = len(run["sessions"])
    counted, numpy = s["arenas counted, 30 steps"], s["arenas counted, data in numpy format, 10 steps"]
    long, short, malloc = s["as is, 30 steps"], s["as is, 10 steps"], s["PYTHONMALLOC=malloc, 10 steps"]
    (leak,) = [c for label, c in s.items() if "kept" in label]
    s1 = [growth_of(r) for r in clean_runs(load(GROWTH_RUN)) if r["case"].startswith("S1 Trainer script")]
    past = [g for g in s1 if g > growth.RAM_ALLOWANCE]

    def mib(values: list[float]) -> str:
        return f"{min(values) / MiB:.1f}-{max(values) / MiB:.1f} MiB"

    return [f"([RESULTS.md 5j](../benchmarks/RESULTS.md), {n} fresh sessions)",
            (f"its arenas rose by {min(counted['added'])} to {max(counted['added'])} over step 1's "
             f"({min(counted['by_10'])} to {max(counted['by_10'])} of them by step 10"),
            f"the most reached by step {max(counted['most_at'])}",
            f"its steps' host RAM rose {mib(long['rise'])} over step 2's",
            (f"handed its data in numpy format it added at most {words(max(numpy['added']))} "
             f"arena{'' if max(numpy['added']) == 1 else 's'} and its steps rose at most {max(numpy['rise']) / MiB:.1f} MiB"),
            (f"{len(past)} of {len(s1)} clean 10-step runs of it read growth past the allowance, up to "
             f"{max(past) / MiB:.2f} MiB/step"),
            (f"at 30 steps it read steady in {long['sessions'] - long['grows']} of {long['sessions']} sessions "
             f"(at 10 in {short['sessions'] - short['grows']} of {short['sessions']})"),
            f"keeping {run['leak_mib']} MiB/step failed in {leak['breaks']} of {leak['sessions']}",
            (f"its steps still rose up to {max(malloc['rise']) / MiB:.1f} MiB over 10 steps (as is up to "
             f"{max(short['rise']) / MiB:.1f}), and its peak was {mib(malloc['peaks'])} against {mib(short['peaks'])}")]


def declaring_growth_arenas() -> list[str]:
    """The steps= paragraph's sentences on what S1's clean Trainer script grows by (growth_arenas_snippets)."""
    return shows(section(DECLARING, "- `steps=", "- `gpu_budget.measure("), *growth_arenas_snippets())


# -- docs/against.md: what --gpu-budget-against costs and catches, and a bisect's gate runs ---------------

AGAINST = "docs/against.md"
AGAINST_RUN = "benchmarks/results/against.json"


def against_measured() -> list[str]:
    """The measured sentences of docs/against.md are the committed against run (RESULTS 5e)."""
    from benchmarks.against_base import COMMITS, against_summary

    res = load(AGAINST_RUN)
    s = against_summary(res)
    iv, n, planted = s["ratio"], s["rounds"], s["planted_runs"]
    kinds = {case["kind"]: name for name, case in res["cases"].items()}
    function, command = s["caught"][kinds["function"]], s["caught"][kinds["command"]]
    runs = sorted({b["runs"] for b in s["bisect"]})
    assert len(runs) == 1 and all(b["right"] for b in s["bisect"]), s["bisect"]  # one sentence says both
    fraction = res["bisect_setup"]["fraction"]
    return shows(section(AGAINST, "## What it costs", "## Which commit moved it"),
                 f"an `--against` run took {iv['geomean']:.2f}x the wall time of a plain gate of the same cases "
                 f"({iv['low']:.2f} .. {iv['high']:.2f}, 95 % interval over {n} rounds)",
                 f"{s['false_alarms']} false alarms in {n} runs with no change",
                 f"a planted +{res['fraction'] * 100:.0f} % failed as a regression {function} of {planted} times in "
                 f"the function case and {command} of {planted} in the command case") + \
        shows(section(AGAINST, "## Which commit moved it"),
              f"Over {COMMITS} commits with one of them planting +{fraction * 100:.0f} % of a case's peak, it took "
              f"{runs[0]} gate runs (the reference and {runs[0] - 1} commits) and named the planted commit, for each "
              f"of {len(s['bisect'])} cases")


DOCS_CHECKERS[AGAINST] = (against_measured,)


# -- pages rendered whole: docs/gpu-results.md, docs/estimator-cuda.md -----------------------------------

ESTIMATES = "benchmarks/results/estimator-cuda.json"


def gpu_results_page() -> list[str]:
    """docs/gpu-results.md is what benchmarks/gpu_results.py renders from the committed GPU reports, to the byte."""
    from benchmarks.gpu_results import render

    page = document("docs/gpu-results.md")
    assert page == render(), "docs/gpu-results.md is stale: python -m benchmarks.gpu_results"
    return [page]


def estimator_cuda_page() -> list[str]:
    """docs/estimator-cuda.md is what benchmarks/estimator_cuda.py renders from the committed estimates and report."""
    from benchmarks.estimator_cuda import render

    page = document("docs/estimator-cuda.md")
    assert page == render(load(ESTIMATES)), "docs/estimator-cuda.md is stale: python -m benchmarks.estimator_cuda --render"
    return [page]


# -- docs/cards.md and the card paragraphs of docs/declaring.md --------------------------------------------

CARDS_PAGE = "docs/cards.md"
S3_REAL = "benchmarks/results/gpu-s3-1.report.json"


def _capacity(name: str) -> str:
    from gpu_budget.model.card import CARDS

    return f"{CARDS[name]:.2f} GiB"


def cards_page() -> list[str]:
    """The table's capacity column is model/card.py's CARDS, row by row; the other figures of each row are the public
    threads' the row names, each source a thread one can open, or a committed report of this project's own GPU of that
    card (_report_cited: its hardware holds the figure)."""
    from gpu_budget.model.card import CARDS

    rows = [line for line in document(CARDS_PAGE).splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == list(CARDS), rows
    for row in rows:
        name, _, capacity, _, sources = row.lstrip("| ").rstrip(" |").split(" | ")
        assert capacity == _capacity(name), row
        named = re.split(r"[,;] ", re.sub(r" \([^)]*\)", "", sources))  # each source, less what it says in brackets
        reports = [source for source in named if re.fullmatch(r"`benchmarks/results/[\w.-]+\.json`", source)]
        unnamed = [source for source in named if source not in reports and
                   not re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", source)]
        assert not unnamed, f"{name}: each source is a public thread (owner/repo#N) or a report, not {unnamed}"
        if reports:
            _report_cited(name, capacity, [report.strip("`") for report in reports])
        else:
            _each_figure_sourced(name, row)
    return [*rows, *_a10g_derived(), *_h100_runs_the_a100(), *_own_t4_runs_as_itself(), *_names_printed_short(),
            *_names_of_two_memories(), *_one_thread_rows(rows)]


def _one_thread_rows(rows: list[str]) -> list[str]:
    """The rows whose figure one public thread alone gives, as the page lists them, in the table's order; the RTX 6000
    Ada's figure within a hundredth of the L40S's, as the page says."""
    from gpu_budget.model.card import CARDS

    ones = [row.split(" | ")[0].lstrip("| ") for row in rows
            if len(re.findall(r"[\w.-]+/[\w.-]+#\d+", row.split(" | ")[4])) == 1]
    assert round(abs(CARDS["RTX 6000 Ada"] - CARDS["L40S"]), 2) <= 0.01
    return shows(document(CARDS_PAGE), f"One thread each gives the rows of the {', '.join(ones[:-1])} and {ones[-1]}.",
                 "and prints within a hundredth of the L40S's figure")


def _names_of_two_memories() -> list[str]:
    """A name sold with two memories: the table's carries it, the name without it is refused naming the table's choices,
    and "RTX 6000" names the card the table does not hold beside the one it does (model/card.py's lookup)."""
    import pytest

    from gpu_budget.model.card import by_name, on_runner, pick_card

    assert by_name("Tesla V100-SXM2-32GB").name == "V100 32GB"
    rtx3060 = by_name("RTX 3060 12GB")
    assert on_runner(rtx3060, "NVIDIA GeForce RTX 3060", rtx3060.capacity - 64 * MiB) == rtx3060
    refusals = {"V100": 'did you mean "V100 16GB" or "V100 32GB"?', "P100": 'did you mean "P100 16GB"?',
                "NVIDIA GeForce RTX 3060": 'did you mean "RTX 3060 12GB"?',
                "RTX 6000": 'did you mean "RTX 6000 Ada"? (or the Quadro RTX 6000, 24 GB, which the table does not hold'}
    for written, says in refusals.items():
        with pytest.raises(ValueError, match=re.escape(says)):
            pick_card(written, "tiny")
    return shows(document(CARDS_PAGE), '`"Tesla V100-SXM2-32GB"` is the V100 32GB',
                 '`"V100"` is refused naming the V100 16GB and the V100 32GB', "(the P100 16GB is named so too",
                 "asking whether the RTX 3060 12GB is meant,\nand a runner's GPU of that printed name is held to the "
                 "table's figure",
                 "the Quadro RTX 6000, 24 GB, which the table does not hold")


def _names_printed_short() -> list[str]:
    """The H200's bytes are its report's; a printed name with no memory is the one card of it, one written short that
    may mean two is refused naming both (model/card.py's lookup, as the paragraph says)."""
    import pytest

    from gpu_budget.model.card import by_name, pick_card

    total = json.loads((ROOT / S3_REAL).read_text())["hardware"]["gpu_memory"]
    assert by_name("NVIDIA H100 PCIe").name == "H100 80GB"
    with pytest.raises(ValueError, match='did you mean "H100 80GB" or "H100 NVL"'):
        pick_card("H100", "tiny")
    return shows(document(CARDS_PAGE), f"{total:,} bytes", '`"NVIDIA H100 PCIe"` is the H100 80GB',
                 '(`"H100"`: the H100 80GB or the H100 NVL)')


def _own_t4_runs_as_itself() -> list[str]:
    """A T4 printing the least its row shows (GCP's, 14.56 GiB) runs a card="T4" case at its own total, named as
    model/card.py's on_runner names it, where a GPU of another name holding as much is skipped."""
    from gpu_budget.declare.marks import gpu_budget
    from gpu_budget.declare.scenario import Scenario
    from gpu_budget.measure.device import DeviceInfo
    from gpu_budget.session.can_run import unmeasurable

    t4_row = next(line for line in document(CARDS_PAGE).splitlines() if line.startswith("| T4 |"))
    least = min(float(f) for f in re.findall(r"\d+\.\d\d", t4_row.split(" | ")[3]))
    total, scenario = round(least * 1024 * MiB), Scenario(name="s", run="m:run")

    def mark_on(name: str):
        gpu = DeviceInfo(cuda=True, gpu_name=name, gpu_memory=total, gpus=1)
        return gpu_budget(card="T4", host="cuda", runner=(name, total)), gpu

    own, t4 = mark_on("Tesla T4")
    assert unmeasurable(scenario, own, "tiny", t4)[0] is None
    other, a2 = mark_on("NVIDIA A2")
    assert unmeasurable(scenario, other, "tiny", a2)[0] is not None
    return shows(document(CARDS_PAGE), f"a T4 printing {least:.2f} GiB runs a", f"`{own.card.label}`")


A10_SMI_MIB = 23028  # nvidia-smi's total on an A10 (modal-labs/modal-client#2797)


def _a10g_derived() -> list[str]:
    """The A10G's capacity is an A10's printed figure, the paragraph says why: the A10G's 2022 figure is the A10's
    nvidia-smi total, to the hundredth of a GiB torch prints."""
    from gpu_budget.units import format_size

    assert format_size(A10_SMI_MIB * MiB) == "22.49 GiB"
    return shows(document(CARDS_PAGE),
                 f"its 22.49 GiB of 2022 is the {A10_SMI_MIB} MiB that nvidia-smi totals on an A10",
                 f"the table takes what an A10 printed, {_capacity('A10G')} (vllm-project/vllm#928)")


def _each_figure_sourced(name: str, row: str) -> None:
    """Each thread of a row cites in brackets the figure it prints (to a hundredth of a GiB, or deviceQuery's bytes),
    and every figure of the row, the capacity and the others seen, is one a thread cites: a figure no thread shows
    (a range's end, a capacity taken from a sibling card) is no source of the table's."""
    from gpu_budget.units import format_size

    _, _, capacity, others, sources = row.lstrip("| ").rstrip(" |").split(" | ")
    notes = re.findall(r"[\w.-]+/[\w.-]+#\d+(?: \(([^)]*)\))?", sources)
    bytes_cited = [format_size(int(n.replace(",", ""))) for n in re.findall(r"([\d,]{5,}) bytes", sources)]
    figures = {*re.findall(r"\d+\.\d\d", " ".join(notes)), *(b.removesuffix(" GiB") for b in bytes_cited)}
    bare = [note for note in notes if not re.search(r"\d+\.\d\d|[\d,]{5,} bytes", note)]
    assert not bare, f"{name}: each thread cites in brackets the figure it prints, not {bare}"
    shown = re.findall(r"\d+\.\d\d", f"{capacity} {others}")
    unsourced = [figure for figure in shown if figure not in figures]
    assert not unsourced, f"{name}: {unsourced} GiB printed by none of its threads ({sorted(figures)})"


def _report_cited(name: str, capacity: str, reports: list[str]) -> None:
    """A row whose figure this project's own GPU reported: each report cited ran on that card (its GPU's name, as torch
    prints it, is the row's card) and holds the capacity as its total memory, to the hundredth of a GiB."""
    from gpu_budget.model.card import by_name
    from gpu_budget.units import format_size

    for cited in reports:
        hardware = json.loads((ROOT / cited).read_text())["hardware"]
        assert by_name(hardware["gpu_name"]).name == name, (cited, hardware["gpu_name"])
        assert format_size(hardware["gpu_memory"]) == capacity, (cited, hardware["gpu_memory"], capacity)


H100_REPORT = "benchmarks/results/gpu-h100-tiny-s3s5-1.report.json"  # this project's H100 (docs/gpu-results.md)


def _h100_runs_the_a100() -> list[str]:
    """What card="A100 80GB" does on an H100, as can_run.unmeasurable decides it: skipped on one printing the table's
    figure, run on this project's own, which printed more (its committed report's total memory)."""
    from gpu_budget.declare.marks import gpu_budget
    from gpu_budget.declare.scenario import Scenario
    from gpu_budget.measure.device import DeviceInfo
    from gpu_budget.model.card import by_name
    from gpu_budget.session.can_run import unmeasurable
    from gpu_budget.units import format_size

    ours = load(H100_REPORT)["hardware"]["gpu_memory"]
    mark, scenario = gpu_budget(card="A100 80GB", host="cuda"), Scenario(name="s", run="m:run")

    def skipped(total: int) -> bool:
        gpu = DeviceInfo(cuda=True, gpu_name="NVIDIA H100 80GB HBM3", gpu_memory=total, gpus=1)
        return unmeasurable(scenario, mark, "tiny", gpu)[0] is not None

    assert skipped(by_name("H100 80GB").capacity) and not skipped(ours)
    return shows(document(CARDS_PAGE),
                 f"An H100 printing the table's {_capacity('H100 80GB')} holds less than the A100 80GB's "
                 f"{_capacity('A100 80GB')}, so a case declared with `card=\"A100 80GB\"` is skipped on it",
                 f"one printing {format_size(ours)}, as this project's H100 did",
                 "holds more than the A100 80GB, and runs such a case under its cap")


def declaring_cards() -> list[str]:
    """The card section: the 3090's capacity (CARDS), S3's context on the H200 at load and at its largest (NVML less
    reserved, gpu-s3-1), the tiny card of memtests/cards.py."""
    import sys

    sys.path.insert(0, str(ROOT / "memtests"))
    import cards

    row = next(r for r in load(S3_REAL)["results"] if "test_as_reported" in r["nodeid"])
    contexts = [p["vram_device"] - p["vram_reserved"] for p in row["phases"].values()
                if p.get("vram_device") is not None and p.get("vram_reserved") is not None]
    text = section(DECLARING, "## The card a user trains on", "## Your own Trainer")
    return shows(text, f'{{"tiny": "{cards.CARDS["s3"]["tiny"]}", "real": "RTX 3090"}}',
                 f'"ran as on RTX 3090 ({_capacity("RTX 3090")}): the caching allocator capped at',
                 f"the S3 run's context grew from {row['phases']['load']['vram_device'] // MiB - row['phases']['load']['vram_reserved'] // MiB} MiB "
                 f"at load to {max(contexts) // MiB} MiB later")


S5_CARD_EXPLORATION = "benchmarks/results/explore-s5-card-tiny.report.json"


def declaring_card_exploration() -> list[str]:
    """The exploration within a card: S5's on the CPU host, estimated only (its committed report)."""
    found = load(S5_CARD_EXPLORATION)["explorations"][0]["exploration"]
    assert not found["verified"] and not found["real_runs"]
    boundary = found["boundary"]
    text = section(DECLARING, "- **Exploring within a card.**", "- The memtests run as on")
    return shows(text, f"within {found['card']} (`{S5_CARD_EXPLORATION}`):",
                 f"{found['budget'] / MiB:,.1f} MiB of allocated VRAM, the largest {boundary['knob'].split('_')[0]} "
                 f"at image {boundary['at']['image']} estimated at {boundary['predicted_value']}, from "
                 f"{found['estimates']} estimates and {found['examples']} Hypothesis examples, no real run.")
