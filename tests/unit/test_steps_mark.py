"""The marker's steps= (the real run's length the growth rule projects to): per scale, and clear errors."""

import pytest

from gpu_budget.declare.marks import gpu_budget, marker_help


def test_one_length_or_one_per_scale():
    assert gpu_budget(ram="4 GiB", steps=10_000).steps == 10_000
    per_scale = {"tiny": 10_000, "real": 50_000}
    assert gpu_budget(ram="4 GiB", steps=per_scale, scale="real").steps == 50_000
    assert gpu_budget(ram="4 GiB", steps={"real": 50_000}, scale="tiny").steps is None  # not declared at this scale
    assert gpu_budget(ram="4 GiB").steps is None


@pytest.mark.parametrize("steps, message", [
    (0, "steps=0 is not a positive whole number of optimizer steps"),
    (-5, "steps=-5 is not a positive"),
    (2.5, "steps=2.5 is not a positive"),
    ("10k", "steps='10k' is not a positive"),
    (True, "steps=True is not a positive"),
    ({"real": 0}, "steps=0 is not a positive"),  # checked on every scale, not only the session's
    ({"huge": 10}, "steps names unknown scale(s) ['huge']"),
])
def test_a_bad_length_names_the_test_and_the_value(steps, message):
    with pytest.raises(ValueError, match="^test_x.py::t: ") as info:
        gpu_budget(ram="4 GiB", steps=steps, scale="tiny", where="test_x.py::t")
    assert message in str(info.value)


def test_the_marker_help_shows_steps():
    assert "steps: 'Any' = None" in marker_help() and "steps=10_000" in marker_help()


def test_a_numpy_whole_number_is_the_length_it_is():
    """`steps=np.int64(10_000)` (a length worked out with numpy) was refused as "not a positive whole number of
    optimizer steps", which it is: a numpy integer is no int subclass. It reads as the int it holds."""
    numpy = pytest.importorskip("numpy")
    steps = gpu_budget(ram="4 GiB", steps=numpy.int64(10_000)).steps
    assert steps == 10_000 and type(steps) is int
    assert gpu_budget(ram="4 GiB", steps={"tiny": numpy.uint32(100)}).steps == 100
    with pytest.raises(ValueError, match=r"steps=np.int64\(0\) is not a positive"):
        gpu_budget(ram="4 GiB", steps=numpy.int64(0), where="test_x.py::t")
    with pytest.raises(ValueError, match=r"steps=np.True_ is not a positive"):
        gpu_budget(ram="4 GiB", steps=numpy.bool_(True), where="test_x.py::t")
