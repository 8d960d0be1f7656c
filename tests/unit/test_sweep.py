"""Sweeps: the spec, a version's point against the reference, the side-by-side table, and what crosses xdist."""

import sys
from dataclasses import replace

import pytest

from gpu_budget.declare.environment import Environment
from gpu_budget.declare.scenario import Scenario
from gpu_budget.declare.sweep import SweepAxis, parse
from gpu_budget.isolate.protocol import ScenarioJob
from gpu_budget.model.budget import Budget
from gpu_budget.model.figures import Peaks
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.result import EnvironmentRecord, Failure, Measurement, Result, SweepPoint, Verdict
from gpu_budget.report.sweep_table import environment_lines, sweep_lines
from gpu_budget.session import sweep
from gpu_budget.session.case_setup import fingerprint_for

MiB = 2**20
OLD = EnvironmentRecord(("transformers==5.17.0",), {"transformers": "5.17.0", "huggingface-hub": "1.33.0"},
                        {"transformers": "5.17.0"}, "abc", "uv", 12.5, False, "/envs/env-abc/bin/python")


def test_the_spec_names_each_package_and_its_versions():
    assert parse(" transformers==5.17.0, 5.23.0 ;Peft==0.18.1") == parse("transformers == 5.17.0,5.23.0;\n peft==0.18.1") == (
        SweepAxis("transformers", ("5.17.0", "5.23.0")), SweepAxis("peft", ("0.18.1",)))
    assert parse("") == parse(" ") == ()
    for bad, said in [("transformers", "expected PACKAGE==V1"), ("transformers==5.17.0,", "an empty version"),
                      ("transformers>=5", "expected PACKAGE==V1"), ("a==1;A==2", "a is swept twice"),
                      ("x==not.a.version", "'not.a.version' is not a version")]:
        with pytest.raises(ValueError, match=said):
            parse(bad)


@pytest.mark.parametrize(("spec", "part"), [("transformers==5.17.0,5.23.0;", 2), (";transformers==5.17.0", 1),
                                           ("transformers==5.17.0; ;peft==0.18.1", 2), (";", 1)])
def test_an_empty_part_of_the_spec_is_refused_naming_the_spec_as_an_empty_version_is(spec, part):
    """A ';' with no package on one side was read past: `transformers==5.17.0;$PEFT_SPEC` of an unset variable swept
    transformers alone, unsaid, where `transformers==5.17.0,$VERSION` is refused as an empty version. Both are a
    value lost, so both are refused, the spec named."""
    with pytest.raises(ValueError) as refused:
        parse(spec)
    assert str(refused.value).startswith(f"sweep {spec!r}: part {part} is empty (a ';' with no PACKAGE==V1,... on one "
                                         "side): remove the ';', or name what it lost; expected PACKAGE==V1,V2")


def test_a_point_changes_against_the_reference_per_gated_figure():
    assert sweep.change(Peaks(ram=100 * MiB, ram_tree=200 * MiB), Peaks(ram=110 * MiB, ram_tree=190 * MiB)) == {
        "ram_tree": -0.05, "ram": 0.1}
    assert sweep.change(Peaks(ram=100, vram_allocated=None), Peaks(ram=100, vram_allocated=5)) == {
        "ram": 0.0, "vram_allocated": None}


def test_the_version_a_case_ran_at_is_its_environments_else_the_running_ones():
    ran = Measurement(status="ok", peaks=Peaks(ram=1), environment=OLD)
    assert sweep.reference_version("transformers", ran) == "5.17.0"
    assert sweep.reference_version("huggingface-hub", ran) == "1.33.0"
    assert sweep.reference_version("pytest", Measurement(status="ok", peaks=Peaks(ram=1))) == pytest.__version__
    assert sweep.reference_version("no-such-package-here", ran) is None
    assert sweep.same_version("2.13.0", "2.13.0+cpu") and not sweep.same_version("5.17.0", "5.23.0")


def _row(nodeid: str, points: tuple[SweepPoint, ...]) -> Result:
    return Result(nodeid=nodeid, scenario="s", scale="tiny", verdict=Verdict.PASS, passed=True, message="",
                  measurement=Measurement(status="ok", peaks=Peaks(ram=100 * MiB)), sweep=points)


