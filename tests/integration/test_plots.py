"""--gpu-budget-plots: one readable PNG per measured case, linked from the step summary."""

import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.image  # imported before pytester snapshots sys.modules: numpy loads once per process
import pytest
import tomllib

from gpu_budget.model.result import Result
from gpu_budget.report import plots

PNG = b"\x89PNG\r\n\x1a\n"

TESTS = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 32})

@pytest.mark.gpu_budget(ram="1 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="1 GiB")
def test_two(gpu_budget):
    gpu_budget.measure(S, label="before")
    gpu_budget.measure(S.with_params(mib=16), label="after")

@pytest.mark.gpu_budget(vram="8 GiB", device="cuda")
def test_needs_a_gpu(gpu_budget):
    gpu_budget.measure(S)
'''


def _size(path):
    height, width = matplotlib.image.imread(str(path)).shape[:2]
    return width, height


def test_a_real_run_draws_one_png_per_measured_case_and_the_summary_links_them(project, monkeypatch):
    pytester = project(TESTS)
    monkeypatch.delenv("CI", raising=False)
    for key, value in {"GITHUB_STEP_SUMMARY": str(pytester.path / "summary.md"), "GITHUB_RUN_ID": "42",
                       "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/tuner"}.items():
        monkeypatch.setenv(key, value)
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget", "--gpu-budget-json=out/report.json",
            "--gpu-budget-plots=out/plots")
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=2, skipped=1)  # records the baselines
    result = pytester.runpytest_subprocess(*args)  # judged against them: the baseline lines are drawn
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines([f"plots: {pytester.path / 'out' / 'plots'}"])

    folder = pytester.path / "out" / "plots"
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["test_mem__test_fits.png", "test_mem__test_two__after.png", "test_mem__test_two__before.png"]
    for name in names:
        assert (folder / name).read_bytes()[:8] == PNG
        width, height = _size(folder / name)
        assert width >= 1000 and 400 <= height <= 800  # one panel (host RAM): no GPU panel on a CPU host

    rows = {r["nodeid"]: r for r in json.loads((pytester.path / "out" / "report.json").read_text())["results"]}
    assert rows["test_mem.py::test_fits"]["plot"] == str(folder / "test_mem__test_fits.png")
    assert "plot" not in rows["test_mem.py::test_needs_a_gpu"]
    assert set(rows["test_mem.py::test_fits"]["baseline"]["phases"]) == {"load", "train_step_1", "train_step_2",
                                                                         "train_step_3"}
    summary = (pytester.path / "summary.md").read_text().split("### GPU budget")[-1]
    assert "**Plots** (in the [artifacts of this run](https://github.com/acme/tuner/actions/runs/42#artifacts))" \
        in summary
    assert "- test_mem.py::test_two::before: `plots/test_mem__test_two__before.png`" in summary


def test_a_child_killed_or_timed_out_is_drawn_up_to_the_peak_its_row_gives(project, monkeypatch):
    """A child SIGKILLed in train_step_1 (its row: "host RAM peak seen so far" over its 100 MiB budget) was drawn with
    its load phase alone, under the budget line, and one timed out in its load phase had no plot at all: each is drawn
    to the row's peak, at the phase it died in."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="100 MiB")
def test_killed(gpu_budget):
    gpu_budget.measure(Scenario(name="kill", run="runners:sigkill"))

@pytest.mark.gpu_budget(ram="1 GiB")
def test_hung(gpu_budget):
    gpu_budget.measure(Scenario(name="hang", run="runners:hang"))
''')
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=3",
                                  "--gpu-budget-json=report.json", "--gpu-budget-plots=plots").assert_outcomes(failed=2)
    rows = {r["nodeid"]: Result.from_json(r) for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    folder = pytester.path / "plots"
    assert sorted(p.name for p in folder.iterdir()) == ["test_mem__test_hung.png", "test_mem__test_killed.png"]
    assert rows["test_mem.py::test_hung"].plot == str(folder / "test_mem__test_hung.png")
    summary = (pytester.path / "summary.md").read_text()
    assert "- test_mem.py::test_hung: [plots/test_mem\\_\\_test_hung.png]" in summary


def test_cases_whose_names_slug_alike_each_get_their_own_plot(project):
    """"a b" and "a-b" both read test_p-a-b as a file name: each case still gets a file of its own, and its row links
    its own picture, not the other case's."""
    pytester = project('''
@pytest.mark.gpu_budget(ram="1 GiB")
@pytest.mark.parametrize("mib", [8, 40], ids=["a b", "a-b"])
def test_p(gpu_budget, mib):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": mib}))
''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json",
                                  "--gpu-budget-plots=plots").assert_outcomes(passed=2)
    rows = json.loads((pytester.path / "r.json").read_text())["results"]
    linked = [row["plot"] for row in rows]
    assert len(set(linked)) == 2 and sorted(p.name for p in (pytester.path / "plots").iterdir()) == sorted(
        os.path.basename(p) for p in linked)
    assert all(os.path.basename(p).startswith("test_mem__test_p-a-b") for p in linked)


def _row(gpu: bool) -> dict:
    """A result row with planted numbers (a drawing test; no figure here is a measurement)."""
    MiB = 2**20
    phases = {}
    for i, (name, step) in enumerate([("load", None), ("data", None), ("train_step_1", 1), ("train_step_2", 2),
                                      ("train_step_3", 3), ("eval", None)]):
        phases[name] = {"name": name, "step": step, "ram_peak": (400 + 60 * i) * MiB,
                        "vram_allocated": (1000 + 500 * i) * MiB if gpu else None,
                        "vram_reserved": (1200 + 500 * i) * MiB if gpu else None}
    return {
        "nodeid": "memtests/test_x.py::test_y[some-long-parameter]::label", "scenario": "x", "scale": "tiny",
        "fixes": ["lora"], "peaks": {"ram": 700 * MiB}, "wall_seconds": 1.0,
        "verdict": "regression", "passed": False, "expect": None,
        "budget": {"ram": 2 * 2**30, "vram": 24 * 2**30}, "tolerance": {"rel": 0.02, "abs": 16 * MiB},
        "phases": phases, "growth": {"ram_per_step": 60.0 * MiB},
        "baseline": {"peaks": {"ram": 600 * MiB, "vram_allocated": 3000 * MiB if gpu else None},
                     "recorded": "2026-01-01", "phases": {"load": {"ram": 400 * MiB}, "eval": {"ram": 600 * MiB}}},
    }


def _result(row: dict) -> Result:
    """The judged case plots.write draws, read from the row as the report's reader reads it."""
    return Result.from_json(row)


def test_a_gpu_row_gets_a_second_panel(tmp_path):
    one = plots.write(_result(_row(gpu=False)), tmp_path / "cpu.png", {"key": "cpu-x86_64"})
    two = plots.write(_result(_row(gpu=True)), tmp_path / "gpu.png", {"key": "nvidia-test"})
    assert one.read_bytes()[:8] == two.read_bytes()[:8] == PNG
    assert _size(two)[1] > 1.6 * _size(one)[1]


def test_the_ram_panel_draws_the_tree_and_the_main_process(tmp_path):
    MiB = 2**20
    row = _row(gpu=False)
    for i, phase in enumerate(row["phases"].values()):
        phase["ram_tree_peak"] = phase["ram_peak"] + 300 * MiB * (i % 2)  # workers in every other phase
    drawn = []
    from matplotlib.axes import Axes

    original = Axes.plot

    def plot(ax, *args, **kwargs):
        drawn.append(kwargs.get("label", ""))
        return original(ax, *args, **kwargs)

    Axes.plot = plot
    try:
        plots.write(_result(row), tmp_path / "tree.png", {"key": "cpu-x86_64"})
        plots.write(_result(_row(gpu=False)), tmp_path / "main.png", {"key": "cpu-x86_64"})  # a version-1 row: main only
    finally:
        Axes.plot = original
    assert "measured peak per phase (process tree)" in drawn and any(label.startswith("main process alone") for label in drawn)
    assert drawn.count("measured peak per phase") == 1  # the old row: one line, the main process


def test_the_regression_limit_names_the_tolerance_as_configured(tmp_path, monkeypatch):
    """The default 0.5 % once printed as "+0%": the legend keeps one decimal."""
    from matplotlib.axes import Axes

    labels = []
    original = Axes.axhline
    monkeypatch.setattr(Axes, "axhline", lambda ax, *a, **kw: labels.append(kw.get("label", "")) or original(ax, *a, **kw))
    row = _row(gpu=False) | {"tolerance": {"rel": 0.005, "abs": 4 * 2**20}}
    plots.write(_result(row), tmp_path / "tol.png", {"key": "cpu-x86_64"})
    assert any("+0.5% +4.00 MiB" in label for label in labels), labels


@pytest.mark.parametrize(("row", "said", "colour"), [
    ({"verdict": "no-baseline", "passed": True, "test_outcome": "failed", "test_failure": "AssertionError: own"},
     "no-baseline, test FAILED", "#d62728"),
    ({"verdict": "over-budget", "passed": False, "test_outcome": "xfailed"}, "over-budget FAIL, test xfailed", "#d62728"),
    ({"verdict": "pass", "passed": True, "test_outcome": "passed"}, "pass", "#2ca02c"),
], ids=["failed-after", "xfailed", "passed"])
def test_the_verdict_drawn_is_the_tables(tmp_path, monkeypatch, row, said, colour):
    """A case the gate passed in a test that failed after measure() reads "test FAILED" in the table and the step
    summary: its picture says the same, not a green verdict; an xfailed one names pytest's outcome too."""
    from matplotlib.figure import Figure

    texts = []
    original = Figure.text
    monkeypatch.setattr(Figure, "text", lambda fig, x, y, s, **kw: texts.append((s, kw.get("color"))) or original(fig, x, y, s, **kw))
    plots.write(_result(_row(gpu=False) | row), tmp_path / "v.png", {"key": "cpu-x86_64"})
    assert (said, colour) in texts, texts


def test_a_dollar_in_a_node_id_or_phase_is_drawn_as_written(tmp_path, monkeypatch):
    """A parametrized id such as test_cost[$\\frac$] once failed the gate ("plotting ... failed: ParseException"), and
    test_cost[$5-$10] lost its '$'s to math: every text is drawn as written."""
    from matplotlib.text import Text

    drawn = []
    original = Text.draw
    monkeypatch.setattr(Text, "draw", lambda text, renderer: drawn.append((text.get_text(), text.get_parse_math()))
                        or original(text, renderer))
    row = _row(gpu=False) | {"nodeid": "t.py::test_cost[$\\frac$]::$5-$10"}
    row["phases"] = {f"${name}$": phase | {"name": f"${name}$"} for name, phase in row["phases"].items()}
    assert plots.write(_result(row), tmp_path / "d.png", {"key": "cpu-x86_64"}).read_bytes()[:8] == PNG
    assert ("t.py::test_cost[$\\frac$]::$5-$10", False) in drawn
    assert not [text for text, math in drawn if math and "$" in text], drawn


def test_a_run_of_thousands_of_steps_names_a_readable_few_along_x(tmp_path, monkeypatch):
    """A case marking 3,000 steps: some 30 names along x, its first and last phase among them. Before, every phase had
    its name drawn, over each other (a black band under the axis), and one such plot took 45 s to draw."""
    from matplotlib.axes import Axes

    MiB = 2**20
    row = _row(gpu=False)
    row["phases"] = {f"train_step_{k}": {"name": f"train_step_{k}", "step": k, "ram_peak": (400 + k % 7) * MiB}
                     for k in range(1, 3001)}
    named = []
    original = Axes.set_xticklabels
    monkeypatch.setattr(Axes, "set_xticklabels", lambda ax, labels, **kw: named.append(list(labels)) or original(ax, labels, **kw))
    assert plots.write(_result(row), tmp_path / "long.png", {"key": "cpu-x86_64"}).read_bytes()[:8] == PNG
    (labels,) = named
    assert 15 <= len(labels) <= plots.MAX_LABELS and (labels[0], labels[-1]) == ("step 1", "step 3000"), labels


def test_the_optimizer_steps_band_covers_the_step_phases_alone(tmp_path, monkeypatch):
    """A run of two Trainers: steps 1-2, then train_end and train_setup_2, then steps 3-4. One band was shaded from
    the first step to the last, train_end and train_setup_2 under "optimizer steps" too; each run of steps has its own
    band, and the name is drawn once, over the widest."""
    from matplotlib.axes import Axes

    MiB = 2**20
    row = _row(gpu=False)
    names = [("load", None), ("train_setup", None), ("train_step_1", 1), ("train_step_2", 2), ("train_end", None),
             ("train_setup_2", None), ("train_step_3", 3), ("train_step_4", 4), ("train_end_2", None)]
    row["phases"] = {name: {"name": name, "step": step, "ram_peak": (400 + i) * MiB} for i, (name, step) in enumerate(names)}
    spans, said = [], []
    span, text = Axes.axvspan, Axes.text
    monkeypatch.setattr(Axes, "axvspan", lambda ax, x0, x1, **kw: spans.append((x0, x1)) or span(ax, x0, x1, **kw))
    monkeypatch.setattr(Axes, "text", lambda ax, x, y, s, **kw: said.append(s) or text(ax, x, y, s, **kw))
    plots.write(_result(row), tmp_path / "two.png", {"key": "cpu-x86_64"})
    assert spans == [(1.5, 3.5), (5.5, 7.5)], spans
    assert said.count("optimizer steps") == 1, said


def test_a_plot_killed_while_written_leaves_the_last_whole_one(tmp_path, monkeypatch):
    """A session killed while it wrote a plot once left a truncated PNG in its place (its signature intact: it looks
    like a plot); the picture is written beside it and renamed over, so the last whole one stays."""
    import io

    from matplotlib.figure import Figure

    path = tmp_path / "case.png"
    whole = plots.write(_result(_row(gpu=False)), path, {"key": "cpu-x86_64"}).read_bytes()
    original = Figure.savefig

    def killed(fig, target, **kwargs):  # writes the first bytes where it was told, then the session dies
        drawn = io.BytesIO()
        original(fig, drawn, format="png")
        if isinstance(target, (str, os.PathLike)):
            Path(target).write_bytes(drawn.getvalue()[:100])
        else:
            target.write(drawn.getvalue()[:100])
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", killed)
    with pytest.raises(KeyboardInterrupt):
        plots.write(_result(_row(gpu=True)), path, {"key": "cpu-x86_64"})
    assert path.read_bytes() == whole
    assert [p.name for p in tmp_path.iterdir()] == ["case.png"]


def test_the_peak_drawn_of_a_killed_child_is_its_rows(tmp_path, monkeypatch):
    """The row of a child SIGKILLed in train_step_1 says "host RAM peak seen so far 211.00 MiB" over its 100 MiB budget;
    its plot drew load's 83.00 MiB, under the budget line. The peak drawn is the row's, where it died."""
    from matplotlib.axes import Axes

    MiB = 2**20
    row = _row(gpu=False) | {"verdict": "error", "passed": False, "budget": {"ram": 100 * MiB, "vram": None},
                             "baseline": None, "peaks": {"ram": 211 * MiB, "ram_tree": 211 * MiB},
                             "phases": {"load": {"name": "load", "ram_peak": 83 * MiB, "ram_tree_peak": 83 * MiB}},
                             "error": {"kind": "killed", "message": "killed by SIGKILL; it was in phase 'train_step_1'",
                                       "phase": "train_step_1"}}
    said, named = [], []
    original, ticks = Axes.annotate, Axes.set_xticklabels
    monkeypatch.setattr(Axes, "annotate", lambda ax, text, *a, **kw: said.append(text) or original(ax, text, *a, **kw))
    monkeypatch.setattr(Axes, "set_xticklabels", lambda ax, labels, **kw: named.append(list(labels)) or ticks(ax, labels, **kw))
    plots.write(_result(row), tmp_path / "killed.png", {"key": "cpu-x86_64"})
    assert said[0] == "211.00 MiB" and named == [["load", "train_step_1 (killed)"]], (said, named)


def test_a_stopped_phase_kept_from_what_was_streamed_is_not_said_to_have_kept_no_record(tmp_path, monkeypatch):
    """A child timed out in train_step_1 keeps that phase from what it streamed (300 MiB); the parent's poll saw 300.5
    MiB, the row's peak, drawn as a last point. Its legend said "its phase kept no record", beside that very phase."""
    from matplotlib.axes import Axes

    MiB = 2**20
    stopped = {"name": "train_step_1", "step": 1, "seconds": None, "ram_peak": 300 * MiB, "ram_tree_peak": 300 * MiB}
    row = _row(gpu=False) | {"verdict": "error", "passed": False, "budget": {"ram": 100 * MiB, "vram": None},
                             "baseline": None, "peaks": {"ram": 300 * MiB + MiB // 2, "ram_tree": 300 * MiB + MiB // 2},
                             "phases": {"load": {"name": "load", "ram_peak": 83 * MiB, "ram_tree_peak": 83 * MiB},
                                        "train_step_1": stopped},
                             "error": {"kind": "timeout", "message": "timed out; it was in phase 'train_step_1'",
                                       "phase": "train_step_1"}}
    labels = []
    original = Axes.plot
    monkeypatch.setattr(Axes, "plot", lambda ax, *a, **kw: labels.append(kw.get("label", "")) or original(ax, *a, **kw))
    plots.write(_result(row), tmp_path / "stopped.png", {"key": "cpu-x86_64"})
    (cross,) = [label for label in labels if label.startswith("peak seen so far")]
    assert "kept no record" not in cross and "above what was streamed of train_step_1" in cross, cross


def test_a_row_without_phases_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no phases"):
        plots.write(_result({**_row(gpu=False), "phases": {}}), tmp_path / "x.png")


def test_importing_the_plugin_imports_no_matplotlib():
    code = ("import sys, gpu_budget.pytest_plugin, gpu_budget.session.session, gpu_budget.session.xdist, gpu_budget.report.terminal; "
            "bad = [m for m in ('matplotlib', 'torch', 'hypothesis') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def _extra(name: str) -> str:
    """The one requirement pyproject.toml's extra `name` lists."""
    (requirement,) = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"][name]
    return requirement


def test_plots_without_matplotlib_is_a_usage_error(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    code = ("import sys; sys.modules['matplotlib'] = None; import pytest; "
            "sys.exit(pytest.main(['--gpu-budget', '--gpu-budget-plots=plots', '-p', 'no:cacheprovider']))")
    result = subprocess.run([sys.executable, "-c", code], cwd=pytester.path, capture_output=True, text=True,
                            check=False)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    # the extra's own requirement: `pytest-gpu-budget[plots]` names a release no index holds for a clone's install
    assert f"--gpu-budget-plots needs matplotlib: pip install '{_extra('plots')}' (the plots extra of pytest-gpu-budget)" \
        in result.stderr, result.stderr


def test_explore_without_hypothesis_is_a_usage_error_with_the_install_command(pytester):
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    code = ("import sys; sys.modules['hypothesis'] = None; import pytest; "
            "sys.exit(pytest.main(['--gpu-budget', '--gpu-budget-explore', '-p', 'no:cacheprovider', "
            "'-p', 'gpu_budget.pytest_plugin']))")  # no autoload: Hypothesis's own pytest plugin would import it
    result = subprocess.run([sys.executable, "-c", code], cwd=pytester.path, capture_output=True, text=True,
                            check=False, env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stderr
    assert f"--gpu-budget-explore needs Hypothesis: pip install '{_extra('explore')}' (the explore extra of " \
        "pytest-gpu-budget)" in result.stderr, result.stderr


def test_a_plots_folder_that_cannot_be_written_is_named_once_not_once_per_case(tmp_path):
    """A folder gone unwritable by the session's end (a file in its place, a read-only or full disk): every case's plot
    fails alike. Before, the gate listed "plotting <case> failed: FileExistsError(17, 'File exists')" once per case,
    naming no folder."""
    from gpu_budget.session import outputs
    from gpu_budget.session.data import SessionData

    folder = tmp_path / "plots"
    folder.write_text("not a folder")
    rows = [_result({**_row(gpu=False), "nodeid": f"memtests/test_x.py::test_{name}"}) for name in ("a", "b", "c")]
    problems: list[str] = []
    data = SessionData(rows=list(rows))
    outputs._plot(data, folder, problems, {"key": "cpu-x86_64"})
    assert problems == [f"could not write the plots to {folder}: File exists (3 plots not written)"]
    assert [row.plot for row in data.rows] == [None, None, None]
