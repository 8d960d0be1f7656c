"""A marker's mistakes are errors naming the test and the fix: a budget with no unit (parse_size would read ram=4 as
4 bytes) and a keyword the marker does not take (declare/marks.py)."""

import pytest

from gpu_budget.declare.marks import KEYWORDS, gpu_budget, merge
from gpu_budget.units import parse_size

WHERE = "test_x.py::test_y"


@pytest.mark.parametrize("kwargs, named", [
    ({"ram": 4}, 'ram budget 4 is a bare number: give it a unit, e.g. "4 GiB"'),
    ({"vram": "4"}, "vram budget '4' is a bare number"),
    ({"ram": 0.5}, 'ram budget 0.5 is a bare number: give it a unit, e.g. "0.5 GiB"'),
    ({"ram": {"tiny": "900 MiB", "real": 12}}, "ram budget 12 at scale 'real' is a bare number"),
    ({"cpu": {"ram": 2 << 30}}, ("cpu['ram'] budget 2147483648 is a bare number: give it a unit, e.g. "
                                 '"2147483648 B" (2.00 GiB) if bytes are meant')),
    ({"cuda": {"vram": {"real": 24}}}, "cuda['vram'] budget 24 at scale 'real' is a bare number"),  # not this host's
])
def test_a_bare_number_budget_is_an_error_asking_for_a_unit(kwargs, named):
    with pytest.raises(ValueError) as info:
        gpu_budget(**kwargs, scale="tiny", host="cpu", where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value)


def test_a_numpy_number_budget_is_refused_as_a_bare_number_too():
    """`ram=np.int64(24)` (a figure worked out with numpy) was "not a memory size: np.int64(24) (expected e.g.
    '12.7 GiB', '24GB' or bytes)", its hint to give bytes, which a budget refuses next as a bare number."""
    numpy = pytest.importorskip("numpy")
    for value, hint in [(numpy.int64(24), '"24 GiB"'), (numpy.float32(2.5), '"2.5 GiB"'),
                        (numpy.int64(2**34), '"17179869184 B" (16.00 GiB) if bytes are meant')]:
        with pytest.raises(ValueError) as info:
            gpu_budget(ram=value, where=WHERE)
        assert str(info.value) == f"{WHERE}: ram budget {value!r} is a bare number: give it a unit, e.g. {hint}"


def test_a_positional_bare_number_is_refused_too():
    with pytest.raises(ValueError, match="ram budget 4 is a bare number"):
        gpu_budget(**merge([((4,), {})], where=WHERE), where=WHERE)


@pytest.mark.parametrize("budget, expected", [("4 GiB", 4 * 2**30), ("4096 B", 4096), ("24GB", 24 * 10**9),
                                              ({"tiny": "2 MiB"}, 2 * 2**20), (None, None)])
def test_a_size_with_its_unit_is_read_as_before(budget, expected):
    assert gpu_budget(ram=budget, where=WHERE).budget.ram == expected


def test_what_else_reads_bare_bytes_still_does():
    """parse_size keeps taking bytes as an int: the baseline files' figures are byte counts. A tolerance's abs is
    declared as a budget is, with its unit (a bare one is refused: below)."""
    assert parse_size(4096) == 4096
    assert gpu_budget(ram="1 GiB", tolerance={"rel": 0.01, "abs": "4096 B"}, where=WHERE).tolerance.abs == 4096


FORMS = "(e.g. {'rel': 0.02, 'abs': '16 MiB'}: rel a fraction from 0 up to (not including) 10, abs a size with its unit, either alone"


@pytest.mark.parametrize("kwargs, named", [
    ({"tolerance": 0.02}, f"tolerance must be a mapping of rel, abs {FORMS}"),
    ({"tolerance": 0.02}, "; got 0.02 (a number alone is no tolerance: {'rel': 0.02} for a fraction)"),
    ({"tolerance": "2 %"}, "tolerance must be a mapping of rel, abs (e.g. "),
    ({"tolerance": "2 %"}, "; got '2 %'"),
    ({"tolerance": {"rel": 0.02, "abss": "1 MiB"}}, "tolerance must be a mapping of rel, abs (e.g. "),
    ({"tolerance": {"rel": 0.02, "abss": "1 MiB"}}, "; got unknown key(s) ['abss']"),
    ({"tolerance": {"rel": "2 %"}}, "tolerance rel '2 %' is not a fraction from 0 up to (not including) 10 (e.g. {'rel': 0.02"),
    ({"tolerance": {"rel": True}}, "tolerance rel True is not a fraction from 0 up to (not including) 10"),
    ({"tolerance": {"abs": "16 MiBB"}}, "bad tolerance abs: unknown unit 'MiBB' in memory size '16 MiBB'"),
    ({"cuda": {"tolerance": 0.02}}, "cuda['tolerance'] must be a mapping of rel, abs"),  # not this host's: read anyway
])
def test_a_tolerance_that_is_not_one_names_the_test_the_value_and_the_forms(kwargs, named):
    with pytest.raises(ValueError) as info:
        gpu_budget(ram="1 GiB", **kwargs, scale="tiny", host="cpu", where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value), str(info.value)