def test_the_table_has_a_column_per_version_and_names_a_failed_one_once():
    ref = SweepPoint("transformers", "5.23.0", True, "ok", Peaks(ram=100 * MiB))
    old = SweepPoint("transformers", "5.17.0", False, "ok", Peaks(ram=110 * MiB), {"ram": 0.1}, environment=OLD)
    bad = SweepPoint("transformers", "99.0", False, "error", message="cannot resolve transformers==99.0: no version")
    lines = sweep_lines([_row("t.py::a", (ref, old, bad)), _row("t.py::b", (ref, bad))])
    header = next(line for line in lines if line.startswith("test"))
    assert header.split() == ["test", "5.17.0", "5.23.0", "(ran", "at)", "99.0"]  # in version order
    row_a = next(line for line in lines if line.startswith("t.py::a"))
    assert row_a.split() == ["t.py::a", "110.00", "MiB", "(+10.0%)", "100.00", "MiB", "error"]
    assert next(line for line in lines if line.startswith("t.py::b")).split()[1] == "-"
    named = [line for line in lines if line.startswith("transformers 99.0 error")]
    assert named == [("transformers 99.0 error (2 case(s): t.py::a, t.py::b): cannot resolve transformers==99.0: "
                     "no version")]
    assert sweep_lines([_row("t.py::c", ())]) == []


def test_each_environment_says_what_it_installs_and_how_long_it_took():
    found = replace(OLD, seconds=0.31, cached=True)
    assert environment_lines([OLD, found, found]) == [
        ("environment transformers==5.17.0 (installs huggingface-hub==1.33.0 transformers==5.17.0): made in 12.5 s "
        "(uv); found made 2 time(s), in 0.31 s at most")]
    remade = replace(OLD, remade=True)  # a session killed while it made the venv left it half made
    assert environment_lines([remade]) == [
        ("environment transformers==5.17.0 (installs huggingface-hub==1.33.0 transformers==5.17.0): made in 12.5 s "
         "(uv), in place of a half-made one a session cut off left")]
    assert EnvironmentRecord.from_json(remade.to_json()) == remade and "remade" not in OLD.to_json()
    waited = replace(OLD, seconds=19.8, cached=True, waited=19.6)
    assert environment_lines([OLD, waited])[0].endswith(
        "found made 1 time(s), in 19.80 s at most (19.60 s of it waiting while another process made it)")
    assert EnvironmentRecord.from_json(waited.to_json()) == waited and "waited" not in OLD.to_json()
    broken = replace(OLD, conflicts=("datasets 5.2.0 needs huggingface-hub>=1.31.0 (here 1.33.0)",))
    assert environment_lines([broken])[1:] == [
        ("  it breaks a running package's requirement: datasets 5.2.0 needs huggingface-hub>=1.31.0 (here 1.33.0); "
        "what imports that package there may fail")]
    assert EnvironmentRecord.from_json(broken.to_json()) == broken and "conflicts" not in OLD.to_json()


def test_an_environment_that_cannot_be_made_says_why_and_what_failing_took():
    tried = EnvironmentRecord(("transformers==4.20.0",), {}, {}, "", "pip", 19.96, False, "",
                              error="Failed building wheel for tokenizers")
    recalled = replace(tried, seconds=0.001, remembered=True)
    assert environment_lines([recalled, recalled]) == [
        ("environment transformers==4.20.0 cannot be made: failed as remembered from an earlier run, in 0.00 s "
         "(--gpu-budget-update tries it again): Failed building wheel for tokenizers")]
    waiting = replace(tried, seconds=19.5, waited=19.5)  # an xdist worker waiting while another tried
    assert environment_lines([tried, waiting])[0].startswith(
        "environment transformers==4.20.0 cannot be made: failed in 20.0 s (pip); 1 other process(es) waited for "
        "that, 19.50 s at most: ")
    instant = replace(tried, seconds=0.0, waited=0.0)  # it waited, too briefly to count: still not a try of its own
    assert environment_lines([tried, instant])[0].startswith(
        "environment transformers==4.20.0 cannot be made: failed in 20.0 s (pip); 1 other process(es) waited for "
        "that, 0.00 s at most: ")
    assert instant.to_json()["waited"] == 0.0 and "waited" not in tried.to_json()
    # no process of this session tried: another (a second session sharing the folder) did, while this one waited
    assert environment_lines([waiting])[0].startswith(
        "environment transformers==4.20.0 cannot be made: another process tried it while this session waited, 19.50 s "
        "at most: Failed building wheel for tokenizers")
    assert environment_lines([OLD, tried])[0].startswith("environment transformers==5.17.0 (installs ")
    for record in (tried, recalled, instant):
        assert EnvironmentRecord.from_json(record.to_json()) == record
    assert recalled.to_json()["remembered"] is True and "error" not in OLD.to_json()
    assert "remembered" not in OLD.to_json() and "remembered" not in tried.to_json()


