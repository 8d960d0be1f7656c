"""report/junit.py: the gate's failure is added to an XML pytest wrote, and to nothing else."""

from gpu_budget.report.junit import add_gate_failure, xml_path


def test_no_xml_or_a_broken_one_is_left_as_it_is(tmp_path):
    """No file there (pytest wrote none) makes none; a file that is no XML of pytest's is not rewritten."""
    assert not add_gate_failure(tmp_path / "none.xml", "failed", ["failed"]) and not (tmp_path / "none.xml").exists()
    for text in ("<testsuites>", "<report/>"):
        (tmp_path / "b.xml").write_text(text)
        assert not add_gate_failure(tmp_path / "b.xml", "failed", ["failed"])
        assert (tmp_path / "b.xml").read_text() == text


def test_the_path_is_read_as_pytest_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OUT", "reports")
    assert xml_path("$OUT/j.xml", tmp_path) == tmp_path / "reports" / "j.xml"
    assert xml_path(str(tmp_path / "abs.xml"), tmp_path / "elsewhere") == tmp_path / "abs.xml"
    assert xml_path(None, tmp_path) is None
