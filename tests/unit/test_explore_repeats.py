"""An exploration kept in no example database repeats: the same seed explores the same shapes, run after run."""

import pytest

from gpu_budget.search.explore import Envelope, explore

MiB = 2**20
ENVELOPE = Envelope({"batch": (1, 16), "seq": (16, 512)})


def estimate_and_log(seen):
    def estimate(k):
        seen.append(tuple(sorted(k.items())))
        return k["batch"] * k["seq"] * 40 * 1024

    return estimate


def explored():
    seen = []
    estimate = estimate_and_log(seen)
    result = explore("t", ENVELOPE, "200 MiB", estimate, lambda k: estimate(k) + 50 * MiB, max_examples=10)
    return seen, result.smallest_failing.config, [r.config for r in result.real_runs]


def test_the_budget_run_without_a_database_explores_the_same_shapes_again():
    """Before, the budget property ran unseeded whatever the database: with none to save to, each run drew other
    examples and shrank to another edge of batch x seq (batch=13, seq=296; batch=8, seq=481; ...), so the same
    call reported another smallest failing configuration, and made its real run at another shape."""
    first, again = explored(), explored()
    assert first[1:] == again[1:]
    assert first[0] == again[0]


def test_a_database_given_as_a_string_is_a_folder(tmp_path):
    """database="path" died mid-call: "unsupported operand type(s) for /: 'str' and 'str'", naming no argument."""
    explore("t", ENVELOPE, "200 MiB", estimate_and_log([]), lambda k: 0, max_examples=5, database=str(tmp_path / "db"))
    assert any((tmp_path / "db").iterdir())


def test_a_database_that_is_no_folder_is_named():
    with pytest.raises(TypeError, match=r"^database=5: expected a folder \(a path\), or None: no example database$"):
        explore("t", ENVELOPE, "200 MiB", estimate_and_log([]), lambda k: 0, database=5)


def test_an_estimate_is_keyed_on_its_code_not_its_line():
    """Two lambdas of one test share a name: their code tells them apart; the same code moved down a file (an edit
    above it) keeps its folder of the example database, and its saved failures."""
    from gpu_budget.search.explore import _estimate_key

    def made(source, lines=0):
        space = {}
        exec(compile("\n" * lines + source, "m.py", "exec"), space)  # noqa: S102  the same code at another line
        return space["f"]

    small, large = (lambda k: k["batch"] << 20), (lambda k: k["batch"] << 30)
    assert _estimate_key(small) != _estimate_key(large)
    assert _estimate_key(made("f = lambda k: k['b'] * 2")) == _estimate_key(made("f = lambda k: k['b'] * 2", 40))


def test_explore_called_directly_keeps_each_estimate_in_its_own_folder(tmp_path):
    """The estimate was keyed where the gpu_budget fixture's explore() builds the key (explore_scenario), not in
    explore() itself: two direct calls alike but for their estimate shared one folder of the example database, so
    each replayed the other's saved failures (made with another estimate) and deleted them as passing. The same
    estimate again keeps its folder."""
    def shelves(estimate):
        explore("t", ENVELOPE, "200 MiB", estimate, None, max_examples=5, database=tmp_path)
        return sorted(p.name for p in tmp_path.iterdir())

    def small(k):
        return k["batch"] * k["seq"] * 40 * 1024

    def large(k):
        return k["batch"] * k["seq"] * 80 * 1024

    first = shelves(small)
    assert shelves(small) == first
    assert len(shelves(large)) == 2, "a second estimate reused the first's folder"