def test_points_and_environments_cross_as_json():
    point = SweepPoint("transformers", "5.17.0", False, "ok", Peaks(ram=5), {"ram": 0.1}, "", OLD)
    row = _row("t.py::a", (point,)).but(measurement=Measurement(status="ok", peaks=Peaks(ram=5), environment=OLD))
    back = Result.from_json(row.to_json())
    assert back.sweep == (point,) and back.environment == OLD
    measured = Measurement(status="error", peaks=Peaks(ram=5), exitcode=-9, environment=OLD,
                           error=Failure(kind="killed", message="x"))
    assert Measurement.from_json(measured.to_json()) == measured


def test_a_command_starting_with_this_interpreter_starts_with_the_environments():
    job = ScenarioJob.of(Scenario(name="c", command=[sys.executable, "train.py"]), "tiny")
    assert job.in_environment("/envs/e/bin/python").to_json()["command"]["argv"] == ["/envs/e/bin/python", "train.py"]
    other = ScenarioJob.of(Scenario(name="c", command=["no-such-launcher", "train.py"]), "tiny")
    assert other.in_environment("/envs/e/bin/python") == other  # not found: the command fails naming it


def test_the_fingerprint_records_what_the_environment_lays_over():
    hardware = Hardware.from_json({"key": "cpu-x86_64", "transformers": "5.23.0", "torch": "2.13.0+cpu", "package_versions": {}})
    fprint = fingerprint_for(hardware, Scenario(name="f", run="m:f"), "steady", environment=OLD)
    assert (fprint["environment"], fprint["transformers"], fprint["torch"]) == (
        "huggingface-hub==1.33.0 transformers==5.17.0", "5.17.0", "2.13.0+cpu")
    assert "environment" not in fingerprint_for(hardware, Scenario(name="f", run="m:f"), "steady")


def test_a_point_is_not_compared_against_a_reference_that_failed():
    # the run at the version the case ran at crashed: its peak is the peak so far, not the case's figure
    crashed = Measurement(status="error", peaks=Peaks(ram=50 * MiB), error=Failure(kind="exception", message="boom"))
    points = sweep.sweep_case(Scenario(name="s", run="m:f"), parse("tomli-w==1.0.0"), crashed,
                              lambda scenario, snapshot: Measurement(status="ok", peaks=Peaks(ram=20 * MiB)), False)
    reference, other = points
    assert (reference.reference, reference.status, reference.message) == (True, "error", "exception: boom")
    assert (other.version, other.status, other.peaks, other.change) == ("1.0.0", "ok", Peaks(ram=20 * MiB), {})
    assert next(line for line in sweep_lines([_row("t.py::a", points)]) if line.startswith("t.py::a")).split() == [
        "t.py::a", "20.00", "MiB", "error"]  # the figure without a change against the crashed run


def test_a_version_whose_child_runner_raises_is_a_point_and_the_next_version_is_still_measured():
    # a prepare that fails in the running environment (a case of its own environment swept at the running version)
    # raises forkserver's RuntimeError, where a helper's is a RemoteFailed: each is that version's point, and the
    # gated reference's row, measured before, is not lost with an exception out of the sweep
    def run(scenario, snapshot):
        if "tomli-w==1.2.0" in scenario.environment.lines:
            raise RuntimeError("preparing assets for 's' failed:\ncannot save at 1.2.0")
        return Measurement(status="ok", peaks=Peaks(ram=20 * MiB))

    ran = Measurement(status="ok", peaks=Peaks(ram=10 * MiB), environment=replace(OLD, named={"tomli-w": "1.1.0"}))
    points = sweep.sweep_case(Scenario(name="s", run="m:f"), parse("tomli-w==1.2.0,1.0.0"), ran, run, False)
    assert [(p.version, p.status) for p in points] == [("1.1.0", "ok"), ("1.2.0", "error"), ("1.0.0", "ok")]
    assert points[1].message == ("tomli-w==1.2.0: RuntimeError: preparing assets for 's' failed:\n"
                                 "cannot save at 1.2.0")


