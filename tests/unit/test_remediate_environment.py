"""A fix needing a package is searched where the case's own environment holds it: the running environment lacking
the package says nothing of the one the case runs in (isolate/importable.py). Made for real from a hand-written
wheel, no network."""

from local_wheels import offline, write_wheel

from gpu_budget import Environment, Fix, Scenario
from gpu_budget.declare import fixes
from gpu_budget.isolate.environment import make
from gpu_budget.isolate.importable import importable_in
from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Measurement
from gpu_budget.search import remediate
from gpu_budget.session.case import own_environment

NEEDS = fixes.register(Fix("trme_gbtiny", "train", "a fix importing gbtiny", needs=("gbtiny",)))
DOTTED = fixes.register(Fix("trme_gbtiny_sub", "train", "a fix importing a module gbtiny lacks",
                            needs=("gbtiny.absent",)))


def test_a_fix_needing_what_the_cases_environment_holds_is_searched(tmp_path, monkeypatch):
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    made = make(["gbtiny==1.0"], tmp_path / "envs")
    scenario = Scenario(name="toy", run="m:f", supports=(NEEDS, DOTTED),
                        environment=Environment(requirements=["gbtiny==1.0"]))
    installed = own_environment(Measurement("ok", Peaks(ram=1), environment=made))  # what the session hands
    assert installed is not None and installed("gbtiny")
    usable, skipped = remediate.lattice(scenario, False, installed=importable_in(made.python))
    assert ([f.name for f in usable], skipped) == ([NEEDS.name], {DOTTED.name: "needs gbtiny.absent"})
    assert remediate.lattice(scenario, False)[1] == {NEEDS.name: "needs gbtiny", DOTTED.name: "needs gbtiny.absent"}


def test_a_case_in_the_running_environment_looks_here(tmp_path, monkeypatch):
    write_wheel(offline(monkeypatch, tmp_path / "links"), "1.0")
    satisfied = make(["packaging"], tmp_path / "envs")  # the running environment meets it: no venv of its own
    assert own_environment(Measurement("ok", Peaks(ram=1), environment=satisfied)) is None
    assert own_environment(Measurement("ok", Peaks(ram=1))) is None
