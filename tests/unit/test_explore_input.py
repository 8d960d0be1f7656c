"""An exploration's input: a bad envelope, boundary or cap is named before any real run, never a bare IndexError."""

import math
import re

import pytest

from gpu_budget.search.explore import Envelope, explore


@pytest.mark.parametrize(("knobs", "monotone", "message"), [
    ({"batch": (8, 1)}, None, "envelope knob 'batch': the range (8, 1) is empty (lo > hi)"),
    ({"batch": []}, None, "envelope knob 'batch': no values to explore"),
    ({"batch": "1-8"}, None, "envelope knob 'batch': '1-8' is neither an (lo, hi) integer range nor a list of values"),
    ({"batch": [1, "a"]}, None, "envelope knob 'batch': values [1, 'a'] cannot be ordered"),
    ({"batch": [1, 2, 2]}, None, "envelope knob 'batch': 2 is listed twice"),
    ({"batch": (1.5, 4)}, None, ("envelope knob 'batch': (1.5, 4) is a pair that is no integer range: give a range "
                                 "of whole numbers (lo, hi), or the values to explore as a list [1.5, 4]")),
    ({}, None, "an envelope needs at least one knob"),
    ({"batch": (1, 8)}, ("btch",), "monotone knob 'btch' is not in the envelope (its knobs: batch)"),
    ({"batch": (1, 8)}, "batch", "monotone='batch': expected a tuple of knob names"),
    # an AttributeError ("'list' object has no attribute 'items'") and a TypeError ("not iterable") before
    ([("batch", (1, 8))], None, ("knobs=[('batch', (1, 8))]: expected a mapping of knob name to its (lo, hi) range "
                                 "or list of values")),
    ({"batch": (1, 8)}, 5, "monotone=5: expected a tuple of knob names"),
    ({"batch": (1, 8)}, {"batch": 1}, "monotone={'batch': 1}: expected a tuple of knob names"),
    ({"batch": (1, 8)}, b"batch", "monotone=b'batch': expected a tuple of knob names"),  # "monotone knob 98" before
])
def test_a_bad_envelope_is_named(knobs, monotone, message):
    with pytest.raises((TypeError, ValueError), match=f"^{re.escape(message)}$"):
        Envelope(knobs, monotone)


def test_a_boundary_outside_the_envelope_is_named_before_any_run():
    runs = []
    with pytest.raises(ValueError, match=r"boundary='btch' is not a knob of the envelope \(its knobs: batch, pad\)"):
        explore("t", Envelope({"batch": (1, 8), "pad": (0, 1)}), "150 MiB", estimate=lambda k: 0,
                measure=runs.append, boundary="btch")
    assert not runs


def test_a_boundary_that_is_no_name_is_named():
    """boundary=["batch"] was "unhashable type: 'list'", naming neither the boundary nor its value."""
    with pytest.raises(ValueError, match=r"^boundary=\['batch'\] is not a knob of the envelope \(its knobs: batch\)$"):
        explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=lambda k: 0, measure=lambda k: 0,
                boundary=["batch"])


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_a_bad_real_run_cap_is_named(bad):
    with pytest.raises(ValueError, match=rf"max_real_runs={bad!r}: expected a whole number >= 1"):
        explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=lambda k: 0, measure=lambda k: 0,
                max_real_runs=bad)


def test_a_knob_the_scenario_does_not_have_is_named_before_any_run():
    """A typo (seq_len for seq_length) would run every value of that knob alike: a boundary "at seq_len=256" that
    no run measured."""
    from gpu_budget import Scenario
    from gpu_budget.search.explore import explore_scenario

    runs = []
    lm = Scenario(name="lm", run="m:f", params={"batch": 1, "seq_length": 128})
    with pytest.raises(ValueError, match=re.escape("envelope knob 'seq_len' is not a param of scenario 'lm' at scale "
                                                   "'tiny' (its params: batch, seq_length)")):
        explore_scenario(lm, Envelope({"batch": (1, 8), "seq_len": (16, 256)}), "150 MiB", runs.append, scale="tiny",
                         cuda=False, estimate=lambda k: 0)
    assert not runs


