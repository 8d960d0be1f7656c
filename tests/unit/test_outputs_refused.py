"""An output path that names an existing Python source is refused before the work (report/outputs.py): `findings -o`,
`bisect --json` and `estimate -o/--json` wrote over a test module named by a slip of the path."""

import json
import subprocess
import sys

from gpu_budget.report.outputs import unwritable


def test_an_existing_python_source_is_refused_a_new_one_or_a_page_is_not(tmp_path):
    module = tmp_path / "test_mem.py"
    module.write_text("def test_x():\n    pass\n")
    assert unwritable(module) == "an existing Python source, which no report replaces: name another file"
    assert unwritable(tmp_path / "new.py") is None  # nothing there to lose
    page = tmp_path / "FINDINGS.md"
    page.write_text("# Findings\n")
    assert unwritable(page) is None


def test_findings_refuses_to_write_over_a_test_module_and_leaves_it(tmp_path):
    module = tmp_path / "test_mem.py"
    module.write_text("def test_x():\n    pass\n")
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"results": []}))
    done = subprocess.run([sys.executable, "-m", "gpu_budget", "findings", str(report), "-o", str(module)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert f"-o {module}: an existing Python source, which no report replaces" in done.stderr
    assert module.read_text() == "def test_x():\n    pass\n"