@pytest.mark.parametrize("tolerance, named", [
    ({"abs": 16}, 'tolerance abs 16 is a bare number: give it a unit, e.g. "16 MiB"'),
    ({"rel": 0.01, "abs": "16"}, "tolerance abs '16' is a bare number: give it a unit"),
    ({"abs": 4096}, 'tolerance abs 4096 is a bare number: give it a unit, e.g. "4096 B" (4.00 KiB) if bytes are meant'),
    ({"abs": 0}, 'tolerance abs 0 is a bare number: give it a unit, e.g. "0 MiB"'),
])
def test_a_bare_number_tolerance_abs_is_an_error_asking_for_a_unit(tolerance, named):
    """abs follows the budgets' rule: {"abs": 16} meant 16 MiB, not the 16 bytes parse_size reads."""
    with pytest.raises(ValueError) as info:
        gpu_budget(ram="1 GiB", tolerance=tolerance, where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value), str(info.value)
    with pytest.raises(ValueError, match=r"cpu\['tolerance'\] abs .* is a bare number"):  # on any host
        gpu_budget(ram="1 GiB", cpu={"tolerance": tolerance}, host="cuda", where=WHERE)


@pytest.mark.parametrize("rel", [5, 2, 1])
def test_a_whole_number_rel_read_as_a_percentage_is_refused(rel):
    """`tolerance={"rel": 5}`, meant as 5 %, was read as 500 %: a run six times its baseline passed as within
    tolerance. A whole number of 1 or more is refused, naming the test, what it reads as and the fraction meant; a
    float (5.0) is a multiple written as one."""
    with pytest.raises(ValueError) as info:
        gpu_budget(ram="1 GiB", tolerance={"rel": rel}, where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: tolerance rel {rel} is {rel * 100} %, not {rel} %"), str(info.value)
    assert f"{{'rel': {rel / 100}}} for {rel} %" in str(info.value)
    with pytest.raises(ValueError, match=r"cuda\['tolerance'\] rel 5 is 500 %"):  # on any host
        gpu_budget(ram="1 GiB", cuda={"tolerance": {"rel": 5}}, where=WHERE)
    assert gpu_budget(ram="1 GiB", tolerance={"rel": float(rel)}, where=WHERE).tolerance.rel == rel
    assert gpu_budget(ram="1 GiB", tolerance={"rel": 0}, where=WHERE).tolerance.rel == 0


@pytest.mark.parametrize("tolerance, expected", [
    ({"abs": "16 MiB"}, (0.005, 16 * 2**20)), ({"rel": 0.02}, (0.02, 4 * 2**20)), ({"abs": "0 B"}, (0.005, 0)),
    ({"rel": 0, "abs": "1 KB"}, (0.0, 1000)),
])
def test_a_tolerance_with_its_unit_is_read_over_the_default(tolerance, expected):
    mark = gpu_budget(ram="1 GiB", tolerance=tolerance, where=WHERE)
    assert (mark.tolerance.rel, mark.tolerance.abs) == expected


@pytest.mark.parametrize("kwargs, named", [
    ({"ram": {"tiny": "1 GiB", "real": "12.7 GiBB"}}, "bad ram budget at scale 'real': unknown unit 'GiBB' in memory size '12.7 GiBB'"),
    ({"vram": {"real": "lots"}}, "bad vram budget at scale 'real': not a memory size: 'lots'"),
    ({"ram": "1 GiB", "cuda": {"vram": {"real": "24 GBB"}}}, "bad vram budget in cuda= at scale 'real': unknown unit 'GBB'"),
    ({"ram": "1 GiB", "cuda": {"ram": "2 GiBB"}}, "bad ram budget in cuda=: unknown unit 'GiBB'"),  # not this host's
    ({"ram": "1 GiB", "cuda": {"ram": {"huge": "2 GiB"}}}, "ram budget in cuda= names unknown scale(s) ['huge']"),
])
def test_a_bad_budget_fails_at_any_scale_and_on_any_host_naming_the_scale(kwargs, named):
    """Every scale's and every device block's ram/vram is read at marker time, not only the running one's: a typo in
    the real budget must not pass the tiny gate unseen."""
    for scale in ("tiny", "real"):
        with pytest.raises(ValueError) as info:
            gpu_budget(**kwargs, scale=scale, host="cpu", where=WHERE)
        assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value), str(info.value)


