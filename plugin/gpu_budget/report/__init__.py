"""Report: the terminal table and markdown, JSON rows, plots, artifacts, FINDINGS.md."""
