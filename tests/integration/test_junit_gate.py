"""The gate's own failure is in pytest's JUnit XML: a session-level problem (here the fail-safe: nothing measured under
CI) fails the run with no test failing, and a CI that reads the XML alone showed every test passed."""

import xml.etree.ElementTree as ET

CASES = '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_measured(gpu_budget):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": 1}))


def test_plain():
    pass
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider",
                                         "--gpu-budget", "-k", "test_plain", "--junitxml=junit.xml", *args)


def suite(pytester) -> ET.Element:
    root = ET.parse(pytester.path / "junit.xml").getroot()
    return root if root.tag == "testsuite" else root.find("testsuite")


def test_a_gate_failure_of_the_session_is_a_failed_testcase_in_the_junit_xml(project, monkeypatch):
    """Before: exit 1 and `! gpu-budget gate failed: ... !` on the terminal, and a junit.xml of failures="0" holding
    test_plain alone."""
    pytester = project(CASES)
    monkeypatch.setenv("CI", "true")
    result = run(pytester)
    assert result.ret == 1, result.stdout.str()
    said = next(line for line in result.stdout.lines if line.startswith("gpu-budget gate FAILED: "))
    xml = suite(pytester)
    assert (xml.get("failures"), xml.get("errors"), xml.get("tests")) == ("1", "0", "2"), ET.tostring(xml)
    (case,) = [c for c in xml.iter("testcase") if c.get("classname") == "gpu-budget"]
    assert case.get("name") == "gate"
    failure = case.find("failure")
    assert failure.get("message") == "gpu-budget gate failed: " + said.removeprefix("gpu-budget gate FAILED: ")
    assert "none selected" in failure.text


def test_a_warning_of_the_gate_adds_no_testcase(project):
    """Outside CI the same run only warns and passes: the XML holds the tests pytest ran, and nothing of the gate."""
    pytester = project(CASES)
    result = run(pytester)
    assert result.ret == 0, result.stdout.str()
    xml = suite(pytester)
    assert [c.get("name") for c in xml.iter("testcase")] == ["test_plain"] and xml.get("failures") == "0"