@pytest.mark.parametrize("kwargs, named", [
    ({"ram": "1 GiB", "expect": {"tiny": "over-budget", "real": "over_budget"}},
     "expect='over_budget' is not one of"),
    ({"ram": "1 GiB", "cuda": {"vram": "2 GiB", "expect": "overbudget"}}, "cuda= expect='overbudget' is not one of"),
    ({"ram": "1 GiB", "cuda": {"vram": "2 GiB", "origin": "writeup"}}, "cuda= origin='writeup' is not one of"),
])
def test_a_bad_expectation_or_origin_fails_at_any_scale_and_on_any_host(kwargs, named):
    """expect= at a scale the session does not run, and expect=/origin= in the other device's block, are read too:
    a typo there once passed every gate of this host and scale unseen."""
    for scale in ("tiny", "real"):
        with pytest.raises(ValueError) as info:
            gpu_budget(**kwargs, scale=scale, host="cpu", where=WHERE)
        assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value), str(info.value)


def test_an_unknown_keyword_names_the_test_a_guess_and_the_keywords():
    with pytest.raises(ValueError) as info:
        merge([((), {"ram": "1 GiB"}), ((), {"rams": "4 GiB"})], where=WHERE)
    message = str(info.value)
    assert message.startswith(f"{WHERE}: gpu_budget marker has an unknown keyword 'rams' (did you mean 'ram'?); ")
    assert message.endswith("its keywords are " + ", ".join(KEYWORDS))
    with pytest.raises(ValueError, match=r"unknown keyword 'budget'; its keywords are ram, vram, "):
        merge([((), {"budget": "4 GiB"})], where=WHERE)


@pytest.mark.parametrize("internal", ["scale", "host", "where"])
def test_the_sessions_own_arguments_are_not_marker_keywords(internal):
    with pytest.raises(ValueError, match=f"unknown keyword {internal!r}"):
        merge([((), {internal: "x"})], where=WHERE)


@pytest.mark.parametrize("args, kwargs, named", [
    (("1 GiB",), {"ram": "2 GiB"}, "gpu_budget marker gives ram twice: '1 GiB' as its first argument and ram='2 GiB'"),
    (("1 GiB", "8 GiB"), {"vram": "4 GiB"}, "gives vram twice: '8 GiB' as its second argument and vram='4 GiB'"),
], ids=["ram", "vram"])
def test_a_size_given_both_by_position_and_by_keyword_is_an_error_naming_both(args, kwargs, named):
    """A Python call would refuse it (multiple values for 'ram'); the marker kept the keyword's and dropped the other."""
    with pytest.raises(ValueError) as info:
        merge([(args, kwargs)], where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value), str(info.value)


def test_a_closer_marker_still_overrides_a_farther_ones_positional_size():
    assert merge([(("1 GiB",), {}), ((), {"ram": "2 GiB"})], where=WHERE) == {"ram": "2 GiB"}


@pytest.mark.parametrize("kwargs", [
    {"vram": "10 GiB"},
    {"vram": {"real": "20 GiB"}},  # at a scale this session does not run, all the same
    {"cpu": {"vram": "10 GiB"}},
])
def test_a_vram_budget_on_a_test_pinned_to_the_cpu_is_refused(kwargs):
    with pytest.raises(ValueError, match="with device='cpu': the test's child never sees a GPU, so no host can check"):
        gpu_budget(**kwargs, device="cpu", scale="tiny", host="cuda", where=WHERE)


@pytest.mark.parametrize("host", ["cpu", "cuda"])
@pytest.mark.parametrize("vram", ["10 GiB", {"real": "20 GiB"}])
def test_a_vram_budget_in_the_cpu_block_of_an_unpinned_test_is_refused(host, vram):
    """cpu= applies where the case runs on the CPU, a host without CUDA: a VRAM budget there is checked on no host
    (a CPU host marks the top-level one unchecked; a CUDA host reads cuda= and the top level), so none could fail."""
    with pytest.raises(ValueError, match=r"cpu=\{'vram': .*\}: the cpu= block applies where the case runs on the CPU"):
        gpu_budget(ram="1 GiB", cpu={"vram": vram}, scale="tiny", host=host, where=WHERE)
    assert gpu_budget(ram="1 GiB", cpu={"vram": None}, scale="tiny", host=host, where=WHERE).budget.ram == 2**30


def test_a_vram_budget_for_cuda_runs_beside_a_cpu_pin_is_accepted():
    mark = gpu_budget(ram="1 GiB", cuda={"vram": "10 GiB"}, device="cpu", scale="tiny", host="cuda", where=WHERE)
    assert mark.device == "cpu" and mark.budget.vram is None and mark.budget.ram == 2**30