def test_a_knob_an_applied_fix_sets_is_named_before_any_run():
    """fewer_workers sets dataloader_workers=1: exploring that knob would undo the fix. Before, check_input let it
    through and the first real run's with_params() raised the Scenario's FixError mid-search, naming the fix and
    not the envelope."""
    from gpu_budget import Scenario
    from gpu_budget.search.explore import check_input, explore_scenario

    runs = []
    fixed = Scenario(name="lm", run="m:f", params={"batch": 1, "dataloader_workers": 4}).with_fixes("fewer_workers")
    envelope = Envelope({"batch": (1, 8), "dataloader_workers": (0, 4)})
    message = ("envelope knob 'dataloader_workers' is set by fix 'fewer_workers' of scenario 'lm' "
               "(dataloader_workers=1): exploring it would undo the fix; leave it out of the envelope, or explore the "
               "scenario without the fix")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_input(fixed, envelope, "150 MiB", "tiny", None, 4)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        explore_scenario(fixed, envelope, "150 MiB", runs.append, scale="tiny", cuda=False, estimate=lambda k: 0)
    assert not runs


def test_a_knob_a_command_never_reads_is_named_before_any_run():
    """The command reads {batch} and nothing reads seq: every seq ran the same command line, so the exploration would
    report a boundary along seq ("the envelope's top") that no run measured. Before, check_input let it through."""
    from gpu_budget import Scenario
    from gpu_budget.search.explore import check_input

    command = Scenario(name="cmd", command=["python", "train.py", "--batch", "{batch}"], params={"batch": 1, "seq": 128})
    message = ("envelope knob 'seq' changes nothing in the command of scenario 'cmd': no placeholder of the command, its cwd "
               "or env reads it, nor does its prepare (read it, as \"{seq}\", or leave it out of the envelope)")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_input(command, Envelope({"batch": (1, 8), "seq": (16, 512)}), "150 MiB", "tiny", None, 4)
    check_input(command, Envelope({"batch": (1, 8)}), "150 MiB", "tiny", None, 4)  # a knob it reads

def test_a_boundary_along_a_knob_declared_not_monotone_is_refused():
    """The boundary search brackets one edge, assuming memory grows along the knob: along a knob the envelope says
    it need not grow, a bracket at 3 (fits) / 4 (over) says nothing of 5 and up, so "largest" would be unfounded."""
    with pytest.raises(ValueError, match=re.escape("boundary='pad' is not among the envelope's monotone knobs "
                                                   "(batch): the boundary search assumes memory grows along it")):
        explore("t", Envelope({"batch": (1, 8), "pad": (0, 8)}, monotone=("batch",)), "150 MiB",
                estimate=lambda k: 0, measure=lambda k: 0, boundary="pad")


@pytest.mark.parametrize(("bad", "message"), [
    (-5, "negative memory size: -5"),
    (True, "not a memory size: True"),
    (None, "not a memory size: None (expected e.g. '12.7 GiB', '24GB' or bytes)"),
    (1.5, "not a memory size: 1.5 (expected e.g. '12.7 GiB', '24GB' or bytes)"),
])
def test_a_bad_budget_is_named_before_any_run(bad, message):
    """A budget of -5 bytes was explored as "budget -0.0 MiB" (every configuration over it), True as 1 byte."""
    from gpu_budget.units import SizeError

    runs = []
    with pytest.raises(SizeError, match=f"^{re.escape(message)}$"):
        explore("t", Envelope({"batch": (1, 8)}), bad, estimate=lambda k: 0, measure=runs.append)
    assert not runs


