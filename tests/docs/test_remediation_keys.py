"""docs/fixes.md lists the keys of a row's `remediation` in the JSON report: every key the report writes, none
left out (`lattice`, the fixes the search combined, was written and never named)."""

from doc_figures import document, flat

from gpu_budget.model.figures import Peaks
from gpu_budget.model.result import Remediation, Trial


def test_the_docs_name_every_key_of_a_rows_remediation():
    full = Remediation("found", ("a",), ("a",), (), Peaks(ram=1), 1, 8, (Trial(("a",), "pass", Peaks(ram=1), "", 1.0),),
                       {"b": "why"}, ("a", "b"), 0, {"a+b": 1}, {"b": 1})
    listed = flat(document("docs/fixes.md"))
    section = listed[listed.index("in the JSON report as the row's `remediation`"):]
    section = section[:section.index("A function scenario gets no such check")]
    missing = [key for key in full.to_json() if f"`{key}`" not in section]
    assert not missing, f"docs/fixes.md names no {missing} among the keys of a row's remediation"
