"""Verdicts: budget first, then baseline with tolerance, with expected failures and CI rules."""

from gpu_budget.judge.compare import judge
from gpu_budget.model.budget import Budget, Tolerance
from gpu_budget.model.entry import Entry
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Failure, Measurement

MiB = 2**20
GiB = 2**30
TOL = Tolerance(rel=0.02, abs=16 * MiB)


def m(ram, status="ok"):
    return Measurement(status, Peaks(ram=ram, vram_allocated=None),
                       error=None if status == "ok" else Failure(kind="killed", message="killed by SIGKILL"))


def base(ram):
    return Entry(peaks=Peaks(ram=ram, vram_allocated=None))


def test_within_tolerance_passes():
    j = judge(m(1000 * MiB + 30 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("pass", True)


def test_planted_ten_percent_fails():
    j = judge(m(1100 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)
    assert j.change["ram"] == 0.1


def test_improvement_is_reported_and_passes():
    j = judge(m(800 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed, j.write_baseline) == ("improved", True, False)
    assert "--gpu-budget-update" in j.message


def test_update_turns_a_regression_into_a_recorded_change():
    j = judge(m(1100 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=True)
    assert (j.passed, j.write_baseline) == (True, True)


def test_budget_is_gated_even_under_update():
    j = judge(m(2 * 2**30), Budget(ram=2**30), None, TOL, ci=False, update=True)
    assert (j.verdict, j.passed) == ("over-budget", False)


def test_an_over_budget_row_still_shows_its_change_against_the_baseline():
    j = judge(m(1031 * MiB), Budget(ram=1024 * MiB), base(1000 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("over-budget", False)
    assert round(j.change["ram"], 3) == 0.031


def test_missing_baseline_fails_only_under_ci():
    assert judge(m(MiB), Budget(), None, TOL, ci=True, update=False).passed is False
    j = judge(m(MiB), Budget(), None, TOL, ci=False, update=False)
    assert (j.verdict, j.passed, j.write_baseline) == ("no-baseline", True, True)


def test_expected_over_budget_passes_only_while_broken():
    over = judge(m(2 * 2**30), Budget(ram=2**30), base(2 * 2**30), TOL, ci=True, update=False, expect="over-budget")
    assert (over.verdict, over.passed) == ("over-budget", True)
    lost = judge(m(MiB), Budget(ram=2**30), base(MiB), TOL, ci=True, update=False, expect="over-budget")
    assert lost.passed is False and "reproduction is lost" in lost.message


def test_a_lost_reproduction_still_shows_its_change_against_the_baseline():
    """The as-reported run fell far below its baseline (a fix applied by mistake): the row's change says by how much."""
    lost = judge(m(750 * MiB), Budget(ram=2**30), base(1000 * MiB), TOL, ci=True, update=False, expect="over-budget")
    assert (lost.verdict, lost.passed) == ("pass", False)
    assert lost.change["ram"] == -0.25


def test_a_figure_exactly_at_its_limit_passes_and_one_byte_over_regresses():
    """The limit is baseline * (1 + rel) + abs as written: 0.5 % of 100 MiB is 0.5 MiB exactly, so 104.5 MiB is at the
    limit, not past it; float arithmetic put the limit a fraction of a byte below it. Likewise the floor below."""
    default = Tolerance(rel=0.005, abs=4 * MiB)
    at, floor = 100 * MiB + MiB // 2 + 4 * MiB, 100 * MiB - MiB // 2 - 4 * MiB
    assert default.limit(100 * MiB) == at and default.floor(100 * MiB) == floor
    for now, verdict in ((at, "pass"), (at + 1, "regression"), (floor, "pass"), (floor - 1, "improved")):
        j = judge(m(now), Budget(), base(100 * MiB), default, ci=True, update=False)
        assert (now, j.verdict) == (now, verdict), j.message


def test_child_failure_is_an_error_with_the_peak_seen():
    j = judge(m(700 * MiB, status="error"), Budget(ram=2**30), None, TOL, ci=False, update=True)
    assert (j.verdict, j.passed) == ("error", False)
    assert "700.00 MiB" in j.message and "SIGKILL" in j.message


# -- across setups (fingerprint.py's policy) ------------------------------------------------------------

def tm(ram, tensor):
    return Measurement("ok", Peaks(ram=ram, ram_tensor=tensor, vram_allocated=None))


def tbase(ram, tensor, **fp):
    return Entry(peaks=Peaks(ram=ram, ram_tensor=tensor, vram_allocated=None), fingerprint=fp)


def test_the_floor_difference_comes_off_host_ram_only():
    from gpu_budget.judge.fingerprint import between

    setup = between({"floor": 400 * MiB}, {"floor": 388 * MiB})
    assert setup.floor_shift == -12 * MiB and setup.diffs == {}
    j = judge(tm(988 * MiB, 100 * MiB), Budget(), tbase(1000 * MiB, 100 * MiB), TOL, ci=True, update=False, setup=setup)
    assert (j.verdict, j.change["ram"], j.change["ram_tensor"]) == ("pass", 0.0, 0.0)


def test_a_foreign_setup_compares_the_exact_metric_alone():
    from gpu_budget.judge.fingerprint import between

    setup = between({"malloc": "steady"}, {"malloc": "system"})
    assert setup.policy == "foreign"
    j = judge(tm(2000 * MiB, 100 * MiB), Budget(), tbase(1000 * MiB, 100 * MiB), TOL, ci=True, update=False, setup=setup)
    assert j.verdict == "pass" and "ram" not in j.change and "record a baseline for this setup" in j.message
    j = judge(tm(1000 * MiB, 130 * MiB), Budget(), tbase(1000 * MiB, 100 * MiB), TOL, ci=True, update=False, setup=setup)
    assert j.verdict == "regression" and "ram_tensor" in j.message


def test_a_baseline_trained_on_the_other_device_is_not_compared_on_host_ram():
    """device= switched on a GPU host (one baselines folder): a CUDA run's host RAM holds the CUDA libraries and not
    the weights, a CPU run's the reverse, so neither is the other's regression; the row names the device."""
    from gpu_budget.judge.fingerprint import between

    setup = between({"device": "cuda", "torch": "2.5"}, {"device": "cpu", "torch": "2.5"})
    assert setup.policy == "foreign" and "device cuda -> cpu" in setup.described
    on_cuda = Entry(peaks=Peaks(ram=1500 * MiB, vram_allocated=900 * MiB), fingerprint={"device": "cuda"})
    j = judge(tm(1000 * MiB, 600 * MiB), Budget(), on_cuda, TOL, ci=True, update=False, setup=setup)
    assert j.verdict == "pass" and "ram" not in j.change and "device cuda -> cpu" in j.message
    assert judge(tm(1000 * MiB, 600 * MiB), Budget(), on_cuda, TOL, ci=True, update=True, setup=setup).write_baseline
    same = between({"device": "cpu"}, {"device": "cpu"})  # a planted +20 % on the same device still fails
    j = judge(tm(1200 * MiB, 100 * MiB), Budget(), tbase(1000 * MiB, 100 * MiB, device="cpu"), TOL, ci=True,
              update=False, setup=same)
    assert j.verdict == "regression"


def g(ram, vram):
    return Measurement("ok", Peaks(ram=ram, vram_allocated=vram))


def gbase(ram, vram, **fp):
    return Entry(peaks=Peaks(ram=ram, vram_allocated=vram), fingerprint=fp)


def test_another_cuda_allocator_config_is_not_compared_on_allocated_vram():
    """S2 on an H200 (docs/gpu-results.md, each figure the same in two runs): as reported 353.49 MiB allocated, with
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True 343.99 MiB, the workload the same: the allocator's config moves
    the allocated peak past the default tolerance, so a runner that sets it is not compared there with one that does
    not. Host RAM, which it left where it was, still is; and on the same config a planted +20 % still fails."""
    from gpu_budget.judge.fingerprint import between

    default = Tolerance(rel=0.005, abs=4 * MiB)
    unset, expandable = {"cuda_alloc_conf": None}, {"cuda_alloc_conf": "expandable_segments:True"}
    for then, now in ((expandable, unset), (unset, expandable)):
        setup = between(then, now)
        assert "cuda_alloc_conf" in setup.diffs
        peak, base = (int(353.49 * MiB), int(343.99 * MiB))[:: 1 if then is expandable else -1]
        j = judge(g(GiB, peak), Budget(), gbase(GiB, base, **then), default, ci=True, update=False, setup=setup)
        assert (j.verdict, j.passed) == ("pass", True), j.message
        assert "vram_allocated" not in j.change and "allocated VRAM not compared" in j.message
        j = judge(g(int(1.2 * GiB), peak), Budget(), gbase(GiB, base, **then), default, ci=True, update=False,
                  setup=setup)
        assert j.verdict == "regression" and "ram " in j.message  # host RAM is compared as usual
    same = between(expandable, expandable)
    j = judge(g(GiB, int(343.99 * MiB * 1.2)), Budget(), gbase(GiB, int(343.99 * MiB), **expandable), default, ci=True,
              update=False, setup=same)
    assert j.verdict == "regression"


def test_a_gated_figure_the_baseline_holds_and_the_run_lacks_is_said_not_compared():
    """A run that measured no allocated VRAM (or no tensor bytes) against a baseline that holds it compares nothing
    there: "within budget and baseline" hid it, and an improvement elsewhere asked to record over it."""
    gpu = Entry(peaks=Peaks(ram=1000 * MiB, vram_allocated=5 * GiB))
    j = judge(m(1000 * MiB), Budget(), gpu, TOL, ci=True, update=False)
    assert j.verdict == "pass" and j.message != "within budget and baseline"
    assert "vram_allocated: the baseline holds 5.00 GiB, this run measured none: not compared" in j.message
    j = judge(m(900 * MiB), Budget(), tbase(1000 * MiB, 100 * MiB), TOL, ci=True, update=False)
    assert j.verdict == "improved" and "ram_tensor: the baseline holds 100.00 MiB" in j.message
    assert judge(g(1000 * MiB, int(6.2 * GiB)), Budget(), gpu, TOL, ci=True, update=False).verdict == "regression"


def test_every_field_a_fingerprint_records_has_a_policy_or_is_reported():
    """A field the policy does not know is never a difference: a baseline of another setup in it is compared as if
    recorded here. Every field the session's and a case's fingerprint record is a policy field or reported (INFO)."""
    from gpu_budget.declare.scenario import Scenario
    from gpu_budget.judge import fingerprint
    from gpu_budget.measure.device import DeviceInfo
    from gpu_budget.measure.host import Probed, child_facts, collect
    from gpu_budget.model.hardware import Hardware
    from gpu_budget.model.result import EnvironmentRecord
    from gpu_budget.session.case_setup import fingerprint_for

    facts = collect(Probed(DeviceInfo(cuda=False), child_facts()), "cpu-x86_64", {}, 1, "steady", "avx2", ())
    hardware = Hardware.from_json(facts)
    ddp = Scenario(name="s", command=["torchrun", "--nproc-per-node", "2", "train.py"], ranks=2)
    recorded = fingerprint_for(hardware, ddp, "steady", device="cuda", card="t4", environment=EnvironmentRecord(
        ("peft==0.13.0",), {"peft": "0.13.0"}, {"peft": "0.13.0"}, "k", "uv", 0.0, True, "python"))
    unknown = set(recorded) - set(fingerprint.POLICY) - set(fingerprint.INFO)
    assert not unknown, f"fields with no policy: {sorted(unknown)}"


def test_a_setup_difference_keeps_the_tests_tolerance_but_avx512_on_one_side_is_foreign():
    from gpu_budget.judge.fingerprint import between

    own = Tolerance(rel=0.005, abs=4 * MiB)
    no_avx2 = between({"isa": "AVX2"}, {"isa": "DEFAULT"})
    assert no_avx2.policy == "setup" and no_avx2.ram_tolerance(own) == own
    assert between({"torch": "2.13.0"}, {"torch": "2.14.0"}).ram_tolerance(own) == own  # an upgrade: as usual
    native = between({"isa": "AVX2"}, {"isa": "AVX512"})
    assert native.policy == "foreign" and native.ram_tolerance(own) is None

def tree(ram_tree, ram):
    return Measurement("ok", Peaks(ram=ram, ram_tree=ram_tree, vram_allocated=None))


def test_the_budget_gates_the_process_tree_not_the_main_process():
    j = judge(tree(1100 * MiB, 500 * MiB), Budget(ram=1000 * MiB), None, TOL, ci=False, update=False)
    assert (j.verdict, j.passed) == ("over-budget", False)
    assert "host RAM peak 1.07 GiB (process tree; main process 500.00 MiB) > budget 1000.00 MiB" in j.message


def test_a_tree_baseline_is_compared_on_the_tree():
    j = judge(tree(1100 * MiB, 500 * MiB), Budget(), Entry(peaks=Peaks(ram=500 * MiB, ram_tree=1000 * MiB)), TOL,
              ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False) and set(j.change) == {"ram_tree"}


def test_a_baseline_without_the_tree_is_compared_on_the_main_process_and_says_so():
    j = judge(tree(1100 * MiB, 500 * MiB), Budget(), base(500 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("pass", True) and set(j.change) == {"ram"}
    assert "the baseline holds the main process only" in j.message
    j = judge(tree(500 * MiB, 500 * MiB), Budget(), base(500 * MiB), TOL, ci=True, update=False)
    assert j.message == "within budget and baseline"  # no descendants: nothing left uncompared, nothing to say
    j = judge(tree(1100 * MiB, 600 * MiB), Budget(), base(500 * MiB), TOL, ci=True, update=False)
    assert (j.verdict, j.passed) == ("regression", False)  # a main-process regression still fails


def test_drift_is_said_only_where_numbers_move():
    """A floor-only difference (packages, preload, kernel) is named only when the floor moved by 4 MiB or more; below
    that it stays in `quiet` and the row says nothing; a threads or CPU model difference is always named (another CPU
    model moved the tiny gate's peaks past the floor, RESULTS.md 7b, where it was kept quiet)."""
    from gpu_budget.judge.fingerprint import between

    then = {"floor": 300 * MiB, "packages": "a", "cpu": "AMD EPYC", "threads": 1, "kernel": "6.1"}
    still = between(then, {**then, "floor": 301 * MiB, "packages": "b", "kernel": "6.2"},
                          {"filelock": "4.2.11"}, {"filelock": "4.2.12"})
    assert still.described == () and still.note() is None and not still.floor_moved
    assert still.quiet == ("packages filelock 4.2.11 -> 4.2.12", "kernel 6.1 -> 6.2")
    cpu = between(then, {**then, "floor": 301 * MiB, "cpu": "Intel Xeon"})
    assert cpu.described == ("cpu AMD EPYC -> Intel Xeon",) and cpu.policy == "setup" and cpu.quiet == ()
    assert still.floor_shift == 1 * MiB  # taken off all the same
    moved = between(then, {**then, "floor": 312 * MiB, "packages": "b"}, {"boto3": "1.0"}, {})
    assert moved.described == ("packages -boto3",) and moved.quiet == ()
    assert moved.note() == "setup differs from the baseline's: packages -boto3; import floor +12.00 MiB (taken off the host RAM peak)"
    threads = between(then, {**then, "threads": 2})
    assert threads.described == ("threads 1 -> 2",) and threads.policy == "setup"


def test_update_re_records_an_entry_of_another_setup_and_keeps_one_of_this_setup():
    """After --gpu-budget-update every entry is this setup's, so the next run says no "setup differs"."""
    from gpu_budget.judge.fingerprint import between

    then = {"cpu": "A", "floor": 300 * MiB, "torch": "2.13.0"}
    other = between(then, {**then, "cpu": "B"})
    same = between(then, dict(then))
    j = judge(m(1000 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=True, setup=other)
    assert (j.verdict, j.passed, j.write_baseline) == ("pass", True, True) and "re-recorded" in j.message
    j = judge(m(1000 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=True, setup=same)
    assert (j.verdict, j.passed, j.write_baseline) == ("pass", True, False)
    j = judge(m(1000 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False, setup=other)
    assert (j.passed, j.write_baseline) == (True, False)


def test_a_params_change_is_named_and_compared_all_the_same():
    """A case whose params moved since its entry was recorded: the row names each change, and a regression it brings
    fails as any other (a batch size raised in a pull request is what the gate is for)."""
    entry = Entry(peaks=Peaks(ram=1000 * MiB, vram_allocated=None), params={"steps": 3, "dims": [1, 2], "old": 1})
    now = {"steps": 2, "dims": (1, 2), "new": "x"}
    j = judge(m(1100 * MiB), Budget(), entry, TOL, ci=True, update=False, params=now)
    assert (j.verdict, j.passed) == ("regression", False)
    assert "params differ from the baseline's: new unset -> \"x\", old 1 -> unset, steps 3 -> 2; ram " in j.message
    same = judge(m(1000 * MiB), Budget(), entry, TOL, ci=True, update=False, params={"steps": 3, "dims": (1, 2), "old": 1})
    assert same.message == "within budget and baseline"
    unrecorded = judge(m(1000 * MiB), Budget(), base(1000 * MiB), TOL, ci=True, update=False, params=now)
    assert unrecorded.message == "within budget and baseline"  # an entry that stored no params says nothing


def test_update_re_records_an_entry_of_other_params_or_another_scenario_within_its_tolerance():
    """A deliberate change of params or scenario that moved no figure past the tolerance: --gpu-budget-update writes
    the entry anew, so the file describes the test as it is and the next run says no "params differ" (it kept the old
    params and scenario, and every later run repeated the note)."""
    entry = Entry(peaks=Peaks(ram=1000 * MiB, vram_allocated=None), params={"steps": 3}, scenario="lora")
    j = judge(m(1000 * MiB), Budget(), entry, TOL, ci=True, update=True, params={"steps": 2}, scenario="lora")
    assert (j.verdict, j.passed, j.write_baseline) == ("pass", True, True)
    assert j.message == "params differ from the baseline's: steps 3 -> 2; baseline updated"
    j = judge(m(1000 * MiB), Budget(), entry, TOL, ci=True, update=True, params={"steps": 3}, scenario="full")
    assert (j.passed, j.write_baseline) == (True, True) and j.message.endswith("'full'; baseline updated")
    kept = judge(m(1000 * MiB), Budget(), entry, TOL, ci=True, update=True, params={"steps": 3}, scenario="lora")
    assert (kept.passed, kept.write_baseline, kept.message) == (True, False, "within budget and baseline")
    plain = judge(m(1000 * MiB), Budget(), entry, TOL, ci=True, update=False, params={"steps": 2}, scenario="lora")
    assert (plain.passed, plain.write_baseline) == (True, False)


def test_a_card_difference_is_named_and_compared_as_usual_and_an_entry_without_the_field_is_not():
    """card= caps the allocator: an entry recorded as on one card, judged by a run as on another (or none), says so."""
    from gpu_budget.judge.fingerprint import between

    other = between({"card": "T4 (14.75 GiB)"}, {"card": "A100 80GB (79.15 GiB)"})
    assert other.policy == "libraries" and other.described == ("card T4 (14.75 GiB) -> A100 80GB (79.15 GiB)",)
    assert between({"card": None}, {"card": "T4 (14.75 GiB)"}).described == ("card none -> T4 (14.75 GiB)",)
    assert between({"torch": "2.13.0"}, {"torch": "2.13.0", "card": "T4 (14.75 GiB)"}).diffs == {}  # recorded before


def test_a_peak_at_its_budget_or_at_its_allowance_passes_a_byte_more_fails():
    """A budget and a baseline's allowance are both the most a peak may reach (docs/declaring.md, docs/baselines.md)."""
    budget = Budget(ram=1000 * MiB)
    assert judge(m(1000 * MiB), budget, None, TOL, ci=False, update=False).verdict == "no-baseline"
    assert judge(m(1000 * MiB + 1), budget, None, TOL, ci=False, update=False).verdict == "over-budget"
    limit = int(TOL.limit(1000 * MiB))
    assert limit == TOL.limit(1000 * MiB)
    assert judge(m(limit), Budget(), base(1000 * MiB), TOL, ci=True, update=False).verdict == "pass"
    assert judge(m(limit + 1), Budget(), base(1000 * MiB), TOL, ci=True, update=False).verdict == "regression"