def test_a_closer_cpu_or_cuda_block_refines_the_farther_one_key_by_key():
    """The blocks hold marker keys (ram, vram, expect, tolerance, origin), and keys combine closer over farther."""
    merged = merge([((), {"cpu": {"ram": "1 GiB", "expect": "over-budget"}, "cuda": {"vram": "2 GiB"}}),
                    ((), {"cpu": {"tolerance": {"rel": 0.1}, "expect": None}}),
                    ((), {"cuda": None})], where=WHERE)
    assert merged == {"cpu": {"ram": "1 GiB", "expect": None, "tolerance": {"rel": 0.1}}, "cuda": None}


def test_a_closer_per_scale_mapping_refines_the_farther_scale_by_scale():
    """A test's ram={"real": ...} raises its real budget and keeps its module's tiny one: before, it replaced the whole
    mapping and the test ran at tiny with no budget at all (a 51 MiB peak passed a module's 1 MiB)."""
    module = ((), {"ram": {"tiny": "1 MiB", "real": "12 GB"}, "expect": "over-budget", "steps": {"real": 50_000}})
    merged = merge([module, ((), {"ram": {"real": "20 GB"}, "expect": {"real": None}, "steps": {"tiny": 100}})],
                   where=WHERE)
    assert merged == {"ram": {"tiny": "1 MiB", "real": "20 GB"}, "expect": {"tiny": "over-budget", "real": None},
                      "steps": {"real": 50_000, "tiny": 100}}
    assert gpu_budget(**merged, scale="tiny", where=WHERE).budget.ram == 2**20
    assert merge([module, ((), {"ram": "2 GiB"})], where=WHERE)["ram"] == "2 GiB"  # one size names every scale
    assert merge([module, ((), {"ram": {"tiny": None}})], where=WHERE)["ram"] == {"tiny": None, "real": "12 GB"}
    one = merge([((), {"ram": "1 GiB"}), ((), {"ram": {"real": "20 GB"}})], where=WHERE)["ram"]
    assert one == {"tiny": "1 GiB", "real": "20 GB"}  # a farther single size stands for every scale
    blocks = merge([((), {"cuda": {"vram": {"tiny": "1 GiB", "real": "40 GiB"}}}), ((), {"cuda": {"vram": {"real": "70 GiB"}}})],
                   where=WHERE)
    assert blocks == {"cuda": {"vram": {"tiny": "1 GiB", "real": "70 GiB"}}}


def test_a_positional_per_scale_size_refines_the_farther_one_as_its_keyword_does():
    """gpu_budget({"real": ...}) is ram={"real": ...}: before, a positional size replaced the farther mapping whole, so a
    test's positional real budget dropped its module's tiny one and the tiny gate ran it with no budget at all."""
    module = ((), {"ram": {"tiny": "1 MiB", "real": "12 GB"}, "vram": {"tiny": "1 GiB"}})
    merged = merge([module, (({"real": "13 GB"}, {"real": "24 GB"}), {})], where=WHERE)
    assert merged == {"ram": {"tiny": "1 MiB", "real": "13 GB"}, "vram": {"tiny": "1 GiB", "real": "24 GB"}}
    assert gpu_budget(**merged, scale="tiny", where=WHERE).budget.ram == 2**20


@pytest.mark.parametrize("kwargs, named", [
    ({"ram": "0 GiB"}, "ram budget '0 GiB' is 0 B: every run holds some host RAM"),
    ({"ram": "0.4 B"}, "not a whole number of bytes: '0.4 B'"),  # would round to no byte
    ({"ram": {"tiny": "1 GiB", "real": "0 MB"}}, "ram budget at scale 'real' '0 MB' is 0 B"),
    ({"ram": "1 GiB", "cuda": {"ram": "0 B"}}, "ram budget in cuda= '0 B' is 0 B"),  # not this host's
    ({"card": "0 GiB"}, "card='0 GiB' is 0 B: a card holds some memory: capped at none, no case could run on it"),
    ({"card": {"tiny": "T4", "real": "0 MiB"}}, "card='0 MiB' is 0 B: a card holds some memory"),
])
def test_a_ram_budget_or_card_of_nothing_is_refused_naming_it(kwargs, named):
    """A host RAM budget of 0 B fails every run over budget, whatever it measures: a slip, named, not a verdict; a card
    of 0 B is refused by the same rule, in the same words (it said "card='0 GiB': a card holds some memory")."""
    with pytest.raises(ValueError) as info:
        gpu_budget(**kwargs, scale="tiny", host="cpu", where=WHERE)
    assert str(info.value).startswith(f"{WHERE}: ") and named in str(info.value), str(info.value)


def test_a_vram_budget_of_nothing_stays_a_budget():
    """vram="0 B" says the run allocates nothing on the GPU: a run that allocates nothing meets it."""
    assert gpu_budget(vram="0 B", where=WHERE).budget.vram == 0
