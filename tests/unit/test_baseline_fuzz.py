"""Hostile baseline files: whatever a file holds, loading it and judging against it gives a valid comparison or
the loader's own error naming the file, fast, and writes nothing (judge/files.py)."""

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_budget.judge import files
from gpu_budget.judge.baselines import lookup, packages_of
from gpu_budget.judge.compare import judge
from gpu_budget.judge.files import BaselineError
from gpu_budget.judge.fingerprint import between
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.figures import Peaks, RankFigures
from gpu_budget.model.result import Measurement

MiB = 2**20
GOOD = {"schema": files.SCHEMA, "packages": {"d1": {"torch": "2.13.0"}},
        "entries": {"tiny": {"test_a": {"scenario": "s", "fixes": [], "params": {}, "recorded": "2026-11-25",
                                        "peaks": {"ram": 100 * MiB, "ram_tree": 120 * MiB, "vram_allocated": None},
                                        "phases": {"load": {"ram": 90 * MiB}}, "tolerance": {"rel": 0.005, "abs": 4 * MiB},
                                        "fingerprint": {"floor": 20 * MiB, "packages": "d1", "threads": 1},
                                        "ranks": {"0": {"ram": 100 * MiB, "ram_tree": 120 * MiB}}}}}}
NOW = {"floor": 21 * MiB, "packages": "d2", "threads": 1, "isa": "AVX2"}
MEASURED = Measurement("ok", Peaks(ram=101 * MiB, ram_tree=121 * MiB, vram_allocated=None),
                       ranks=(RankFigures.from_json({"rank": 0, "peaks": {"ram": 101 * MiB, "ram_tree": 121 * MiB}}),))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12)


def paths(value, prefix=()):
    """Every path into the good file's nested objects: where a hostile value is planted."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths(inner, (*prefix, key))


PATHS = list(paths(GOOD))


def planted(path: tuple, value) -> dict:
    data = json.loads(json.dumps(GOOD))
    if not path:
        return value
    holder = data
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return data


def judged(path) -> None:
    """Load the file and judge a measurement against each of its entries, as a session does."""
    data = files.load(path)
    for scale, by_id in data["entries"].items():
        for test_id in by_id:
            entry = lookup(data, scale, test_id)
            setup = between(entry.fingerprint, NOW, packages_of(data, entry), {"torch": "2.13.0"})
            judge(MEASURED, Budget(ram=2**30), entry, Tolerance(0.005, 4 * MiB), ci=True, update=False, setup=setup)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PATHS), value=json_values)
def test_any_value_anywhere_in_a_baseline_is_judged_or_named(tmp_path, path, value):
    file = tmp_path / "test_mod.json"
    file.write_text(json.dumps(planted(path, value)))
    before = file.read_bytes()
    try:
        judged(file)
    except BaselineError as exc:
        assert str(file) in str(exc)
    assert file.read_bytes() == before  # nothing written


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=64) | st.text(max_size=64).map(lambda t: t.encode("utf-16")))
def test_any_bytes_are_a_baseline_or_the_loaders_error(tmp_path, data):
    file = tmp_path / "test_mod.json"
    file.write_bytes(data)
    try:
        judged(file)
    except BaselineError as exc:
        assert str(file) in str(exc)


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"a":' * 100_000 + "1" + "}" * 100_000,
    '{"schema": 1, "entries": {"tiny": {"t": {"peaks": {"ram": ' + "9" * 5000 + "}}}}}",
])
def test_deep_nesting_and_huge_numbers_are_named_fast(tmp_path, text):
    file = tmp_path / "test_mod.json"
    file.write_text(text)
    started = time.perf_counter()
    with pytest.raises(BaselineError, match=str(file)):
        files.load(file)
    assert time.perf_counter() - started < 5
    assert file.read_text() == text