@pytest.mark.parametrize(("estimate", "message"), [
    (lambda k: None if k["batch"] > 4 else k["batch"] << 20, "returned None: expected bytes, a number >= 0"),
    (lambda k: -1 if k["batch"] > 4 else k["batch"] << 20, "returned -1: expected bytes, a number >= 0"),
    (lambda k: float("nan") if k["batch"] > 4 else k["batch"] << 20, "returned nan: expected bytes, a number >= 0"),
    (lambda k: {}["x"] if k["batch"] > 4 else k["batch"] << 20, "raised KeyError: 'x'"),
])
def test_an_estimate_that_fails_stops_the_search_naming_the_configuration_and_keeps_its_real_runs(estimate, message):
    """An estimate returning None died as a TypeError inside the calibration ("unsupported operand type(s) for *:
    'float' and 'NoneType'"), and one that raised left the test with its own traceback: either way the exploration,
    and the real run it had made, never reached the report."""
    found = explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=estimate, measure=lambda k: k["batch"] << 21,
                    boundary="batch", max_examples=10)
    assert found.failed is not None and found.failed.startswith("estimate of batch="), found.summary()
    assert found.failed.endswith(message) and found.problems == [found.failed]
    assert [r.config for r in found.real_runs] == [{"batch": 1}], "the calibration run was lost"



def test_a_configuration_the_estimate_refuses_is_never_run():
    """batch 0 (the envelope's smallest) is refused by the estimate, as a builder's batch_size() refuses it. Before,
    the calibration run was made first, a real run (seconds to minutes) of a configuration no estimate could stand
    beside, listed among the real runs of a search that stopped at once."""
    def estimate(k):
        if k["batch"] == 0:
            raise ValueError("batch_size=0: a batch holds 1 example or more")
        return k["batch"] << 20

    runs = []
    found = explore("t", Envelope({"batch": (0, 8)}), "150 MiB", estimate=estimate,
                    measure=lambda k: runs.append(dict(k)) or k["batch"] << 21, boundary="batch", max_examples=10)
    assert found.failed == "estimate of batch=0 raised ValueError: batch_size=0: a batch holds 1 example or more"
    assert not runs and not found.real_runs, found.summary()

def test_an_estimate_of_a_numpy_integer_is_bytes():
    """A builder that multiplies a shape (numpy.prod) returns a numpy integer, no int: still a byte count."""
    numpy = pytest.importorskip("numpy")
    found = explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=lambda k: numpy.int64(k["batch"] << 20),
                    measure=None, max_examples=5)
    assert found.failed is None and found.worst.predicted == 8 << 20, found.summary()


def test_a_huge_range_is_searched_without_listing_its_values():
    """A knob's range is searched by index (gallop, bisection, a climb): (1, 2**62) must not be built as a list of
    every value, which ran the pytest process out of memory (MemoryError) or took seconds and GiBs per million."""
    envelope = Envelope({"seq_len": (1, 2**62)})
    assert len(envelope.values("seq_len")) == 2**62 and envelope.values("seq_len").index(2**40) == 2**40 - 1
    result = explore("huge", envelope, "200 MiB", estimate=lambda k: k["seq_len"] << 10,
                     measure=lambda k: (k["seq_len"] << 10) + (20 << 20), boundary="seq_len", max_examples=10)
    assert result.boundary.value == 180 << 10 and not result.problems, result.summary()


def test_a_negative_calibration_intercept_reads_as_a_subtraction():
    """measured = slope x estimate + intercept, with an intercept below zero: "+ -79.7 MiB" read as a typo."""
    from gpu_budget.search.exploration import Calibration, Exploration

    def line(intercept: int) -> str:
        done = Exploration("s", 2**30, "ram", {"batch": {"range": [1, 8]}}, calibration=Calibration(0.795, intercept, 3))
        return next(text for text in done.summary() if text.startswith("calibration over"))

    assert line(-int(79.7 * 2**20)).endswith("measured = 0.795 x estimate - 79.7 MiB")
    assert line(5 * 2**20).endswith("measured = 0.795 x estimate + 5.0 MiB")


@pytest.mark.parametrize("bad", [True, False, 1.5, "0", math.nan], ids=repr)
def test_a_seed_that_is_no_whole_number_is_named(bad):
    """seed=True was Hypothesis' seed 1, seed="0" a seed other than 0: each repeated, unsaid, another search."""
    with pytest.raises(ValueError, match=rf"^seed={re.escape(repr(bad))}: expected a whole number \(or None: random\)$"):
        explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=lambda k: 0, measure=lambda k: 0, seed=bad)