def test_a_version_keeps_the_extras_the_case_asks_of_its_package():
    # the case runs at gbtiny[more]==1.0, whose extra brings a package it imports: 2.0 without the extra would fail
    # on that import, and the sweep would blame 2.0
    asked = []

    def run(scenario, snapshot):
        asked.append(scenario.environment.lines)
        return Measurement(status="ok", peaks=Peaks(ram=20 * MiB))

    case = Scenario(name="s", run="m:f", environment=Environment(requirements=["psutil", "gbtiny[more]==1.0"]))
    ran = Measurement(status="ok", peaks=Peaks(ram=10 * MiB), environment=replace(OLD, named={"gbtiny": "1.0"}))
    sweep.sweep_case(case, parse("gbtiny==2.0"), ran, run, False)
    assert asked == [("psutil", "gbtiny[more]==2.0")]


def test_a_version_spelt_another_way_is_measured_once():
    # 1.2 is the running tomli-w 1.2.0: measured again, it was a column of its own beside the one the case ran at
    def run(scenario, snapshot):
        raise AssertionError(f"measured again at {scenario.environment.lines}")

    ran = Measurement(status="ok", peaks=Peaks(ram=10 * MiB), environment=replace(OLD, named={"tomli-w": "1.2.0"}))
    points = sweep.sweep_case(Scenario(name="s", run="m:f"), parse("tomli-w==1.2"), ran, run, False)
    assert [(p.version, p.reference) for p in points] == [("1.2.0", True)]
    assert parse("tomli-w==1.0,1.0.0,1.1") == (SweepAxis("tomli-w", ("1.0", "1.1")),)


def test_a_version_over_the_cases_budget_is_flagged_in_the_table_and_the_json():
    """The version the case ran at is gated; the others are reported, but one whose peak breaks the case's budget is
    flagged as such (its cell, a line below the table naming the breach, and the point's over_budget), never failing
    the gate: a reader must see which versions break the budget, not only by how much they moved."""
    peaks = {"2.0": 220 * MiB, "3.0": 80 * MiB}

    def run(scenario, snapshot):
        version = next(line for line in scenario.environment.lines if line.startswith("gbtiny=="))[len("gbtiny=="):]
        return Measurement(status="ok", peaks=Peaks(ram=peaks[version]))

    ran = Measurement(status="ok", peaks=Peaks(ram=60 * MiB), environment=replace(OLD, named={"gbtiny": "1.0"}))
    row = _row("t.py::a", ()).but(measurement=ran, budget=Budget(ram=150 * MiB))
    case = Scenario(name="s", run="m:f", environment=Environment(requirements=["gbtiny==1.0"]))
    done = sweep.swept(row, case, parse("gbtiny==2.0,3.0"), run, False)
    assert (done.verdict, done.passed) == (Verdict.PASS, True)  # reported, not judged
    over = {p.version: p.over_budget for p in done.sweep}
    assert over == {"1.0": (), "2.0": ("host RAM peak 220.00 MiB > budget 150.00 MiB",), "3.0": ()}
    assert Result.from_json(done.to_json()).sweep == done.sweep
    assert done.to_json()["sweep"][1]["over_budget"] == ["host RAM peak 220.00 MiB > budget 150.00 MiB"]
    lines = sweep_lines([done])
    cells = next(line for line in lines if line.startswith("t.py::a"))
    assert cells.split() == ["t.py::a", "60.00", "MiB", "220.00", "MiB", "(+266.7%)", "OVER", "BUDGET", "80.00",
                             "MiB", "(+33.3%)"]
    assert "gbtiny 2.0 over budget (1 case(s): t.py::a): host RAM peak 220.00 MiB > budget 150.00 MiB" in lines


def test_a_vram_change_from_a_reference_of_0_says_what_it_grew_by():
    ref = SweepPoint("torch", "2.9.0", True, "ok", Peaks(ram=100 * MiB, vram_allocated=0))
    grown = Peaks(ram=100 * MiB, vram_allocated=12 * MiB)  # no percentage of 0 exists: left out, it hid the growth
    new = SweepPoint("torch", "2.10.0", False, "ok", grown, sweep.change(ref.peaks, grown))
    row = next(line for line in sweep_lines([_row("t.py::a", (ref, new))]) if line.startswith("t.py::a"))
    assert row.endswith("VRAM 12.00 MiB (0.0%, VRAM +12.00 MiB from 0 B)")
