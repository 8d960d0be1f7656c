"""A leak judged by its slope: a planted per-step leak fails on its projection to the declared run length alone.

Each test runs real pytest sessions (pytester, in a subprocess) whose cases are a
torch-free script marking its steps with gpu_budget.step(); the gate measures it
as a command and judges it with steps= declared (judge/growth.py).
"""

import json
import textwrap

import pytest

SCRIPT = '''
import os, sys
from gpu_budget import phase, step

phase("load")
held = b"\\x01" * (64 * 2**20)
mode, mib, kept = os.environ.get("MODE", "clean"), int(os.environ.get("MIB", "0")), []
for k in range(1, 11):
    step()
    if mode == "leak" or (mode == "cache" and k == 5):  # a leak keeps MIB per step; a cache is made once, at step 5
        kept.append(b"\\x01" * (mib * 2**20))
phase("save")
'''

TESTS = '''
import sys
import pytest
from gpu_budget import Scenario

def case(mode, mib):
    return Scenario(name=mode, command=[sys.executable, "script.py"], env={{"MODE": mode, "MIB": str(mib)}})

@pytest.mark.gpu_budget(ram="1 GiB"{steps})
def test_leak(gpu_budget):
    gpu_budget.measure(case("leak", 4))

@pytest.mark.gpu_budget(ram="1 GiB"{steps})
def test_cache_made_once(gpu_budget):
    gpu_budget.measure(case("cache", 64))

@pytest.mark.gpu_budget(ram="1 GiB"{steps})
def test_clean(gpu_budget):
    gpu_budget.measure(case("clean", 0))
'''


@pytest.fixture
def growth_project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=SCRIPT)

    def write_tests(steps: str):
        pytester.makepyfile(test_mem=textwrap.dedent(TESTS.format(steps=steps)))
        return pytester

    return write_tests


def rows(pytester) -> dict:
    data = json.loads((pytester.path / "r.json").read_text())
    return {r["nodeid"].split("::", 1)[1]: r for r in data["results"]}


def test_a_leak_fails_on_its_projection_while_its_peak_keeps_budget_and_baseline(growth_project):
    """Recorded without steps=, the leak passes: its peak is within budget and it is its own baseline. Declared
    steps=100_000, it fails on its 4 MiB per step alone; a cache made once and a clean run pass."""
    pytester = growth_project("")
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=3)  # recorded
    growth_project(", steps=100_000")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1, passed=2)
    found = rows(pytester)
    leak, cache, clean = found["test_leak"], found["test_cache_made_once"], found["test_clean"]
    assert (leak["verdict"], leak["passed"]) == ("over-budget", False)
    assert "host RAM grows 4.00 MiB/step over steps 4-9 (" in leak["message"], leak["message"]
    assert "at step 100,000 > budget 1.00 GiB" in leak["message"] and "baseline" not in leak["message"]
    recorded = leak["baseline"]["peaks"]["ram_tree"]  # the leak was there when the baseline was recorded
    assert leak["peaks"]["ram_tree"] < 256 * 2**20 and abs(leak["peaks"]["ram_tree"] - recorded) < 4 * 2**20
    for row in (cache, clean):
        assert (row["verdict"], row["passed"]) == ("pass", True), row["message"]
        assert row["message"].startswith("host RAM steady over steps 4-9"), row["message"]
    assert cache["peaks"]["ram_tree"] > clean["peaks"]["ram_tree"] + 60 * 2**20  # the cache is there, not a slope
    result.stdout.fnmatch_lines(["*over-budget*host RAM grows 4.00 MiB/step over steps 4-9*"])
    # the JSON row holds the projection itself: the fit's steps, slope, interval and the projected figure
    projected = leak["growth_projection"]
    assert projected["steps"] == 100_000 and projected["problem"] is None, projected
    ram = next(p for p in projected["projections"] if p["metric"] == "ram_tree")
    assert ram["steps_fitted"] == [4, 9] and ram["grows"] and ram["interval"][0] < ram["slope"] < ram["interval"][1]
    assert abs(ram["slope"] - 4 * 2**20) < 2**20, ram
    assert clean["growth_projection"]["projections"][0]["grows"] is False


def test_a_run_too_short_for_the_declared_length_is_an_error(growth_project):
    pytester = growth_project(", steps=100_000")
    pytester.makepyfile(script=SCRIPT.replace("range(1, 11)", "range(1, 5)"))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-k", "clean")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*steps=100,000 declared, but the run measured 4 optimizer step(s)*needs at least 9*"])


TOUCHING = '''
import sys
from gpu_budget import phase, step

MiB = 2**20

def touched(nbytes):
    b = bytearray(nbytes)
    for i in range(0, nbytes, 4096):
        b[i] = 1
    return b

phase("load")
'''  # a script's start: pages it keeps are touched, so its RSS holds them