@pytest.mark.parametrize("bad", [5, "mine:estimate", [len]], ids=repr)
def test_an_estimate_that_is_no_function_is_named_before_any_run(bad):
    """estimate=5 was met mid-search, as "estimate of ... raised TypeError: 'int' object is not callable"."""
    runs = []
    with pytest.raises(ValueError, match=rf"^estimate={re.escape(repr(bad))}: expected a function of the knobs"):
        explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=bad, measure=runs.append)
    assert not runs


@pytest.mark.parametrize(("knobs", "message"), [
    ({1: (1, 8)}, "envelope knob 1: a knob's name is a string (a param of the scenario)"),
    ({b"batch": (1, 8)}, "envelope knob b'batch': a knob's name is a string (a param of the scenario)"),
    ({"lr": [1e-4, math.nan]}, "envelope knob 'lr': value nan is no string or finite number"),
    ({"lr": [math.inf]}, "envelope knob 'lr': value inf is no string or finite number"),
    ({"name": [b"a"]}, "envelope knob 'name': value b'a' is no string or finite number"),
    ({"shape": [[1, 2]]}, "envelope knob 'shape': value [1, 2] is no string or finite number"),
], ids=repr)
def test_a_knob_name_or_value_a_param_cannot_hold_is_named(knobs, message):
    """Each was accepted by the Envelope and met only once explore() ran: a name as "not a param of scenario", a
    value as no JSON when the search laid it over the scenario's params."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        Envelope(knobs)


def test_monotone_knobs_given_as_an_iterator_are_kept():
    """monotone=iter(...) was read up by the check of its names: the search then found no monotone knob."""
    assert Envelope({"batch": (1, 8)}, monotone=iter(["batch"])).monotone_knobs() == ("batch",)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None])
def test_a_bad_number_of_examples_is_named_before_any_run(bad):
    """Hypothesis refused 0, 2.5 and None only after the calibration's real run, and took True for one example."""
    runs = []
    with pytest.raises(ValueError, match=rf"^max_examples={bad!r}: expected a whole number >= 1$"):
        explore("t", Envelope({"batch": (1, 8)}), "150 MiB", estimate=lambda k: 0, measure=runs.append,
                max_examples=bad)
    assert not runs


def test_a_budget_naming_no_scale_is_named_not_a_skip():
    """explore(budget={"tinny": "1 GiB"}) read as "no exploration budget for scale 'tiny'" and skipped the test, where
    the marker's ram={"tinny": ...} is refused naming the scale."""
    from gpu_budget.search.explore import budget_to_explore

    with pytest.raises(ValueError, match=re.escape("budget={'tinny': '1 GiB'} names unknown scale(s) ['tinny'] "
                                                   "(known: ('tiny', 'real'))")):
        budget_to_explore({"tinny": "1 GiB"}, None, "tiny", "cpu")
    assert budget_to_explore({"real": "24 GB"}, None, "tiny", "cpu") == (None, "no exploration budget for scale 'tiny'")


@pytest.mark.parametrize(("value", "said"), [
    (2.0, "batch_size=2.0: a batch holds a whole number of examples, 1 or more"),
    (1.5, "batch_size=1.5: a batch holds a whole number of examples, 1 or more"),
    ("4", "batch_size='4': a batch holds a whole number of examples, 1 or more"),
    (0, "batch_size=0: a batch holds 1 example or more"),
])
def test_a_batch_size_that_is_no_whole_number_is_said_so(value, said):
    """An envelope's batch of floats ({"batch_size": [2.0, 4.0]}) reaches the builder's batch_size(). Before, 2.0 was
    refused with "batch_size=2.0: a batch holds 1 example or more", which 2.0 is: the message said nothing true of it."""
    from gpu_budget.estimate import batch_size

    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        batch_size({"batch_size": value})