SAWTOOTH = TOUCHING + '''
kept, buffer = [], []
for k in range(1, 62):
    step()
    kept.append(touched(int(0.3 * MiB)))  # the floor: 0.3 MiB a step, for good
    buffer.append(touched(int(1.7 * MiB)))  # a buffer emptied every 5th step
    if k % 5 == 0:
        buffer.clear()
phase("save")
'''


def test_a_sawtooth_over_a_rising_floor_is_read_at_the_floor_s_rate(pytester, monkeypatch):
    """The step before each top climbs back to just under the last top; read from it, each top rose 1.5 MiB in one
    step, and the gate said "host RAM grows 1.50 MiB/step ... about 14.70 GiB at step 10,000 > budget 4.00 GiB"; the
    floor keeps 0.3 MiB a step, about 3 GiB by step 10,000, within the budget."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=SAWTOOTH, test_mem=textwrap.dedent('''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.gpu_budget(ram="4 GiB", steps=10_000)
        def test_sawtooth(gpu_budget):
            gpu_budget.measure(Scenario(name="sawtooth", command=[sys.executable, "script.py"]))
        '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    row = rows(pytester)["test_sawtooth"]
    (projection,) = row["growth_projection"]["projections"]
    assert 0.25 * 2**20 < projection["slope"] < 0.35 * 2**20, row["message"]
    assert not projection["breaks"] and "within budget 4.00 GiB" in row["message"], row["message"]


FLUSHED = TOUCHING + '''
kept, cache = [], []
for k in range(1, int(sys.argv[1]) + 1):
    step()
    cache.append(touched(8 * MiB))  # a cache adding 8 MiB a step
    if k % 5 == 0:  # flushed every 5th step, keeping 10 MiB of its 40
        kept.append(touched(10 * MiB))
        cache.clear()
phase("save")
'''


def test_a_sawtooth_run_to_a_step_mid_climb_is_read_at_its_rate(pytester, monkeypatch):
    """Run 20 and 25 steps (its last judged step mid-climb), the gate said "host RAM grows 8.00 MiB/step over steps
    8-19, spikes of one or two steps read at their neighbours' level (...): about 78.09 GiB at step 10,000 > budget
    40.00 GiB", the climb's rate: its rate, 2 MiB/step, reaches about 20 GiB, within the budget."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=FLUSHED, test_mem=textwrap.dedent('''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.parametrize("n", [20, 25])
        @pytest.mark.gpu_budget(ram="40 GiB", steps=10_000)
        def test_flushed(gpu_budget, n):
            gpu_budget.measure(Scenario(name=f"flushed {n}", command=[sys.executable, "script.py", str(n)]))
        '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=2)
    for n in (20, 25):
        row = rows(pytester)[f"test_flushed[{n}]"]
        (projection,) = row["growth_projection"]["projections"]
        assert 1.9 * 2**20 < projection["slope"] < 2.1 * 2**20, row["message"]
        assert "within budget 40.00 GiB" in row["message"], row["message"]


TOOTH = TOUCHING + '''
kept, buffer, freed = [], [], sys.argv[1] == "freed"
for k in range(1, 21):
    step()
    if k % 8 == 0 and freed:  # a buffer freed every 8th step, keeping 4 MiB of it for good (0.5 MiB/step)
        kept.append(touched(4 * MiB))
        buffer.clear()
    else:
        buffer.append(touched(16 * MiB))
phase("save")
'''


def test_a_buffer_freed_every_8th_step_is_no_leak_and_says_the_run_is_too_short(pytester, monkeypatch):
    """A run begun on a buffer that climbs 16 MiB a step and is freed every 8th step: 20 steps read its first climb,
    "host RAM grows 16.00 MiB/step ... about 156 GiB at step 10,000 > budget 8.00 GiB", for a run keeping 0.5 MiB a
    step. Its climbs are no growth now; it passes, and says its two tops are too few to tell a leak under them.
    The same buffer never freed, a leak of 16 MiB a step, still fails."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(script=TOOTH, test_mem=textwrap.dedent('''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.parametrize("mode", ["freed", "kept"])
        @pytest.mark.gpu_budget(ram="8 GiB", steps=10_000)
        def test_buffer(gpu_budget, mode):
            gpu_budget.measure(Scenario(name=f"buffer {mode}", command=[sys.executable, "script.py", mode]))
        '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    freed, kept = rows(pytester)["test_buffer[freed]"], rows(pytester)["test_buffer[kept]"]
    assert freed["passed"] and "host RAM steady" in freed["message"], freed["message"]
    assert "climbs and falls back every 8 steps" in freed["message"], freed["message"]
    assert "the steps read hold 2 of them, too few" in freed["message"], freed["message"]
    assert not kept["passed"] and "host RAM grows 16.00 MiB/step" in kept["message"], kept["message"]
